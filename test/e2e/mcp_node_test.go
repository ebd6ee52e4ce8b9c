package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/transport/rigenv"
)

// needTool finds a program; without it the test fails under CI=true and skips locally.
func needTool(t *testing.T, name, install string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err == nil {
		return p
	}
	rigenv.Missing(t, name+" not installed; install it with "+install+" to run this test")
	return ""
}

// TestMCPNodeClient runs a real MCP client from another ecosystem: the official
// TypeScript SDK (pinned in test/e2e/mcp/package.json) spawns `mosaic mcp`, lists the
// tools, drafts an envelope, submits a task on the demo federation, waits for it and
// reads its events.
func TestMCPNodeClient(t *testing.T) {
	node := needTool(t, "node", "`apt-get install nodejs npm`")
	npm := needTool(t, "npm", "`apt-get install npm`")
	dir := filepath.Join(repoRoot(), "test", "e2e", "mcp")

	install := []string{"ci", "--no-audit", "--no-fund"}
	if _, err := os.Stat(filepath.Join(dir, "package-lock.json")); err != nil {
		install = []string{"install", "--no-audit", "--no-fund"}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	inst := exec.CommandContext(ctx, npm, install...)
	inst.Dir = dir
	if out, err := inst.CombinedOutput(); err != nil {
		t.Fatalf("npm %s in %s: %v\n%s", install[0], dir, err, out)
	}

	e := newEnv(t)
	e.serve("--tick", "500ms")
	waitSnapshot(t, e)
	run := exec.CommandContext(ctx, node, "client.mjs")
	run.Dir = dir
	run.Env = append(e.vars, "MOSAIC_BINARY="+binary)
	var out bytes.Buffer
	run.Stdout, run.Stderr = &out, &out
	err := run.Run()
	t.Logf("node client:\n%s", out.String())
	if err != nil {
		t.Fatalf("node client failed: %v", err)
	}
	if !strings.Contains(out.String(), "\nOK\n") {
		t.Fatal("node client did not report OK")
	}
}
