package slurm

import (
	"slices"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/dialect"
	"github.com/mosaic-hpc/mosaic/internal/model"
)

// TestPlanStartsCountsSubmissionsTheListingMisses: a job this core submitted that the
// listing does not show (in flight, or accepted after the listing) is planned ahead of
// a new request; one the listing shows is not counted twice. The rig's picture: a
// 1-GPU job placed on alpha a tenth of a second before a 4-GPU job.
func TestPlanStartsCountsSubmissionsTheListingMisses(t *testing.T) {
	d := &Slurm{}
	now := time.Now().UTC().Truncate(time.Second)
	// alpha-n1 in both partitions, 4 GPUs, 64 cores, idle.
	sinfo := []byte("gpuA100|alpha-n1|idle|64|0/64/0/64|256000|0|gpu:a100:4|gpu:a100:0(IDX:N/A)|1-00:00:00|up|1-infinite|(null)|\n" +
		"cpu|alpha-n1|idle|64|0/64/0/64|256000|0|gpu:a100:4|gpu:a100:0(IDX:N/A)|1-00:00:00|up|1-infinite|(null)|\n")
	running := "26511|gpuA100|RUNNING|4294875271|" + now.Format("2006-01-02T15:04:05") +
		"|1:00|1|2|gres:gpu:a100:1|alpha-n1|me|None|N/A|N/A|1|cpu=2,mem=8G,node=1,billing=2,gres/gpu=1,gres/gpu:a100=1|0|\n"
	job := func(part string, gpus int, wall time.Duration) model.JobSpec {
		return model.JobSpec{Partition: part, Nodes: 1, NTasks: 1, CPUsPerTask: 2 * max(gpus, 1), GPUs: gpus,
			Walltime: model.Duration(wall)}
	}
	four := job("gpuA100", 4, time.Minute)
	for _, tc := range []struct {
		name      string
		listing   string
		submitted []dialect.Submitted
		req       model.JobSpec
		want      time.Duration
	}{
		{"nothing submitted: an idle node", "", nil, four, 0},
		{"one in flight takes a GPU first", "", []dialect.Submitted{{Spec: job("gpuA100", 1, time.Minute), Own: true}}, four, time.Minute},
		{"accepted, not listed yet", "", []dialect.Submitted{{JobID: "26511", Spec: job("gpuA100", 1, 2*time.Minute), Own: true}}, four, 2 * time.Minute},
		{"listed already: not counted twice", running, []dialect.Submitted{{JobID: "26511", Spec: job("gpuA100", 1, time.Hour), Own: true}}, job("gpuA100", 3, time.Minute), 0},
		{"listed and one more in flight", running, []dialect.Submitted{{JobID: "26511", Spec: job("gpuA100", 1, time.Hour), Own: true},
			{Spec: job("gpuA100", 1, 5*time.Minute), Own: true}}, job("gpuA100", 3, time.Minute), time.Minute},
		{"another partition on the same node", "", []dialect.Submitted{{Spec: job("cpu", 2, 3*time.Minute)}}, four, 3 * time.Minute},
		{"a small new job fits beside it", "", []dialect.Submitted{{Spec: job("gpuA100", 2, time.Hour), Own: true}}, job("gpuA100", 2, time.Minute), 0},
		{"another partition's nodes are not these", "", []dialect.Submitted{{Spec: job("debug", 4, time.Hour)}}, four, 0},
		{"no partition named: not planned", "", []dialect.Submitted{{Spec: job("", 4, time.Hour)}}, four, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			outs := []dialect.Output{{Stdout: sinfo}, {Stdout: []byte(tc.listing)}, {Stdout: []byte("me\n")}, {}}
			got, err := d.PlanStarts(outs, []model.JobSpec{tc.req}, tc.submitted, now)
			if err != nil {
				t.Fatal(err)
			}
			if got[0].Limits.IsZero() {
				t.Fatal("not planned")
			}
			if d := got[0].Limits.Sub(now); d != tc.want {
				t.Errorf("planned to start after %v, want %v", d, tc.want)
			}
		})
	}
}

// TestWithSubmittedKeepsTheListing: the listed jobs are not changed, and a submitted job
// queues at the priority of the user's lowest eligible queued job (1 when none), behind
// the listed ones of that priority.
func TestWithSubmittedKeepsTheListing(t *testing.T) {
	listed := []QueuedJob{
		{ID: "5", Partitions: []string{"p"}, Priority: 90, User: "me", Eligible: true},
		{ID: "6", Partitions: []string{"p"}, Priority: 70, User: "me", Eligible: true},
		{ID: "7", Partitions: []string{"p"}, Priority: 10, User: "other", Eligible: true},
		{ID: "8", Partitions: []string{"p"}, Priority: 5, User: "me", Eligible: false},
	}
	before := append([]QueuedJob(nil), listed...)
	out := withSubmitted(listed[:4:4], "me", []dialect.Submitted{{Spec: model.JobSpec{Partition: "p", GPUs: 1}, Own: true}, {JobID: "6"}})
	if len(out) != 5 || out[4].Priority != 70 || out[4].User != "me" || !out[4].Eligible || out[4].GPUsPerNode != 1 {
		t.Fatalf("jobs %+v, want the 4 listed and one submitted at priority 70", out)
	}
	for i := range before {
		if out[i].ID != before[i].ID || listed[i].ID != before[i].ID {
			t.Fatalf("listed job %d changed", i)
		}
	}
	ahead := queuedAhead(out, "me", 0)
	if last := ahead[len(ahead)-1]; last.ID != out[4].ID {
		t.Errorf("the submitted job is ahead of %s; want it last among the jobs ahead", last.ID)
	}
	if out := withSubmitted(nil, "me", []dialect.Submitted{{Spec: model.JobSpec{Partition: "p"}}}); out[0].Priority != 1 || out[0].User == "me" {
		t.Errorf("no queue: %+v, want priority 1 and another user's", out[0])
	}
	// A submission with --nice stands lower by its nice, and as submitted (priority +
	// nice) where the next would: a new job without nice is planned ahead of it, one
	// with a larger nice behind it.
	niced := withSubmitted(listed[:4:4], "me", []dialect.Submitted{{Spec: model.JobSpec{Partition: "p", GPUs: 1, Nice: 30}, Own: true}})
	if got := niced[4]; got.Priority != 40 || got.Nice != 30 {
		t.Fatalf("niced submission %+v, want priority 40 (70 less 30), nice 30", got)
	}
	if newJobPriority(niced, "me") != 70 {
		t.Errorf("new job priority %d, want 70: the niced job as submitted", newJobPriority(niced, "me"))
	}
	if slices.ContainsFunc(queuedAhead(niced, "me", 0), func(j *QueuedJob) bool { return j.ID == niced[4].ID }) {
		t.Errorf("a new job without nice has the niced submission ahead of it")
	}
	if !slices.ContainsFunc(queuedAhead(niced, "me", 31), func(j *QueuedJob) bool { return j.ID == niced[4].ID }) {
		t.Errorf("a new job with nice 31 does not have the niced submission ahead of it")
	}
}
