package campaign

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/agent"
)

// phaseRig is a launch planned on two local sites (no backend built yet).
func phaseRig(t *testing.T) (*LaunchOptions, []sitePlan) {
	t.Helper()
	r := newLaunchRig(t, func(*scriptedBackend) {})
	o := r.opts
	o.Out = &r.out
	o.defaults()
	plan, err := planLaunch(&o)
	if err != nil {
		t.Fatal(err)
	}
	return &o, plan
}

// TestSetupExchangeEmbedded: the launcher's own exchange serves the run with the
// campaign registered (an agent's derived token opens its mailbox), every site is
// handed its URL, and Close takes it down.
func TestSetupExchangeEmbedded(t *testing.T) {
	o, plan := phaseRig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	x, err := setupExchange(ctx, o, plan)
	if err != nil {
		t.Fatal(err)
	}
	if x.srv == nil || x.token == "" || !strings.HasPrefix(x.localURL, "http://127.0.0.1:") {
		t.Fatalf("exchange %+v", x)
	}
	for _, p := range plan {
		if x.siteURL[p.spec.Name] != x.localURL {
			t.Errorf("site %s gets %q, want %s", p.spec.Name, x.siteURL[p.spec.Name], x.localURL)
		}
	}
	c, err := agent.New(x.localURL, agent.TokenFor(x.token, o.RunID, "coordinator"))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Register(ctx, agent.AgentID(o.RunID, "coordinator")); err != nil {
		t.Fatalf("the coordinator's own token: %v", err)
	}
	x.Close()
	if _, err := c.Status(ctx, agent.AgentID(o.RunID, "coordinator")); err == nil {
		t.Error("the exchange still answers after Close")
	}
}

// TestSetupExchangeRefusesAgentToken: an external exchange needs the run's token;
// an agent's is refused before anything is persisted.
func TestSetupExchangeRefusesAgentToken(t *testing.T) {
	o, plan := phaseRig(t)
	o.ExchangeURL, o.ExchangeToken = "http://127.0.0.1:1", agent.TokenFor("run-token", o.RunID, "coordinator")
	if _, err := setupExchange(context.Background(), o, plan); err == nil || !strings.Contains(err.Error(), "not an agent token") {
		t.Fatalf("err %v", err)
	}
	if _, err := os.Stat(filepath.Join(o.Root, o.RunID)); !os.IsNotExist(err) {
		t.Errorf("a run directory exists after a refused exchange: %v", err)
	}
}

// TestPersistRunBeforeRemoteWork: the run directory records every planned site with
// its exchange URL, the launcher's pid and the tasks' store, and the run token
// (0600) before any backend exists; a run id is used once.
func TestPersistRunBeforeRemoteWork(t *testing.T) {
	o, plan := phaseRig(t)
	o.TasksStore = "/state/mosaic.db"
	x := &launchExchange{agentURL: "http://a:1", token: "tok-1", siteURL: map[string]string{"aurora": "http://t:2", "crux": "http://a:1"}}
	run, err := persistRun(o, plan, x)
	if err != nil {
		t.Fatal(err)
	}
	d, err := OpenRunDir(o.Root, o.RunID)
	if err != nil {
		t.Fatal(err)
	}
	st := d.State()
	if st.State != RunStarting || st.LauncherPID != os.Getpid() || st.TasksStore != "/state/mosaic.db" || st.ExchangeURL != "http://a:1" || len(st.Sites) != 2 {
		t.Fatalf("state %+v", st)
	}
	for _, s := range st.Sites {
		if s.State != "planned" || s.Exchange != x.siteURL[s.Name] {
			t.Errorf("site %+v", s)
		}
	}
	fi, err := os.Stat(filepath.Join(run.dir.Path, "token"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v %v", fi, err)
	}
	if tok, _ := d.Token(); tok != "tok-1" {
		t.Errorf("token %q", tok)
	}
	if _, err := persistRun(o, plan, x); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("a second run with the same id: %v", err)
	}
}

// TestSubmitSiteNeedsTheCoresJobs: a submit-mode site without Jobs never submits
// behind the engine's back: it fails to start, saying why, and every site is stopped.
func TestSubmitSiteNeedsTheCoresJobs(t *testing.T) {
	r := newLaunchRig(t, func(*scriptedBackend) {})
	r.opts.Sites = []SiteSpec{{Name: "aurora", Mode: ModeSubmit, Queue: "q", Walltime: 60e9, Agents: []string{"coordinator", "worker-a", "worker-b"}}}
	r.opts.Catalog.Systems[0].WorkDir = t.TempDir()
	r.opts.NewBackend = nil
	err := Launch(context.Background(), r.opts)
	if err == nil || !strings.Contains(err.Error(), "LaunchOptions.Jobs") {
		t.Fatalf("err %v", err)
	}
	d, _ := OpenRunDir(r.opts.Root, "t1")
	if d.State().State != RunFailed {
		t.Errorf("run state %s", d.State().State)
	}
}
