package execution

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/store"
)

type handClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *handClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *handClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// TestTakeoverWaitsOutTheOldLeadersClaim: team mode. Leader a claimed attempt 1
// (persisted, token 1) and died before its job reached the site; replica b takes the
// lease (token 2). b's recovery finds no job by the tag and does NOT submit while a's
// submit could still land (ClaimGrace after the takeover); after it, b submits
// exactly once. The deposed a can neither claim nor submit any more.
func TestTakeoverWaitsOutTheOldLeadersClaim(t *testing.T) {
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
	elA, err := stA.NewElector(store.LeaderConfig{Name: store.LeaderName, Holder: "a", TTL: ttl, Clock: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	elB, err := stB.NewElector(store.LeaderConfig{Name: store.LeaderName, Holder: "b", TTL: ttl, Clock: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := elA.Step(ctx); !ok || err != nil {
		t.Fatalf("a: %v %v", ok, err)
	}
	newTask(t, stA, "tk", "true")
	// a's claim: the attempt row, before the call to the site that never came.
	a1 := &model.Attempt{TaskID: "tk", N: 1, Tag: model.JobTag("tk", 1), System: "A", Partition: "cpu", Account: "acct",
		Spec: specFor(&model.Task{Command: "true"}), State: model.JobSubmitting, CreatedAt: clk.now()}
	a1.Spec.Tag, a1.Spec.System, a1.Spec.Partition, a1.Spec.Account = a1.Tag, "A", "cpu", "acct"
	if err := stA.CreateAttempt(ctx, a1); err != nil {
		t.Fatal(err)
	}
	clk.add(ttl) // a is gone: its lease runs out
	if _, ok, err := elB.Step(ctx); !ok || err != nil {
		t.Fatalf("b: %v %v", ok, err)
	}
	site := &lostAnswerSite{Provider: newSimSite(t, "A")}
	const grace = 10 * time.Minute
	eB := New(Options{Store: stB, Providers: provMap{"A": site}, Placer: fixedPlacer{"A"}, Clock: clk.now, SubmitBackoff: time.Millisecond})
	eB.SetLeadership(elB.Leading, grace)
	eB.TakeOver(elB.Token())
	renew := func() {
		t.Helper()
		if _, ok, err := elB.Step(ctx); !ok || err != nil {
			t.Fatalf("b renew: %v %v", ok, err)
		}
	}
	if err := eB.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	if n := site.count(); n != 0 {
		t.Fatalf("b submitted %d times within the grace of a's claim, want 0", n)
	}
	atts, _ := stB.Attempts(ctx, "tk")
	if len(atts) != 1 || atts[0].State != model.JobSubmitting {
		t.Fatalf("attempts within the grace: %+v, want the one claim left submitting", atts)
	}
	// The deposed leader a: not leading, its claims and submits are refused.
	if _, ok, _ := elA.Step(ctx); ok {
		t.Fatal("a took the lease back from b")
	}
	eA := New(Options{Store: stA, Providers: provMap{"A": site}, Placer: fixedPlacer{"A"}, Clock: clk.now})
	eA.SetLeadership(elA.Leading, grace)
	newTask(t, stB, "tk2", "true")
	err = eA.Dispatch(ctx, "tk2", &Placement{System: "A", Partition: "cpu", Account: "acct", Spec: specFor(&model.Task{Command: "true"})}, "test")
	if !errors.Is(err, store.ErrFenced) {
		t.Fatalf("dispatch by the deposed leader: %v, want ErrFenced", err)
	}
	if n := site.count(); n != 0 {
		t.Fatalf("the deposed leader reached the site (%d submits)", n)
	}
	// Past the grace, b submits a's claimed attempt once.
	for range 2 {
		clk.add(grace / 2)
		renew()
	}
	clk.add(time.Second)
	renew()
	if err := eB.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	if err := eB.Recover(ctx); err != nil { // a second pass finds it settled
		t.Fatal(err)
	}
	// Two submits: a's claimed attempt, and tk2 (stored, never dispatched: recovery
	// places it). One attempt with one job each.
	if n := site.count(); n != 2 {
		t.Fatalf("after the grace: %d submits, want exactly 2 (one per task)", n)
	}
	for _, id := range []string{"tk", "tk2"} {
		atts, _ = stB.Attempts(ctx, id)
		if len(atts) != 1 || atts[0].JobID == "" {
			evs, _ := stB.Events(ctx, store.EventQuery{})
			for _, e := range evs {
				t.Logf("event %s %d %s: %s (%s)", e.TaskID, e.Attempt, e.Kind, e.Message, e.Rationale)
			}
			for _, a := range atts {
				t.Logf("attempt %+v", *a)
			}
			t.Fatalf("attempts of %s after the grace: %d, want attempt 1 with a job", id, len(atts))
		}
	}
	if tok, _ := stB.ClaimToken(ctx, "tk2", 1); tok != 2 {
		t.Fatalf("tk2's claim token %d, want b's 2", tok)
	}
}
