package main

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/site"
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
		for i, w := range modelStream(stream, p, site.DefaultOrderNiceStep).Waits {
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
	if err := runModel(&b, config{jobs: 30, gap: 6 * time.Second, seed: 1, streams: 3, niceStep: site.DefaultOrderNiceStep}); err != nil {
		t.Fatal(err)
	}
	for _, want := range append(modelPolicies, "mean of per-seed ratios", "simulated − one-plan, paired by seed", "simulated − floored, paired by seed", "smallest-first − simulated, paired by seed", "mean of per-seed p95 ratios", "\n1 ", "\n3 ") {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, b.String())
		}
	}
	if err := runModel(&b, config{jobs: 0, gap: time.Second, seed: 1, streams: 1}); err == nil {
		t.Error("a stream of no jobs was modelled")
	}
}

// TestModelSmallestFirstQueue: with nice, a later 1-GPU job of one minute goes ahead of
// an earlier one of two minutes (4 GPU-minutes: nice 64), and a job 64 submissions
// later no longer does; without nice the queue is in arrival order. The model's nice
// is Mosaic's.
func TestModelSmallestFirstQueue(t *testing.T) {
	const step = site.DefaultOrderNiceStep
	minute := int64(time.Minute)
	jobs := []mJob{{limit: 2 * minute, gpus: 2}, {limit: minute, gpus: 1}, {limit: minute, gpus: 1}}
	for i := range jobs {
		jobs[i].nice = modelNice(jobs[i], step)
	}
	if jobs[0].nice != 2*step {
		t.Fatalf("nice of 4 GPU-minutes %d, want %d", jobs[0].nice, 2*step)
	}
	if n := modelNice(jobs[0], 4); n != 8 {
		t.Fatalf("nice of 4 GPU-minutes with a step of 4: %d, want 8", n)
	}
	c := &mCluster{}
	c.queue = c.queued(jobs, 0, true)
	c.seq++
	c.queue = c.queued(jobs, 1, true)
	c.seq++
	if want := []int{1, 0}; !slices.Equal(c.queue, want) {
		t.Errorf("queue %v, want %v", c.queue, want)
	}
	c.seq += 2*step - 1
	if q := c.queued(jobs, 2, true); !slices.Equal(q, []int{1, 0, 2}) {
		t.Errorf("a job 64 submissions later: queue %v, want it last", q)
	}
	plain := &mCluster{}
	plain.queue = plain.queued(jobs, 0, false)
	plain.seq++
	if q := plain.queued(jobs, 1, false); !slices.Equal(q, []int{0, 1}) {
		t.Errorf("without nice: queue %v, want arrival order", q)
	}
}
