package execution

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/provider"
	"github.com/mosaic-hpc/mosaic/internal/provider/simprov"
	"github.com/mosaic-hpc/mosaic/internal/scheduler"
	"github.com/mosaic-hpc/mosaic/internal/store"
)

// replanRig is two simulated sites (60×, 2 nodes of 8 cores each) and an engine whose
// placer proposes B, else A; replanning weighs each pending job every 6 site-seconds
// (0.1 s of wall clock) so a test sees several checks per second.
type replanRig struct {
	ctx  context.Context
	a, b *simprov.Provider
	st   *store.Store
	e    *Engine
}

func newReplanRig(t *testing.T, wrapA, wrapB func(*simprov.Provider) provider.Provider) *replanRig {
	t.Helper()
	ctx := context.Background()
	r := &replanRig{ctx: ctx, a: newSimSite(t, "A"), b: newSimSite(t, "B")}
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "m.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	r.st = st
	provs := provMap{"A": r.a, "B": r.b}
	if wrapA != nil {
		provs["A"] = wrapA(r.a)
	}
	if wrapB != nil {
		provs["B"] = wrapB(r.b)
	}
	r.e = New(Options{Store: st, Providers: provs, Placer: orderedPlacer{"B", "A"}, ReplanEvery: 6 * time.Second})
	return r
}

// orderedPlacer places on the first of its systems not excluded.
type orderedPlacer []string

func (o orderedPlacer) Place(ctx context.Context, t *model.Task, exclude []string) (*Placement, error) {
	for _, s := range o {
		if !slices.Contains(exclude, s) {
			return fixedPlacer{s}.Place(ctx, t, exclude)
		}
	}
	return nil, errors.New("no other system")
}

// block fills both nodes of p with 8-core jobs asking for wall of walltime.
func (r *replanRig) block(t *testing.T, p *simprov.Provider, wall time.Duration) []string {
	t.Helper()
	var ids []string
	for i := range 2 {
		id, err := p.Submit(r.ctx, model.JobSpec{Tag: fmt.Sprintf("blocker-%d", i), Name: "blocker", Partition: "cpu", Account: "acct", Nodes: 1, NTasks: 1,
			CPUsPerTask: 8, Walltime: model.Duration(wall), Command: "sleep 300"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

// task creates a task with the given move budget and dispatches it to A.
func (r *replanRig) task(t *testing.T, id, command string, maxMigrations int) {
	t.Helper()
	pol, _ := json.Marshal(model.Policy{MaxMigrations: maxMigrations})
	now := time.Now().UTC()
	if err := r.st.CreateTask(r.ctx, &store.TaskRow{Task: model.Task{ID: id, Name: id, Command: command, State: model.TaskPlaced,
		Envelope:  model.Envelope{CPUCores: model.IntRange{Min: 1, Max: 1}, Walltime: model.DurationRange{Min: model.Duration(time.Hour), Max: model.Duration(time.Hour)}},
		CreatedAt: now, UpdatedAt: now}, Policy: pol}); err != nil {
		t.Fatal(err)
	}
	if err := r.e.Dispatch(r.ctx, id, &Placement{System: "A", Partition: "cpu", Account: "acct", Spec: specFor(&model.Task{Command: command})}, "test"); err != nil {
		t.Fatal(err)
	}
}

// tickUntil ticks the engine until cond holds or d passes; it reports whether cond held.
func (r *replanRig) tickUntil(t *testing.T, d time.Duration, cond func() bool) bool {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if err := r.e.Tick(r.ctx); err != nil {
			t.Fatal(err)
		}
		if cond() {
			return true
		}
		time.Sleep(30 * time.Millisecond)
	}
	return cond()
}

func (r *replanRig) attempts(t *testing.T, id string) []*model.Attempt {
	t.Helper()
	atts, err := r.st.Attempts(r.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return atts
}

func (r *replanRig) events(t *testing.T, id string) []model.Event {
	t.Helper()
	evs, err := r.st.Events(r.ctx, store.EventQuery{TaskID: id, Limit: 200})
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

func logEvents(t *testing.T, evs []model.Event) {
	t.Helper()
	for i := len(evs) - 1; i >= 0; i-- {
		t.Logf("%s | %s | %s", evs[i].Kind, evs[i].Message, evs[i].Rationale)
	}
}

func findEvent(evs []model.Event, prefix string) (model.Event, bool) {
	for _, ev := range evs {
		if strings.HasPrefix(ev.Message, prefix) {
			return ev, true
		}
	}
	return model.Event{}, false
}

// TestReplanMovesAPendingJobWhenAnotherSiteFreesUp: a job waits on A (full for 4h); B
// is as full at first, so it stays; once B's queue is much shorter (1h) it moves there,
// new job first, with the numbers in the event. Then A frees up completely, but the
// task's move budget (1) is used up: it does not move back. With a budget of 2 the same
// picture moves it back (the budget, not the thresholds, kept it).
func TestReplanMovesAPendingJobWhenAnotherSiteFreesUp(t *testing.T) {
	for _, budget := range []int{1, 2} {
		t.Run(fmt.Sprintf("budget %d", budget), func(t *testing.T) {
			r := newReplanRig(t, nil, nil)
			blockA := r.block(t, r.a, 4*time.Hour)
			blockB := r.block(t, r.b, 4*time.Hour)
			r.task(t, "mover", "echo hi", budget)
			if r.tickUntil(t, 600*time.Millisecond, func() bool { return len(r.attempts(t, "mover")) > 1 }) {
				logEvents(t, r.events(t, "mover"))
				t.Fatal("moved although B was as full as A")
			}
			// B frees up: its blockers go, shorter ones (1h) come.
			if err := r.b.Cancel(r.ctx, blockB); err != nil {
				t.Fatal(err)
			}
			r.block(t, r.b, time.Hour)
			if !r.tickUntil(t, 5*time.Second, func() bool { return len(r.attempts(t, "mover")) > 1 }) {
				logEvents(t, r.events(t, "mover"))
				t.Fatal("the job did not move to B once B's queue was 3h shorter")
			}
			atts := r.attempts(t, "mover")
			if atts[1].System != "B" || atts[1].JobID == "" || atts[1].State != model.JobPending {
				t.Fatalf("attempt 2: %s %s job %q, want pending on B", atts[1].System, atts[1].State, atts[1].JobID)
			}
			if atts[0].State != model.JobCancelling && atts[0].State != model.JobCancelled {
				t.Fatalf("attempt 1 on A is %s, want cancelled after the move", atts[0].State)
			}
			evs := r.events(t, "mover")
			mv, ok := findEvent(evs, "replan: move pending job "+atts[0].JobID+": A → B:cpu")
			if !ok {
				logEvents(t, evs)
				t.Fatal("no replan event")
			}
			for _, want := range []string{"move A:cpu → B:cpu", "A:cpu expected to start in", "(A's own estimate)", "B:cpu in", "(B's own estimate)",
				"thresholds max(10m, 30% of", "on 2 consecutive checks", fmt.Sprintf("move 1 of %d", budget), "candidates: A:cpu in", "clears the", "(simulated time, 60× the wall clock)"} {
				if !strings.Contains(mv.Rationale, want) {
					t.Errorf("the move's rationale lacks %q: %s", want, mv.Rationale)
				}
			}
			t.Logf("event: %s — %s", mv.Message, mv.Rationale)
			// A frees up completely: moving back would gain about 1h.
			if err := r.a.Cancel(r.ctx, blockA); err != nil {
				t.Fatal(err)
			}
			moved := r.tickUntil(t, 1500*time.Millisecond, func() bool { return len(r.attempts(t, "mover")) > 2 })
			if budget == 1 && moved {
				logEvents(t, r.events(t, "mover"))
				t.Fatal("moved a second time beyond the move budget of 1")
			}
			if budget == 2 && !moved {
				logEvents(t, r.events(t, "mover"))
				t.Fatal("with a budget of 2 the job should move back to the now empty A (the test would not show the budget at work)")
			}
		})
	}
}

// racingSite is B, whose Submit lets A's queue clear while the new job is being
// submitted, and returns only once A has started the old job: the race a move must lose
// gracefully.
type racingSite struct {
	*simprov.Provider
	before func(spec model.JobSpec) // called before the real submit
	after  func()                   // called after it
}

func (s racingSite) Submit(ctx context.Context, spec model.JobSpec) (string, error) {
	if s.before != nil {
		s.before(spec)
	}
	id, err := s.Provider.Submit(ctx, spec)
	if s.after != nil {
		s.after()
	}
	return id, err
}

// TestReplanRevertsWhenTheOldJobStartsMeanwhile: the old job starts on A while the new
// one is being submitted to B. The new attempt was persisted before B was called; once
// B accepts it, the engine sees the old job running and cancels the new one instead:
// the command runs once, on A.
func TestReplanRevertsWhenTheOldJobStartsMeanwhile(t *testing.T) {
	var r *replanRig
	var blockA []string
	count := filepath.Join(t.TempDir(), "ran")
	var persisted error = errors.New("B's submit was never called")
	r = newReplanRig(t, nil, func(b *simprov.Provider) provider.Provider {
		return racingSite{Provider: b,
			before: func(spec model.JobSpec) {
				// Persist before acting: attempt 2 exists, submitting, before B hears of it.
				atts, err := r.st.Attempts(r.ctx, "racer")
				switch {
				case err != nil:
					persisted = err
				case len(atts) != 2 || atts[1].State != model.JobSubmitting || atts[1].Tag != spec.Tag:
					persisted = fmt.Errorf("at B's submit the store holds %d attempts (want 2, the last submitting with tag %s)", len(atts), spec.Tag)
				default:
					persisted = nil
				}
			},
			after: func() {
				if err := r.a.Cancel(r.ctx, blockA); err != nil {
					t.Error(err)
				}
				old := r.attempts(t, "racer")[0].JobID
				deadline := time.Now().Add(3 * time.Second)
				for time.Now().Before(deadline) {
					sts, _ := r.a.Status(r.ctx, []string{old})
					if sts[old].State == model.JobRunning || sts[old].State.Final() {
						return
					}
					time.Sleep(10 * time.Millisecond)
				}
				t.Error("the old job did not start on A after its blockers went")
			}}
	})
	blockA = r.block(t, r.a, 4*time.Hour)
	r.block(t, r.b, 30*time.Minute) // B's new job cannot start at once either
	r.task(t, "racer", "echo ran >> "+count+"; sleep 1", 2)
	if !r.tickUntil(t, 5*time.Second, func() bool { return len(r.attempts(t, "racer")) > 1 }) {
		logEvents(t, r.events(t, "racer"))
		t.Fatal("no move was tried")
	}
	if persisted != nil {
		t.Fatal(persisted)
	}
	// The revert applied what A said of the old job: it is not called queued.
	if tr, _ := r.st.Task(r.ctx, "racer"); tr.State == model.TaskQueued || r.attempts(t, "racer")[0].State == model.JobPending {
		logEvents(t, r.events(t, "racer"))
		t.Fatalf("after the revert the task is %s and the old job %s, although A runs it", tr.State, r.attempts(t, "racer")[0].State)
	}
	if !r.tickUntil(t, 10*time.Second, func() bool {
		tr, _ := r.st.Task(r.ctx, "racer")
		return tr.State == model.TaskSucceeded
	}) {
		logEvents(t, r.events(t, "racer"))
		t.Fatal("the task did not succeed on A")
	}
	atts := r.attempts(t, "racer")
	if len(atts) != 2 || atts[0].State != model.JobSucceeded || atts[1].State != model.JobCancelled {
		logEvents(t, r.events(t, "racer"))
		t.Fatalf("attempts: %d, #1 %s, #2 %s; want #1 succeeded on A, #2 cancelled on B", len(atts), atts[0].State, atts[1].State)
	}
	evs := r.events(t, "racer")
	rv, ok := findEvent(evs, "stay on A: move reverted, attempt 2 cancelled")
	if !ok || !strings.Contains(rv.Rationale, "started meanwhile (running)") {
		logEvents(t, evs)
		t.Fatal("no event says the move was reverted because the old job started")
	}
	b, err := os.ReadFile(count)
	if err != nil || strings.Count(string(b), "ran") != 1 {
		t.Fatalf("the command ran %d times (%v), want once", strings.Count(string(b), "ran"), err)
	}
}

// cancelFails is A, whose scheduler refuses to cancel (scancel on a controller that
// errors).
type cancelFails struct{ *simprov.Provider }

func (cancelFails) Cancel(context.Context, []string) error {
	return errors.New("scancel: error: Kill job error on job id 1: Unable to contact slurm controller (connect failure)")
}

func (c cancelFails) CancelPending(ctx context.Context, ids []string) error {
	return c.Cancel(ctx, ids)
}

// TestReplanRevertsWhenTheOldJobCannotBeCancelled: B accepts the new job but A cannot
// cancel the old one; the new one is cancelled and the old keeps its place in line.
func TestReplanRevertsWhenTheOldJobCannotBeCancelled(t *testing.T) {
	r := newReplanRig(t, func(a *simprov.Provider) provider.Provider { return cancelFails{a} }, nil)
	blockA := r.block(t, r.a, 4*time.Hour)
	r.block(t, r.b, 30*time.Minute)
	r.task(t, "stuck", "exit 3", 2)
	if !r.tickUntil(t, 5*time.Second, func() bool {
		atts := r.attempts(t, "stuck")
		return len(atts) > 1 && atts[1].State.Final()
	}) {
		logEvents(t, r.events(t, "stuck"))
		t.Fatal("the new job was not cancelled after the old one's cancel failed")
	}
	atts := r.attempts(t, "stuck")
	if atts[0].State != model.JobPending || atts[1].State != model.JobCancelled {
		t.Fatalf("#1 %s, #2 %s: want the old job still pending, the new one cancelled", atts[0].State, atts[1].State)
	}
	evs := r.events(t, "stuck")
	if rv, ok := findEvent(evs, "stay on A: move reverted"); !ok || !strings.Contains(rv.Rationale, "the cancel of job "+atts[0].JobID+" on A failed") {
		logEvents(t, evs)
		t.Fatal("no event says why the move was reverted")
	}
	// The old job is the task's job: when it fails, the task is continued (retried in
	// place, then failed), although a later (reverted) attempt exists.
	r.e.o.NoReplan = true
	if err := r.a.Cancel(r.ctx, blockA); err != nil {
		t.Fatal(err)
	}
	if !r.tickUntil(t, 10*time.Second, func() bool {
		tr, _ := r.st.Task(r.ctx, "stuck")
		return tr.State.Final()
	}) {
		logEvents(t, r.events(t, "stuck"))
		t.Fatal("the task was not continued after its old job failed")
	}
	atts = r.attempts(t, "stuck")
	if tr, _ := r.st.Task(r.ctx, "stuck"); tr.State != model.TaskFailed || len(atts) != 3 || atts[2].System != "A" {
		logEvents(t, r.events(t, "stuck"))
		t.Fatalf("task %s with %d attempts; want the failed job retried once on A, then failed", tr.State, len(atts))
	}
}

// TestReplanEngineAndReplayDecideAlike: the engine takes scheduler.Replan's decision
// with its thresholds (the replay's test TestReplayReplansWithTheSchedulerDecision
// checks the replay's side): given the same inputs the engine's config yields the same
// decision as the scheduler's defaults with the task's budget.
func TestReplanEngineAndReplayDecideAlike(t *testing.T) {
	e := New(Options{})
	now := time.Now()
	in := scheduler.ReplanInput{Now: now, Current: scheduler.ReplanOption{System: "A", Partition: "cpu", Start: now.Add(4 * time.Hour), At: now},
		Alternatives: []scheduler.ReplanOption{{System: "B", Partition: "cpu", Start: now.Add(time.Hour), At: now}}, Streak: 1, StreakTo: "B:cpu"}
	pol := model.DefaultPolicy()
	got := scheduler.Replan(in, e.replanConfig(pol))
	want := scheduler.Replan(in, scheduler.DefaultReplanConfig())
	if got.Move != want.Move || got.Reason != want.Reason || !got.Move {
		t.Fatalf("engine: %v %q; scheduler defaults: %v %q", got.Move, got.Reason, want.Move, want.Reason)
	}
	// The task's own budget decides: one move allowed and made → stay; three allowed
	// and two made → move.
	pol.MaxMigrations, in.Moves = 1, 1
	if d := scheduler.Replan(in, e.replanConfig(pol)); d.Move {
		t.Fatalf("a budget of 1 with 1 move made still moves: %s", d.Reason)
	}
	pol.MaxMigrations, in.Moves = 3, 2
	if d := scheduler.Replan(in, e.replanConfig(pol)); !d.Move {
		t.Fatalf("a budget of 3 with 2 moves made stays: %s", d.Reason)
	}
}

// TestACrashMidMoveLeavesOneJob: a core died between a move's new job being accepted and
// the old one's cancel being stored, leaving the task two jobs the store calls queued.
// The next engine asks the sites: the one that has started (else the newest queued) is
// the task's job and the other queued one is cancelled, so the command runs once. A job
// the site no longer lists as queued is never a reason to cancel the other: when the old
// job's cancel had landed (the crash came before it was stored) the new job is kept, and
// when the new job is gone from its site the old one keeps its place.
func TestACrashMidMoveLeavesOneJob(t *testing.T) {
	for _, c := range []struct {
		name  string
		setup func(t *testing.T, r *replanRig, blockA []string, oldID, newID string)
		kept  int // the attempt left live (0-based)
		gone  int // the attempt dedupe cancels, or -1
		ended int // the attempt the monitor records cancelled by its site, or -1
	}{
		{name: "both queued", kept: 1, gone: 0, ended: -1},
		{name: "old started", kept: 0, gone: 1, ended: -1, setup: func(t *testing.T, r *replanRig, blockA []string, oldID, _ string) {
			if err := r.a.Cancel(r.ctx, blockA); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(3 * time.Second)
			for time.Now().Before(deadline) {
				if sts, _ := r.a.Status(r.ctx, []string{oldID}); sts[oldID].State != model.JobPending {
					return
				}
				time.Sleep(10 * time.Millisecond)
			}
			t.Fatal("the old job did not start")
		}},
		{name: "old cancel landed", kept: 1, gone: -1, ended: 0, setup: func(t *testing.T, r *replanRig, _ []string, oldID, _ string) {
			if err := r.a.Cancel(r.ctx, []string{oldID}); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "new job gone from its site", kept: 0, gone: -1, ended: 1, setup: func(t *testing.T, r *replanRig, _ []string, _, newID string) {
			if err := r.b.Cancel(r.ctx, []string{newID}); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newReplanRig(t, nil, nil)
			blockA := r.block(t, r.a, 4*time.Hour)
			r.block(t, r.b, 4*time.Hour)
			r.task(t, "cut", "sleep 2", 2)
			if err := r.e.Dispatch(r.ctx, "cut", &Placement{System: "B", Partition: "cpu", Account: "acct", Spec: specFor(&model.Task{Command: "echo hi"})}, "the move's new job"); err != nil {
				t.Fatal(err)
			}
			atts := r.attempts(t, "cut")
			if c.setup != nil {
				c.setup(t, r, blockA, atts[0].JobID, atts[1].JobID)
			}
			r.e = New(Options{Store: r.st, Providers: provMap{"A": r.a, "B": r.b}, Placer: orderedPlacer{"B", "A"}, NoReplan: true}) // the restarted core
			settled := func() bool {
				atts := r.attempts(t, "cut")
				if c.gone >= 0 {
					if s := atts[c.gone].State; s != model.JobCancelling && s != model.JobCancelled {
						return false
					}
				}
				return c.ended < 0 || atts[c.ended].State == model.JobCancelled
			}
			if !r.tickUntil(t, 5*time.Second, settled) {
				logEvents(t, r.events(t, "cut"))
				t.Fatalf("not settled: want attempt %d cancelled by Mosaic, attempt %d recorded cancelled by its site", c.gone+1, c.ended+1)
			}
			for range 3 { // a few more rounds: nothing else may be cancelled
				if err := r.e.Tick(r.ctx); err != nil {
					t.Fatal(err)
				}
			}
			atts = r.attempts(t, "cut")
			if s := atts[c.kept].State; s == model.JobCancelling || s.Final() {
				logEvents(t, r.events(t, "cut"))
				t.Fatalf("attempt %d, the task's job, is %s", c.kept+1, s)
			}
			if len(atts) != 2 {
				t.Fatalf("%d attempts, want the two", len(atts))
			}
			if tr, _ := r.st.Task(r.ctx, "cut"); tr.State.Final() {
				t.Fatalf("task %s, want it waiting on attempt %d", tr.State, c.kept+1)
			}
			if c.gone < 0 {
				return
			}
			evs := r.events(t, "cut")
			if _, ok := findEvent(evs, "cancel requested for job "+atts[c.gone].JobID); !ok {
				logEvents(t, evs)
				t.Fatal("no cancel event for the duplicate")
			}
			found := false
			for _, ev := range evs {
				found = found || strings.Contains(ev.Rationale, "a move was cut short") && strings.Contains(ev.Rationale, "job "+atts[c.kept].JobID)
			}
			if !found {
				logEvents(t, evs)
				t.Fatal("no event says why the duplicate was cancelled")
			}
		})
	}
}

// TestAStrayDuplicateInThisProcessIsSettled: the engine that made two live jobs for a
// task (a move step that failed half-way) settles them itself, without a restart.
func TestAStrayDuplicateInThisProcessIsSettled(t *testing.T) {
	r := newReplanRig(t, nil, nil)
	r.e.o.NoReplan = true
	r.block(t, r.a, 4*time.Hour)
	r.block(t, r.b, 4*time.Hour)
	r.task(t, "stray", "sleep 2", 2)
	if err := r.e.Dispatch(r.ctx, "stray", &Placement{System: "B", Partition: "cpu", Account: "acct", Spec: specFor(&model.Task{Command: "echo hi"})}, "a second job"); err != nil {
		t.Fatal(err)
	}
	if !r.tickUntil(t, 3*time.Second, func() bool {
		s := r.attempts(t, "stray")[0].State
		return s == model.JobCancelling || s == model.JobCancelled
	}) {
		logEvents(t, r.events(t, "stray"))
		t.Fatal("the same engine left two live jobs")
	}
	if s := r.attempts(t, "stray")[1].State; s != model.JobPending {
		t.Fatalf("the newest job is %s, want it kept pending", s)
	}
}

// cancelLandsLoud is A, whose cancel works but answers with an error (the ssh link
// dropped after scancel ran); with statusDown set, A's status fails from then on.
type cancelLandsLoud struct {
	*simprov.Provider
	statusDown *atomic.Bool
	down       bool
}

func (c cancelLandsLoud) Cancel(ctx context.Context, ids []string) error {
	if err := c.Provider.Cancel(ctx, ids); err != nil {
		return err
	}
	if c.down {
		c.statusDown.Store(true)
	}
	return fmt.Errorf("ssh A: connection reset by peer after scancel ran: %w", provider.ErrSiteDown)
}

func (c cancelLandsLoud) CancelPending(ctx context.Context, ids []string) error {
	if err := c.Provider.CancelPending(ctx, ids); err != nil {
		return err
	}
	if c.down {
		c.statusDown.Store(true)
	}
	return fmt.Errorf("ssh A: connection reset by peer after scancel ran: %w", provider.ErrSiteDown)
}

func (c cancelLandsLoud) Status(ctx context.Context, ids []string) (map[string]model.JobStatus, error) {
	if c.statusDown.Load() {
		return nil, fmt.Errorf("ssh A: connection refused: %w", provider.ErrSiteDown)
	}
	return c.Provider.Status(ctx, ids)
}

// TestReplanKeepsTheMoveWhenTheOldCancelLandedWithAnError: the old job's cancel worked
// but answered with an error. Reverting then would cancel the new job too and leave the
// task with no job: the engine reads the old job's state again and, it being gone (or A
// not answering at all), keeps the new job; the old attempt is cancelling and the task
// waits on B, also after a restart.
func TestReplanKeepsTheMoveWhenTheOldCancelLandedWithAnError(t *testing.T) {
	for _, down := range []bool{false, true} {
		t.Run(fmt.Sprintf("status down %v", down), func(t *testing.T) {
			var statusDown atomic.Bool
			wrapA := func(a *simprov.Provider) provider.Provider {
				return cancelLandsLoud{Provider: a, statusDown: &statusDown, down: down}
			}
			r := newReplanRig(t, wrapA, nil)
			r.block(t, r.a, 4*time.Hour)
			r.block(t, r.b, 30*time.Minute)
			r.task(t, "loud", "echo hi", 2)
			if !r.tickUntil(t, 5*time.Second, func() bool { return len(r.attempts(t, "loud")) > 1 }) {
				logEvents(t, r.events(t, "loud"))
				t.Fatal("no move was tried")
			}
			r.e.o.NoReplan = true
			statusDown.Store(false)
			if !r.tickUntil(t, 5*time.Second, func() bool { return r.attempts(t, "loud")[0].State == model.JobCancelled }) {
				logEvents(t, r.events(t, "loud"))
				t.Fatalf("attempt 1 is %s, want it cancelled (its cancel landed)", r.attempts(t, "loud")[0].State)
			}
			check := func(when string) {
				atts := r.attempts(t, "loud")
				if len(atts) != 2 || atts[1].State != model.JobPending || atts[1].System != "B" {
					logEvents(t, r.events(t, "loud"))
					t.Fatalf("%s: attempt 2 is %s on %s, want the moved job pending on B", when, atts[1].State, atts[1].System)
				}
				if tr, _ := r.st.Task(r.ctx, "loud"); tr.State.Final() {
					t.Fatalf("%s: task %s, want it waiting on B", when, tr.State)
				}
			}
			check("after the move")
			r.e = New(Options{Store: r.st, Providers: provMap{"A": wrapA(r.a), "B": r.b}, Placer: orderedPlacer{"B", "A"}, NoReplan: true})
			for range 3 {
				if err := r.e.Tick(r.ctx); err != nil {
					t.Fatal(err)
				}
			}
			check("after a restart")
		})
	}
}

// TestAResumedTaskLooksAtItsChainNotARevertedAttempt: a task whose reverted move's
// attempt is its last (cancelled) and whose real job failed is continued after a
// restart, not marked cancelled.
func TestAResumedTaskLooksAtItsChainNotARevertedAttempt(t *testing.T) {
	r := newReplanRig(t, nil, nil)
	r.e.o.NoReplan = true
	newTask(t, r.st, "chain", "exit 3")
	spec := specFor(&model.Task{Command: "exit 3"})
	spec.System, spec.Partition, spec.Account = "A", "cpu", "acct"
	now := time.Now().UTC()
	late := now.Add(time.Second)
	for n, s := range []model.JobState{model.JobFailed, model.JobCancelled} {
		sys := []string{"A", "B"}[n]
		ended := []time.Time{late, now}[n] // the reverted attempt ended first; its predecessor went on
		spec.Tag = model.JobTag("chain", n+1)
		if err := r.st.CreateAttempt(r.ctx, &model.Attempt{TaskID: "chain", N: n + 1, Tag: spec.Tag, System: sys, Partition: "cpu", Spec: spec,
			JobID: fmt.Sprint(100 + n), State: s, CreatedAt: now, EndedAt: &ended}); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.st.UpdateTask(r.ctx, "chain", store.TaskUpdate{State: ptr(model.TaskQueued)}); err != nil {
		t.Fatal(err)
	}
	if err := r.e.withTask(r.ctx, "chain", func() error { return r.e.resume(r.ctx, "chain") }); err != nil {
		t.Fatal(err)
	}
	tr, _ := r.st.Task(r.ctx, "chain")
	if tr.State == model.TaskCancelled {
		logEvents(t, r.events(t, "chain"))
		t.Fatal("the task was marked cancelled from its reverted move's attempt")
	}
	if atts := r.attempts(t, "chain"); len(atts) != 3 {
		logEvents(t, r.events(t, "chain"))
		t.Fatalf("%d attempts, task %s: want the failed job retried (policy: retry in place)", len(atts), tr.State)
	}
}

// TestAFailureBehindAPendingRevertIsContinued: the move was reverted (A refused the
// old job's cancel) and B does not confirm the new job's cancel, so attempt 2 stays
// cancelling; the old job then fails on A. Its failure is continued (retried on A)
// although attempt 2's cancel is still pending.
func TestAFailureBehindAPendingRevertIsContinued(t *testing.T) {
	r := newReplanRig(t, func(a *simprov.Provider) provider.Provider { return cancelFails{a} },
		func(b *simprov.Provider) provider.Provider { return cancelFails{b} })
	blockA := r.block(t, r.a, 4*time.Hour)
	r.block(t, r.b, 30*time.Minute)
	r.task(t, "behind", "exit 3", 2)
	if !r.tickUntil(t, 5*time.Second, func() bool {
		atts := r.attempts(t, "behind")
		return len(atts) > 1 && atts[1].State == model.JobCancelling
	}) {
		logEvents(t, r.events(t, "behind"))
		t.Fatal("the reverted attempt is not cancelling")
	}
	r.e.o.NoReplan = true
	if err := r.a.Cancel(r.ctx, blockA); err != nil {
		t.Fatal(err)
	}
	if !r.tickUntil(t, 10*time.Second, func() bool { return len(r.attempts(t, "behind")) > 2 }) {
		logEvents(t, r.events(t, "behind"))
		t.Fatalf("the old job's failure was not continued: attempt 1 %s", r.attempts(t, "behind")[0].State)
	}
	if a := r.attempts(t, "behind")[2]; a.System != "A" {
		t.Fatalf("attempt 3 on %s, want the retry in place on A", a.System)
	}
}

// lateSubmit is B, whose submit answer is lost (the job reaches the queue only a
// moment later) and whose first look-up by tag fails: the submit's outcome is unknown.
type lateSubmit struct {
	*simprov.Provider
	finds *atomic.Int32
	late  chan string
}

func (l lateSubmit) Submit(ctx context.Context, spec model.JobSpec) (string, error) {
	go func() {
		time.Sleep(150 * time.Millisecond)
		id, _ := l.Provider.Submit(context.Background(), spec)
		l.late <- id
	}()
	return "", fmt.Errorf("ssh B: sbatch: connection reset: %w", provider.ErrOutcomeUnknown)
}

func (l lateSubmit) FindByTag(ctx context.Context, tags []string) (map[string]model.JobStatus, error) {
	if l.finds.Add(1) == 1 {
		return nil, fmt.Errorf("ssh B: connection refused: %w", provider.ErrSiteDown)
	}
	return l.Provider.FindByTag(ctx, tags)
}

// TestARevertAfterAnUnknownSubmitCancelsALateJob: the new job's submit outcome is
// unknown and the job reaches B's queue late. The reverted attempt stays cancelling
// (not "no job at B") so the monitor finds the late job by its tag and cancels it: only
// the old job is left to run.
func TestARevertAfterAnUnknownSubmitCancelsALateJob(t *testing.T) {
	var finds atomic.Int32
	late := make(chan string, 4)
	r := newReplanRig(t, nil, func(b *simprov.Provider) provider.Provider { return lateSubmit{b, &finds, late} })
	r.block(t, r.a, 4*time.Hour)
	r.block(t, r.b, 30*time.Minute)
	r.task(t, "late", "echo hi", 2)
	if !r.tickUntil(t, 5*time.Second, func() bool { return len(r.attempts(t, "late")) > 1 }) {
		logEvents(t, r.events(t, "late"))
		t.Fatal("no move was tried")
	}
	r.e.o.NoReplan = true
	var id string
	select {
	case id = <-late:
	case <-time.After(3 * time.Second):
		t.Fatal("the late job never reached B")
	}
	if !r.tickUntil(t, 5*time.Second, func() bool {
		sts, _ := r.b.Status(r.ctx, []string{id})
		return sts[id].State == model.JobCancelled
	}) {
		logEvents(t, r.events(t, "late"))
		t.Fatalf("the late job %s on B was left to run beside the old one", id)
	}
	if a := r.attempts(t, "late")[0]; a.State != model.JobPending {
		t.Fatalf("the old job is %s, want it keeping its place", a.State)
	}
}

// TestAMoveCutShortBeforeItsSubmitIsAbandoned: the core died after persisting a move's
// new attempt and before submitting it. The restarted core does not submit it late (the
// old job would give up its place without the move being weighed again): it abandons
// it, and the old job stays the task's job.
func TestAMoveCutShortBeforeItsSubmitIsAbandoned(t *testing.T) {
	r := newReplanRig(t, nil, nil)
	r.block(t, r.a, 4*time.Hour)
	r.task(t, "half", "echo hi", 2)
	spec := specFor(&model.Task{Command: "echo hi"})
	spec.Tag, spec.System, spec.Partition, spec.Account = model.JobTag("half", 2), "B", "cpu", "acct"
	if err := r.st.CreateAttempt(r.ctx, &model.Attempt{TaskID: "half", N: 2, Tag: spec.Tag, System: "B", Partition: "cpu", Account: "acct", Spec: spec,
		State: model.JobSubmitting, CreatedAt: time.Now().UTC()}); err != nil {
		t.Fatal(err)
	}
	r.e = New(Options{Store: r.st, Providers: provMap{"A": r.a, "B": r.b}, Placer: orderedPlacer{"B", "A"}, NoReplan: true})
	if !r.tickUntil(t, 3*time.Second, func() bool { return r.attempts(t, "half")[1].State.Final() }) {
		logEvents(t, r.events(t, "half"))
		t.Fatalf("attempt 2 is still %s", r.attempts(t, "half")[1].State)
	}
	atts := r.attempts(t, "half")
	if atts[1].State != model.JobCancelled || atts[1].JobID != "" || !strings.Contains(atts[1].Reason, "move cut short by a restart") {
		logEvents(t, r.events(t, "half"))
		t.Fatalf("attempt 2: %s job %q (%s); want abandoned without a job", atts[1].State, atts[1].JobID, atts[1].Reason)
	}
	if found, _ := r.b.FindByTag(r.ctx, []string{spec.Tag}); found[spec.Tag].JobID != "" {
		t.Fatalf("job %s was submitted to B after the restart", found[spec.Tag].JobID)
	}
	if atts[0].State != model.JobPending {
		t.Fatalf("the old job is %s, want it keeping its place", atts[0].State)
	}
}

// TestARevertedMoveIsNotTriedAgainAtOnce: after a move to B was reverted (A refused
// the old job's cancel), replanning leaves B alone for a few periods instead of
// submitting to B and cancelling again on every check; the reverted attempt uses none
// of the task's max_attempts.
func TestARevertedMoveIsNotTriedAgainAtOnce(t *testing.T) {
	r := newReplanRig(t, func(a *simprov.Provider) provider.Provider { return cancelFails{a} }, nil)
	r.e.o.ReplanEvery = time.Minute // 1 s of wall clock: a backoff of 3 s
	r.block(t, r.a, 4*time.Hour)
	r.block(t, r.b, 30*time.Minute)
	r.task(t, "again", "exit 3", 2)
	if !r.tickUntil(t, 5*time.Second, func() bool {
		atts := r.attempts(t, "again")
		return len(atts) > 1 && atts[1].State.Final()
	}) {
		logEvents(t, r.events(t, "again"))
		t.Fatal("no reverted move")
	}
	if r.tickUntil(t, 2500*time.Millisecond, func() bool { return len(r.attempts(t, "again")) > 2 }) {
		logEvents(t, r.events(t, "again"))
		t.Fatal("the reverted move was tried again within its backoff")
	}
	if h := historyOf(r.attempts(t, "again")); h.Attempts != 1 {
		t.Fatalf("the reverted move counted toward max_attempts: %+v", h)
	}
	if !r.tickUntil(t, 5*time.Second, func() bool { return len(r.attempts(t, "again")) > 2 }) {
		logEvents(t, r.events(t, "again"))
		t.Fatal("the move was never tried again after its backoff")
	}
}

// startsAtCancel is A, whose old job starts in the instant between the move's check
// (still queued) and its cancel; plain says whether A offers only the plain cancel
// (like PBS), not the cancel of a still-queued job.
type startsAtCancel struct {
	*simprov.Provider
	start func()
}

func (s startsAtCancel) Cancel(ctx context.Context, ids []string) error {
	s.start()
	return s.Provider.Cancel(ctx, ids)
}

func (s startsAtCancel) CancelPending(ctx context.Context, ids []string) error {
	s.start()
	return s.Provider.CancelPending(ctx, ids)
}

// TestReplanNeverKillsAnOldJobThatJustStarted: the old job starts on A between the
// move's check and its cancel. The cancel of a still-queued job leaves it running, the
// move is reverted (the new job on B cancelled) and the command runs once, to its end,
// on A; a plain cancel would have killed it after its command began and run it again on
// B.
func TestReplanNeverKillsAnOldJobThatJustStarted(t *testing.T) {
	var r *replanRig
	var blockA []string
	var once sync.Once
	count := filepath.Join(t.TempDir(), "ran")
	start := func() {
		once.Do(func() {
			if err := r.a.Cancel(r.ctx, blockA); err != nil {
				t.Error(err)
			}
			old := r.attempts(t, "jit")[0].JobID
			for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				if sts, _ := r.a.Status(r.ctx, []string{old}); sts[old].State == model.JobRunning {
					return
				}
			}
			t.Error("the old job did not start on A")
		})
	}
	r = newReplanRig(t, func(a *simprov.Provider) provider.Provider { return startsAtCancel{a, func() { start() }} }, nil)
	blockA = r.block(t, r.a, 4*time.Hour)
	r.block(t, r.b, 30*time.Minute)
	r.task(t, "jit", "echo ran >> "+count+"; sleep 1", 2)
	if !r.tickUntil(t, 5*time.Second, func() bool { return len(r.attempts(t, "jit")) > 1 }) {
		logEvents(t, r.events(t, "jit"))
		t.Fatal("no move was tried")
	}
	r.e.o.NoReplan = true
	if !r.tickUntil(t, 10*time.Second, func() bool {
		tr, _ := r.st.Task(r.ctx, "jit")
		return tr.State.Final()
	}) {
		logEvents(t, r.events(t, "jit"))
		t.Fatal("the task did not end")
	}
	atts := r.attempts(t, "jit")
	if atts[0].State != model.JobSucceeded || atts[1].State != model.JobCancelled {
		logEvents(t, r.events(t, "jit"))
		t.Fatalf("#1 %s, #2 %s: want the old job run to its end on A and the new one cancelled", atts[0].State, atts[1].State)
	}
	if b, err := os.ReadFile(count); err != nil || strings.Count(string(b), "ran") != 1 {
		t.Fatalf("the command began %d times (%v), want once", strings.Count(string(b), "ran"), err)
	}
}

// estimates counts a site's start estimates for one tag (the alternative a replanning
// check weighs) and can fail them (the site down).
type estimates struct {
	*simprov.Provider
	tag  string
	n    *atomic.Int32
	down bool
}

func (s estimates) EstimateStart(ctx context.Context, spec model.JobSpec) (time.Time, error) {
	if spec.Tag == s.tag {
		s.n.Add(1)
	}
	if s.down {
		return time.Time{}, fmt.Errorf("ssh B: connection timed out: %w", provider.ErrSiteDown)
	}
	return s.Provider.EstimateStart(ctx, spec)
}

// TestASpentMoveBudgetAsksNoSite: once a task's moves are used up (budget 1, moved to
// B), its job is not weighed again: A is never asked when attempt 3 would start there.
func TestASpentMoveBudgetAsksNoSite(t *testing.T) {
	var n atomic.Int32
	r := newReplanRig(t, func(a *simprov.Provider) provider.Provider { return estimates{a, model.JobTag("spent", 3), &n, false} }, nil)
	blockA := r.block(t, r.a, 4*time.Hour)
	blockB := r.block(t, r.b, 4*time.Hour)
	r.task(t, "spent", "echo hi", 1)
	if err := r.b.Cancel(r.ctx, blockB); err != nil {
		t.Fatal(err)
	}
	r.block(t, r.b, time.Hour)
	if !r.tickUntil(t, 5*time.Second, func() bool { return len(r.attempts(t, "spent")) > 1 }) {
		logEvents(t, r.events(t, "spent"))
		t.Fatal("no move to B")
	}
	if err := r.a.Cancel(r.ctx, blockA); err != nil {
		t.Fatal(err)
	}
	r.tickUntil(t, time.Second, func() bool { return false })
	if got := n.Load(); got != 0 {
		t.Fatalf("A was asked %d times for the start of a move the budget does not allow", got)
	}
}

// estPlacer is orderedPlacer whose placements carry an estimate of their own (a start
// in a minute), as the ranker's do.
type estPlacer struct{ orderedPlacer }

func (p estPlacer) Place(ctx context.Context, t *model.Task, exclude []string) (*Placement, error) {
	pl, err := p.orderedPlacer.Place(ctx, t, exclude)
	if pl != nil {
		pl.EstimatedStart = time.Now().Add(time.Minute)
	}
	return pl, err
}

// TestReplanDoesNotMoveTowardASiteThatDidNotAnswer: B's estimate call fails (B is down);
// the placement's own estimate says B would start at once, but a job is not moved
// toward a site that just failed to answer.
func TestReplanDoesNotMoveTowardASiteThatDidNotAnswer(t *testing.T) {
	var n atomic.Int32
	r := newReplanRig(t, nil, func(b *simprov.Provider) provider.Provider { return estimates{b, model.JobTag("quiet", 2), &n, true} })
	r.e.o.Placer = estPlacer{orderedPlacer{"B", "A"}}
	r.block(t, r.a, 4*time.Hour)
	r.task(t, "quiet", "echo hi", 2)
	if r.tickUntil(t, 1500*time.Millisecond, func() bool { return len(r.attempts(t, "quiet")) > 1 }) {
		logEvents(t, r.events(t, "quiet"))
		t.Fatal("moved toward B although B's estimate call failed")
	}
	if n.Load() == 0 {
		t.Fatal("B was never asked: the test shows nothing")
	}
}

// TestReplanWeighsTheJobsOwnPlaceInLine: the job (a whole node) is first in A's queue,
// starting when A's blockers end in 1h; four more whole-node jobs queued behind it make
// a *new* such job start hours later. B would start it in 2h. Weighed on its own place
// in line (squeue --start) the job stays; weighed as a new job (--test-only) it would
// move to B and lose its place.
func TestReplanWeighsTheJobsOwnPlaceInLine(t *testing.T) {
	r := newReplanRig(t, nil, nil)
	r.block(t, r.a, time.Hour)
	r.block(t, r.b, 2*time.Hour)
	pol, _ := json.Marshal(model.Policy{MaxMigrations: 2})
	now := time.Now().UTC()
	if err := r.st.CreateTask(r.ctx, &store.TaskRow{Task: model.Task{ID: "first", Name: "first", Command: "echo hi", State: model.TaskPlaced,
		Envelope:  model.Envelope{CPUCores: model.IntRange{Min: 8, Max: 8}, Walltime: model.DurationRange{Min: model.Duration(time.Hour), Max: model.Duration(time.Hour)}},
		CreatedAt: now, UpdatedAt: now}, Policy: pol}); err != nil {
		t.Fatal(err)
	}
	spec := specFor(&model.Task{Command: "echo hi"})
	spec.CPUsPerTask = 8
	if err := r.e.Dispatch(r.ctx, "first", &Placement{System: "A", Partition: "cpu", Account: "acct", Spec: spec}, "test"); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		if _, err := r.a.Submit(r.ctx, model.JobSpec{Tag: fmt.Sprintf("behind-%d", i), Name: "behind", Partition: "cpu", Account: "acct", Nodes: 1, NTasks: 1,
			CPUsPerTask: 8, Walltime: model.Duration(3 * time.Hour), Command: "sleep 300"}); err != nil {
			t.Fatal(err)
		}
	}
	if own, err := r.a.QueuedStart(r.ctx, r.attempts(t, "first")[0].JobID); err != nil || own.IsZero() || time.Until(own) > 75*time.Second {
		t.Fatalf("A plans the job at %v (%v), want in about 1h of site time (60 s of wall clock)", own, err)
	}
	if r.tickUntil(t, 1500*time.Millisecond, func() bool { return len(r.attempts(t, "first")) > 1 }) {
		logEvents(t, r.events(t, "first"))
		t.Fatal("moved to B (2h) although the job starts on A in 1h in its own place in line")
	}
}

// TestReplanDueNeitherStarvesNorPicksBusyTasks: with one job weighed per round, two
// due jobs take turns (a job is stamped when picked, so one whose weighing returns early
// does not stay at the head of the line), and a job whose task is busy is not picked.
func TestReplanDueNeitherStarvesNorPicksBusyTasks(t *testing.T) {
	e := New(Options{Providers: provMap{}, ReplanEvery: time.Minute, ReplanPerRound: 1})
	created := time.Now().Add(-time.Hour)
	mk := func(task string) item {
		return item{a: &model.Attempt{TaskID: task, N: 1, Tag: model.JobTag(task, 1), System: "A", JobID: "1", State: model.JobPending, CreatedAt: created},
			t: &store.TaskRow{Task: model.Task{ID: task}}}
	}
	items := []item{mk("x"), mk("y")}
	now := time.Now()
	first := e.replanDue(items, nil, now)
	second := e.replanDue(items, nil, now.Add(time.Second))
	if len(first) != 1 || len(second) != 1 || first[0].a.TaskID == second[0].a.TaskID {
		t.Fatalf("picked %v then %v; want the two jobs in turn", first, second)
	}
	e.mu.Lock()
	e.busy["z"] = true
	e.mu.Unlock()
	if due := e.replanDue([]item{mk("z")}, nil, now); len(due) != 0 {
		t.Fatal("picked a job whose task is busy")
	}
}

// laggingAccounting is A whose status answers (sacct) miss jobs for a while, as Slurm's
// accounting does for a job submitted seconds ago: the first `misses` Status calls
// after arm() leave every asked job out.
type laggingAccounting struct {
	*simprov.Provider
	mu     *sync.Mutex
	misses *int
}

func (s laggingAccounting) Status(ctx context.Context, ids []string) (map[string]model.JobStatus, error) {
	s.mu.Lock()
	miss := *s.misses > 0
	if miss {
		*s.misses--
	}
	s.mu.Unlock()
	if miss {
		return map[string]model.JobStatus{}, nil
	}
	return s.Provider.Status(ctx, ids)
}

// TestAMoveAsksAgainWhenTheOldJobIsNotListed: when the site's answer does not list the
// old, still queued job (its accounting lags), the move asks again instead of taking
// the job for started and reverting (seen on the rig: a move reverted with "started
// meanwhile (gone from the queue)" for a job still pending): the job moves once.
func TestAMoveAsksAgainWhenTheOldJobIsNotListed(t *testing.T) {
	var mu sync.Mutex
	misses := 0
	var lag laggingAccounting
	r := newReplanRig(t, func(a *simprov.Provider) provider.Provider {
		lag = laggingAccounting{Provider: a, mu: &mu, misses: &misses}
		return lag
	}, func(b *simprov.Provider) provider.Provider {
		return racingSite{Provider: b, after: func() { mu.Lock(); misses = 2; mu.Unlock() }}
	})
	r.block(t, r.a, 4*time.Hour)
	blockB := r.block(t, r.b, 4*time.Hour)
	r.task(t, "lagger", "echo hi", 1)
	if err := r.b.Cancel(r.ctx, blockB); err != nil {
		t.Fatal(err)
	}
	if !r.tickUntil(t, 10*time.Second, func() bool { return len(r.attempts(t, "lagger")) > 1 }) {
		logEvents(t, r.events(t, "lagger"))
		t.Fatal("no move was tried")
	}
	atts := r.attempts(t, "lagger")
	if len(atts) != 2 || atts[1].System != "B" || atts[1].State == model.JobCancelling || atts[1].State == model.JobCancelled {
		logEvents(t, r.events(t, "lagger"))
		t.Fatalf("attempts: %d, last %s %s; want the job moved to B (not reverted)", len(atts), atts[len(atts)-1].System, atts[len(atts)-1].State)
	}
	if atts[0].State != model.JobCancelling && atts[0].State != model.JobCancelled {
		t.Fatalf("attempt 1 on A is %s, want cancelled after the move", atts[0].State)
	}
}

// TestReplanWeighsJobsExpectedSoonOften: the interval scales with the wait the job's
// site expects (scheduler.ReplanConfig.CheckEvery): with the default 10-minute
// interval, a pending job expected to start a minute after its submit is due 7 s after
// it (every tenth of the wait: 6 s), one expected in two hours is not (10 min), nor is
// one of a 1-minute limit expected in two hours (its walltime does not set the pace),
// nor one whose estimate is unknown. Once weighed the first is due again about 5 s
// later (a tenth of the 53 s left), not 10 minutes. Before, no job was weighed
// before 10 minutes: on the rig, where jobs wait a minute or two, replanning never
// looked at one.
func TestReplanWeighsJobsExpectedSoonOften(t *testing.T) {
	e := New(Options{Providers: provMap{}})
	now := time.Now()
	created := now.Add(-7 * time.Second)
	mk := func(task string, wall, wait time.Duration) item {
		a := &model.Attempt{TaskID: task, N: 1, Tag: model.JobTag(task, 1), System: "A", JobID: "1", State: model.JobPending,
			CreatedAt: created, Spec: model.JobSpec{Walltime: model.Duration(wall)}}
		if wait >= 0 {
			est := created.Add(wait)
			a.EstimatedStart = &est
		}
		return item{a: a, t: &store.TaskRow{Task: model.Task{ID: task}}}
	}
	items := []item{mk("soon", time.Hour, time.Minute), mk("later", time.Hour, 2*time.Hour), mk("short-but-later", time.Minute, 2*time.Hour), mk("unknown", time.Minute, -1)}
	due := e.replanDue(items, nil, now)
	if len(due) != 1 || due[0].a.TaskID != "soon" {
		t.Fatalf("due 7 s after submit: %v, want only the job expected in a minute", due)
	}
	if again := e.replanDue(items, nil, now.Add(5*time.Second)); len(again) != 0 {
		t.Fatalf("due again after 5 s: %v, want none (every 5.3 s)", again)
	}
	if again := e.replanDue(items, nil, now.Add(6*time.Second)); len(again) != 1 || again[0].a.TaskID != "soon" {
		t.Fatalf("due again after 6 s: %v, want the job expected soon", again)
	}
}

// TestReplanMovesAShortJobForAShortGain: a job of a 2-minute limit waits on A behind
// blockers planned to end in 8 minutes (site time) while B is empty. With the engine's
// default interval and thresholds it is weighed about every 48 s of site time (a tenth
// of its wait) and needs max(30 s, 30% of 8m) = 2m24s: it moves to B within seconds. A
// fixed 10-minute threshold (and a 10-minute interval, longer than the wait) never
// moved it; a job of an hour's limit in the same picture still needs the full 10
// minutes and stays.
func TestReplanMovesAShortJobForAShortGain(t *testing.T) {
	for _, wall := range []time.Duration{2 * time.Minute, time.Hour} {
		t.Run(model.Duration(wall).String(), func(t *testing.T) {
			r := newReplanRig(t, nil, nil)
			if wall == time.Hour {
				// Weighed every 6 s of site time (the rig's interval), so that staying is
				// the thresholds' doing and not a check that never came.
				r.e = New(Options{Store: r.st, Providers: provMap{"A": r.a, "B": r.b}, Placer: orderedPlacer{"B", "A"}, ReplanEvery: 6 * time.Second})
			} else {
				r.e = New(Options{Store: r.st, Providers: provMap{"A": r.a, "B": r.b}, Placer: orderedPlacer{"B", "A"}})
			}
			r.block(t, r.a, 8*time.Minute)
			pol, _ := json.Marshal(model.Policy{MaxMigrations: 1})
			now := time.Now().UTC()
			if err := r.st.CreateTask(r.ctx, &store.TaskRow{Task: model.Task{ID: "short", Name: "short", Command: "echo hi", State: model.TaskPlaced,
				Envelope:  model.Envelope{CPUCores: model.IntRange{Min: 1, Max: 1}, Walltime: model.DurationRange{Min: model.Duration(wall), Max: model.Duration(wall)}},
				CreatedAt: now, UpdatedAt: now}, Policy: pol}); err != nil {
				t.Fatal(err)
			}
			spec := specFor(&model.Task{Command: "echo hi"})
			spec.Walltime = model.Duration(wall)
			// The placement expected the job in 8 minutes of site time (8 s of wall clock).
			est := time.Now().Add(8 * time.Second)
			if err := r.e.Dispatch(r.ctx, "short", &Placement{System: "A", Partition: "cpu", Account: "acct", Spec: spec, EstimatedStart: est}, "test"); err != nil {
				t.Fatal(err)
			}
			// The blockers sleep 300 s of site time (5 s of wall clock): the job would
			// start on A after that.
			moved := r.tickUntil(t, 4*time.Second, func() bool { return len(r.attempts(t, "short")) > 1 })
			if wall == time.Hour {
				if moved {
					logEvents(t, r.events(t, "short"))
					t.Fatal("an hour-long job moved for a gain under 10 minutes")
				}
				return
			}
			if !moved {
				logEvents(t, r.events(t, "short"))
				t.Fatal("the 2-minute job did not move to the empty B (8 minutes sooner)")
			}
			atts := r.attempts(t, "short")
			if atts[1].System != "B" {
				t.Fatalf("attempt 2 on %s, want B", atts[1].System)
			}
			mv, ok := findEvent(r.events(t, "short"), "replan: move pending job "+atts[0].JobID+": A → B:cpu")
			if !ok {
				logEvents(t, r.events(t, "short"))
				t.Fatal("no replan event")
			}
			if !strings.Contains(mv.Rationale, "thresholds max(30s (for a 2m walltime), 30% of") {
				t.Errorf("the rationale does not show the scaled threshold: %s", mv.Rationale)
			}
			t.Logf("event: %s — %s", mv.Message, mv.Rationale)
		})
	}
}

// TestAMoveWaitsForTheCancelToShow: the old job's cancel lands, but the next two
// status answers still list it as queued (accounting lag). The move asks again (bounded)
// instead of reverting at the first answer: the new job on B stays the task's job and
// the old one ends cancelled. Before, the move was reverted (the new job cancelled)
// and then the old job's cancel showed too: the rig saw a task left queued with both
// its jobs cancelled and nothing to run.
func TestAMoveWaitsForTheCancelToShow(t *testing.T) {
	// Accounting reads the cancelled job PENDING for the next two answers (lagSite).
	r := newReplanRig(t, func(p *simprov.Provider) provider.Provider { return newLagSite(p, 2) }, nil)
	r.block(t, r.a, 4*time.Hour)
	r.task(t, "laggy", "echo hi", 1)
	if !r.tickUntil(t, 8*time.Second, func() bool { return len(r.attempts(t, "laggy")) > 1 }) {
		logEvents(t, r.events(t, "laggy"))
		t.Fatal("the job did not move to the empty B")
	}
	// Let the monitor settle both attempts.
	r.tickUntil(t, 3*time.Second, func() bool {
		atts := r.attempts(t, "laggy")
		return atts[0].State == model.JobCancelled && atts[1].State.Final()
	})
	evs := r.events(t, "laggy")
	if _, reverted := findEvent(evs, "stay on A: move reverted"); reverted {
		logEvents(t, evs)
		t.Fatal("the move was reverted on a stale answer although the old job's cancel had landed")
	}
	atts := r.attempts(t, "laggy")
	if len(atts) != 2 || atts[1].System != "B" || atts[1].State == model.JobCancelled || atts[1].State == model.JobCancelling {
		logEvents(t, evs)
		t.Fatalf("attempt 2: %s %s; want B's job kept as the task's job", atts[1].System, atts[1].State)
	}
	if atts[0].State != model.JobCancelled && atts[0].State != model.JobCancelling {
		t.Fatalf("attempt 1 on A is %s, want cancelled", atts[0].State)
	}
}
