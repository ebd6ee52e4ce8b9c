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
	db := filepath.Join(t.TempDir(), "m.db")
	stA, err := store.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stA.Close() })
	stB, err := store.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stB.Close() })
	clk := &handClock{t: time.Now().UTC()}
	const ttl = 3 * time.Second
	elA, _ := stA.NewElector(store.LeaderConfig{Name: store.LeaderName, Holder: "a", TTL: ttl, Clock: clk.now})
	elB, _ := stB.NewElector(store.LeaderConfig{Name: store.LeaderName, Holder: "b", TTL: ttl, Clock: clk.now})
	if _, ok, err := elA.Step(ctx); !ok || err != nil {
		t.Fatal(ok, err)
	}
	newTask(t, stA, "tk", "true")
	a1 := &model.Attempt{TaskID: "tk", N: 1, Tag: model.JobTag("tk", 1), System: "A", Partition: "cpu", Account: "acct",
		Spec: specFor(&model.Task{Command: "true"}), State: model.JobSubmitting, CreatedAt: clk.now()}
	a1.Spec.Tag, a1.Spec.System, a1.Spec.Partition, a1.Spec.Account = a1.Tag, "A", "cpu", "acct"
	if err := stA.CreateAttempt(ctx, a1); err != nil {
		t.Fatal(err)
	}
	clk.add(ttl)
	if _, ok, err := elB.Step(ctx); !ok || err != nil {
		t.Fatal(ok, err)
	}
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
