package slurm

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// TestSimulatedPlanBackfillsOnTheLimits: the backfill scheduler reserves a queued
// job's node from the start its limits give, not from the start its prediction gives,
// so a short job fits before that reservation. One plan with predictions books the
// queued job early and shuts the short job out; the plan made again at each predicted
// end starts it where Slurm does (both cases worked by hand: the user's 2-minute jobs
// run 30 s, their 1-minute jobs 18 s).
func TestSimulatedPlanBackfillsOnTheLimits(t *testing.T) {
	now := time.Date(2026, 12, 1, 19, 0, 0, 0, time.UTC)
	rt := NewRuntimes(append(history(1, 8, 2*time.Minute, 0.25), history(100, 8, time.Minute, 0.3)...))
	run := func(id string, gpus int, limit, ran time.Duration) QueuedJob {
		return QueuedJob{ID: id, Partitions: []string{"gpuA100"}, Running: true, Priority: 100, Start: now.Add(-ran),
			Limit: limit, Nodes: 1, CPUs: 2 * gpus, GPUsPerNode: gpus, NodeList: []string{"alpha-n1"}, User: "me"}
	}
	queued := func(id string, prio int64, gpus int, limit time.Duration) QueuedJob {
		return QueuedJob{ID: id, Partitions: []string{"gpuA100"}, Priority: prio, Limit: limit, Nodes: 1, CPUs: 2 * gpus,
			GPUsPerNode: gpus, User: "me", Eligible: true}
	}
	oneGPU := []PlanRequest{{Partition: "gpuA100", Nodes: 1, CPUsPerNode: 2, GPUsPerNode: 1, Walltime: time.Minute}}
	for _, c := range []struct {
		name              string
		jobs              []QueuedJob
		onePlan, simulate time.Duration
	}{
		// Job 11 ends at 5 s (its prediction). Job 20 is then reserved from 81 s (job
		// 10's limit), so a 1-minute job fits before it at 5 s; one plan has job 20
		// start at 20.25 s (job 10's prediction, past: a quarter of its 81 s left) and
		// the new job after the queued ones, at 38.25 s.
		{"a hole before the limits' reservation",
			[]QueuedJob{run("10", 2, 2*time.Minute, 39*time.Second), run("11", 2, 2*time.Minute, 25*time.Second),
				queued("20", 99, 4, time.Minute), queued("21", 98, 1, 2*time.Minute)},
			38250 * time.Millisecond, 5 * time.Second},
		// Job 11 ends at 11.4 s (past its 18 s: 0.3 of its 38 s left); job 20 waits for
		// job 10's limit (102 s), and the new job fits beside job 10 until then.
		{"beside a running job until its limit",
			[]QueuedJob{run("10", 3, 2*time.Minute, 18*time.Second), run("11", 1, time.Minute, 22*time.Second),
				queued("20", 99, 4, 2*time.Minute), queued("21", 98, 4, time.Minute)},
			time.Minute, 11400 * time.Millisecond},
		// Nothing queued: both say when the GPUs free up by the predictions.
		{"no queue", []QueuedJob{run("10", 4, 2*time.Minute, 10*time.Second)}, 20 * time.Second, 20 * time.Second},
	} {
		one, _, work := planQueue(rigNodes(), c.jobs, "me", now, oneGPU, "", rt)
		sim, _, ok := simulateQueue(rigNodes(), c.jobs, "me", now, oneGPU, "", rt, work)
		if !ok || one[0].Sub(now) != c.onePlan || sim[0].Sub(now) != c.simulate {
			t.Errorf("%s: one plan %v, simulated %v (made: %v); want %v, %v", c.name, one[0].Sub(now), sim[0].Sub(now), ok, c.onePlan, c.simulate)
		}
		if got := PlanStartsPredicted(rigNodes(), c.jobs, "me", now, oneGPU, rt)[0]; got.Sub(now) != c.simulate {
			t.Errorf("%s: PlanStartsPredicted %v, want the simulated %v", c.name, got.Sub(now), c.simulate)
		}
	}
	// A queued job's own start is simulated the same way: job 20 starts when job 10
	// ends (its prediction, 20.25 s), job 21 when job 20 ends, 18 s later.
	jobs := []QueuedJob{run("10", 2, 2*time.Minute, 39*time.Second), run("11", 2, 2*time.Minute, 25*time.Second),
		queued("20", 99, 4, time.Minute), queued("21", 98, 1, 2*time.Minute)}
	if got := PlanQueued(rigNodes(), jobs, "me", now, "20", rt); got.Sub(now) != 20250*time.Millisecond {
		t.Errorf("job 20 simulated to start at %v, want 20.25s (job 10's predicted end)", got.Sub(now))
	}
	if got := PlanQueued(rigNodes(), jobs, "me", now, "21", rt); got.Sub(now) != 38250*time.Millisecond {
		t.Errorf("job 21 simulated to start at %v, want 38.25s (after job 20)", got.Sub(now))
	}
}

// TestSimulatedOnTheLimitsIsTheOnePlan: with every job ending at its limit, the plan
// made again at each end is the plan made now, for every request and every queued
// job's own start, over random clusters of one and several partitions, other users'
// and unlimited jobs, and one- and many-node jobs. The simulation adds only the
// predicted ends, never a different scheduler.
func TestSimulatedOnTheLimitsIsTheOnePlan(t *testing.T) {
	now := time.Date(2026, 12, 2, 5, 0, 0, 0, time.UTC)
	for seed := range uint64(2000) {
		rng := rand.New(rand.NewPCG(seed, 23))
		var nodes []NodeLine
		var names []string
		for i := range 1 + rng.IntN(5) {
			name := fmt.Sprintf("n%02d", i)
			names = append(names, name)
			cpus, gpus := []int{4, 8, 16}[rng.IntN(3)], []int{0, 2, 4}[rng.IntN(3)]
			nodes = append(nodes, NodeLine{Partition: "p", Node: name, State: "mixed", CPUs: cpus, GPUs: gpus, PartitionUp: true})
			if i%2 == 0 {
				nodes = append(nodes, NodeLine{Partition: "q", Node: name, State: "mixed", CPUs: cpus, GPUs: gpus, PartitionUp: true})
			}
		}
		limit := func() time.Duration {
			if rng.IntN(12) == 0 {
				return 0 // unlimited
			}
			return time.Duration(1+rng.IntN(30)) * time.Minute
		}
		user := func() string { return []string{"me", "other"}[rng.IntN(2)] }
		var jobs []QueuedJob
		for k := range rng.IntN(6) {
			lim := limit()
			n := 1 + rng.IntN(min(2, len(names)))
			start := rng.IntN(len(names) - n + 1)
			ran := time.Duration(rng.IntN(20*60)) * time.Second
			jobs = append(jobs, QueuedJob{ID: fmt.Sprint(100 + k), Partitions: []string{"p"}, Running: true, Priority: 1000,
				Start: now.Add(-ran), Limit: lim, Nodes: n, CPUs: n * (1 + rng.IntN(4)), GPUsPerNode: rng.IntN(3),
				NodeList: names[start : start+n], User: user()})
		}
		var own []string
		for k := range rng.IntN(7) {
			id := fmt.Sprint(200 + k)
			n := 1 + rng.IntN(min(2, len(names)))
			jobs = append(jobs, QueuedJob{ID: id, Partitions: [][]string{{"p"}, {"q"}, {"p", "q"}}[rng.IntN(3)],
				Priority: int64(1 + rng.IntN(50)), Limit: limit(), Nodes: n, CPUs: n * (1 + rng.IntN(8)),
				GPUsPerNode: rng.IntN(5), User: user(), Eligible: rng.IntN(8) != 0})
			own = append(own, id)
		}
		var reqs []PlanRequest
		for range 1 + rng.IntN(3) {
			reqs = append(reqs, PlanRequest{Partition: []string{"p", "q"}[rng.IntN(2)], Nodes: 1 + rng.IntN(min(2, len(names))),
				CPUsPerNode: 1 + rng.IntN(8), GPUsPerNode: rng.IntN(5), Walltime: limit()})
		}
		one, _, work := planQueue(nodes, jobs, "me", now, reqs, "", Runtimes{})
		sim, _, ok := simulateQueue(nodes, jobs, "me", now, reqs, "", Runtimes{}, work)
		if !ok {
			t.Fatalf("seed %d: not simulated", seed)
		}
		for i := range reqs {
			if !one[i].Equal(sim[i]) {
				t.Fatalf("seed %d request %d %+v: simulated %v, one plan %v\njobs %+v", seed, i, reqs[i], sim[i], one[i], jobs)
			}
		}
		for _, id := range own {
			_, a, work := planQueue(nodes, jobs, "me", now, nil, id, Runtimes{})
			_, b, ok := simulateQueue(nodes, jobs, "me", now, nil, id, Runtimes{}, work)
			if !ok || !a.Equal(b) {
				t.Fatalf("seed %d queued job %s: simulated %v (made: %v), one plan %v\njobs %+v", seed, id, b, ok, a, jobs)
			}
		}
	}
}

// TestSimulationIsBounded: a plan too costly to make once per event is not simulated
// (the caller keeps the one plan), and a request behind an unlimited job gets the
// last plan's time after the events run out.
func TestSimulationIsBounded(t *testing.T) {
	now := time.Date(2026, 12, 1, 19, 0, 0, 0, time.UTC)
	rt := NewRuntimes(history(1, 8, 2*time.Minute, 0.25))
	forever := QueuedJob{ID: "10", Partitions: []string{"gpuA100"}, Running: true, Priority: 100, Start: now.Add(-time.Hour),
		Nodes: 1, CPUs: 8, GPUsPerNode: 4, NodeList: []string{"alpha-n1"}, User: "other"}
	req := []PlanRequest{{Partition: "gpuA100", Nodes: 1, CPUsPerNode: 2, GPUsPerNode: 1, Walltime: time.Minute}}
	if _, _, ok := simulateQueue(rigNodes(), []QueuedJob{forever}, "me", now, req, "", rt, maxPlanWork); ok {
		t.Error("simulated a plan that costs the whole budget once")
	}
	got, _, ok := simulateQueue(rigNodes(), []QueuedJob{forever}, "me", now, req, "", rt, 1)
	if want := now.Add(planHorizon); !ok || !got[0].Equal(want) {
		t.Errorf("behind an unlimited job: %v (made: %v), want the plan's horizon %v", got[0], ok, want)
	}
}
