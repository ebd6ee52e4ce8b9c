package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/store/pgtest"
)

// TestServeOnPostgres: `mosaic serve` with MOSAIC_DB=postgres://… runs a task on the
// simulated federation to success; a second serve on the same database is refused
// naming the first, without showing the URL's password; after the first is stopped
// and, later, killed with -9, new cores start on the database and the task (with its
// one attempt and its events) is still there.
func TestServeOnPostgres(t *testing.T) {
	db := pgtest.New(t)
	u, err := url.Parse(db)
	if err != nil {
		t.Fatal(err)
	}
	password, _ := u.User.Password()
	e := newEnv(t)
	e.vars = append(e.vars, "MOSAIC_DB="+db)
	dir := t.TempDir()
	sites := filepath.Join(dir, "sites.yaml")
	if err := os.WriteFile(sites, []byte(simCrashSites), 0o600); err != nil {
		t.Fatal(err)
	}
	side := filepath.Join(dir, "side")
	args := []string{"--headless", "--sites", sites, "--tick", "500ms"}
	first := e.serve(args...)

	id := submitID(t, e, "--name", "pg-hello", "--cpus", "1", "--walltime", "30m",
		"--command", fmt.Sprintf("echo pg-hello >> %s", side))
	task := e.waitTask(id, 40*time.Second, final)
	if task.State != "succeeded" || len(task.Attempts) != 1 {
		t.Fatalf("task %s on PostgreSQL: %s with %d attempts (%s)", id, task.State, len(task.Attempts), task.Reason)
	}

	// A second core on the same database: refused, naming the first; no password.
	other := freeAddr(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, append([]string{"serve", "--addr", other}, args...)...)
	cmd.Env, cmd.Dir = e.vars, e.home
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err == nil || ctx.Err() != nil {
		t.Fatalf("a second core on the same PostgreSQL database did not refuse it (%v):\n%s", err, out.String())
	}
	msg := out.String()
	for _, want := range []string{"in use by another Mosaic core", "PID " + strconv.Itoa(first.Process.Pid), e.addr, "advisory lock"} {
		if !strings.Contains(msg, want) {
			t.Errorf("second core's output does not mention %q:\n%s", want, msg)
		}
	}
	if password == "" || strings.Contains(msg, password) {
		t.Errorf("the second core's output shows the database password (or the test URL has none):\n%s", msg)
	}

	// Restart (interrupt, then a new core): the task is kept.
	if err := first.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	_, _ = first.Process.Wait()
	second := e.serve(args...)
	if again := e.task(id); again.State != "succeeded" || len(again.Attempts) != 1 {
		t.Fatalf("after a restart: %+v", again)
	}
	out2, _, rc := e.run("events", "--task", id)
	if rc != 0 || !strings.Contains(out2, "succeeded") {
		t.Errorf("events after the restart (rc %d):\n%s", rc, out2)
	}

	// kill -9: the server drops the dead core's session and its advisory lock.
	if err := second.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_, _ = second.Process.Wait()
	e.serve(args...)
	if again := e.task(id); again.State != "succeeded" {
		t.Fatalf("after kill -9 and a restart: %+v", again)
	}
	if b, _ := os.ReadFile(side); strings.Count(string(b), "pg-hello") != 1 {
		t.Fatalf("the command ran %d times, want once: %q", strings.Count(string(b), "pg-hello"), b)
	}
}
