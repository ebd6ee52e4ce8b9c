package core

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/provider"
	"github.com/mosaic-hpc/mosaic/internal/provider/simprov"
	"github.com/mosaic-hpc/mosaic/internal/sim"
	"github.com/mosaic-hpc/mosaic/internal/site"
	"github.com/mosaic-hpc/mosaic/internal/store"
)

// These tests run the execution engine against the real simulator (processes really
// run) with fault injection, and check the continuation story in the event log.

const simSystem = `
  - name: %s
    kind: sim
    accounts: [acct]
    arch: x86_64
    partitions:
      - name: gpu
        nodes: 1
        cpu_cores: 16
        memory_gb: 64
        gpus: 4
        gpu_model: A100
        gpu_memory_gb: 40
        max_walltime: 4h
%s`

func noLoad(c *sim.Config) {
	c.WarmUp = -1
	for i := range c.Partitions {
		c.Partitions[i].Load.Utilization = 0
	}
}

type countingProvider struct {
	provider.Provider
	statusCalls atomic.Int64
	statusIDs   atomic.Int64
}

func (p *countingProvider) Status(ctx context.Context, ids []string) (map[string]model.JobStatus, error) {
	p.statusCalls.Add(1)
	p.statusIDs.Add(int64(len(ids)))
	return p.Provider.Status(ctx, ids)
}

func (p *countingProvider) FindByTag(ctx context.Context, tags []string) (map[string]model.JobStatus, error) {
	return p.Provider.(provider.TagFinder).FindByTag(ctx, tags)
}

type simWorld struct {
	t     *testing.T
	c     *Core
	provs map[string]*simprov.Provider
	count map[string]*countingProvider
	clock *worldClock // the simulators' and the core's clock
	speed float64     // the simulators' speed
}

// worldClock is the wall clock of a simWorld: its simulators and its core all read it,
// so while it is held the simulated time of every system stands still and the core
// sees no time pass either. A scenario is set up on a held clock (blockers, probes, the
// submission), so what the placement sees does not depend on how long the setup took
// on a loaded machine; at 600× one real second is ten simulated minutes, in which a
// loaded site's queue changes and faults begin. After release it runs at the wall
// clock's pace from where it stood (run: user jobs are real processes whose run time
// is wall time); until and rounds hold it again and step it, round by round.
type worldClock struct {
	mu    sync.Mutex
	held  bool
	at    time.Time // the reading when held, else the reading at since
	since time.Time // wall time of the last release
}

func newWorldClock(held bool) *worldClock {
	now := time.Now()
	return &worldClock{held: held, at: now, since: now}
}

func (c *worldClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.held {
		return c.at
	}
	return c.at.Add(time.Since(c.since))
}

// release lets the clock run from its current reading (a no-op when it runs, or on a
// nil clock: a world built without one runs on the wall clock).
func (c *worldClock) release() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.held {
		c.held, c.since = false, time.Now()
	}
}

// hold stops the clock at its current reading (a no-op when it is held).
func (c *worldClock) hold() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.held {
		c.at, c.held = c.at.Add(time.Since(c.since)), true
	}
}

// step moves a held clock on by d.
func (c *worldClock) step(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.held {
		panic("worldClock.step on a running clock")
	}
	c.at = c.at.Add(d)
}

// newSimWorld builds a core over simulated systems (name → extra YAML for faults)
// whose clock runs from the start.
func newSimWorld(t *testing.T, speed float64, systems [][2]string) *simWorld {
	t.Helper()
	w := newStillSimWorld(t, speed, systems)
	w.clock.release()
	return w
}

// newStillSimWorld is newSimWorld with the clock held until the test drives the world
// (run, until): simulated time stands still while the scenario is set up.
func newStillSimWorld(t *testing.T, speed float64, systems [][2]string) *simWorld {
	t.Helper()
	var b strings.Builder
	b.WriteString("systems:\n")
	for _, s := range systems {
		fmt.Fprintf(&b, simSystem, s[0], s[1])
	}
	cat, err := site.Parse("test-sites.yaml", []byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	return buildSimWorld(t, speed, 7, cat, func(string) bool { return true })
}

// worldOption changes the core a simWorld is built with.
type worldOption func(*Options)

// withoutReplan turns replanning off, for tests of the overrun, drift and outage
// triggers: with it on, a replan may move the job before the trigger under test fires.
func withoutReplan(o *Options) { o.NoReplan = true }

// buildSimWorld starts one simulator per catalog system (without background load where
// quiet says so), a store and a core over them, all on one held worldClock.
func buildSimWorld(t *testing.T, speed float64, seed int64, cat *site.Catalog, quiet func(system string) bool, wopts ...worldOption) *simWorld {
	t.Helper()
	w := &simWorld{t: t, provs: map[string]*simprov.Provider{}, count: map[string]*countingProvider{}, clock: newWorldClock(true), speed: speed}
	var provs []provider.Provider
	dir := t.TempDir()
	for _, sys := range cat.Systems {
		opts := simprov.Options{Speed: speed, WorkDir: filepath.Join(dir, "sim"), Tick: 20 * time.Millisecond, Clock: w.clock.Now}
		if quiet(sys.Name) {
			opts.Configure = noLoad
		}
		p, err := simprov.New(sys, site.SimGlobal{Seed: seed}, opts)
		if err != nil {
			t.Fatal(err)
		}
		p.Start()
		t.Cleanup(func() { p.Close() })
		w.provs[sys.Name] = p
		cp := &countingProvider{Provider: p}
		w.count[sys.Name] = cp
		provs = append(provs, cp)
	}
	st, err := store.Open(context.Background(), filepath.Join(dir, "m.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	copts := Options{Catalog: cat, Store: st, Providers: provs, Tick: 100 * time.Millisecond, Clock: w.clock.Now}
	for _, o := range wopts {
		o(&copts)
	}
	c, err := New(copts)
	if err != nil {
		t.Fatal(err)
	}
	w.c = c
	c.Refresh(context.Background())
	return w
}

// block fills a system's only node with a long job so the next one waits.
func (w *simWorld) block(system string) {
	w.t.Helper()
	_, err := w.provs[system].Submit(context.Background(), model.JobSpec{Tag: "blocker", Name: "blocker", Partition: "gpu", Account: "acct",
		Nodes: 1, NTasks: 1, CPUsPerTask: 16, GPUs: 4, GPUsPerNode: 4, Walltime: model.Duration(4 * time.Hour), Command: "sleep 300"})
	if err != nil {
		w.t.Fatal(err)
	}
}

// run drives probes and the monitor until the task is final (bounded).
func (w *simWorld) run(id string, limit time.Duration) *TaskDetail {
	w.t.Helper()
	w.clock.release()
	ctx := context.Background()
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		w.c.Refresh(ctx)
		if err := w.c.MonitorOnce(ctx); err != nil {
			w.t.Fatal(err)
		}
		t, err := w.c.Task(ctx, id)
		if err != nil {
			w.t.Fatal(err)
		}
		if t.State.Final() {
			return t
		}
		time.Sleep(100 * time.Millisecond)
	}
	t, _ := w.c.Task(ctx, id)
	evs, _ := w.c.Events(ctx, EventQuery{TaskID: id, Limit: 100})
	for _, e := range evs {
		w.t.Logf("%s %s: %s — %s", e.Kind, e.System, e.Message, e.Rationale)
	}
	w.t.Fatalf("task %s not final after %s: %s", id, limit, t.State)
	return nil
}

func (w *simWorld) submit(req SubmitRequest) string {
	w.t.Helper()
	res, err := w.c.SubmitTask(context.Background(), req)
	if err != nil {
		w.t.Fatal(err)
	}
	return res.Task.ID
}

func (w *simWorld) events(id, kind string) []model.Event {
	evs, err := w.c.Events(context.Background(), EventQuery{TaskID: id, Kinds: []string{kind}, Limit: 100})
	if err != nil {
		w.t.Fatal(err)
	}
	return evs
}

func gpuEnvelope(wall string) *model.Envelope {
	lo, hi, _ := strings.Cut(wall, "..")
	a, _ := model.ParseDuration(lo)
	b, _ := model.ParseDuration(hi)
	return &model.Envelope{GPUs: model.IntRange{Min: 1, Max: 4}, Walltime: model.DurationRange{Min: a, Max: b}}
}

func TestSimTransientFailureIsRetried(t *testing.T) {
	// The node fails 2 simulated minutes in (0.2 s at 600×) for one minute: the running
	// job ends NODE_FAIL, is retried in place, and succeeds once the node is back.
	w := newStillSimWorld(t, 600, [][2]string{{"A@X", `    sim:
      faults:
        node_failures: [{partition: gpu, nodes: 1, at: 2m, duration: 1m}]
`}})
	id := w.submit(SubmitRequest{Name: "flaky", Command: "sleep 1; echo done", Envelope: gpuEnvelope("1h..2h")})
	task := w.run(id, 30*time.Second)
	if task.State != model.TaskSucceeded {
		t.Fatalf("state %s: %s", task.State, task.Reason)
	}
	if len(task.Attempts) != 2 || task.Attempts[0].State != model.JobNodeFail {
		t.Fatalf("want NODE_FAIL then success, got %+v", task.Attempts)
	}
	cont := w.events(id, "continuation")
	if len(cont) != 1 || !strings.Contains(cont[0].Rationale, "transient") {
		t.Fatalf("continuation events %+v", cont)
	}
}

func TestSimTimeoutIsResized(t *testing.T) {
	// At 60× a 1-minute walltime is 1 s real. `sleep 3` used to time out at 1m, be
	// resized to 2m (2 s: timed out again), then 4m, and finish (issue 15: an 8-minute
	// job with --walltime 2m..30m took four attempts). Sizing now asks for walltime.max
	// unless the site says walltime.min starts materially sooner, which an idle site
	// does not: one attempt at 10m.
	w := newSimWorld(t, 60, [][2]string{{"A@X", ""}})
	id := w.submit(SubmitRequest{Name: "slow", Command: "sleep 3", Envelope: gpuEnvelope("1m..10m")})
	task := w.run(id, 40*time.Second)
	if task.State != model.TaskSucceeded {
		t.Fatalf("state %s: %s", task.State, task.Reason)
	}
	var walls []string
	for _, a := range task.Attempts {
		walls = append(walls, fmt.Sprintf("%s:%s", a.Spec.Walltime, a.State))
	}
	if got := strings.Join(walls, " "); got != "10m:succeeded" {
		t.Fatalf("attempts %s", got)
	}
	for _, e := range w.events(id, "continuation") {
		if !strings.Contains(e.Message, "resize") || !strings.Contains(e.Rationale, "walltime") {
			t.Fatalf("continuation %+v", e)
		}
	}
}

func TestSimTimeoutShowsNoExitCode(t *testing.T) {
	// walltime 1m..1m: `sleep 3` (3 simulated minutes at 60×) times out and there is no
	// room to resize. The site killed it, so the attempt has no exit code to show.
	w := newSimWorld(t, 60, [][2]string{{"A@X", ""}})
	id := w.submit(SubmitRequest{Name: "slow", Command: "sleep 3", Envelope: gpuEnvelope("1m..1m")})
	task := w.run(id, 40*time.Second)
	if len(task.Attempts) == 0 {
		t.Fatalf("no attempts; state %s: %s", task.State, task.Reason)
	}
	a := task.Attempts[0]
	if a.State != model.JobTimeout {
		t.Fatalf("attempt 1 is %s, want timeout (task %s: %s)", a.State, task.State, task.Reason)
	}
	if a.ExitCode != nil {
		t.Fatalf("a timed-out attempt shows exit code %d; the site killed it, it has none", *a.ExitCode)
	}
}

func TestSimOutageMigratesPendingJob(t *testing.T) {
	// B is down at first, so the task goes to A, where it queues behind a blocker. Then A
	// goes down (1 simulated minute in) for an hour; after site_down_ticks bad probes the
	// pending job moves to B, which is back up.
	w := newStillSimWorld(t, 60, [][2]string{
		{"A@X", "    sim:\n      faults:\n        outages: [{start: 1m, duration: 1h}]\n"},
		{"B@X", "    sim:\n      faults:\n        outages: [{start: 0s, duration: 20s}]\n"},
	})
	w.block("A@X")
	w.c.Refresh(context.Background())
	if h, _ := w.c.collector.Snapshot().System("B@X"); h.Health.Usable() {
		t.Fatalf("B should be down at first: %+v", h)
	}
	id := w.submit(SubmitRequest{Name: "mover", Command: "echo moved", Envelope: gpuEnvelope("1h..1h"),
		Policy: &model.Policy{SiteDownTicks: 3}})
	if d, _ := w.c.Task(context.Background(), id); d.Attempts[0].System != "A@X" {
		t.Fatalf("first attempt on %s", d.Attempts[0].System)
	}
	task := w.run(id, 30*time.Second)
	if task.State != model.TaskSucceeded {
		t.Fatalf("state %s: %s", task.State, task.Reason)
	}
	last := task.Attempts[len(task.Attempts)-1]
	if last.System != "B@X" {
		t.Fatalf("finished on %s", last.System)
	}
	cont := w.events(id, "continuation")
	if len(cont) == 0 || !strings.Contains(cont[0].Rationale, "A@X has been down") {
		t.Fatalf("continuation %+v", cont)
	}
	if task.Attempts[0].State != model.JobCancelling && task.Attempts[0].State != model.JobCancelled {
		t.Fatalf("the old pending job must be cancelled (or its cancel pending while A is down): %s", task.Attempts[0].State)
	}
}

func TestSimLongQueueWaitMigrates(t *testing.T) {
	// The task queues on A behind a blocker (B is down when it is placed); it may wait
	// at most 2 simulated minutes; once B is up the job moves there and A's job is
	// cancelled only after B accepted the new one.
	w := newStillSimWorld(t, 60, [][2]string{
		{"A@X", ""},
		{"B@X", "    sim:\n      faults:\n        outages: [{start: 0s, duration: 20s}]\n"},
	})
	w.block("A@X")
	w.c.Refresh(context.Background())
	env := gpuEnvelope("1h..1h")
	env.MaxQueueWait = model.Duration(2 * time.Minute)
	id := w.submit(SubmitRequest{Name: "impatient", Command: "echo hi", Envelope: env})
	task := w.run(id, 30*time.Second)
	if task.State != model.TaskSucceeded {
		t.Fatalf("state %s: %s", task.State, task.Reason)
	}
	if len(task.Attempts) != 2 || task.Attempts[0].System != "A@X" || task.Attempts[1].System != "B@X" {
		t.Fatalf("attempts %+v", task.Attempts)
	}
	if task.Attempts[0].State != model.JobCancelled && task.Attempts[0].State != model.JobCancelling {
		t.Fatalf("A's pending job state %s", task.Attempts[0].State)
	}
	cont := w.events(id, "continuation")
	if len(cont) != 1 || !strings.Contains(cont[0].Rationale, "over max_queue_wait") {
		t.Fatalf("continuation %+v", cont)
	}
	// The new job was dispatched before the old one's cancel was requested.
	all, _ := w.c.Events(context.Background(), EventQuery{TaskID: id, Limit: 100})
	dispatched, cancelled := int64(0), int64(0)
	for _, e := range all {
		if e.Kind == "transition" && e.Attempt == 2 && strings.Contains(e.Message, "accepted") && dispatched == 0 {
			dispatched = e.ID
		}
		if e.Attempt == 1 && strings.Contains(e.Message, "cancel") && cancelled == 0 {
			cancelled = e.ID
		}
	}
	if dispatched == 0 || cancelled == 0 || cancelled < dispatched {
		t.Fatalf("cancel (event %d) must come after the new job was accepted (event %d)", cancelled, dispatched)
	}
}

func TestMonitorOneStatusCallPerSite(t *testing.T) {
	// 1,000 active jobs on one site cost one status call per monitor tick.
	w := newSimWorld(t, 60, [][2]string{{"A@X", ""}})
	ctx := context.Background()
	st := w.c.store
	now := time.Now()
	for i := 0; i < 1000; i++ {
		id := fmt.Sprintf("t%04d", i)
		spec := model.JobSpec{Tag: model.JobTag(id, 1), Name: id, Partition: "gpu", Account: "acct", Nodes: 1, NTasks: 1,
			CPUsPerTask: 1, GPUs: 1, GPUsPerNode: 1, Walltime: model.Duration(time.Hour), Command: "sleep 60"}
		jobID, err := w.provs["A@X"].Submit(ctx, spec)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.CreateTask(ctx, &store.TaskRow{Task: model.Task{ID: id, Name: id, Command: "sleep 60", State: model.TaskSubmitted,
			Envelope: *gpuEnvelope("1h..1h"), CreatedAt: now, UpdatedAt: now}}); err != nil {
			t.Fatal(err)
		}
		if err := st.CreateAttempt(ctx, &model.Attempt{TaskID: id, N: 1, Tag: spec.Tag, System: "A@X", Partition: "gpu",
			Spec: spec, JobID: jobID, State: model.JobPending, CreatedAt: now}); err != nil {
			t.Fatal(err)
		}
	}
	cp := w.count["A@X"]
	for tick := 1; tick <= 3; tick++ {
		if err := w.c.MonitorOnce(ctx); err != nil {
			t.Fatal(err)
		}
		if got := cp.statusCalls.Load(); got != int64(tick) {
			t.Fatalf("after %d ticks: %d status calls", tick, got)
		}
	}
	if got := cp.statusIDs.Load(); got != 3000 {
		t.Fatalf("want 1,000 ids per call, got %d over 3 calls", got)
	}
}

func (p *countingProvider) Speed() float64 {
	if s, ok := p.Provider.(interface{ Speed() float64 }); ok {
		return s.Speed()
	}
	return 1
}
