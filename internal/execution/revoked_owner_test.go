package execution

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/store"
)

// TestRevokedOwnerIsNotContinued: a failed job of a revoked user's task is not retried
// under their identity: the task fails with "owner revoked" after one attempt, while
// the same failure of an active user's task is retried.
func TestRevokedOwnerIsNotContinued(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	site := newSimSite(t, "A")
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "m.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	for _, u := range []string{"alice", "bob"} {
		if _, err := st.AddUser(ctx, u, false, nil); err != nil {
			t.Fatal(err)
		}
	}
	e := New(Options{Store: st, Providers: provMap{"A": site}, Placer: fixedPlacer{"A"}, SubmitBackoff: time.Millisecond})
	now := time.Now().UTC()
	for id, owner := range map[string]string{"ta": "alice", "tb": "bob"} {
		if err := st.CreateTask(ctx, &store.TaskRow{Task: model.Task{ID: id, Name: id, Command: "exit 3", State: model.TaskPlaced, Owner: owner,
			Envelope:  model.Envelope{CPUCores: model.IntRange{Min: 1, Max: 1}, Walltime: model.DurationRange{Min: model.Duration(time.Hour), Max: model.Duration(time.Hour)}},
			CreatedAt: now, UpdatedAt: now}}); err != nil {
			t.Fatal(err)
		}
		if err := e.Dispatch(ctx, id, &Placement{System: "A", Partition: "cpu", Account: "acct", Spec: specFor(&model.Task{Command: "exit 3"})}, "test"); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.RevokeUser(ctx, "alice", nil); err != nil {
		t.Fatal(err)
	}
	atts := func(id string) int {
		as, err := st.Attempts(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return len(as)
	}
	deadline := time.Now().Add(45 * time.Second)
	for time.Now().Before(deadline) {
		if err := e.Tick(ctx); err != nil {
			t.Fatal(err)
		}
		ta, _ := st.Task(ctx, "ta")
		if ta.State.Final() && atts("tb") >= 2 {
			break
		}
		time.Sleep(30 * time.Millisecond)
	}
	ta, err := st.Task(ctx, "ta")
	if err != nil {
		t.Fatal(err)
	}
	if ta.State != model.TaskFailed || !strings.Contains(ta.Reason, "owner revoked") || atts("ta") != 1 {
		t.Fatalf("alice's task: %s after %d attempts (%s), want failed after 1 with \"owner revoked\"", ta.State, atts("ta"), ta.Reason)
	}
	if n := atts("tb"); n < 2 {
		t.Fatalf("bob's task has %d attempts, want its failure retried", n)
	}
}
