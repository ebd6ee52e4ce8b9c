package sim

import (
	"errors"
	"testing"
	"time"
)

// TestPlannedStartKeepsThePlaceInLine: a queued job's planned start (squeue --start) is
// when its turn comes, not when a new job like it would start (sbatch --test-only,
// queued behind it); a running job reports its start, an unknown job an error.
func TestPlannedStartKeepsThePlaceInLine(t *testing.T) {
	pc := PartitionConfig{Name: "cpu", Nodes: 1, CoresPerNode: 8, MemGBPerNode: 16, MaxWalltime: 48 * time.Hour}
	c, err := New(Config{Name: "pl", Start: t0, WarmUp: -1, Partitions: []PartitionConfig{pc}}, 3)
	if err != nil {
		t.Fatal(err)
	}
	whole := JobRequest{Partition: "cpu", Nodes: 1, CoresPerNode: 8, Walltime: time.Hour, Runtime: 30 * time.Minute, User: true}
	run, err := c.Submit(whole)
	if err != nil {
		t.Fatal(err)
	}
	c.AdvanceTo(t0.Add(time.Minute))
	mine, err := c.Submit(whole)
	if err != nil {
		t.Fatal(err)
	}
	behind, err := c.Submit(whole)
	if err != nil {
		t.Fatal(err)
	}
	now := c.Now()
	got, err := c.PlannedStart(mine)
	if err != nil {
		t.Fatal(err)
	}
	if want := c.Start().Add(time.Hour); !got.Equal(want) {
		t.Fatalf("planned start of the first queued job %v, want %v (the running job's walltime end)", got, want)
	}
	if got2, _ := c.PlannedStart(behind); !got2.Equal(got.Add(time.Hour)) {
		t.Fatalf("planned start of the second queued job %v, want %v", got2, got.Add(time.Hour))
	}
	est, err := c.EstimateStart(whole)
	if err != nil || !est.After(got) {
		t.Fatalf("a new job's estimate %v (%v) should be after the queued job's planned start %v", est, err, got)
	}
	if s, err := c.PlannedStart(run); err != nil || !s.Equal(c.Start()) {
		t.Fatalf("running job: %v %v, want its start %v", s, err, c.Start())
	}
	if _, err := c.PlannedStart(9999); !errors.Is(err, ErrUnknownJob) {
		t.Fatalf("unknown job: %v, want ErrUnknownJob", err)
	}
	if err := c.Cancel(behind); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PlannedStart(behind); !errors.Is(err, ErrNoEstimate) {
		t.Fatalf("cancelled job: %v, want ErrNoEstimate", err)
	}
	if c.Now() != now {
		t.Fatal("PlannedStart moved the model's clock")
	}
}
