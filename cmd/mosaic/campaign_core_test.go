package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/mosaic-hpc/mosaic/internal/config"
	"github.com/mosaic-hpc/mosaic/internal/core"
)

// TestCampaignCoreKeepsTheProbeTick: the core a launch opens for its submit-mode
// jobs follows them often, but must not probe every catalog site (real login
// nodes) every few seconds for the whole run: its probe tick stays the default.
func TestCampaignCoreKeepsTheProbeTick(t *testing.T) {
	dir := t.TempDir()
	sites := filepath.Join(dir, "sites.yaml")
	if err := os.WriteFile(sites, []byte("systems:\n  - name: Far\n    kind: ssh\n    host: 127.0.0.1\n    accounts: [a]\n    partitions:\n      - {name: cpu, nodes: 1, cpu_cores: 8, memory_gb: 16}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := &config.Config{SitesFile: sites, DBPath: filepath.Join(dir, "m.db"), StateDir: filepath.Join(dir, "state")}
	c, _, _, err := openCampaignCore(context.Background(), cfg, cfg.DBPath, "r1", io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := c.About().Tick; got != core.DefaultLiveTick.String() {
		t.Errorf("the launcher's core probes every %s, want the default %s", got, core.DefaultLiveTick)
	}
}
