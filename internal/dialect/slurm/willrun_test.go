package slurm

import (
	"slices"
	"testing"
	"time"
)

func TestWillRunQueueAllowance(t *testing.T) {
	// The rig's alpha: one node of 64 cores and 4 GPUs in two partitions.
	rig := []NodeLine{
		{Partition: "cpu", Node: "alpha-n1", CPUs: 64, GPUs: 4, PartitionUp: true},
		{Partition: "gpuA100", Node: "alpha-n1", CPUs: 64, GPUs: 4, PartitionUp: true},
	}
	// A partition of four 32-core nodes (128 cores): a 1-node job counts 32 cores.
	wide := []NodeLine{
		{Partition: "p", Node: "n1", CPUs: 32}, {Partition: "p", Node: "n2", CPUs: 32},
		{Partition: "p", Node: "n3", CPUs: 32}, {Partition: "p", Node: "n4", CPUs: 32},
		{Partition: "q", Node: "n4", CPUs: 32},
	}
	pend := func(id, part string, prio int64, limit time.Duration, nodes, cpus int, user string) QueuedJob {
		return QueuedJob{ID: id, Partitions: []string{part}, Priority: prio, Limit: limit, Nodes: nodes, CPUs: cpus, User: user, Eligible: prio > 0}
	}
	run := QueuedJob{ID: "1", Partitions: []string{"cpu"}, Running: true, Priority: 900, Limit: 3 * time.Minute, Nodes: 1, CPUs: 6, User: "me"}
	// What the rig showed (Slurm 22.05.8, this session): four jobs queued in cpu with
	// limits 2, 2, 2 and 7 minutes, one in gpuA100 of 5; sbatch --test-only promised a
	// 1-GPU job in cpu a start 13 minutes away and in gpuA100 5 (it started at once).
	rigQueue := []QueuedJob{run,
		pend("2", "cpu", 800, 2*time.Minute, 1, 8, "me"), pend("3", "cpu", 799, 2*time.Minute, 1, 8, "me"),
		pend("4", "cpu", 798, 2*time.Minute, 1, 8, "me"), pend("5", "gpuA100", 797, 5*time.Minute, 1, 8, "me"),
		pend("6", "cpu", 796, 7*time.Minute, 1, 2, "me"),
	}
	for _, tc := range []struct {
		name      string
		nodes     []NodeLine
		jobs      []QueuedJob
		user      string
		partition string
		want      time.Duration
		ok        bool
	}{
		{"the rig's cpu queue", rig, rigQueue, "me", "cpu", 13 * time.Minute, true},
		{"the rig's gpuA100 queue", rig, rigQueue, "me", "gpuA100", 5 * time.Minute, true},
		{"no queue", rig, []QueuedJob{run}, "me", "cpu", 0, true},
		{"a held job is not counted", rig, []QueuedJob{pend("2", "cpu", 0, time.Hour, 1, 1, "x")}, "me", "cpu", 0, true},
		{"a job queued after the user's own is not ahead", rig, []QueuedJob{
			pend("2", "cpu", 500, 10*time.Minute, 1, 1, "me"), pend("3", "cpu", 400, time.Hour, 1, 1, "x"),
			pend("4", "cpu", 600, 3*time.Minute, 1, 1, "x")}, "me", "cpu", 13 * time.Minute, true},
		{"other users' jobs all count when the user has none queued", rig, []QueuedJob{
			pend("3", "cpu", 400, time.Hour, 1, 1, "x"), pend("4", "cpu", 600, 3*time.Minute, 1, 1, "y")}, "me", "cpu", 63 * time.Minute, true},
		// 32×60/128 = 15; 2 nodes: 64×10/128 = 5; 100 cores on a node: 100×30/128.
		{"space-time over the partition", wide, []QueuedJob{
			pend("2", "p", 9, time.Hour, 1, 4, "x"), pend("3", "p", 9, 10*time.Minute, 2, 2, "x"),
			pend("4", "p", 9, 30*time.Minute, 1, 100, "x")}, "me", "p", (15+5)*time.Minute + 23*time.Minute, true},
		{"whole minutes, rounded down", wide, []QueuedJob{pend("2", "p", 9, 30*time.Minute, 1, 1, "x")}, "me", "p", 7 * time.Minute, true},
		{"a job queued to two partitions counts in its first", wide, []QueuedJob{
			{ID: "2", Partitions: []string{"q", "p"}, Priority: 9, Limit: time.Hour, Nodes: 1, CPUs: 1, Eligible: true}}, "me", "p", 0, true},
		{"the same in the first partition", wide, []QueuedJob{
			{ID: "2", Partitions: []string{"q", "p"}, Priority: 9, Limit: time.Hour, Nodes: 1, CPUs: 1, Eligible: true}}, "me", "q", 60 * time.Minute, true},
		{"an unlimited job ahead: unknown", rig, []QueuedJob{pend("2", "cpu", 9, 0, 1, 1, "x")}, "me", "cpu", 0, false},
		{"slurmctld's product would wrap: unknown", rig, []QueuedJob{pend("2", "cpu", 9, 365*24*time.Hour, 1, 1<<20, "x")}, "me", "cpu", 0, false},
		{"partition not listed: unknown", rig, rigQueue, "me", "debug", 0, false},
		{"no nodes: unknown", nil, rigQueue, "me", "cpu", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := WillRunQueueAllowance(tc.nodes, tc.jobs, tc.user, tc.partition, 0)
			if got != tc.want || ok != tc.ok {
				t.Errorf("got %v, %v; want %v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
	// A job submitted with --nice is tested at its lowered priority: own queued jobs
	// as submitted (priority + nice) set where it would stand, less its nice.
	niced := []QueuedJob{run,
		pend("2", "cpu", 800, 2*time.Minute, 1, 8, "me"), pend("3", "cpu", 799, 3*time.Minute, 1, 8, "x"),
		pend("4", "cpu", 798, 4*time.Minute, 1, 8, "x"), pend("5", "cpu", 797, 5*time.Minute, 1, 8, "x"),
	}
	lowered := pend("6", "cpu", 790, 7*time.Minute, 1, 8, "me")
	lowered.Nice = 6 // as submitted: 796, below every job listed
	for _, tc := range []struct {
		name string
		jobs []QueuedJob
		nice int64
		want time.Duration
	}{
		{"no nice: the jobs down to the user's lowest", niced, 0, 2 * time.Minute},
		{"nice 2: two more jobs ahead", niced, 2, (2 + 3 + 4) * time.Minute},
		{"a niced own job counts as submitted", append(slices.Clone(niced), lowered), 0, (2 + 3 + 4 + 5) * time.Minute},
		{"and a new job's nice lowers it behind that job", append(slices.Clone(niced), lowered), 7, (2 + 3 + 4 + 5 + 7) * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, ok := WillRunQueueAllowance(rig, tc.jobs, "me", "cpu", tc.nice); got != tc.want || !ok {
				t.Errorf("got %v, %v; want %v, true", got, ok, tc.want)
			}
		})
	}
}
