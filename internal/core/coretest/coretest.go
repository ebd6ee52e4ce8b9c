// Package coretest runs a real core for the tests of the surfaces above it (API, MCP,
// server): the embedded simulated federation, started, probed once and ready, shut
// down when the test ends. Tests only (the layering test refuses it elsewhere).
package coretest

import (
	"context"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/config"
	"github.com/mosaic-hpc/mosaic/internal/core"
)

// Options tune Start; the zero value is an in-memory store at 30× simulated speed.
type Options struct {
	SimSpeed float64      // simulated seconds per real second (0 = 30)
	OnDisk   bool         // a SQLite file in the test's temporary directory instead of :memory:
	Logger   *slog.Logger // nil = discard
	// DBPath, when set, is the store file (replicas of one test share it).
	DBPath string
	// Replica opens the core as a team-mode replica advertising Advertise; Start
	// then waits only for it to know its role, not for a probe round (a follower
	// never probes).
	Replica   bool
	Advertise string
	// SitesFile is a site catalog to run instead of the simulated federation ("" =
	// the embedded one); its probe tick is a second (a real site answers slower).
	SitesFile string
}

// Start opens a core on the embedded simulated federation, runs it, waits until the
// first probe round is in, and closes it (after Run returned) when the test ends.
func Start(t testing.TB, o Options) *core.Core {
	t.Helper()
	if o.SimSpeed == 0 {
		o.SimSpeed = 30
	}
	dir := t.TempDir()
	cfg := &config.Config{StateDir: dir, DBPath: ":memory:", Tick: 250 * time.Millisecond, SimSpeed: o.SimSpeed}
	if o.SitesFile != "" {
		cfg.SitesFile, cfg.ConfigDir, cfg.Tick = o.SitesFile, dir, time.Second
	}
	if o.OnDisk {
		cfg.DBPath = filepath.Join(dir, "mosaic.db")
	}
	if o.DBPath != "" {
		cfg.DBPath = o.DBPath
	}
	ctx, cancel := context.WithCancel(context.Background())
	c, err := core.Open(ctx, core.OpenOptions{Config: cfg, Logger: o.Logger, Getenv: func(string) string { return "" },
		Replica: o.Replica, Advertise: o.Advertise})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		c.Close()
	})
	if o.Replica {
		return c
	}
	wctx, wcancel := context.WithTimeout(ctx, 20*time.Second)
	defer wcancel()
	if err := c.WaitReady(wctx); err != nil {
		t.Fatal(err)
	}
	return c
}
