package hpc

import (
	"context"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

// TestRigCancelPendingLeavesARunningJob: on real Slurm, the cancel of a still-queued
// job (scancel --state=PENDING) answers without error for a job that has started and
// leaves it running; the plain cancel then stops it. A move relies on this to never kill
// an old job whose command began.
func TestRigCancelPendingLeavesARunningJob(t *testing.T) {
	p, _ := rigProvider(t, "alpha", "local")
	ctx := context.Background()
	id, err := p.Submit(ctx, spec(t, "cancelpending", "cpu", "sleep 120", 5*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Cancel(context.Background(), []string{id}) })
	waitState(t, p, id, 90*time.Second, func(s model.JobState) bool { return s == model.JobRunning })
	if err := p.CancelPending(ctx, []string{id}); err != nil {
		t.Fatalf("cancel of a queued job, given a running one: %v", err)
	}
	time.Sleep(2 * time.Second)
	sts, err := p.Status(ctx, []string{id})
	if err != nil {
		t.Fatal(err)
	}
	if s := sts[id].State; s != model.JobRunning {
		t.Fatalf("job %s is %s after the cancel of a queued job; want it left running", id, s)
	}
	if err := p.Cancel(ctx, []string{id}); err != nil {
		t.Fatal(err)
	}
	if s := waitState(t, p, id, 30*time.Second, final); s.State != model.JobCancelled {
		t.Fatalf("after the plain cancel: %s", s.State)
	}
}
