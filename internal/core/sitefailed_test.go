package core_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mosaic-hpc/mosaic/internal/core"
	"github.com/mosaic-hpc/mosaic/internal/core/coretest"
)

// TestSiteFailureIsMarkedInTheCore: a site that is reached but fails a look-around
// request (a local site whose workdir cannot be created) fails with
// core.ErrSiteFailed, which V1Error — shared by the HTTP API and the in-process MCP
// backend — maps to 502 naming the site; the same failure after the caller went away
// is the caller's, not the site's (not marked).
func TestSiteFailureIsMarkedInTheCore(t *testing.T) {
	sites := filepath.Join(t.TempDir(), "sites.yaml")
	if err := os.WriteFile(sites, []byte("systems:\n  - name: Loc\n    kind: local\n    accounts: [acct]\n    workdir: /proc/mosaic-no-such-dir\n"+
		"    partitions:\n      - {name: cpu, nodes: 2, cpu_cores: 8, memory_gb: 16, max_walltime: \"1h\"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := coretest.Start(t, coretest.Options{SitesFile: sites})
	_, err := c.PutFile(context.Background(), "Loc", "x.txt", []byte("hi"))
	if !errors.Is(err, core.ErrSiteFailed) {
		t.Fatalf("put-file the site cannot write: %v, want it marked ErrSiteFailed", err)
	}
	if e := core.V1Error(err); e.Status != http.StatusBadGateway || !strings.Contains(e.Detail, "Loc") || !strings.Contains(e.Detail, "mosaic env Loc") {
		t.Errorf("V1Error = %d %q, want 502 naming the site and what to check", e.Status, e.Detail)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.PutFile(ctx, "Loc", "x.txt", []byte("hi")); err == nil || errors.Is(err, core.ErrSiteFailed) {
		t.Errorf("put-file after the caller went away: %v, want an error not blamed on the site", err)
	}
}
