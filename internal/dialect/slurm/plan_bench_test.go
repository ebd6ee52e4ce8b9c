package slurm

import (
	"bytes"
	"fmt"
	"testing"
	"time"
)

// A large site for the planning benchmarks: a GPU partition of 200 nodes of 64 cores
// and 4 GPUs (a partition of more than MaxPlanNodes is not planned: Slurm's own answer
// stands there), 20,000 jobs listed (400 running, 19,600 queued), and a user with 5,000
// finished jobs in the sacct window. The plan itself is bounded (MaxPlanQueued,
// MaxPlanArea): these measure what one estimate round costs a core on such a site,
// parsing included.
const (
	benchNodes   = 200
	benchJobs    = 20_000
	benchRunning = 400
	benchHistory = 5000
)

func benchNodeLines() []NodeLine {
	nodes := make([]NodeLine, benchNodes)
	for i := range nodes {
		nodes[i] = NodeLine{Partition: "gpu", Node: fmt.Sprintf("g%04d", i), State: "mixed",
			CPUs: 64, MemoryMB: 512_000, GPUs: 4, GPUType: "a100", PartitionUp: true}
	}
	return nodes
}

// benchPlanListing is PlanQueueCommand output in the rig's format
// (testdata/squeue-plan-alpha.txt): running jobs on 1-2 nodes each, queued jobs of 1-4
// GPUs, a third of them asked with --gpus N.
func benchPlanListing() []byte {
	var b bytes.Buffer
	start := time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC)
	for i := range benchJobs {
		id, gpus, user := 5_000_000+i, 1+i%4, fmt.Sprintf("u%d", i%211)
		if i < benchRunning {
			n := 1 + i%2
			nl := fmt.Sprintf("g%04d", (i*n)%benchNodes)
			if n == 2 {
				nl = fmt.Sprintf("g[%04d-%04d]", (i*n)%benchNodes, (i*n)%benchNodes+1)
			}
			if (i*n)%benchNodes+n > benchNodes {
				n, nl = 1, fmt.Sprintf("g%04d", (i*n)%benchNodes)
			}
			fmt.Fprintf(&b, "%d|gpu|RUNNING|%d|%s|4:00:00|%d|%d|gres:gpu:a100:%d|%s|%s|None|N/A|N/A|%d|cpu=%d,mem=8G,node=%d,gres/gpu=%d|0|\n",
				id, 1_000_000-i, start.Add(time.Duration(i)*time.Second).Format("2006-01-02T15:04:05"),
				n, 16*n, gpus, nl, user, n, 16*n, n, gpus*n)
			continue
		}
		perNode, perJob := fmt.Sprintf("gres:gpu:%d", gpus), "N/A"
		if i%3 == 0 {
			perNode, perJob = "N/A", fmt.Sprintf("gres:gpu:%d", gpus)
		}
		fmt.Fprintf(&b, "%d|gpu|PENDING|%d|N/A|%d:00:00|1|%d|%s||%s|%s|%s|N/A|1|cpu=%d,mem=8G,node=1,gres/gpu=%d|0|\n",
			id, 900_000-i, 1+i%12, 4*gpus, perNode, user, []string{"Priority", "Resources", "Dependency"}[i%3], perJob, 4*gpus, gpus)
	}
	return b.Bytes()
}

func benchHistoryListing() []byte {
	var b bytes.Buffer
	for i := range benchHistory {
		lim := []string{"00:30:00", "01:00:00", "04:00:00", "1-00:00:00"}[i%4]
		fmt.Fprintf(&b, "%d|%02d:%02d:%02d|%s\n", 4_000_000+i, i%4, i%60, (i*7)%60, lim)
	}
	return b.Bytes()
}

func benchRequests() []PlanRequest {
	reqs := make([]PlanRequest, 8)
	for i := range reqs {
		reqs[i] = PlanRequest{Partition: "gpu", Nodes: 1 + i%2, CPUsPerNode: 16, GPUsPerNode: 1 + i%4,
			Walltime: time.Duration(1+i) * time.Hour}
	}
	return reqs
}

// BenchmarkPlanLargeSite is one estimate round for 8 candidates on the large site:
// parse the squeue listing and the sacct history, learn the runtimes, plan.
func BenchmarkPlanLargeSite(b *testing.B) {
	nodes, listing, hist, reqs := benchNodeLines(), benchPlanListing(), benchHistoryListing(), benchRequests()
	now := time.Date(2026, 12, 2, 2, 0, 0, 0, time.UTC)
	b.SetBytes(int64(len(listing) + len(hist)))
	b.ResetTimer()
	for b.Loop() {
		jobs, err := ParsePlanQueue(listing, time.UTC)
		if err != nil || len(jobs) != benchJobs {
			b.Fatalf("%d jobs, %v", len(jobs), err)
		}
		h, err := ParseRuntimeHistory(hist, false)
		if err != nil || len(h) != benchHistory {
			b.Fatalf("%d history lines, %v", len(h), err)
		}
		rt := NewRuntimes(h)
		starts := PlanStartsPredicted(nodes, jobs, "u7", now, reqs, rt)
		for i, s := range starts {
			if s.IsZero() {
				b.Fatalf("request %d not planned", i)
			}
		}
	}
}

// BenchmarkPlanLargeSitePlanOnly is the plan alone (the listings parsed once).
func BenchmarkPlanLargeSitePlanOnly(b *testing.B) {
	nodes, reqs := benchNodeLines(), benchRequests()
	jobs, err := ParsePlanQueue(benchPlanListing(), time.UTC)
	if err != nil {
		b.Fatal(err)
	}
	h, err := ParseRuntimeHistory(benchHistoryListing(), false)
	if err != nil {
		b.Fatal(err)
	}
	rt := NewRuntimes(h)
	now := time.Date(2026, 12, 2, 2, 0, 0, 0, time.UTC)
	b.ResetTimer()
	for b.Loop() {
		PlanStartsPredicted(nodes, jobs, "u7", now, reqs, rt)
	}
}

// BenchmarkParsePlanQueue20k parses the large site's 20,000-job listing alone.
func BenchmarkParsePlanQueue20k(b *testing.B) {
	listing := benchPlanListing()
	b.SetBytes(int64(len(listing)))
	b.ResetTimer()
	for b.Loop() {
		if jobs, err := ParsePlanQueue(listing, time.UTC); err != nil || len(jobs) != benchJobs {
			b.Fatalf("%d jobs, %v", len(jobs), err)
		}
	}
}

// BenchmarkPlanSimulated is the plan with predicted runtimes made again at each
// predicted end (simulateQueue) on a mid-sized site where it is made: 32 nodes of 4
// GPUs, 48 running and 96 queued jobs of the user's (limits 1-4 h, running a quarter
// of them), 8 requests. (With 64 and 128 the one plan's cost times the events is over
// the budget and only the one plan is made.)
func BenchmarkPlanSimulated(b *testing.B) {
	now := time.Date(2026, 12, 2, 2, 0, 0, 0, time.UTC)
	var nodes []NodeLine
	for i := range 32 {
		nodes = append(nodes, NodeLine{Partition: "gpu", Node: fmt.Sprintf("g%02d", i), State: "mixed", CPUs: 64, GPUs: 4, PartitionUp: true})
	}
	var jobs []QueuedJob
	var hist []RanJob
	for i := range 144 {
		lim := time.Duration(1+i%4) * time.Hour
		j := QueuedJob{ID: fmt.Sprint(1000 + i), Partitions: []string{"gpu"}, Priority: int64(10_000 - i), Limit: lim,
			Nodes: 1, CPUs: 16, GPUsPerNode: 1 + i%2, User: "me", Eligible: true}
		if i < 48 {
			j.Running, j.Start, j.NodeList = true, now.Add(-time.Duration(i)*time.Minute), []string{fmt.Sprintf("g%02d", i%32)}
		}
		jobs = append(jobs, j)
		hist = append(hist, RanJob{ID: fmt.Sprint(i), Elapsed: lim / 4, Limit: lim})
	}
	rt := NewRuntimes(hist)
	reqs := benchRequests()
	_, _, work := planQueue(nodes, jobs, "me", now, reqs, "", rt)
	if _, _, ok := simulateQueue(nodes, jobs, "me", now, reqs, "", rt, work); !ok {
		b.Fatalf("not simulated (one plan: %d span checks): the benchmark would measure the one plan", work)
	}
	b.ResetTimer()
	for b.Loop() {
		PlanStartsPredicted(nodes, jobs, "me", now, reqs, rt)
	}
}
