package core

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/config"
	"github.com/mosaic-hpc/mosaic/internal/store"
	"github.com/mosaic-hpc/mosaic/internal/store/pgtest"
)

// TestOpenTakesTheStoreLease: a second Open on the same database is refused with the
// owner's PID and address until the first core is closed; the generation grows.
func TestOpenTakesTheStoreLease(t *testing.T) {
	dir := t.TempDir()
	sites := filepath.Join(dir, "sites.yaml")
	cat := "systems:\n  - name: Solo\n    kind: sim\n    accounts: [a]\n    partitions:\n      - {name: cpu, nodes: 2, cpu_cores: 8, memory_gb: 16, max_walltime: 1h}\n    sim:\n      load: {utilization: 0}\n"
	if err := os.WriteFile(sites, []byte(cat), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := &config.Config{SitesFile: sites, DBPath: filepath.Join(dir, "state", "mosaic.db"), StateDir: filepath.Join(dir, "state")}
	ctx := context.Background()
	a, err := Open(ctx, OpenOptions{Config: cfg, ListenAddr: "127.0.0.1:8642"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Open(ctx, OpenOptions{Config: cfg, ListenAddr: "127.0.0.1:8643"})
	if !errors.Is(err, store.ErrLeaseHeld) || !strings.Contains(err.Error(), "PID "+strconv.Itoa(os.Getpid())) || !strings.Contains(err.Error(), "127.0.0.1:8642") {
		t.Fatalf("second Open on the same store: %v", err)
	}
	if a.lease == nil || a.lease.Owner().Generation != 1 {
		t.Fatalf("first core's lease: %+v", a.lease)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := Open(ctx, OpenOptions{Config: cfg, ListenAddr: "127.0.0.1:8643"})
	if err != nil {
		t.Fatalf("Open after the owner closed: %v", err)
	}
	defer b.Close()
	if g := b.lease.Owner().Generation; g != 2 {
		t.Fatalf("generation %d after a second owner, want 2", g)
	}
}

// TestOpenProtectsConfiguredPaths: a local site's look-around refuses the core's own
// files as its resolved configuration names them, also when only an env file (not
// the process environment) set them: the token, the env files, the sites file and the
// catalog's ssh identity files.
func TestOpenProtectsConfiguredPaths(t *testing.T) {
	dir := t.TempDir()
	work := filepath.Join(dir, "w")
	key := filepath.Join(dir, "keys", "clusterkey")
	sites := filepath.Join(dir, "catalog.yaml")
	cat := "systems:\n  - name: Loc\n    kind: local\n    accounts: [a]\n    workdir: " + work +
		"\n  - name: Far\n    kind: ssh\n    host: far.example\n    accounts: [a]\n    workdir: /scratch/u\n    ssh: {identity_file: " + key + "}\n"
	if err := os.WriteFile(sites, []byte(cat), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := &config.Config{SitesFile: sites, DBPath: filepath.Join(dir, "db", "m.db"), StateDir: filepath.Join(dir, "state"),
		ConfigDir: filepath.Join(dir, "cfg"), TokenPath: filepath.Join(dir, "elsewhere", "apikeyfile"),
		EnvFiles: []string{filepath.Join(dir, "settings.txt")}}
	ctx := context.Background()
	c, err := Open(ctx, OpenOptions{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, p := range []string{cfg.TokenPath, cfg.EnvFiles[0], sites, key, cfg.DBPath, cfg.DBPath + "-wal"} {
		_, err := c.Exec(ctx, "Loc", "cat "+p)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "Mosaic's own") {
			t.Errorf("cat %s on the local site: %v, want a refusal", p, err)
		}
	}
}

// TestOpenInMemoryLeavesNoSimDirInWorkDir: an in-memory store's simulated jobs run in a
// private temporary directory that Close removes, never in ":memory:.sim" under the
// working directory (tests of every surface used to litter their package directory).
func TestOpenInMemoryLeavesNoSimDirInWorkDir(t *testing.T) {
	wd := t.TempDir()
	t.Chdir(wd)
	cfg := &config.Config{StateDir: t.TempDir(), DBPath: ":memory:"}
	c, err := Open(context.Background(), OpenOptions{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	dir := c.cat.Sim.WorkDir
	if !strings.HasPrefix(dir, os.TempDir()) || strings.Contains(dir, ":memory:") {
		t.Fatalf("sim work dir %q, want a private temporary directory", dir)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("sim work dir %s still there after Close (%v)", dir, err)
	}
	if ents, _ := os.ReadDir(wd); len(ents) != 0 {
		t.Fatalf("working directory has %v after an in-memory core", ents)
	}
}

// TestOpenReplicasAndSingleOwnerExclude: a replica does not join a store a single
// core owns, and a single core does not start on a store replicas run.
func TestOpenReplicasAndSingleOwnerExclude(t *testing.T) {
	dir := t.TempDir()
	sites := filepath.Join(dir, "sites.yaml")
	cat := "systems:\n  - name: Solo\n    kind: sim\n    accounts: [a]\n    partitions:\n      - {name: cpu, nodes: 2, cpu_cores: 8, memory_gb: 16, max_walltime: 1h}\n    sim:\n      load: {utilization: 0}\n"
	if err := os.WriteFile(sites, []byte(cat), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := &config.Config{SitesFile: sites, DBPath: filepath.Join(dir, "state", "mosaic.db"), StateDir: filepath.Join(dir, "state"), Tick: time.Second}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	single, err := Open(ctx, OpenOptions{Config: cfg, ListenAddr: "127.0.0.1:8642"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Open(ctx, OpenOptions{Config: cfg, ListenAddr: "127.0.0.1:8643", Replica: true})
	if !errors.Is(err, store.ErrLeaseHeld) || !strings.Contains(err.Error(), "--replica") {
		t.Fatalf("a replica on a single core's store: %v, want refused naming --replica", err)
	}
	if err := single.Close(); err != nil {
		t.Fatal(err)
	}
	rep, err := Open(ctx, OpenOptions{Config: cfg, ListenAddr: "127.0.0.1:8644", Replica: true})
	if err != nil {
		t.Fatalf("a replica on a free store: %v", err)
	}
	defer rep.Close()
	go rep.Run(ctx)
	for range 100 {
		if rep.Leading() {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !rep.Leading() {
		t.Fatal("the only replica never led")
	}
	_, err = Open(ctx, OpenOptions{Config: cfg, ListenAddr: "127.0.0.1:8645"})
	if !errors.Is(err, store.ErrLeaseHeld) || !strings.Contains(err.Error(), "team-mode replicas") || !strings.Contains(err.Error(), "http://127.0.0.1:8644") {
		t.Fatalf("a single core on the replicas' store: %v, want refused naming the leader", err)
	}
}

// TestReplicaStartingHoldsSharedLock: replicas hold the store's owner lock shared from
// Open on — before any of them leads — so a single core started at the same moment is
// refused, while a second replica joins; once every replica closed, a single core
// starts. On SQLite and (with MOSAIC_TEST_POSTGRES) PostgreSQL.
func TestReplicaStartingHoldsSharedLock(t *testing.T) {
	dir := t.TempDir()
	sites := filepath.Join(dir, "sites.yaml")
	cat := "systems:\n  - name: Solo\n    kind: sim\n    accounts: [a]\n    partitions:\n      - {name: cpu, nodes: 2, cpu_cores: 8, memory_gb: 16, max_walltime: 1h}\n    sim:\n      load: {utilization: 0}\n"
	if err := os.WriteFile(sites, []byte(cat), 0o600); err != nil {
		t.Fatal(err)
	}
	dbs := map[string]string{"sqlite": filepath.Join(dir, "state", "mosaic.db")}
	if os.Getenv("MOSAIC_TEST_POSTGRES") != "" {
		dbs["postgres"] = pgtest.New(t)
	}
	for name, db := range dbs {
		t.Run(name, func(t *testing.T) {
			cfg := &config.Config{SitesFile: sites, DBPath: db, StateDir: filepath.Join(dir, "state-"+name), Tick: time.Second}
			ctx := context.Background()
			r1, err := Open(ctx, OpenOptions{Config: cfg, ListenAddr: "127.0.0.1:8651", Replica: true})
			if err != nil {
				t.Fatal(err)
			}
			r2, err := Open(ctx, OpenOptions{Config: cfg, ListenAddr: "127.0.0.1:8652", Replica: true})
			if err != nil {
				t.Fatalf("a second replica: %v", err)
			}
			// Neither runs (no leader lease yet): the shared lock alone refuses it.
			if c, err := Open(ctx, OpenOptions{Config: cfg, ListenAddr: "127.0.0.1:8653"}); !errors.Is(err, store.ErrLeaseHeld) || !strings.Contains(err.Error(), "--replica") {
				if c != nil {
					c.Close()
				}
				t.Fatalf("a single core beside starting replicas: %v, want refused naming --replica", err)
			}
			r1.Close()
			if _, err := Open(ctx, OpenOptions{Config: cfg, ListenAddr: "127.0.0.1:8653"}); !errors.Is(err, store.ErrLeaseHeld) {
				t.Fatalf("a single core beside one replica left: %v, want refused", err)
			}
			r2.Close()
			c, err := Open(ctx, OpenOptions{Config: cfg, ListenAddr: "127.0.0.1:8653"})
			if err != nil {
				t.Fatalf("a single core once the replicas closed: %v", err)
			}
			c.Close()
		})
	}
}
