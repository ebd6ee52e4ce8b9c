package main

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// TestModelNoQueueNoWait: jobs ten minutes apart (every limit is at most two) never
// wait, under any policy.
func TestModelNoQueueNoWait(t *testing.T) {
	stream, err := Stream(3, StreamParams{Jobs: 10, MeanGap: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for i := range stream {
		stream[i].At = time.Duration(i) * 10 * time.Minute
	}
	for _, p := range modelPolicies {
		for i, w := range modelStream(stream, p).Waits {
			if w != 0 {
				t.Errorf("%s: job %d waited %v on an idle rig", p, i, w)
			}
		}
	}
}

// TestModelSimulatedEstimateIsTheStart: when every job runs exactly its prediction
// and nothing else arrives, the simulated estimate of a new job is when the model's
// scheduler really starts it; the one plan's is not always (random queues on one
// cluster, runtimes one per limit).
func TestModelSimulatedEstimateIsTheStart(t *testing.T) {
	runOf := map[int64]int64{int64(time.Minute): int64(17 * time.Second), int64(2 * time.Minute): int64(31 * time.Second)}
	pred := func(limit int64) int64 { return runOf[limit] }
	onePlanOff := 0
	for seed := range uint64(500) {
		rng := rand.New(rand.NewPCG(seed, 5))
		var jobs []mJob
		job := func() int {
			lim := int64(1+rng.IntN(2)) * int64(time.Minute)
			jobs = append(jobs, mJob{run: runOf[lim], limit: lim, gpus: 1 + rng.IntN(4)})
			return len(jobs) - 1
		}
		now := int64(time.Hour)
		c := &mCluster{}
		used := 0
		for range rng.IntN(3) {
			id := job()
			if used+jobs[id].gpus > modelGPUs {
				jobs = jobs[:id]
				break
			}
			used += jobs[id].gpus
			started := now - int64(rng.IntN(15))*int64(time.Second)
			c.running = append(c.running, mRun{id: id, gpus: jobs[id].gpus, end: started + jobs[id].run,
				limitEnd: started + jobs[id].limit, predEnd: started + jobs[id].run})
		}
		for range rng.IntN(5) {
			c.queue = append(c.queue, job())
		}
		id := job()
		sim := c.estimate("simulated", jobs, id, now, pred)
		one := c.estimate("one-plan", jobs, id, now, pred)
		// Slurm's answer as a floor can only make the estimate later, and sbatch -M's
		// answer is the will-run test plus every queued job's limit.
		if fl := c.estimate("floored", jobs, id, now, pred); fl < sim {
			t.Fatalf("seed %d: floored estimate %v before the simulated %v", seed, time.Duration(fl-now), time.Duration(sim-now))
		}
		var lims int64
		for _, q := range c.queue {
			lims += jobs[q].limit
		}
		if sb, wr := c.estimate("sbatch-M", jobs, id, now, pred), c.estimate("will-run", jobs, id, now, pred); sb-wr != lims {
			t.Fatalf("seed %d: sbatch-M %v is the will-run test %v plus %v, want plus the queued limits %v", seed,
				time.Duration(sb-now), time.Duration(wr-now), time.Duration(sb-wr), time.Duration(lims))
		}
		c.queue = append(c.queue, id)
		start := int64(-1)
		for at := now; start < 0 && at < now+int64(time.Hour); at += modelStep {
			c.finish(at)
			c.schedule(jobs, at, pred, func(x int, when int64) {
				if x == id {
					start = when
				}
			})
		}
		if sim != start {
			t.Fatalf("seed %d: simulated estimate %v, started at %v", seed, time.Duration(sim-now), time.Duration(start-now))
		}
		if one != start {
			onePlanOff++
		}
	}
	if onePlanOff == 0 {
		t.Error("the one plan was right every time: the test cannot tell the two apart")
	}
}

// TestRunModel: the report names every policy and the paired difference.
func TestRunModel(t *testing.T) {
	var b bytes.Buffer
	if err := runModel(&b, config{jobs: 30, gap: 6 * time.Second, seed: 1, streams: 3}); err != nil {
		t.Fatal(err)
	}
	for _, want := range append(modelPolicies, "mean of per-seed ratios", "simulated − one-plan, paired by seed", "simulated − floored, paired by seed", "\n1 ", "\n3 ") {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, b.String())
		}
	}
	if err := runModel(&b, config{jobs: 0, gap: time.Second, seed: 1, streams: 1}); err == nil {
		t.Error("a stream of no jobs was modelled")
	}
}
