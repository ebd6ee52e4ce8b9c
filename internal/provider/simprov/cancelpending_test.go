package simprov

import (
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

// TestCancelPendingLeavesRunningJobs: the cancel of still-queued jobs cancels a job
// waiting behind a full partition and leaves the running ones, like scancel
// --state=PENDING.
func TestCancelPendingLeavesRunningJobs(t *testing.T) {
	p := live(t, 60, noLoad)
	full := spec("cpu", "sleep 30", time.Hour)
	full.CPUsPerTask, full.Nodes = 16, 4
	run := submit(t, p, full)
	waiting := spec("cpu", "true", time.Hour)
	wait := submit(t, p, waiting)
	deadline := time.Now().Add(5 * time.Second)
	for {
		sts, err := p.Status(ctx, []string{run, wait})
		if err != nil {
			t.Fatal(err)
		}
		if sts[run].State == model.JobRunning && sts[wait].State == model.JobPending {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("want one running, one pending: %s, %s", sts[run].State, sts[wait].State)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := p.CancelPending(ctx, []string{run, wait, "999999", "not-an-id"}); err != nil {
		t.Fatal(err)
	}
	sts, err := p.Status(ctx, []string{run, wait})
	if err != nil {
		t.Fatal(err)
	}
	if sts[run].State != model.JobRunning || sts[wait].State != model.JobCancelled {
		t.Fatalf("after the cancel of queued jobs: running one %s, queued one %s; want running, cancelled", sts[run].State, sts[wait].State)
	}
	if err := p.Cancel(ctx, []string{run}); err != nil {
		t.Fatal(err)
	}
}
