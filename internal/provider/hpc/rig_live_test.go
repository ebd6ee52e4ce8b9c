package hpc

import (
	"context"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

// TestRigLiveStatusShowsACancelAtOnce: on real Slurm, a queued job cancelled with
// scancel --state=PENDING reads CANCELLED from the controller (LiveStatus: squeue and
// scontrol) right after the cancel answers, whatever sacct says meanwhile (it lagged by
// seconds on the rig); a running job reads RUNNING there and is left running. A move
// decides on this answer.
func TestRigLiveStatusShowsACancelAtOnce(t *testing.T) {
	p, _ := rigProvider(t, "alpha", "local")
	ctx := context.Background()
	// A job holding all of gpuA100's GPUs runs; one asking for them too stays queued.
	block := spec(t, "liverun", "gpuA100", "sleep 120", 5*time.Minute)
	block.GPUs = 4
	running, err := p.Submit(ctx, block)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Cancel(context.Background(), []string{running}) })
	waitState(t, p, running, 90*time.Second, func(s model.JobState) bool { return s == model.JobRunning })
	next := spec(t, "livecancel", "gpuA100", "true", time.Minute)
	next.GPUs = 4
	queued, err := p.Submit(ctx, next)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Cancel(context.Background(), []string{queued}) })
	waitState(t, p, queued, 30*time.Second, func(s model.JobState) bool { return s == model.JobPending })
	if err := p.CancelPending(ctx, []string{queued, running}); err != nil {
		t.Fatal(err)
	}
	live, err := p.LiveStatus(ctx, []string{queued, running})
	if err != nil {
		t.Fatal(err)
	}
	acct, _ := p.Status(ctx, []string{queued})
	t.Logf("right after the cancel: controller %s, accounting %s", live[queued].State, acct[queued].State)
	if s := live[queued].State; s != model.JobCancelled {
		t.Errorf("the cancelled queued job reads %s from the controller right after the cancel, want CANCELLED", s)
	}
	if s := live[running].State; s != model.JobRunning {
		t.Errorf("the running job reads %s from the controller after the cancel of queued jobs, want RUNNING", s)
	}
}
