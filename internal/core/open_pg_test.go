package core

import (
	"context"
	"errors"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mosaic-hpc/mosaic/internal/config"
	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/store"
	"github.com/mosaic-hpc/mosaic/internal/store/pgtest"
)

// TestOpenOnPostgres: MOSAIC_DB=postgres://… gives a core on PostgreSQL — a task on
// the simulated federation runs to its final state; a second core on the same
// database is refused (the advisory-lock lease) naming the first; --fresh is ignored
// with a warning; after a restart the task and its events are still there; and the
// simulated sites work beside the state directory, never in a path made of the URL.
func TestOpenOnPostgres(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(t.TempDir())
	sites := filepath.Join(dir, "sites.yaml")
	cat := "systems:\n  - name: Solo\n    kind: sim\n    accounts: [a]\n    partitions:\n      - {name: cpu, nodes: 2, cpu_cores: 8, memory_gb: 16, max_walltime: 1h}\n    sim:\n      load: {utilization: 0}\n"
	if err := os.WriteFile(sites, []byte(cat), 0o600); err != nil {
		t.Fatal(err)
	}
	db := pgtest.New(t)
	cfg := &config.Config{SitesFile: sites, DBPath: db, StateDir: filepath.Join(dir, "state"), Tick: 200 * time.Millisecond, SimSpeed: 60}
	var logs strings.Builder
	var logMu sync.Mutex
	log := slog.New(slog.NewTextHandler(lockedWriter{&logMu, &logs}, nil))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, err := Open(ctx, OpenOptions{Config: cfg, Logger: log, ListenAddr: "127.0.0.1:8642", FreshStore: true, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	if b := c.store.Backend(); b != "postgres" {
		t.Fatalf("backend %q", b)
	}
	// Its own simulated work directory: not <state>/sim (the default SQLite store's
	// core's), named by the server and database, never by the URL (its password).
	d := c.cat.Sim.WorkDir
	if filepath.Dir(d) != cfg.StateDir || !strings.HasPrefix(filepath.Base(d), "sim-pg-") || len(filepath.Base(d)) != len("sim-pg-")+12 {
		t.Fatalf("sim work dir %q, want %s/sim-pg-<hash>", d, cfg.StateDir)
	}
	if u, _ := url.Parse(db); strings.Contains(d, u.Hostname()) || strings.Contains(d, strings.TrimPrefix(u.Path, "/")) {
		t.Fatalf("sim work dir %q shows the URL", d)
	}
	other, _ := url.Parse(db)
	other.Path = "/another_database"
	if d2, _, err := simWorkDir(&config.Config{StateDir: cfg.StateDir, DBPath: other.String()}); err != nil || d2 == d || filepath.Dir(d2) != cfg.StateDir {
		t.Fatalf("another database's sim work dir %q, %v (this one's %q)", d2, err, d)
	}
	sameDB, _ := url.Parse(db)
	sameDB.User = url.UserPassword(sameDB.User.Username(), "another-password")
	if d3, _, _ := simWorkDir(&config.Config{StateDir: cfg.StateDir, DBPath: sameDB.String()}); d3 != d {
		t.Fatalf("the same database with another password: %q, want %q", d3, d)
	}
	logMu.Lock()
	if !strings.Contains(logs.String(), "--fresh does not apply to a PostgreSQL store") {
		t.Errorf("no warning that --fresh does not apply: %s", logs.String())
	}
	logMu.Unlock()
	_, err = Open(ctx, OpenOptions{Config: cfg, ListenAddr: "127.0.0.1:8643", Getenv: func(string) string { return "" }})
	if !errors.Is(err, store.ErrLeaseHeld) || !strings.Contains(err.Error(), "PID "+strconv.Itoa(os.Getpid())) || !strings.Contains(err.Error(), "127.0.0.1:8642") {
		t.Fatalf("second Open on the same database: %v", err)
	}
	var wg sync.WaitGroup
	rctx, stop := context.WithCancel(ctx)
	wg.Add(1)
	go func() { defer wg.Done(); c.Run(rctx) }()
	wctx, wcancel := context.WithTimeout(ctx, 20*time.Second)
	defer wcancel()
	if err := c.WaitReady(wctx); err != nil {
		t.Fatal(err)
	}
	res, err := c.SubmitTask(ctx, SubmitRequest{Name: "hello", Command: "echo hello-from-pg",
		Envelope: &model.Envelope{CPUCores: model.IntRange{Min: 1, Max: 1}, Walltime: model.DurationRange{Min: model.Duration(time.Minute), Max: model.Duration(10 * time.Minute)}}})
	if err != nil {
		t.Fatal(err)
	}
	id := res.Task.ID
	deadline := time.Now().Add(30 * time.Second)
	var task *TaskDetail
	for {
		if task, err = c.Task(ctx, id); err != nil {
			t.Fatal(err)
		}
		if task.State.Final() || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if task.State != model.TaskSucceeded {
		t.Fatalf("task %s on PostgreSQL: %s (%s)", id, task.State, task.Reason)
	}
	stop()
	wg.Wait()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}

	c2, err := Open(ctx, OpenOptions{Config: cfg, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatalf("reopen after close: %v", err)
	}
	defer c2.Close()
	again, err := c2.Task(ctx, id)
	if err != nil || again.State != model.TaskSucceeded || len(again.Attempts) != len(task.Attempts) {
		t.Fatalf("after restart: %+v %v", again, err)
	}
	evs, err := c2.Events(ctx, EventQuery{TaskID: id, Limit: 100})
	if err != nil || len(evs) == 0 {
		t.Fatalf("events after restart: %d %v", len(evs), err)
	}
	if ents, _ := os.ReadDir("."); len(ents) != 0 {
		t.Fatalf("working directory has %v after a core on PostgreSQL", ents)
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *strings.Builder
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// TestPGLeaseLossDeposesTheCore: the PostgreSQL session holding a core's advisory lock
// ends under it (a server restart, a network cut, an operator's pg_terminate_backend):
// the lock is gone, so another core may take the store. The running core must stop
// (Deposed closes; `mosaic serve` exits 75), not go on acting beside the new owner.
func TestPGLeaseLossDeposesTheCore(t *testing.T) {
	old := pgLeaseCheckEvery
	pgLeaseCheckEvery = 100 * time.Millisecond
	t.Cleanup(func() { pgLeaseCheckEvery = old })
	dir := t.TempDir()
	t.Chdir(t.TempDir())
	db := pgtest.New(t)
	cfg := &config.Config{DBPath: db, StateDir: filepath.Join(dir, "state"), Tick: 200 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, err := Open(ctx, OpenOptions{Config: cfg, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	deposed := c.Deposed()
	if deposed == nil {
		t.Fatal("a core on PostgreSQL has no Deposed channel")
	}
	select {
	case <-deposed:
		t.Fatal("deposed while it holds its lease")
	case <-time.After(500 * time.Millisecond):
	}
	// End the lease's session from outside, as the server would (the owner lock is
	// advisory key 0x6d6f736169630002: classid and objid are its halves).
	pc, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close(ctx)
	var n int
	if err := pc.QueryRow(ctx, `SELECT COUNT(pg_terminate_backend(pid)) FROM pg_locks
		WHERE locktype = 'advisory' AND classid = $1 AND objid = $2 AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
		uint32(0x6d6f7361), uint32(0x69630002)).Scan(&n); err != nil || n != 1 {
		t.Fatalf("terminate the lease session: %d %v", n, err)
	}
	select {
	case <-deposed:
	case <-time.After(10 * time.Second):
		t.Fatal("the core lost its advisory lock but was not deposed within 10s")
	}
}
