package core

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/config"
	"github.com/mosaic-hpc/mosaic/internal/model"
)

func auditActions(t *testing.T, c *Core) map[string]AuditEntry {
	t.Helper()
	es, err := c.Audit(context.Background(), AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]AuditEntry{}
	for _, e := range es {
		out[e.Action] = e
	}
	return out
}

// TestCampaignJobsAudited: a campaign's submit-mode job is audited as task.submit,
// and its cancel as task.cancel, under the user who asked.
func TestCampaignJobsAudited(t *testing.T) {
	w := newSimWorld(t, 1, [][2]string{{"A", ""}})
	ctx := model.WithCaller(context.Background(), model.Caller{Name: "alice", Remote: "10.1.2.3:4"})
	req := campaignJob(t, "A", t.TempDir(), "sleep 600", nil)
	id, err := w.c.SubmitCampaignJob(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.c.CancelCampaignJob(ctx, id, "campaign stop"); err != nil {
		t.Fatal(err)
	}
	got := auditActions(t, w.c)
	for _, a := range []string{"task.submit", "task.cancel"} {
		if e, ok := got[a]; !ok || e.User != "alice" || e.Target != id || e.Remote != "10.1.2.3:4" {
			t.Errorf("%s: %+v (present %v), want alice's on %s", a, e, ok, id)
		}
	}
	if !strings.Contains(got["task.submit"].Detail, "campaign run r1") {
		t.Errorf("submit detail %q does not name the run", got["task.submit"].Detail)
	}
}

// TestLookAroundAudited: env, exec and put-file on a login node are audited with the
// system, the command and the file.
func TestLookAroundAudited(t *testing.T) {
	dir := t.TempDir()
	work := filepath.Join(dir, "w")
	sites := filepath.Join(dir, "catalog.yaml")
	cat := "systems:\n  - name: Loc\n    kind: local\n    accounts: [a]\n    workdir: " + work + "\n"
	if err := os.WriteFile(sites, []byte(cat), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := &config.Config{SitesFile: sites, DBPath: filepath.Join(dir, "db", "m.db"), StateDir: filepath.Join(dir, "state"),
		ConfigDir: filepath.Join(dir, "cfg"), TokenPath: filepath.Join(dir, "tok")}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := Open(ctx, OpenOptions{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	boss := model.WithCaller(ctx, model.Caller{Name: "boss", Admin: true, Remote: "10.0.0.9:1"})
	if _, err := c.PutFile(boss, "Loc", "in.txt", []byte("hello")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(boss, "Loc", "cat in.txt"); err != nil {
		t.Fatal(err)
	}
	_, _ = c.SystemEnv(boss, "Loc") // audited before it runs, whatever the probe finds
	got := auditActions(t, c)
	for a, detail := range map[string]string{"site.put-file": "in.txt (5 bytes)", "site.exec": "cat in.txt", "site.env": ""} {
		if e, ok := got[a]; !ok || e.User != "boss" || e.Target != "Loc" || e.Detail != detail {
			t.Errorf("%s: %+v (present %v), want boss's on Loc with detail %q", a, e, ok, detail)
		}
	}
}
