package core

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/agent"
	"github.com/mosaic-hpc/mosaic/internal/campaign"
	"github.com/mosaic-hpc/mosaic/internal/config"
	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/provider"
	"github.com/mosaic-hpc/mosaic/internal/provider/simprov"
	"github.com/mosaic-hpc/mosaic/internal/site"
	"github.com/mosaic-hpc/mosaic/internal/store"
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

// faultySite is a real simulator whose submit answers and tag look-ups can be
// lost, as when the ssh connection drops while sbatch runs
// (provider.ErrOutcomeUnknown) and the login node then does not answer.
type faultySite struct {
	*simprov.Provider
	mu         sync.Mutex
	submits    int
	loseAnswer int // submits that queue the job and then lose the answer
	dropSubmit int // submits lost on the way: the job never reaches the queue
	findFails  int // look-ups by tag still to fail (-1: every one)
	delay      time.Duration
}

func (f *faultySite) Submit(ctx context.Context, spec model.JobSpec) (string, error) {
	f.mu.Lock()
	f.submits++
	drop, lose := f.dropSubmit > 0, f.loseAnswer > 0
	if drop {
		f.dropSubmit--
	} else if lose {
		f.loseAnswer--
	}
	delay := f.delay
	f.mu.Unlock()
	time.Sleep(delay)
	lost := fmt.Errorf("ssh %s: connection closed while sbatch ran: %w", spec.System, provider.ErrOutcomeUnknown)
	if drop {
		return "", lost
	}
	id, err := f.Provider.Submit(ctx, spec)
	if err != nil || !lose {
		return id, err
	}
	return "", lost
}

func (f *faultySite) FindByTag(ctx context.Context, tags []string) (map[string]model.JobStatus, error) {
	f.mu.Lock()
	fail := f.findFails != 0
	if f.findFails > 0 {
		f.findFails--
	}
	f.mu.Unlock()
	if fail {
		return nil, fmt.Errorf("ssh %s: connection timed out: %w", f.System(), provider.ErrSiteDown)
	}
	return f.Provider.FindByTag(ctx, tags)
}

func (f *faultySite) set(fn func(*faultySite)) { f.mu.Lock(); fn(f); f.mu.Unlock() }

func (f *faultySite) count() int { f.mu.Lock(); defer f.mu.Unlock(); return f.submits }

// newFaultyWorld is a core over one quiet simulated system A whose provider is
// a faultySite.
func newFaultyWorld(t *testing.T) (*simWorld, *faultySite) {
	t.Helper()
	cat, err := site.Parse("test-sites.yaml", []byte("systems:\n"+fmt.Sprintf(simSystem, "A", "")))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	p, err := simprov.New(cat.Systems[0], site.SimGlobal{Seed: 7}, simprov.Options{Speed: 1, WorkDir: filepath.Join(dir, "sim"), Tick: 20 * time.Millisecond, Configure: noLoad})
	if err != nil {
		t.Fatal(err)
	}
	p.Start()
	t.Cleanup(func() { p.Close() })
	f := &faultySite{Provider: p}
	st, err := store.Open(context.Background(), filepath.Join(dir, "m.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	c, err := New(Options{Catalog: cat, Store: st, Providers: []provider.Provider{f}, Tick: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	c.Refresh(context.Background())
	return &simWorld{t: t, c: c, provs: map[string]*simprov.Provider{"A": p}}, f
}

// atSite is the simulator's view of the job named tag ("" if it has none).
func atSite(t *testing.T, p *simprov.Provider, tag string) model.JobStatus {
	t.Helper()
	found, err := p.FindByTag(context.Background(), []string{tag})
	if err != nil {
		t.Fatal(err)
	}
	return found[tag]
}

// TestCampaignJobNotResubmittedWithoutItsEnv: the submit of a slice whose job
// carries forwarded values is lost on the way and the site cannot say at once
// whether it has the job; when the monitor later finds no job by its name, it
// must not submit the stored spec again (it would run without the values): the
// attempt is lost and the task fails saying why.
func TestCampaignJobNotResubmittedWithoutItsEnv(t *testing.T) {
	w, site := newFaultyWorld(t)
	site.set(func(f *faultySite) { f.dropSubmit, f.findFails = 1, 1 })
	ctx := context.Background()
	const secret = "s3cr3t-forwarded-value"
	id, err := w.c.SubmitCampaignJob(ctx, campaignJob(t, "A", t.TempDir(), `echo "$FWD_TOKEN"`, map[string]string{"FWD_TOKEN": secret}))
	if err != nil {
		t.Fatal(err)
	}
	task := w.run(id, 20*time.Second)
	if task.State != model.TaskFailed || len(task.Attempts) != 1 || task.Attempts[0].State != model.JobLost {
		t.Fatalf("task %s with %d attempts (%+v), want failed after one lost attempt", task.State, len(task.Attempts), task.Attempts)
	}
	if n := site.count(); n != 1 {
		t.Errorf("the site was asked to submit %d times: the job was submitted again without its forwarded values", n)
	}
	if !strings.Contains(task.Reason, "forwarded variables are not stored") {
		t.Errorf("reason %q does not say why it was not resubmitted", task.Reason)
	}
	evs, _ := w.c.Events(ctx, EventQuery{TaskID: id, Limit: 100})
	for _, e := range evs {
		if strings.Contains(e.Message+e.Rationale, secret) {
			t.Errorf("an event carries the forwarded value: %+v", e)
		}
	}
}

// TestCampaignJobNotPlacedAgainAfterRestart: Mosaic stopped between storing a
// slice's task and its first attempt. After the restart, recovery must not
// place and submit it under a default job name without its values and with no
// launcher following it: the task fails, telling the user to relaunch.
func TestCampaignJobNotPlacedAgainAfterRestart(t *testing.T) {
	w := newSimWorld(t, 1, [][2]string{{"A", ""}})
	ctx := context.Background()
	before := time.Now().Add(-time.Minute).UTC() // stored by the process that stopped
	row := &store.TaskRow{Task: model.Task{ID: "t-campaign-left", Name: "campaign r1 on A", Command: "true", State: model.TaskPlaced,
		Target:    &model.Target{System: "A", Partition: "gpu"},
		Envelope:  model.Envelope{Nodes: model.IntRange{Min: 1, Max: 1}, CPUCores: model.IntRange{Min: 1, Max: 1}, Walltime: model.DurationRange{Min: model.Duration(time.Hour), Max: model.Duration(time.Hour)}},
		CreatedAt: before, UpdatedAt: before}, CampaignRun: "r1", UnstoredEnv: true}
	if err := w.c.store.CreateTask(ctx, row); err != nil {
		t.Fatal(err)
	}
	if err := w.c.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	task, err := w.c.Task(ctx, row.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(task.Attempts) != 0 {
		t.Fatalf("recovery submitted the campaign slice's job itself: %+v", task.Attempts)
	}
	if task.State != model.TaskFailed || !strings.Contains(task.Reason, "campaign run r1") || !strings.Contains(task.Reason, "Relaunch") {
		t.Errorf("task %s: %q, want failed telling the user to relaunch", task.State, task.Reason)
	}
}

// TestCancelOfAnUnknownSubmitCancelsTheJob: a slice's job was queued but the
// submit's answer was lost (the attempt has no job id). Cancelling must find the
// job by its name and cancel it at the site; when the site cannot be asked, the
// cancel is pending (not reported done) and the monitor cancels the job once it
// finds it.
func TestCancelOfAnUnknownSubmitCancelsTheJob(t *testing.T) {
	for _, tc := range []struct {
		name      string
		findFails int // look-ups failing: the dispatch's, then the cancel's
		pending   bool
	}{
		{"site answers the look-up", 1, false},
		{"site silent at cancel time", 2, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, site := newFaultyWorld(t)
			site.set(func(f *faultySite) { f.loseAnswer, f.findFails = 1, tc.findFails })
			ctx := context.Background()
			req := campaignJob(t, "A", t.TempDir(), "sleep 300", nil)
			id, err := w.c.SubmitCampaignJob(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			task, _ := w.c.Task(ctx, id)
			if len(task.Attempts) != 1 || task.Attempts[0].JobID != "" {
				t.Fatalf("want one attempt without a job id, got %+v", task.Attempts)
			}
			if st := atSite(t, w.provs["A"], req.Spec.Tag); st.JobID == "" || st.State.Final() {
				t.Fatalf("the job is not queued at the site: %+v", st)
			}
			err = w.c.CancelCampaignJob(ctx, id, "campaign run r1 stopped")
			if tc.pending != errors.Is(err, campaign.ErrCancelPending) {
				t.Fatalf("cancel: %v; want pending %v", err, tc.pending)
			}
			if !tc.pending && err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 100; i++ {
				task, _ = w.c.Task(ctx, id)
				if task.Attempts[0].State == model.JobCancelled {
					break
				}
				if err := w.c.MonitorOnce(ctx); err != nil {
					t.Fatal(err)
				}
				time.Sleep(50 * time.Millisecond)
			}
			if task.State != model.TaskCancelled || task.Attempts[0].State != model.JobCancelled || task.Attempts[0].JobID == "" {
				t.Errorf("task %s, attempt %+v: want cancelled with the job found", task.State, task.Attempts[0])
			}
			if st := atSite(t, w.provs["A"], req.Spec.Tag); !st.State.Final() {
				t.Errorf("the job is still %s at the site after its task was cancelled", st.State)
			}
		})
	}
}

// TestCampaignJobCancelPendingIsNotDone: the site does not take the cancel;
// CancelCampaignJob must say the cancel is pending (so that `campaign stop`
// cancels the job at the site itself), and so must a second ask while the
// attempt is still being cancelled.
func TestCampaignJobCancelPendingIsNotDone(t *testing.T) {
	w := newSimWorld(t, 1, [][2]string{{"A", ""}})
	ctx := context.Background()
	id, err := w.c.SubmitCampaignJob(ctx, campaignJob(t, "A", t.TempDir(), "sleep 300", nil))
	if err != nil {
		t.Fatal(err)
	}
	w.provs["A"].Close() // the site stops answering
	for i := 0; i < 2; i++ {
		if err := w.c.CancelCampaignJob(ctx, id, "campaign run r1 stopped"); !errors.Is(err, campaign.ErrCancelPending) {
			t.Fatalf("cancel %d of a job the site did not take: %v, want ErrCancelPending", i+1, err)
		}
	}
	task, _ := w.c.Task(ctx, id)
	if task.Attempts[0].State != model.JobCancelling {
		t.Errorf("attempt %s, want cancelling (the monitor asks again)", task.Attempts[0].State)
	}
}

// TestSlowCampaignSubmitIsNotAFailure: the submit succeeds after the caller's
// deadline; the job is queued, so reading what the engine recorded must not
// fail the launch (whose error path cancels the job).
func TestSlowCampaignSubmitIsNotAFailure(t *testing.T) {
	w, site := newFaultyWorld(t)
	site.set(func(f *faultySite) { f.delay = 600 * time.Millisecond })
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	id, err := w.c.SubmitCampaignJob(ctx, campaignJob(t, "A", t.TempDir(), "sleep 300", nil))
	if err != nil {
		t.Fatalf("a slow submit that queued the job was reported as failed: %v", err)
	}
	v, err := w.c.CampaignJob(context.Background(), id)
	if err != nil || v.JobID == "" || v.TaskState != model.TaskSubmitted {
		t.Errorf("job view %+v %v", v, err)
	}
}

// TestCampaignTaskIsNotReplanned: a slice's job runs once where the launch put
// it; replanning it would break that promise.
func TestCampaignTaskIsNotReplanned(t *testing.T) {
	w := newSimWorld(t, 1, [][2]string{{"A", ""}, {"B", ""}})
	ctx := context.Background()
	id, err := w.c.SubmitCampaignJob(ctx, campaignJob(t, "A", t.TempDir(), "sleep 300", nil))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.c.CancelCampaignJob(context.Background(), id, "test over") })
	for _, clear := range []bool{false, true} {
		_, err := w.c.ReplanTask(ctx, id, clear)
		if err == nil || !strings.Contains(err.Error(), "campaign") || !strings.Contains(err.Error(), "stop or relaunch") {
			t.Errorf("replan (clear target %v) of a campaign task: %v", clear, err)
		}
	}
	task, _ := w.c.Task(ctx, id)
	if len(task.Attempts) != 1 || task.Target == nil || task.Target.System != "A" {
		t.Errorf("after the refused replans: %d attempts, target %+v", len(task.Attempts), task.Target)
	}
}

// TestSubmitBackendPollReportsATaskThatEndedBeforeTheSite: the launcher follows
// a slice whose job never reached the site (its attempt is still submitting)
// and whose task ended meanwhile; Poll must report the end with the task's
// reason instead of "not at the site yet" forever.
func TestSubmitBackendPollReportsATaskThatEndedBeforeTheSite(t *testing.T) {
	w, fs := newFaultyWorld(t)
	fs.set(func(f *faultySite) { f.dropSubmit, f.findFails = 1, -1 })
	ctx := context.Background()
	sp := campaign.SiteSpec{Name: "A", Mode: campaign.ModeSubmit, Queue: "gpu", Walltime: model.Duration(time.Hour), Agents: []string{"coordinator"}, WorkDir: t.TempDir()}
	rd, err := campaign.CreateRunDir(filepath.Join(t.TempDir(), "runs"), campaign.RunState{RunID: "r1", Sites: []campaign.SiteState{{SiteSpec: sp}}})
	if err != nil {
		t.Fatal(err)
	}
	l := campaign.SiteLaunch{Spec: sp, RunID: "r1", Campaign: "/c/chat.jsonc", MosaicBin: "/bin/false", Exchange: "http://127.0.0.1:1",
		Tokens: map[string]string{"coordinator": "mxa_t"}, Startup: time.Minute, Dir: rd, Out: io.Discard}
	b, err := campaign.NewSubmitBackend(site.System{Name: "A", Kind: site.KindLocal, Accounts: []string{"acct"}}, l, nil, w.c)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.Start(ctx); err != nil {
		t.Fatal(err)
	}
	id := rd.State().Sites[0].TaskID
	if _, done, err := b.Poll(ctx); done || err != nil || id == "" {
		t.Fatalf("poll while the submit's outcome is unknown: done %v, %v (task %q)", done, err, id)
	}
	// Another core on the store ended it (a restart's recovery, a user's decision).
	why, failed := "failed by the test: the submit never reached the site", model.TaskFailed
	if err := w.c.store.UpdateTask(ctx, id, store.TaskUpdate{State: &failed, Reason: &why}); err != nil {
		t.Fatal(err)
	}
	_, done, err := b.Poll(ctx)
	if !done || err == nil || !strings.Contains(err.Error(), why) {
		t.Fatalf("poll of an ended task: done %v, %v; want done with the task's reason", done, err)
	}
}

// TestOpenMonitorEveryLeavesTheProbeTick: a campaign launcher's core follows its
// jobs every few seconds (OpenOptions.MonitorEvery) while its probes of the
// catalog's real sites keep the default tick.
func TestOpenMonitorEveryLeavesTheProbeTick(t *testing.T) {
	dir := t.TempDir()
	sites := filepath.Join(dir, "sites.yaml")
	if err := os.WriteFile(sites, []byte("systems:\n  - name: Far\n    kind: ssh\n    host: 127.0.0.1\n    accounts: [a]\n    partitions:\n      - {name: cpu, nodes: 1, cpu_cores: 8, memory_gb: 16}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := &config.Config{SitesFile: sites, DBPath: filepath.Join(dir, "m.db"), StateDir: filepath.Join(dir, "state")}
	c, err := Open(context.Background(), OpenOptions{Config: cfg, MonitorEvery: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.monitor != 5*time.Second || c.collector.Tick() != DefaultLiveTick {
		t.Errorf("monitor every %s, probe tick %s; want 5s and %s", c.monitor, c.collector.Tick(), DefaultLiveTick)
	}
}

// TestSlowSubmitDoesNotFailTheLaunch: the launcher's submit outlives its
// deadline but queues the job; the launcher must record the job and go on (a
// failed Start stops the site, cancelling a job that was fine).
func TestSlowSubmitDoesNotFailTheLaunch(t *testing.T) {
	w, fs := newFaultyWorld(t)
	fs.set(func(f *faultySite) { f.delay = 600 * time.Millisecond })
	sp := campaign.SiteSpec{Name: "A", Mode: campaign.ModeSubmit, Queue: "gpu", Walltime: model.Duration(time.Hour), Agents: []string{"coordinator"}, WorkDir: t.TempDir()}
	rd, err := campaign.CreateRunDir(filepath.Join(t.TempDir(), "runs"), campaign.RunState{RunID: "r1", Sites: []campaign.SiteState{{SiteSpec: sp}}})
	if err != nil {
		t.Fatal(err)
	}
	l := campaign.SiteLaunch{Spec: sp, RunID: "r1", Campaign: "/c/chat.jsonc", MosaicBin: "/bin/false", Exchange: "http://127.0.0.1:1",
		Tokens: map[string]string{"coordinator": "mxa_t"}, Startup: time.Minute, Dir: rd, Out: io.Discard, SubmitTimeout: 300 * time.Millisecond}
	b, err := campaign.NewSubmitBackend(site.System{Name: "A", Kind: site.KindLocal, Accounts: []string{"acct"}}, l, nil, w.c)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.Start(context.Background()); err != nil {
		t.Fatalf("a slow submit that queued the job failed the launch: %v", err)
	}
	s := rd.State().Sites[0]
	if s.TaskID == "" || s.SubmittedJob == "" || s.JobTag != "mosaic-c-r1-A" {
		t.Errorf("run directory after the slow submit: task %q, job %q, tag %q", s.TaskID, s.SubmittedJob, s.JobTag)
	}
}

// TestCampaignJobIdempotencyKey: a campaign job submitted again with the same
// Idempotency-Key and request (a launcher retrying after a lost answer) is the
// task the first stored — replayed, Stored told its id, its job submitted once —
// while the same key with another request is refused, a key is the submitting
// user's own, and no key is a new task each time. The stored hash does not hold
// the forwarded value.
func TestCampaignJobIdempotencyKey(t *testing.T) {
	w := newSimWorld(t, 1, [][2]string{{"A", ""}})
	alice := model.WithCaller(context.Background(), model.Caller{Name: "alice"})
	bob := model.WithCaller(context.Background(), model.Caller{Name: "bob"})
	const secret = "idem-fwd-s3cr3t"
	req := campaignJob(t, "A", t.TempDir(), "sleep 600", map[string]string{"FWD_TOKEN": secret})
	first, replayed, err := w.c.SubmitCampaignJobIdempotent(alice, req, "k1")
	if err != nil || first == "" || replayed {
		t.Fatalf("first: %q replayed=%v %v", first, replayed, err)
	}
	var told string
	again := req
	again.Stored = func(id string) { told = id }
	id, replayed, err := w.c.SubmitCampaignJobIdempotent(alice, again, "k1")
	if err != nil || id != first || !replayed || told != first {
		t.Fatalf("retry: %q replayed=%v stored %q %v; want task %s replayed", id, replayed, told, err, first)
	}
	task, err := w.c.Task(alice, first)
	if err != nil || len(task.Attempts) != 1 {
		t.Fatalf("task %s after the retry: %d attempts %v; want the one job", first, len(task.Attempts), err)
	}
	other := req
	other.Spec.Command = "sleep 601"
	if id, _, err := w.c.SubmitCampaignJobIdempotent(alice, other, "k1"); !errors.Is(err, ErrInvalid) || id != "" {
		t.Fatalf("same key, another request: %q %v; want ErrInvalid and no task", id, err)
	}
	// Bob's k1 is not Alice's: his own run's job is a new task (not a refusal for
	// another request, nor Alice's task).
	bobs := campaignJob(t, "A", t.TempDir(), "sleep 600", nil)
	bobs.RunID, bobs.Spec.Tag = "r2", "mosaic-c-r2-A"
	id, replayed, err = w.c.SubmitCampaignJobIdempotent(bob, bobs, "k1")
	if err != nil || replayed || id == "" || id == first {
		t.Fatalf("bob with alice's key: %q replayed=%v %v; want a new task", id, replayed, err)
	}
	nokey := req
	nokey.Spec.Tag = "mosaic-c-r1-A-2" // a job's tag is unique: the same one again fails its dispatch
	if id, replayed, err := w.c.SubmitCampaignJobIdempotent(alice, nokey, ""); err != nil || replayed || id == first {
		t.Fatalf("without a key: %q replayed=%v %v; want a new task", id, replayed, err)
	}
	row, err := w.c.store.TaskByIdempotencyKey(alice, "5:alice:k1")
	if err != nil || row.ID != first || row.IdempotencyHash == "" || strings.Contains(row.IdempotencyHash, secret) {
		t.Fatalf("stored key: %+v %v", row, err)
	}
	withOtherValue := req
	withOtherValue.Spec.Env = map[string]string{"FWD_TOKEN": "another"}
	if campaignJobHash(withOtherValue) != row.IdempotencyHash {
		t.Error("the hash depends on the forwarded value; it must not be derived from it")
	}
}
