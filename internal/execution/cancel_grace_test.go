package execution

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/store"
)

// TestCancelDuringClaimGraceCancelsLateJob: team mode. Leader a claimed attempt 1 and
// died with its submit in flight; b takes over and a user cancels the task within the
// claim grace. The attempt is not closed at once (a's job may still land): it stays
// cancelling, and when a's late job appears b finds it by its tag and cancels it.
func TestCancelDuringClaimGraceCancelsLateJob(t *testing.T) {
	ctx := context.Background()
	stA, stB, clk, elB := deposedLeader(t)
	newTask(t, stA, "tk", "true")
	a1 := claimedAttempt(clk, "tk", 1)
	if err := stA.CreateAttempt(ctx, a1); err != nil {
		t.Fatal(err)
	}
	takeOver(t, clk, elB)
	site := &lostAnswerSite{Provider: newSimSite(t, "A")}
	eB := New(Options{Store: stB, Providers: provMap{"A": site}, Placer: fixedPlacer{"A"}, Clock: clk.now, SubmitBackoff: time.Millisecond})
	eB.SetLeadership(elB.Leading, 10*time.Minute)
	eB.TakeOver(elB.Token())
	if err := eB.Cancel(ctx, "tk", "user"); err != nil && !errors.Is(err, ErrCancelPending) {
		t.Fatal(err)
	}
	atts, _ := stB.Attempts(ctx, "tk")
	if atts[0].State != model.JobCancelling {
		t.Fatalf("attempt after a cancel within the claim grace: %s, want cancelling (a late job must not run untracked)", atts[0].State)
	}
	// a's submit lands late.
	id, err := site.Provider.Submit(ctx, a1.Spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := eB.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	atts, _ = stB.Attempts(ctx, "tk")
	if atts[0].JobID != id {
		t.Fatalf("attempt after the late job landed: job %q state %s, want job %s adopted to be cancelled", atts[0].JobID, atts[0].State, id)
	}
	if n := site.count(); n != 0 {
		t.Fatalf("b submitted %d times, want 0", n)
	}
}

// deposedLeader opens two stores on one SQLite file, a leading (token 1) and b ready to
// take over on the hand clock.
func deposedLeader(t *testing.T) (stA, stB *store.Store, clk *handClock, elB *store.Elector) {
	t.Helper()
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "m.db")
	var err error
	if stA, err = store.Open(ctx, db); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stA.Close() })
	if stB, err = store.Open(ctx, db); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stB.Close() })
	clk = &handClock{t: time.Now().UTC()}
	elA, err := stA.NewElector(store.LeaderConfig{Name: store.LeaderName, Holder: "a", TTL: graceTTL, Clock: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	if elB, err = stB.NewElector(store.LeaderConfig{Name: store.LeaderName, Holder: "b", TTL: graceTTL, Clock: clk.now}); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := elA.Step(ctx); !ok || err != nil {
		t.Fatal(ok, err)
	}
	return stA, stB, clk, elB
}

const graceTTL = 3 * time.Second

// takeOver lets a's lease run out and b take it.
func takeOver(t *testing.T, clk *handClock, elB *store.Elector) {
	t.Helper()
	clk.add(graceTTL)
	if _, ok, err := elB.Step(context.Background()); !ok || err != nil {
		t.Fatal(ok, err)
	}
}

// claimedAttempt is attempt n of task id on A, claimed (submitting, no job yet).
func claimedAttempt(clk *handClock, id string, n int) *model.Attempt {
	a := &model.Attempt{TaskID: id, N: n, Tag: model.JobTag(id, n), System: "A", Partition: "cpu", Account: "acct",
		Spec: specFor(&model.Task{Command: "true"}), State: model.JobSubmitting, CreatedAt: clk.now()}
	a.Spec.Tag, a.Spec.System, a.Spec.Partition, a.Spec.Account = a.Tag, "A", "cpu", "acct"
	return a
}

// TestMoveInClaimGraceNotAbandoned: team mode. Leader a moved a job (attempt 1 keeps
// its place; attempt 2 claimed) and died with attempt 2's submit in flight. Within
// the claim grace b does not abandon attempt 2 as a "move cut short" (its job may
// still land); when it lands b adopts it.
func TestMoveInClaimGraceNotAbandoned(t *testing.T) {
	ctx := context.Background()
	stA, stB, clk, elB := deposedLeader(t)
	newTask(t, stA, "tk", "true")
	site := &lostAnswerSite{Provider: newSimSite(t, "A")}
	a1 := claimedAttempt(clk, "tk", 1)
	id1, err := site.Provider.Submit(ctx, a1.Spec)
	if err != nil {
		t.Fatal(err)
	}
	a1.JobID, a1.State = id1, model.JobPending
	if err := stA.CreateAttempt(ctx, a1); err != nil {
		t.Fatal(err)
	}
	a2 := claimedAttempt(clk, "tk", 2)
	if err := stA.CreateAttempt(ctx, a2); err != nil {
		t.Fatal(err)
	}
	takeOver(t, clk, elB)
	eB := New(Options{Store: stB, Providers: provMap{"A": site}, Placer: fixedPlacer{"A"}, Clock: clk.now, SubmitBackoff: time.Millisecond})
	eB.SetLeadership(elB.Leading, 10*time.Minute)
	eB.TakeOver(elB.Token())
	if err := eB.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	atts, _ := stB.Attempts(ctx, "tk")
	if len(atts) != 2 || atts[1].State != model.JobSubmitting {
		t.Fatalf("attempt 2 within the claim grace: %s (%s), want still submitting", atts[len(atts)-1].State, atts[len(atts)-1].Reason)
	}
	id2, err := site.Provider.Submit(ctx, a2.Spec) // a's submit lands late
	if err != nil {
		t.Fatal(err)
	}
	if err := eB.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	atts, _ = stB.Attempts(ctx, "tk")
	if atts[1].JobID != id2 {
		t.Fatalf("attempt 2 after its job landed: job %q state %s, want %s adopted", atts[1].JobID, atts[1].State, id2)
	}
}

// TestDeposedEngineCancelsAndWritesNothing: team mode. Leader a submitted a job, then
// b took over. a's engine (no longer leading, its store's token stale) asked to
// cancel the task neither cancels the job at the site nor writes the attempt or the
// task; a direct write with the stale token is refused with ErrFenced.
func TestDeposedEngineCancelsAndWritesNothing(t *testing.T) {
	ctx := context.Background()
	stA, stB, clk, elB := deposedLeader(t)
	newTask(t, stA, "tk", "true")
	site := &lostAnswerSite{Provider: newSimSite(t, "A")}
	a1 := claimedAttempt(clk, "tk", 1)
	id, err := site.Provider.Submit(ctx, a1.Spec)
	if err != nil {
		t.Fatal(err)
	}
	a1.JobID, a1.State = id, model.JobPending
	if err := stA.CreateAttempt(ctx, a1); err != nil {
		t.Fatal(err)
	}
	takeOver(t, clk, elB)
	for _, leading := range []bool{true, false} { // stale token alone; and deposed too
		eA := New(Options{Store: stA, Providers: provMap{"A": site}, Placer: fixedPlacer{"A"}, Clock: clk.now})
		eA.SetLeadership(func() bool { return leading }, time.Minute)
		if err := eA.Cancel(ctx, "tk", "user"); err == nil {
			t.Errorf("leading()=%v: the deposed engine's cancel succeeded", leading)
		}
		found, err := site.Provider.FindByTag(ctx, []string{a1.Tag})
		if err != nil {
			t.Fatal(err)
		}
		// The job may well have run to its end meanwhile (its command is `true`): what
		// must not have happened is a cancel.
		if st := found[a1.Tag].State; st == model.JobCancelled || st == model.JobCancelling {
			t.Fatalf("leading()=%v: the deposed engine cancelled job %s at the site (%s)", leading, id, st)
		}
		atts, _ := stB.Attempts(ctx, "tk")
		tk, _ := stB.Task(ctx, "tk")
		if atts[0].State != model.JobPending || tk.State.Final() {
			t.Fatalf("leading()=%v: the deposed engine wrote attempt %s, task %s", leading, atts[0].State, tk.State)
		}
	}
	if err := stA.UpdateAttempt(ctx, "tk", 1, store.AttemptUpdate{State: ptr(model.JobFailed)}); !errors.Is(err, store.ErrFenced) {
		t.Fatalf("UpdateAttempt with a stale token: %v, want ErrFenced", err)
	}
	if err := stA.UpdateTask(ctx, "tk", store.TaskUpdate{State: ptr(model.TaskFailed)}); !errors.Is(err, store.ErrFenced) {
		t.Fatalf("UpdateTask with a stale token: %v, want ErrFenced", err)
	}
	// The leader b still writes.
	if err := stB.UpdateAttempt(ctx, "tk", 1, store.AttemptUpdate{Reason: ptr("b")}); err != nil {
		t.Fatalf("UpdateAttempt by the leader: %v", err)
	}
}
