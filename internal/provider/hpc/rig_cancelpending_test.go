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

// TestRigQueuedStart: real squeue --start output parses, for a job just queued (a
// planned time or none yet) and for one running (none: squeue --start lists pending
// jobs only).
func TestRigQueuedStart(t *testing.T) {
	p, _ := rigProvider(t, "alpha", "ssh")
	ctx := context.Background()
	id, err := p.Submit(ctx, spec(t, "queuedstart", "cpu", "sleep 60", 5*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Cancel(context.Background(), []string{id}) })
	if at, err := p.QueuedStart(ctx, id); err != nil {
		t.Fatalf("just queued: %v", err)
	} else {
		t.Logf("just queued: planned start %v", at)
	}
	waitState(t, p, id, 90*time.Second, func(s model.JobState) bool { return s == model.JobRunning })
	if at, err := p.QueuedStart(ctx, id); err != nil || !at.IsZero() {
		t.Fatalf("running: %v, %v; want no planned start and no error", at, err)
	}
}
