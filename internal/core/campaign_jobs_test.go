package core

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/agent"
	"github.com/mosaic-hpc/mosaic/internal/campaign"
	"github.com/mosaic-hpc/mosaic/internal/model"
)

func campaignJob(t *testing.T, site, dir, command string, env map[string]string) campaign.JobRequest {
	t.Helper()
	return campaign.JobRequest{RunID: "r1", Site: site, Agents: []string{"coordinator"},
		Spec: model.JobSpec{Tag: "mosaic-c-r1-" + site, Name: "campaign r1 on " + site, System: site, Partition: "gpu", Account: "acct",
			Nodes: 1, NTasks: 1, CPUsPerTask: 1, Walltime: model.Duration(time.Hour), Command: command, Env: env, WorkDir: dir}}
}

// TestCampaignJobIsAnEngineTask: a campaign slice's job is a stored task (its id
// handed out before the site is called), submitted under the launcher's job name,
// followed by the monitor to its end, with the run id in its events; the forwarded
// value reaches the job but not the store.
func TestCampaignJobIsAnEngineTask(t *testing.T) {
	w := newSimWorld(t, 1, [][2]string{{"A", ""}})
	ctx := context.Background()
	dir := t.TempDir()
	const secret = "s3cr3t-forwarded-value"
	req := campaignJob(t, "A", dir, `echo "$FWD_TOKEN" > seen`, map[string]string{"FWD_TOKEN": secret})
	var storedBeforeSubmit bool
	req.Stored = func(id string) {
		task, err := w.c.Task(ctx, id)
		storedBeforeSubmit = err == nil && len(task.Attempts) == 0
	}
	id, err := w.c.SubmitCampaignJob(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if !storedBeforeSubmit {
		t.Error("Stored was not called with a stored task before its first attempt")
	}
	task := w.run(id, 30*time.Second)
	if task.State != model.TaskSucceeded || len(task.Attempts) != 1 {
		t.Fatalf("task %s, %d attempts: %s", task.State, len(task.Attempts), task.Reason)
	}
	a := task.Attempts[0]
	if a.Tag != "mosaic-c-r1-A" || task.Target == nil || task.Target.System != "A" || task.Target.Partition != "gpu" {
		t.Errorf("attempt tag %q, target %+v", a.Tag, task.Target)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "seen")); err != nil || strings.TrimSpace(string(b)) != secret {
		t.Errorf("the job did not see the forwarded value: %q %v", b, err)
	}
	if len(a.Spec.Env) != 0 {
		t.Errorf("the stored spec keeps the forwarded environment: %v", a.Spec.Env)
	}
	evs := w.events(id, "decision")
	if len(evs) != 1 || !strings.Contains(evs[0].Message, "campaign run r1") || !strings.Contains(evs[0].Rationale, "FWD_TOKEN") {
		t.Errorf("decision events %+v", evs)
	}
	all, _ := w.c.Events(ctx, EventQuery{TaskID: id, Limit: 100})
	for _, e := range all {
		if strings.Contains(e.Message+e.Rationale, secret) {
			t.Errorf("an event carries the forwarded value: %+v", e)
		}
	}
	w.c.store.Close() // flush the WAL into the file read below
	db, err := os.ReadFile(w.c.store.Path())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(db), secret) {
		t.Error("the store file holds the forwarded value")
	}
}

// TestCampaignJobRunsOnceAndCancels: a failed slice is not retried (its agents are
// tied to the run), and cancelling goes through the engine to the site.
func TestCampaignJobRunsOnceAndCancels(t *testing.T) {
	w := newSimWorld(t, 1, [][2]string{{"A", ""}, {"B", ""}})
	ctx := context.Background()
	id, err := w.c.SubmitCampaignJob(ctx, campaignJob(t, "A", t.TempDir(), "exit 3", nil))
	if err != nil {
		t.Fatal(err)
	}
	if task := w.run(id, 30*time.Second); task.State != model.TaskFailed || len(task.Attempts) != 1 {
		t.Fatalf("failed slice: task %s with %d attempts, want failed after 1", task.State, len(task.Attempts))
	}
	id, err = w.c.SubmitCampaignJob(ctx, campaignJob(t, "B", t.TempDir(), "sleep 300", nil))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.c.CancelCampaignJob(ctx, id, "campaign run r1 stopped"); err != nil {
		t.Fatal(err)
	}
	task := w.run(id, 30*time.Second)
	if task.State != model.TaskCancelled {
		t.Fatalf("task %s after cancel", task.State)
	}
	for i := 0; i < 100 && task.Attempts[0].State != model.JobCancelled; i++ {
		if err := w.c.MonitorOnce(ctx); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
		task, _ = w.c.Task(ctx, id)
	}
	if task.Attempts[0].State != model.JobCancelled {
		t.Errorf("the site never confirmed the cancel: attempt %s", task.Attempts[0].State)
	}
	if err := w.c.CancelCampaignJob(ctx, id, "again"); err != nil {
		t.Errorf("cancelling an ended campaign job: %v", err)
	}
	if _, err := w.c.SubmitCampaignJob(ctx, campaignJob(t, "nowhere", t.TempDir(), "true", nil)); err == nil {
		t.Error("a campaign job on a system outside the catalog was accepted")
	}
}

// TestCampaignStatePerCore: each core builds its own campaign state in New: two
// cores in one process have their own exchange and campaigns directory.
func TestCampaignStatePerCore(t *testing.T) {
	a := newSimWorld(t, 1, [][2]string{{"A", ""}}).c
	b := newSimWorld(t, 1, [][2]string{{"A", ""}}).c
	if a.camp == nil || b.camp == nil || a.camp == b.camp {
		t.Fatalf("campaign state not built per core: %p %p", a.camp, b.camp)
	}
	a.SetCampaignsRoot(t.TempDir())
	rootB := t.TempDir()
	b.SetCampaignsRoot(rootB)
	ra, _ := a.campaignsRoot()
	rb, _ := b.campaignsRoot()
	if ra == rb || rb != rootB {
		t.Errorf("campaigns roots %s and %s", ra, rb)
	}
	if a.Exchange() == b.Exchange() {
		t.Fatal("two cores share one exchange")
	}
	ctx := context.Background()
	tok, err := a.CampaignToken(ctx, "run-1", nil)
	if err != nil {
		t.Fatal(err)
	}
	status := func(c *Core) error {
		ts := httptest.NewServer(c.Exchange())
		defer ts.Close()
		cl, err := agent.New(ts.URL, tok)
		if err != nil {
			t.Fatal(err)
		}
		_, err = cl.Status(ctx, agent.AgentID("run-1", "x"))
		return err
	}
	if err := status(a); err != nil {
		t.Fatalf("core a refuses its own token: %v", err)
	}
	if err := status(b); err == nil {
		t.Error("core b's exchange accepts a token core a issued")
	}
}
