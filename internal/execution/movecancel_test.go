package execution

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/provider"
	"github.com/mosaic-hpc/mosaic/internal/provider/simprov"
	"github.com/mosaic-hpc/mosaic/internal/store"
)

// lagSite is A whose accounting (Status) lags behind its controller, as Slurm's sacct
// did on the rig: for the next lag answers after the cancel of a still-queued job it
// reads that job PENDING, whatever the job did (cancelled, or started in the instant
// before the cancel: onCancel runs first). stale can be preset for jobs.
type lagSite struct {
	*simprov.Provider
	lag      int
	mu       *sync.Mutex
	stale    map[string]int
	onCancel func()
}

func newLagSite(p *simprov.Provider, lag int) lagSite {
	return lagSite{Provider: p, lag: lag, mu: &sync.Mutex{}, stale: map[string]int{}}
}

func (s lagSite) CancelPending(ctx context.Context, ids []string) error {
	if s.onCancel != nil {
		s.onCancel()
	}
	if err := s.Provider.CancelPending(ctx, ids); err != nil {
		return err
	}
	s.mu.Lock()
	for _, id := range ids {
		s.stale[id] = s.lag
	}
	s.mu.Unlock()
	return nil
}

func (s lagSite) Status(ctx context.Context, ids []string) (map[string]model.JobStatus, error) {
	got, err := s.Provider.Status(ctx, ids)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		if s.stale[id] > 0 {
			s.stale[id]--
			st := got[id]
			st.JobID, st.State, st.RawState = id, model.JobPending, "PENDING"
			got[id] = st
		}
	}
	return got, nil
}

// liveLagSite is lagSite with the controller's own listing (provider.LiveStatuser:
// Slurm's squeue), which shows the job's true state at once.
type liveLagSite struct{ lagSite }

func (s liveLagSite) LiveStatus(ctx context.Context, ids []string) (map[string]model.JobStatus, error) {
	return s.lagSite.Provider.Status(ctx, ids)
}

var _ provider.LiveStatuser = liveLagSite{}

// ranTimes is how often a test command that appends "ran" to file began.
func ranTimes(t *testing.T, file string) int {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return strings.Count(string(b), "ran")
}

// taskEnded ticks r until the task is final; it fails the test otherwise.
func (r *replanRig) taskEnded(t *testing.T, id string, d time.Duration) *store.TaskRow {
	t.Helper()
	var tr *store.TaskRow
	if !r.tickUntil(t, d, func() bool {
		var err error
		tr, err = r.st.Task(r.ctx, id)
		return err == nil && tr.State.Final()
	}) {
		logEvents(t, r.events(t, id))
		t.Fatalf("task %s did not end", id)
	}
	return tr
}

// startOnA cancels A's blockers and waits (without a tick: the engine does not see
// it) until job id runs on A.
func (r *replanRig) startOnA(t *testing.T, blockA []string, id string) {
	t.Helper()
	if err := r.a.Cancel(r.ctx, blockA); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(3 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if sts, _ := r.a.Status(r.ctx, []string{id}); sts[id].State == model.JobRunning {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s did not start on A", id)
		}
	}
}

// TestAMoveDecidesOnTheControllerWhenAccountingLags: the old job's cancel lands, but
// accounting still reads it PENDING far longer than the move's 4 × 1 s of asking again.
// The controller's listing (LiveStatus) shows it CANCELLED at once, so the move stands:
// the task has exactly one job, B's, which succeeds; the command runs once. Before, the
// move was reverted on the stale answer (B's job cancelled), and when the cancel showed
// the task was left with no job.
func TestAMoveDecidesOnTheControllerWhenAccountingLags(t *testing.T) {
	count := filepath.Join(t.TempDir(), "ran")
	r := newReplanRig(t, func(p *simprov.Provider) provider.Provider { return liveLagSite{newLagSite(p, 40)} }, nil)
	r.block(t, r.a, 4*time.Hour)
	r.task(t, "late", "echo ran >> "+count, 1)
	tr := r.taskEnded(t, "late", 15*time.Second)
	evs := r.events(t, "late")
	if _, reverted := findEvent(evs, "stay on A: move reverted"); reverted {
		logEvents(t, evs)
		t.Fatal("the move was reverted on accounting's stale PENDING although the controller showed the cancel")
	}
	atts := r.attempts(t, "late")
	if tr.State != model.TaskSucceeded || len(atts) != 2 || atts[1].System != "B" || atts[1].State != model.JobSucceeded {
		logEvents(t, evs)
		t.Fatalf("task %s with %d attempts; want it succeeded on B's job, attempt 2", tr.State, len(atts))
	}
	if s := atts[0].State; s != model.JobCancelling && s != model.JobCancelled {
		t.Fatalf("attempt 1 on A is %s, want cancelled", s)
	}
	if n := ranTimes(t, count); n != 1 {
		t.Fatalf("the command began %d times, want once", n)
	}
}

// TestAMoveSeesAStartTheAccountingHides: the old job starts in the instant before its
// cancel (the cancel of a still-queued job leaves it running) and accounting reads it
// PENDING for long after. The controller shows it RUNNING: the move is reverted, the
// new job on B is cancelled and the command runs once, on A. Reading "PENDING after a
// cancel that answered success" as "cancelled" would keep B's job and run it twice.
func TestAMoveSeesAStartTheAccountingHides(t *testing.T) {
	count := filepath.Join(t.TempDir(), "ran")
	var r *replanRig
	var blockA []string
	var once sync.Once
	start := func() {
		once.Do(func() {
			if err := r.a.Cancel(r.ctx, blockA); err != nil {
				t.Error(err)
			}
			old := r.attempts(t, "hidden")[0].JobID
			for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				if sts, _ := r.a.Status(r.ctx, []string{old}); sts[old].State == model.JobRunning {
					return
				}
			}
			t.Error("the old job did not start on A")
		})
	}
	r = newReplanRig(t, func(p *simprov.Provider) provider.Provider {
		s := newLagSite(p, 40)
		s.onCancel = func() { start() }
		return liveLagSite{s}
	}, nil)
	blockA = r.block(t, r.a, 4*time.Hour)
	r.block(t, r.b, 30*time.Minute) // B's job waits too, so that cancelling it keeps it from running
	r.task(t, "hidden", "echo ran >> "+count+"; sleep 1", 2)
	if !r.tickUntil(t, 5*time.Second, func() bool { return len(r.attempts(t, "hidden")) > 1 }) {
		logEvents(t, r.events(t, "hidden"))
		t.Fatal("no move was tried")
	}
	r.e.o.NoReplan = true
	tr := r.taskEnded(t, "hidden", 15*time.Second)
	atts := r.attempts(t, "hidden")
	if tr.State != model.TaskSucceeded || len(atts) != 2 || atts[0].State != model.JobSucceeded || atts[1].State != model.JobCancelled {
		logEvents(t, r.events(t, "hidden"))
		t.Fatalf("task %s, attempts %d; want the old job run to its end on A and the new one cancelled", tr.State, len(atts))
	}
	if _, ok := findEvent(r.events(t, "hidden"), "stay on A: move reverted"); !ok {
		t.Fatal("no event says the move was reverted")
	}
	if n := ranTimes(t, count); n != 1 {
		t.Fatalf("the command began %d times, want once", n)
	}
}

// TestTwoLiveJobsAskTheControllerWhichStarted: after a crash mid-move the task has two
// live jobs; the old one on A has started but A's accounting still reads it PENDING.
// The controller's listing shows it running: it is the task's job and the new one on B
// is cancelled. On accounting alone the running old job was taken for a queued one and
// cancelled (killed), and the command ran again on B.
func TestTwoLiveJobsAskTheControllerWhichStarted(t *testing.T) {
	lag := newLagSite(nil, 0)
	r := newReplanRig(t, nil, nil)
	lag.Provider = r.a
	blockA := r.block(t, r.a, 4*time.Hour)
	r.block(t, r.b, 4*time.Hour)
	r.task(t, "cut", "sleep 30", 2)
	if err := r.e.Dispatch(r.ctx, "cut", &Placement{System: "B", Partition: "cpu", Account: "acct", Spec: specFor(&model.Task{Command: "echo hi"})}, "the move's new job"); err != nil {
		t.Fatal(err)
	}
	old := r.attempts(t, "cut")[0].JobID
	r.startOnA(t, blockA, old)
	// Accounting reads the running job PENDING.
	lag.stale[old] = 1000
	r.e = New(Options{Store: r.st, Providers: provMap{"A": liveLagSite{lag}, "B": r.b}, Placer: orderedPlacer{"B", "A"}, NoReplan: true}) // the restarted core
	if !r.tickUntil(t, 5*time.Second, func() bool {
		s := r.attempts(t, "cut")[1].State
		return s == model.JobCancelling || s == model.JobCancelled
	}) {
		logEvents(t, r.events(t, "cut"))
		t.Fatal("the new job on B was not cancelled")
	}
	if s := r.attempts(t, "cut")[0].State; s == model.JobCancelling || s == model.JobCancelled {
		logEvents(t, r.events(t, "cut"))
		t.Fatalf("the running old job is %s: it was cancelled as if queued", s)
	}
}

// TestAMoveCancelThatShowsLateIsContinued: A has no controller listing and its
// accounting reads the old job PENDING after its cancel for longer than the move asks
// (4 × 1 s): the move is reverted (B's job cancelled). Then the cancel shows. Mosaic
// itself sent it (the move-cancel mark stored before the cancel), nobody cancelled the
// task: it is submitted again through the continuation (a retry on A, with the
// rationale), not left without a job nor ended cancelled; it succeeds, the command
// having run once.
func TestAMoveCancelThatShowsLateIsContinued(t *testing.T) {
	count := filepath.Join(t.TempDir(), "ran")
	r := newReplanRig(t, func(p *simprov.Provider) provider.Provider { return newLagSite(p, 8) }, nil)
	blockA := r.block(t, r.a, 4*time.Hour)
	r.block(t, r.b, 30*time.Minute) // B's job waits too, so that cancelling it keeps it from running
	r.task(t, "lost", "echo ran >> "+count, 2)
	if !r.tickUntil(t, 10*time.Second, func() bool {
		_, ok := findEvent(r.events(t, "lost"), "stay on A: move reverted")
		return ok
	}) {
		logEvents(t, r.events(t, "lost"))
		t.Fatal("the move was not reverted (the test needs accounting to lag past the move's asking)")
	}
	r.e.o.NoReplan = true
	if !r.tickUntil(t, 5*time.Second, func() bool { return len(r.attempts(t, "lost")) > 2 }) {
		logEvents(t, r.events(t, "lost"))
		tr, _ := r.st.Task(r.ctx, "lost")
		t.Fatalf("task %s: no new attempt after the move's own cancel showed", tr.State)
	}
	atts := r.attempts(t, "lost")
	if atts[0].State != model.JobCancelled || atts[1].State.Final() && atts[1].State != model.JobCancelled || atts[2].System != "A" {
		logEvents(t, r.events(t, "lost"))
		t.Fatalf("attempts %s, %s, %s on %s", atts[0].State, atts[1].State, atts[2].State, atts[2].System)
	}
	ev, ok := findEvent(r.events(t, "lost"), "retry on A")
	if !ok || !strings.Contains(ev.Rationale, "cancelled by Mosaic itself") {
		logEvents(t, r.events(t, "lost"))
		t.Fatal("no continuation event says why the task was submitted again")
	}
	if err := r.a.Cancel(r.ctx, blockA); err != nil {
		t.Fatal(err)
	}
	if tr := r.taskEnded(t, "lost", 10*time.Second); tr.State != model.TaskSucceeded {
		logEvents(t, r.events(t, "lost"))
		t.Fatalf("task %s, want succeeded", tr.State)
	}
	if n := ranTimes(t, count); n != 1 {
		t.Fatalf("the command began %d times, want once", n)
	}
}

// TestARestartContinuesAMoveCancelThatShowedLate: the process stopped after the old
// job of a reverted move showed cancelled by the move's own cancel, before the
// continuation: the restarted core resubmits the task (the move-cancel mark is in the
// store) rather than ending it cancelled. A job cancelled without the mark still ends
// its task cancelled.
func TestARestartContinuesAMoveCancelThatShowedLate(t *testing.T) {
	for _, marked := range []bool{true, false} {
		r := newReplanRig(t, nil, nil)
		r.block(t, r.a, 4*time.Hour)
		r.block(t, r.b, 4*time.Hour)
		r.task(t, "gap", "echo hi", 2)
		if err := r.e.Dispatch(r.ctx, "gap", &Placement{System: "B", Partition: "cpu", Account: "acct", Spec: specFor(&model.Task{Command: "echo hi"})}, "the move's new job"); err != nil {
			t.Fatal(err)
		}
		atts := r.attempts(t, "gap")
		if marked {
			if err := r.st.AppendEventsErr(r.ctx, ev("gap", 1, "A", moveCancelKind, moveCancelMsg+atts[0].JobID, "", model.ActorSystem)); err != nil {
				t.Fatal(err)
			}
		}
		if err := r.a.Cancel(r.ctx, []string{atts[0].JobID}); err != nil {
			t.Fatal(err)
		}
		if err := r.b.Cancel(r.ctx, []string{atts[1].JobID}); err != nil {
			t.Fatal(err)
		}
		t1 := time.Now().UTC()
		t0 := t1.Add(-time.Second) // the old job's cancel landed first
		if err := r.st.UpdateAttempt(r.ctx, "gap", 2, store.AttemptUpdate{State: ptr(model.JobCancelled), Reason: ptr(revertedReason + "test"), Ended: &t1}); err != nil {
			t.Fatal(err)
		}
		if err := r.st.UpdateAttempt(r.ctx, "gap", 1, store.AttemptUpdate{State: ptr(model.JobCancelled), Ended: &t0}); err != nil {
			t.Fatal(err)
		}
		e := New(Options{Store: r.st, Providers: provMap{"A": r.a, "B": r.b}, Placer: orderedPlacer{"B", "A"}, NoReplan: true}) // the restarted core
		if err := e.Recover(r.ctx); err != nil {
			t.Fatal(err)
		}
		tr, err := r.st.Task(r.ctx, "gap")
		if err != nil {
			t.Fatal(err)
		}
		atts = r.attempts(t, "gap")
		if marked && (tr.State.Final() || len(atts) != 3 || atts[2].System != "A" || atts[2].JobID == "") {
			logEvents(t, r.events(t, "gap"))
			t.Fatalf("marked: task %s with %d attempts; want it submitted again on A", tr.State, len(atts))
		}
		if !marked && (tr.State != model.TaskCancelled || len(atts) != 2) {
			logEvents(t, r.events(t, "gap"))
			t.Fatalf("unmarked: task %s with %d attempts; want it ended cancelled", tr.State, len(atts))
		}
	}
}

// revertedMove sets up what a reverted move leaves: task id's job 1 on A (queued
// behind blockers, returned) marked as cancelled by the move at mark, the move's job 2
// on B cancelled as reverted; the policy allows maxAttempts attempts.
func revertedMove(t *testing.T, id string, maxAttempts int, mark time.Time) (*replanRig, []string) {
	t.Helper()
	r := newReplanRig(t, nil, nil)
	blockA := r.block(t, r.a, 4*time.Hour)
	r.block(t, r.b, 4*time.Hour)
	pol, _ := json.Marshal(model.Policy{MaxAttempts: maxAttempts})
	now := time.Now().UTC()
	// The command outlives the tests' cancels: a job that "started between polls" must
	// still be running when it is cancelled (an instant echo could end first and the task
	// succeed, as it once did in CI).
	cmd := "sleep 60; echo ran >> " + filepath.Join(t.TempDir(), "ran")
	if err := r.st.CreateTask(r.ctx, &store.TaskRow{Task: model.Task{ID: id, Name: id, Command: cmd, State: model.TaskPlaced,
		Envelope:  model.Envelope{CPUCores: model.IntRange{Min: 1, Max: 1}, Walltime: model.DurationRange{Min: model.Duration(time.Hour), Max: model.Duration(time.Hour)}},
		CreatedAt: now, UpdatedAt: now}, Policy: pol}); err != nil {
		t.Fatal(err)
	}
	for _, sys := range []string{"A", "B"} {
		if err := r.e.Dispatch(r.ctx, id, &Placement{System: sys, Partition: "cpu", Account: "acct", Spec: specFor(&model.Task{Command: cmd})}, "test"); err != nil {
			t.Fatal(err)
		}
	}
	r.e.o.NoReplan = true
	atts := r.attempts(t, id)
	m := ev(id, 1, "A", moveCancelKind, moveCancelMsg+atts[0].JobID, "", model.ActorSystem)
	m.Time = mark
	if err := r.st.AppendEventsErr(r.ctx, m); err != nil {
		t.Fatal(err)
	}
	if err := r.b.Cancel(r.ctx, []string{atts[1].JobID}); err != nil {
		t.Fatal(err)
	}
	if err := r.st.UpdateAttempt(r.ctx, id, 2, store.AttemptUpdate{State: ptr(model.JobCancelled), Reason: ptr(revertedReason + "test"), Ended: ptr(time.Now().UTC())}); err != nil {
		t.Fatal(err)
	}
	return r, blockA
}

// TestAMoveMarkCoversOnlyTheMovesOwnCancel: the mark a move left on job 1 is two hours
// old when job 1 is cancelled at the site (a user's scancel, long after the move was
// reverted): that cancel is not the move's. The task ends cancelled, not submitted
// again. Before, the mark never expired and the user's cancel was resubmitted.
func TestAMoveMarkCoversOnlyTheMovesOwnCancel(t *testing.T) {
	r, _ := revertedMove(t, "old", 4, time.Now().UTC().Add(-2*time.Hour))
	if err := r.a.Cancel(r.ctx, []string{r.attempts(t, "old")[0].JobID}); err != nil {
		t.Fatal(err)
	}
	tr := r.taskEnded(t, "old", 10*time.Second)
	if tr.State != model.TaskCancelled || len(r.attempts(t, "old")) != 2 || !strings.Contains(tr.Reason, "outside Mosaic") {
		logEvents(t, r.events(t, "old"))
		t.Fatalf("task %s (%q) with %d attempts; want it ended cancelled with no new attempt", tr.State, tr.Reason, len(r.attempts(t, "old")))
	}
}

// TestAJobThatStartedBetweenPollsIsNotResubmitted: job 1, marked by a reverted move,
// starts and is then cancelled between two monitor polls: the store never saw it
// RUNNING, but the site's accounting gives its start. It ran, so it is not submitted
// again (its command would run twice): the task ends cancelled. Before, StartedAt ==
// nil counted it as never started and the task was resubmitted.
func TestAJobThatStartedBetweenPollsIsNotResubmitted(t *testing.T) {
	r, blockA := revertedMove(t, "ran", 4, time.Now().UTC())
	old := r.attempts(t, "ran")[0].JobID
	r.startOnA(t, blockA, old)
	if err := r.a.Cancel(r.ctx, []string{old}); err != nil {
		t.Fatal(err)
	}
	tr := r.taskEnded(t, "ran", 10*time.Second)
	atts := r.attempts(t, "ran")
	if tr.State != model.TaskCancelled || len(atts) != 2 || atts[0].StartedAt == nil {
		logEvents(t, r.events(t, "ran"))
		t.Fatalf("task %s with %d attempts (job 1 started %v); want it ended cancelled, job 1 known to have started", tr.State, len(atts), atts[0].StartedAt)
	}
}

// TestAMoveCancelUsesNoAttempt: the policy allows one attempt; a reverted move's own
// cancel of job 1 shows late. Mosaic's own cancel is not a failure: the task is
// submitted again on A, not failed for its attempts being used up.
func TestAMoveCancelUsesNoAttempt(t *testing.T) {
	r, _ := revertedMove(t, "cap", 1, time.Now().UTC())
	if err := r.a.Cancel(r.ctx, []string{r.attempts(t, "cap")[0].JobID}); err != nil {
		t.Fatal(err)
	}
	if !r.tickUntil(t, 10*time.Second, func() bool { return len(r.attempts(t, "cap")) > 2 }) {
		logEvents(t, r.events(t, "cap"))
		tr, _ := r.st.Task(r.ctx, "cap")
		t.Fatalf("task %s (%q): not submitted again after the move's own cancel", tr.State, tr.Reason)
	}
	tr, err := r.st.Task(r.ctx, "cap")
	if err != nil {
		t.Fatal(err)
	}
	if atts := r.attempts(t, "cap"); tr.State.Final() || atts[2].System != "A" {
		t.Fatalf("task %s, attempt 3 on %s; want it open on A", tr.State, atts[2].System)
	}
}

// TestACancelAtTheSiteEndsTheTask: the task's only job, queued on A, is cancelled at
// the site outside Mosaic. The task ends cancelled with the reason and an event, and
// is not submitted again. Before, it stayed queued with no live job forever.
func TestACancelAtTheSiteEndsTheTask(t *testing.T) {
	r := newReplanRig(t, nil, nil)
	r.block(t, r.a, 4*time.Hour)
	r.e.o.NoReplan = true
	r.task(t, "user", "echo hi", 0)
	if err := r.a.Cancel(r.ctx, []string{r.attempts(t, "user")[0].JobID}); err != nil {
		t.Fatal(err)
	}
	tr := r.taskEnded(t, "user", 10*time.Second)
	ev, ok := findEvent(r.events(t, "user"), "task cancelled")
	if tr.State != model.TaskCancelled || len(r.attempts(t, "user")) != 1 || !ok || !strings.Contains(ev.Rationale, "cancelled at A, outside Mosaic") {
		logEvents(t, r.events(t, "user"))
		t.Fatalf("task %s (%q) with %d attempts; want it ended cancelled, with an event saying so", tr.State, tr.Reason, len(r.attempts(t, "user")))
	}
}
