package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

// fakeClock is a hand-moved wall clock shared by electors in one test.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// twoReplicas opens one store twice (two replicas on one store).
func twoReplicas(t *testing.T, db string) (*Store, *Store) {
	t.Helper()
	return openT(t, db), openT(t, db)
}

func elector(t *testing.T, s *Store, holder string, ttl time.Duration, clk *fakeClock) *Elector {
	t.Helper()
	e, err := s.NewElector(LeaderConfig{Name: LeaderName, Holder: holder, Addr: "http://" + holder, TTL: ttl, Clock: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestLeaderAcquireRenewExpireSteal(t *testing.T) {
	forEachBackend(t, testLeaderAcquireRenewExpireSteal)
}

func testLeaderAcquireRenewExpireSteal(t *testing.T, db string) {
	ctx := context.Background()
	sa, sb := twoReplicas(t, db)
	clk := &fakeClock{t: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
	const ttl = 9 * time.Second
	a, b := elector(t, sa, "a", ttl, clk), elector(t, sb, "b", ttl, clk)

	st, ok, err := a.Step(ctx)
	if err != nil || !ok || st.Holder != "a" || st.Token != 1 || st.Addr != "http://a" {
		t.Fatalf("first acquire: %+v %v %v, want a holding token 1", st, ok, err)
	}
	if !a.Leading() || a.Token() != 1 {
		t.Fatal("a should be leading with token 1")
	}
	// b cannot take a live lease.
	clk.add(ttl / 3)
	if st, ok, err := b.Step(ctx); err != nil || ok || st.Holder != "a" {
		t.Fatalf("b on a live lease: %+v %v %v, want refused with a named", st, ok, err)
	}
	// a renews: same token, later expiry.
	if st, ok, err := a.Step(ctx); err != nil || !ok || st.Token != 1 || !st.ExpiresAt.Equal(clk.now().Add(ttl)) {
		t.Fatalf("renew: %+v %v %v, want token 1 expiring at now+ttl", st, ok, err)
	}
	// a stops renewing: it stops acting at its local deadline (TTL - TTL/4), before
	// the row expires for anyone else.
	clk.add(ttl - ttl/4)
	if a.Leading() {
		t.Fatal("a still leading past its local deadline")
	}
	if _, ok, _ := b.Step(ctx); ok {
		t.Fatal("b took over before the lease expired")
	}
	clk.add(ttl / 4)
	st, ok, err = b.Step(ctx)
	if err != nil || !ok || st.Holder != "b" || st.Token != 2 {
		t.Fatalf("steal after expiry: %+v %v %v, want b holding token 2", st, ok, err)
	}
	// a's renewal now fails and it is not leading.
	if _, ok, err := a.Step(ctx); err != nil || ok || a.Leading() || a.Token() != 0 {
		t.Fatalf("a after the steal: ok=%v err=%v leading=%v", ok, err, a.Leading())
	}
	// Resign hands over at once.
	if err := b.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if st, ok, err := a.Step(ctx); err != nil || !ok || st.Token != 3 {
		t.Fatalf("a after b resigned: %+v %v %v, want token 3", st, ok, err)
	}
	got, err := sb.Leader(ctx, LeaderName)
	if err != nil || got.Holder != "a" || got.Token != 3 {
		t.Fatalf("Leader: %+v %v", got, err)
	}
}

func claimRow(id string) (*TaskRow, *model.Attempt) {
	now := time.Now().UTC()
	tr := &TaskRow{Task: model.Task{ID: id, Name: id, Command: "true", State: model.TaskPlaced, CreatedAt: now, UpdatedAt: now}}
	a := &model.Attempt{TaskID: id, N: 1, Tag: model.JobTag(id, 1), System: "s", Partition: "p", State: model.JobSubmitting, CreatedAt: now}
	return tr, a
}

func TestLeaderStaleTokenClaimIsFenced(t *testing.T) {
	forEachBackend(t, testLeaderStaleTokenClaimIsFenced)
}

func testLeaderStaleTokenClaimIsFenced(t *testing.T, db string) {
	ctx := context.Background()
	sa, sb := twoReplicas(t, db)
	clk := &fakeClock{t: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
	const ttl = 6 * time.Second
	a, b := elector(t, sa, "a", ttl, clk), elector(t, sb, "b", ttl, clk)
	if _, ok, err := a.Step(ctx); !ok || err != nil {
		t.Fatalf("a: %v %v", ok, err)
	}
	tr, at := claimRow("t1")
	if err := sa.CreateTask(ctx, tr); err != nil {
		t.Fatal(err)
	}
	if err := sa.CreateAttempt(ctx, at); err != nil {
		t.Fatalf("claim under the current token: %v", err)
	}
	if tok, err := sa.ClaimToken(ctx, "t1", 1); err != nil || tok != 1 {
		t.Fatalf("claim token %d %v, want 1", tok, err)
	}
	// b takes over after expiry; a has not noticed (its fence token is still 1).
	clk.add(ttl)
	if _, ok, err := b.Step(ctx); !ok || err != nil {
		t.Fatalf("b: %v %v", ok, err)
	}
	sa.SetFenceToken(1) // a deposed leader that still believes it leads
	tr2, at2 := claimRow("t2")
	if err := sa.CreateTask(ctx, tr2); !errors.Is(err, ErrFenced) {
		t.Fatalf("task stored by a deposed leader: %v, want ErrFenced", err)
	}
	if err := sb.CreateTask(ctx, tr2); err != nil {
		t.Fatal(err)
	}
	err := sa.CreateAttempt(ctx, at2)
	if !errors.Is(err, ErrFenced) {
		t.Fatalf("claim with a stale token: %v, want ErrFenced", err)
	}
	if atts, _ := sb.Attempts(ctx, "t2"); len(atts) != 0 {
		t.Fatalf("a fenced claim left %d attempts", len(atts))
	}
	// A replica that is not leading at all cannot claim either.
	sa.SetFenceToken(0)
	if err := sa.CreateAttempt(ctx, at2); !errors.Is(err, ErrFenced) {
		t.Fatalf("claim without a token: %v, want ErrFenced", err)
	}
	if err := sb.CreateAttempt(ctx, at2); err != nil {
		t.Fatalf("the new leader's claim: %v", err)
	}
	if tok, _ := sb.ClaimToken(ctx, "t2", 1); tok != 2 {
		t.Fatalf("new leader's claim token %d, want 2", tok)
	}
}

func TestLeaderConcurrentAcquirersOneWins(t *testing.T) {
	forEachBackend(t, testLeaderConcurrentAcquirersOneWins)
}

func testLeaderConcurrentAcquirersOneWins(t *testing.T, db string) {
	ctx := context.Background()
	clk := &fakeClock{t: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
	const n = 8
	els := make([]*Elector, n)
	for i := range els {
		els[i] = elector(t, openT(t, db), fmt.Sprintf("r%d", i), 10*time.Second, clk)
	}
	for round := 0; round < 3; round++ {
		var wg sync.WaitGroup
		wins := make([]bool, n)
		errs := make([]error, n)
		for i, e := range els {
			wg.Add(1)
			go func() { defer wg.Done(); _, wins[i], errs[i] = e.Step(ctx) }()
		}
		wg.Wait()
		won := 0
		for i := range els {
			if errs[i] != nil {
				t.Fatalf("round %d replica %d: %v", round, i, errs[i])
			}
			if wins[i] {
				won++
			}
		}
		if won != 1 {
			t.Fatalf("round %d: %d replicas hold the lease, want exactly 1", round, won)
		}
		// Let it expire so the next round is a fresh race.
		for _, e := range els {
			if e.Leading() {
				_ = e.Resign(ctx)
			}
		}
	}
}

func TestIdempotencyKeyUnique(t *testing.T) { forEachBackend(t, testIdempotencyKeyUnique) }

func testIdempotencyKeyUnique(t *testing.T, db string) {
	ctx := context.Background()
	s := openT(t, db)
	tr, _ := claimRow("k1")
	tr.IdempotencyKey = "key-1"
	if err := s.CreateTask(ctx, tr); err != nil {
		t.Fatal(err)
	}
	tr2, _ := claimRow("k2")
	tr2.IdempotencyKey = "key-1"
	if err := s.CreateTask(ctx, tr2); !errors.Is(err, ErrDuplicateKey) {
		t.Fatalf("second task with the key: %v, want ErrDuplicateKey", err)
	}
	got, err := s.TaskByIdempotencyKey(ctx, "key-1")
	if err != nil || got.ID != "k1" {
		t.Fatalf("by key: %+v %v, want k1", got, err)
	}
	// Tasks without a key never collide.
	for _, id := range []string{"n1", "n2"} {
		tr, _ := claimRow(id)
		if err := s.CreateTask(ctx, tr); err != nil {
			t.Fatalf("keyless task %s: %v", id, err)
		}
	}
	if _, err := s.TaskByIdempotencyKey(ctx, "nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown key: %v", err)
	}
}
