package execution

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/provider"
	"github.com/mosaic-hpc/mosaic/internal/provider/simprov"
	"github.com/mosaic-hpc/mosaic/internal/sim"
	"github.com/mosaic-hpc/mosaic/internal/site"
	"github.com/mosaic-hpc/mosaic/internal/store"
)

// hungProvider is a site whose transport never answers: every call blocks until the
// caller gives up or the test ends (what a login node that accepts the connection and
// then says nothing looks like to the engine).
type hungProvider struct {
	release chan struct{}
	mu      sync.Mutex
	calls   map[string]int
}

func (h *hungProvider) hang(ctx context.Context, op string) error {
	h.mu.Lock()
	h.calls[op]++
	h.mu.Unlock()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-h.release:
		return errors.New("hung site released at the end of the test")
	}
}

func (h *hungProvider) count(op string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.calls[op]
}

func (h *hungProvider) System() string   { return "H" }
func (h *hungProvider) Kind() string     { return "ssh" }
func (h *hungProvider) Endpoint() string { return "127.0.0.1:1" }
func (h *hungProvider) Probe(ctx context.Context) ([]model.ResourceRecord, error) {
	return nil, h.hang(ctx, "probe")
}
func (h *hungProvider) Submit(ctx context.Context, _ model.JobSpec) (string, error) {
	return "", h.hang(ctx, "submit")
}
func (h *hungProvider) Status(ctx context.Context, _ []string) (map[string]model.JobStatus, error) {
	return nil, h.hang(ctx, "status")
}
func (h *hungProvider) FindByTag(ctx context.Context, _ []string) (map[string]model.JobStatus, error) {
	return nil, h.hang(ctx, "findbytag")
}
func (h *hungProvider) Cancel(ctx context.Context, _ []string) error { return h.hang(ctx, "cancel") }
func (h *hungProvider) EstimateStart(ctx context.Context, _ model.JobSpec) (time.Time, error) {
	return time.Time{}, h.hang(ctx, "estimate")
}
func (h *hungProvider) Logs(ctx context.Context, _ string, _ int) (model.Logs, error) {
	return model.Logs{}, h.hang(ctx, "logs")
}

type provMap map[string]provider.Provider

func (m provMap) Provider(s string) (provider.Provider, bool) { p, ok := m[s]; return p, ok }

// fixedPlacer places every task on one partition of the healthy site.
type fixedPlacer struct{ system string }

func (f fixedPlacer) Place(_ context.Context, t *model.Task, exclude []string) (*Placement, error) {
	for _, x := range exclude {
		if x == f.system {
			return nil, errors.New("no other system")
		}
	}
	return &Placement{System: f.system, Partition: "cpu", Account: "acct", Spec: specFor(t), Rationale: "test placement"}, nil
}

func specFor(t *model.Task) model.JobSpec {
	return model.JobSpec{Nodes: 1, NTasks: 1, CPUsPerTask: 1, Walltime: model.Duration(time.Hour), Command: t.Command}
}

func newSimSite(t *testing.T, name string) *simprov.Provider {
	t.Helper()
	cat, err := site.Parse("t.yaml", []byte(`systems:
  - name: `+name+`
    kind: sim
    accounts: [acct]
    partitions:
      - {name: cpu, nodes: 2, cpu_cores: 8, memory_gb: 16, max_walltime: 4h}
`))
	if err != nil {
		t.Fatal(err)
	}
	p, err := simprov.New(cat.Systems[0], site.SimGlobal{Seed: 3}, simprov.Options{Speed: 60, WorkDir: filepath.Join(t.TempDir(), "sim"),
		Tick: 20 * time.Millisecond, Configure: func(c *sim.Config) {
			c.WarmUp = -1
			for i := range c.Partitions {
				c.Partitions[i].Load.Utilization = 0
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	p.Start()
	t.Cleanup(func() { p.Close() })
	return p
}

func newTask(t *testing.T, st *store.Store, id, command string) {
	t.Helper()
	now := time.Now().UTC()
	if err := st.CreateTask(context.Background(), &store.TaskRow{Task: model.Task{ID: id, Name: id, Command: command, State: model.TaskPlaced,
		Envelope:  model.Envelope{CPUCores: model.IntRange{Min: 1, Max: 1}, Walltime: model.DurationRange{Min: model.Duration(time.Hour), Max: model.Duration(time.Hour)}},
		CreatedAt: now, UpdatedAt: now}}); err != nil {
		t.Fatal(err)
	}
}

// within fails the test if fn takes longer than d.
func within(t *testing.T, what string, d time.Duration, fn func() error) {
	t.Helper()
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		t.Logf("%s took %s", what, time.Since(start).Round(time.Millisecond))
	case <-time.After(d):
		t.Fatalf("%s did not finish within %s: something shared is held across the hung site's calls", what, d)
	}
}

func waitState(ctx context.Context, st *store.Store, id string, want model.TaskState, d time.Duration) error {
	deadline := time.Now().Add(d)
	var last model.TaskState
	for time.Now().Before(deadline) {
		tr, err := st.Task(ctx, id)
		if err != nil {
			return err
		}
		if last = tr.State; last == want {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return errors.New("task " + id + " is " + string(last) + ", want " + string(want))
}

func TestHungSiteDelaysNoOtherSite(t *testing.T) {
	// Site H never answers; site A is a real simulator. With H's status call, a submit
	// to H and a cancel on H all hanging, every operation on A completes within a few
	// monitor ticks.
	ctx, cancel := context.WithCancel(context.Background())
	hung := &hungProvider{release: make(chan struct{}), calls: map[string]int{}}
	t.Cleanup(func() { close(hung.release) })
	a := newSimSite(t, "A")
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "m.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	const tick = 50 * time.Millisecond
	e := New(Options{Store: st, Providers: provMap{"A": a, "H": hung}, Placer: fixedPlacer{"A"}, SubmitBackoff: 10 * time.Millisecond})
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })

	// A job already on H: the monitor's status call to H hangs from the first tick.
	newTask(t, st, "onh", "sleep 1")
	spec := specFor(&model.Task{Command: "sleep 1"})
	spec.Tag, spec.System, spec.Partition = model.JobTag("onh", 1), "H", "cpu"
	if err := st.CreateAttempt(ctx, &model.Attempt{TaskID: "onh", N: 1, Tag: spec.Tag, System: "H", Partition: "cpu", Spec: spec,
		JobID: "77", State: model.JobPending, CreatedAt: time.Now().UTC()}); err != nil {
		t.Fatal(err)
	}
	wg.Add(1)
	go func() { defer wg.Done(); e.Run(ctx, tick) }()
	// A submit to H that hangs (with its retries), and a cancel on H that hangs.
	newTask(t, st, "toh", "sleep 1")
	wg.Add(2)
	go func() {
		defer wg.Done()
		_ = e.Dispatch(ctx, "toh", &Placement{System: "H", Partition: "cpu", Spec: specFor(&model.Task{Command: "sleep 1"})}, "test")
	}()
	go func() { defer wg.Done(); _ = e.Cancel(ctx, "onh", "test cancel on the hung site") }()
	deadline := time.Now().Add(5 * time.Second)
	for hung.count("status") == 0 || hung.count("submit") == 0 || hung.count("cancel") == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the hung site was not called: status %d, submit %d, cancel %d", hung.count("status"), hung.count("submit"), hung.count("cancel"))
		}
		time.Sleep(10 * time.Millisecond)
	}

	// Healthy site: submit accepted promptly, the job followed to the end by the monitor.
	newTask(t, st, "ok1", "echo done")
	within(t, "submit to A", time.Second, func() error {
		return e.Dispatch(ctx, "ok1", &Placement{System: "A", Partition: "cpu", Account: "acct", Spec: specFor(&model.Task{Command: "echo done"})}, "test")
	})
	within(t, "monitor sees A's job succeed", 3*time.Second, func() error { return waitState(ctx, st, "ok1", model.TaskSucceeded, 3*time.Second) })

	// Healthy site: a running job is cancelled promptly and the cancel confirmed.
	newTask(t, st, "ok2", "sleep 60")
	within(t, "submit to A", time.Second, func() error {
		return e.Dispatch(ctx, "ok2", &Placement{System: "A", Partition: "cpu", Account: "acct", Spec: specFor(&model.Task{Command: "sleep 60"})}, "test")
	})
	within(t, "monitor sees A's job running", 3*time.Second, func() error { return waitState(ctx, st, "ok2", model.TaskRunning, 3*time.Second) })
	within(t, "cancel on A", time.Second, func() error { return e.Cancel(ctx, "ok2", "test") })
	within(t, "monitor confirms A's cancel", 3*time.Second, func() error {
		deadline := time.Now().Add(3 * time.Second)
		for time.Now().Before(deadline) {
			atts, err := st.Attempts(ctx, "ok2")
			if err != nil {
				return err
			}
			if atts[0].State == model.JobCancelled {
				return nil
			}
			time.Sleep(20 * time.Millisecond)
		}
		return errors.New("attempt not cancelled")
	})
	// The hung site's round is still the one in flight: it was never re-entered.
	if n := hung.count("status"); n != 1 {
		t.Errorf("status calls to the hung site: %d; a site whose round is still running must not get another", n)
	}
}

func TestRecoveryDoesNotWaitForAHungSite(t *testing.T) {
	// After a restart, an attempt left "submitting" on the hung site H cannot be looked
	// up; the orphan on A and a task that never got an attempt carry on meanwhile.
	ctx, cancel := context.WithCancel(context.Background())
	hung := &hungProvider{release: make(chan struct{}), calls: map[string]int{}}
	a := newSimSite(t, "A")
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "m.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	var wg sync.WaitGroup
	t.Cleanup(func() { close(hung.release); cancel(); wg.Wait() })
	orphan := func(task, sys string) {
		newTask(t, st, task, "echo hi")
		spec := specFor(&model.Task{Command: "echo hi"})
		spec.Tag, spec.System, spec.Partition, spec.Account, spec.Name = model.JobTag(task, 1), sys, "cpu", "acct", task
		if err := st.CreateAttempt(ctx, &model.Attempt{TaskID: task, N: 1, Tag: spec.Tag, System: sys, Partition: "cpu", Account: "acct",
			Spec: spec, State: model.JobSubmitting, CreatedAt: time.Now().UTC()}); err != nil {
			t.Fatal(err)
		}
	}
	orphan("onh", "H")
	orphan("ona", "A")
	newTask(t, st, "fresh", "echo hi") // placed before the crash, never dispatched
	time.Sleep(5 * time.Millisecond)
	e := New(Options{Store: st, Providers: provMap{"A": a, "H": hung}, Placer: fixedPlacer{"A"}})
	wg.Add(1)
	go func() { defer wg.Done(); _ = e.Recover(ctx) }()
	within(t, "recovery on A beside a hung H", 2*time.Second, func() error {
		deadline := time.Now().Add(2 * time.Second)
		for time.Now().Before(deadline) {
			x, _ := st.Attempts(ctx, "ona")
			y, _ := st.Attempts(ctx, "fresh")
			if len(x) == 1 && x[0].JobID != "" && len(y) == 1 && y[0].JobID != "" {
				return nil
			}
			time.Sleep(20 * time.Millisecond)
		}
		return errors.New("the orphan on A or the undispatched task is still waiting")
	})
	if hung.count("findbytag") != 1 {
		t.Fatalf("H was asked %d times", hung.count("findbytag"))
	}
}

func TestTaskLocks(t *testing.T) {
	var l taskLocks
	l.m = map[string]*taskLock{}
	ctx := context.Background()
	u1, err := l.lock(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := l.tryLock("a"); ok {
		t.Fatal("a is locked")
	}
	u2, ok := l.tryLock("b")
	if !ok {
		t.Fatal("b is free")
	}
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, err := l.lock(short, "a"); err == nil {
		t.Fatal("lock of a busy task must give up when its context ends")
	}
	u1()
	u2()
	if len(l.m) != 0 {
		t.Fatalf("released locks are kept: %d", len(l.m))
	}
	u3, ok := l.tryLock("a")
	if !ok {
		t.Fatal("a was released")
	}
	u3()
}

// refusingSite is a site whose scheduler refuses every submission (as sbatch does for
// an account the user has no access to); everything else is the real simulator.
type refusingSite struct{ *simprov.Provider }

func (r refusingSite) Submit(context.Context, model.JobSpec) (string, error) {
	return "", errors.New("sbatch: error: Batch job submission failed: Invalid account or account/partition combination specified")
}

func TestRefusedMoveKeepsTheOldJob(t *testing.T) {
	// The job overruns max_queue_wait on A (behind a blocker); the move to R is refused.
	// The task must keep its pending job on A, not fail while that job is still queued.
	ctx := context.Background()
	a := newSimSite(t, "A")
	r := refusingSite{newSimSite(t, "R")}
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "m.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	// Two blockers fill A's two 8-core nodes.
	blocker := model.JobSpec{Tag: "blocker", Name: "blocker", Partition: "cpu", Account: "acct", Nodes: 1, NTasks: 1, CPUsPerTask: 8,
		Walltime: model.Duration(4 * time.Hour), Command: "sleep 300"}
	for i := 0; i < 2; i++ {
		if _, err := a.Submit(ctx, blocker); err != nil {
			t.Fatal(err)
		}
	}
	e := New(Options{Store: st, Providers: provMap{"A": a, "R": r}, Placer: fixedPlacer{"R"}})
	pol, _ := json.Marshal(model.Policy{MigrateMargin: model.Duration(time.Second)}) // any sooner start is worth a move
	now := time.Now().UTC()
	if err := st.CreateTask(ctx, &store.TaskRow{Task: model.Task{ID: "moving", Name: "moving", Command: "echo hi", State: model.TaskPlaced,
		Envelope: model.Envelope{CPUCores: model.IntRange{Min: 1, Max: 1}, Walltime: model.DurationRange{Min: model.Duration(time.Hour), Max: model.Duration(time.Hour)},
			MaxQueueWait: model.Duration(time.Minute)}, CreatedAt: now, UpdatedAt: now}, Policy: pol}); err != nil {
		t.Fatal(err)
	}
	if err := e.Dispatch(ctx, "moving", &Placement{System: "A", Partition: "cpu", Account: "acct", Spec: specFor(&model.Task{Command: "echo hi"})}, "test"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if err := e.Tick(ctx); err != nil {
			t.Fatal(err)
		}
		atts, _ := st.Attempts(ctx, "moving")
		if len(atts) >= 2 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	tr, _ := st.Task(ctx, "moving")
	atts, _ := st.Attempts(ctx, "moving")
	evs, _ := st.Events(ctx, store.EventQuery{TaskID: "moving", Limit: 100})
	if len(atts) < 2 || atts[1].State != model.JobSubmitError {
		for _, ev := range evs {
			t.Logf("%s %s — %s", ev.Kind, ev.Message, ev.Rationale)
		}
		t.Fatalf("no refused move happened: %s", atts[0].State)
	}
	if tr.State.Final() || atts[0].State != model.JobPending {
		for _, ev := range evs {
			t.Logf("%s %s — %s", ev.Kind, ev.Message, ev.Rationale)
		}
		t.Fatalf("task %s, A's job %s: a refused move must keep the queued job", tr.State, atts[0].State)
	}
	found := false
	for _, ev := range evs {
		found = found || strings.HasPrefix(ev.Message, "stay on A: the move was refused")
	}
	if !found {
		t.Fatal("no event says the task stays after the refused move")
	}
}

// TestContinuationsCountTheActionTaken: OnContinuation (mosaic_continuations_total)
// is told the action that happened, not the one decided: a pinned task whose site
// refuses its submission is decided "migrate", cannot move, and fails — one "fail",
// no "migrate".
func TestContinuationsCountTheActionTaken(t *testing.T) {
	ctx := context.Background()
	r := refusingSite{newSimSite(t, "R")}
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "m.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	var mu sync.Mutex
	counted := map[string]int{}
	e := New(Options{Store: st, Providers: provMap{"R": r}, Placer: fixedPlacer{"R"}, OnContinuation: func(action string) {
		mu.Lock()
		counted[action]++
		mu.Unlock()
	}})
	now := time.Now().UTC()
	if err := st.CreateTask(ctx, &store.TaskRow{Task: model.Task{ID: "pinned", Name: "pinned", Command: "echo hi", State: model.TaskPlaced,
		Target:    &model.Target{System: "R"},
		Envelope:  model.Envelope{CPUCores: model.IntRange{Min: 1, Max: 1}, Walltime: model.DurationRange{Min: model.Duration(time.Hour), Max: model.Duration(time.Hour)}},
		CreatedAt: now, UpdatedAt: now}}); err != nil {
		t.Fatal(err)
	}
	if err := e.Dispatch(ctx, "pinned", &Placement{System: "R", Partition: "cpu", Account: "acct", Spec: specFor(&model.Task{Command: "echo hi"})}, "test"); err != nil {
		t.Fatal(err)
	}
	tr, _ := st.Task(ctx, "pinned")
	if tr.State != model.TaskFailed || !strings.Contains(tr.Reason, "cannot move") {
		t.Fatalf("task %s (%s), want failed: pinned and refused", tr.State, tr.Reason)
	}
	mu.Lock()
	defer mu.Unlock()
	if counted["fail"] != 1 || counted["migrate"] != 0 || len(counted) != 1 {
		t.Fatalf("continuations counted %v, want exactly one fail", counted)
	}
}
