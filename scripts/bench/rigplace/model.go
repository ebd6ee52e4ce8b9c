package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/site"
)

// The offline model of the rig (--model): no Slurm, no Mosaic, only arithmetic. Two
// one-node clusters of 4 GPUs run the benchmark's streams under a scheduler like
// Slurm's backfill: every 100 ms each cluster plans its queue in arrival order on the
// time limits, each queued job at the earliest time its GPUs are free for its whole
// limit, reserving the whole node from then until its limit's end (Slurm's
// node_space_map reserves nodes, not GPUs), and starts the jobs planned for now. Jobs
// then run for their real runtimes. Each placement policy picks a cluster for a job
// when it arrives, from an estimate of its start on each (ties: alpha):
//
//	sbatch-M   Slurm's will-run answer, what sbatch -M decides on: the running jobs only, on
//	           their limits, plus slurmctld's allowance for the queue (every queued job's
//	           limit, one after another: a one-node partition's _delayed_job_start_time)
//	will-run   the running jobs only, without the allowance (this model's sbatch-M before
//	           session 35, when the allowance was not known)
//	one-plan   Mosaic's one plan before fc3f295: the queue ahead counted, running and queued
//	           jobs ending after their predicted runtimes, holes fitted by the limits
//	floored    Mosaic from fc3f295 to 7eefa09: the simulated plan's gain over the limits'
//	           plan taken off the later of Slurm's answer (sbatch-M's) and the limits' plan
//	simulated  Mosaic's plan since fc3f295: the scheduler's limits' plan made again at each
//	           predicted end (internal/dialect/slurm/forward.go); since 7eefa09 Slurm's
//	           answer without its allowance is its floor, which here (no reservations, no
//	           features) never rises above the plan
//	pooled     no placement: one queue over both nodes, each job started on the node that
//	           plans it first (late binding with perfect timing; a reference, not a policy
//	           either submitter can follow)
//	smallest-first  simulated, with order_own_jobs: smallest-first: each job submitted
//	           with Mosaic's --nice (internal/provider/hpc/order.go: 32 per doubling of
//	           its GPU-minutes), each cluster's queue in priority/basic's order (one step
//	           down per submission there, less the job's nice), the estimate planning the
//	           new job at its place in that order
//	pooled-smallest  pooled in the same order (a reference)
//
// A prediction is the median real runtime of the stream's jobs with the same limit:
// what the site's accounting gives Mosaic after the sbatch side has run the stream.
// The model leaves out everything the rig adds: scheduler cycles, ssh round trips,
// replanning moves, the learned correction, runtimes that differ from the median.

// modelStep is the model's clock resolution (arrivals are rounded to 100 ms already).
const modelStep = int64(100 * time.Millisecond)

// modelGPUs is each model cluster's one node's GPUs.
const modelGPUs = 4

// modelPolicies are the policies the model compares, in its output's order.
var modelPolicies = []string{"sbatch-M", "will-run", "one-plan", "floored", "simulated", "pooled", "smallest-first", "pooled-smallest"}

// modelNice is the nice Mosaic's smallest-first order with step per doubling gives j.
func modelNice(j mJob, step int) int64 {
	return int64(site.SmallestFirstNice(float64(j.gpus)*time.Duration(j.limit).Minutes(), step))
}

type mJob struct {
	at, run, limit int64 // nanoseconds from the stream's start
	gpus           int
	key            int64 // its place in its cluster's queue: lower first (queued jobs only)
	nice           int64 // its nice under smallest-first (modelNice)
}

type mRun struct {
	id            int
	gpus          int
	end, limitEnd int64 // real end; the end its limit sets
	predEnd       int64 // its predicted end (estimates only)
}

// mHold is gpus in use over [from, to).
type mHold struct {
	gpus     int
	from, to int64
}

type mCluster struct {
	running []mRun
	queue   []int // job indexes in priority order (arrival order unless niced)
	seq     int64 // submissions so far: priority/basic's count down
}

// queued is c's queue with job id in its place, a new queue (c's is not changed): at
// the end, or with nice (smallest-first) by its key, the cluster's submission count
// plus its nice, behind every job of the same key. It sets jobs[id].key.
func (c *mCluster) queued(jobs []mJob, id int, niced bool) []int {
	k := c.seq
	if niced {
		k += jobs[id].nice
	}
	jobs[id].key = k
	i := len(c.queue)
	for i > 0 && jobs[c.queue[i-1]].key > k {
		i--
	}
	return slices.Insert(slices.Clone(c.queue), i, id)
}

// modelRun is one policy's waits on one stream.
type modelRun struct {
	Waits []time.Duration
}

// p95 is the 95th percentile wait (nearest rank).
func (r modelRun) p95() time.Duration {
	if len(r.Waits) == 0 {
		return 0
	}
	w := slices.Clone(r.Waits)
	slices.Sort(w)
	return w[min(len(w)-1, int(math.Ceil(0.95*float64(len(w))))-1)]
}

func (r modelRun) mean() time.Duration {
	var s time.Duration
	for _, w := range r.Waits {
		s += w
	}
	return s / time.Duration(max(len(r.Waits), 1))
}

// free is whether g GPUs are free throughout [t, t+d) under hs.
func free(hs []mHold, g int, t, d int64) bool {
	check := func(at int64) bool {
		used := 0
		for _, h := range hs {
			if h.from <= at && h.to > at {
				used += h.gpus
			}
		}
		return used+g <= modelGPUs
	}
	if !check(t) {
		return false
	}
	for _, h := range hs {
		if h.from > t && h.from < t+d && !check(h.from) {
			return false
		}
	}
	return true
}

// earliestFree is the first of now and the holds' ends at which g GPUs are free for d,
// and no reserved start falls inside (t, t+d) (reserved: nil for none).
func earliestFree(hs []mHold, reserved []int64, g int, now, d int64) int64 {
	times := []int64{now}
	for _, h := range hs {
		if h.to > now {
			times = append(times, h.to)
		}
	}
	for _, r := range reserved {
		if r > now {
			times = append(times, r)
		}
	}
	slices.Sort(times)
	for _, t := range times {
		ok := free(hs, g, t, d)
		for _, r := range reserved {
			if r > t && r < t+d {
				ok = false
			}
		}
		if ok {
			return t
		}
	}
	return math.MaxInt64
}

// limitsPlan is the model scheduler's plan at now: the queued jobs' planned starts, in
// queue order (running jobs held until their limits; a queued job not starting now
// reserves the whole node for its limit).
func (c *mCluster) limitsPlan(jobs []mJob, now int64) []int64 {
	hs := make([]mHold, 0, len(c.running)+len(c.queue))
	for _, r := range c.running {
		hs = append(hs, mHold{r.gpus, now, max(r.limitEnd, now+modelStep)})
	}
	starts := make([]int64, len(c.queue))
	for i, id := range c.queue {
		j := jobs[id]
		s := earliestFree(hs, nil, j.gpus, now, j.limit)
		starts[i] = s
		if s == now {
			hs = append(hs, mHold{j.gpus, s, s + j.limit})
		} else if s != math.MaxInt64 {
			hs = append(hs, mHold{modelGPUs, s, s + j.limit})
		}
	}
	return starts
}

// schedule starts what the plan at now starts; started(id, now) is told of each.
func (c *mCluster) schedule(jobs []mJob, now int64, pred func(int64) int64, started func(int, int64)) {
	starts := c.limitsPlan(jobs, now)
	kept := c.queue[:0]
	for i, id := range c.queue {
		if starts[i] != now {
			kept = append(kept, id)
			continue
		}
		j := jobs[id]
		c.running = append(c.running, mRun{id: id, gpus: j.gpus, end: now + j.run, limitEnd: now + j.limit,
			predEnd: now + pred(j.limit)})
		started(id, now)
	}
	c.queue = kept
}

// finish drops the jobs that have ended by now.
func (c *mCluster) finish(now int64) {
	c.running = slices.DeleteFunc(c.running, func(r mRun) bool { return r.end <= now })
}

// predictedEnd is a running job's predicted end as Mosaic plans it (heldUntil): its
// predicted end, or when past it the same share of what is left of its limit.
func predictedEnd(r mRun, limit, predicted, now int64) int64 {
	if r.predEnd > now {
		return r.predEnd
	}
	left := r.limitEnd - now
	return max(now+int64(float64(left)*float64(predicted)/float64(limit)), now+int64(time.Second))
}

// willRun is Slurm's will-run test for j at now: the running jobs only, held to their
// limits.
func (c *mCluster) willRun(j mJob, now int64) int64 {
	var hs []mHold
	for _, r := range c.running {
		hs = append(hs, mHold{r.gpus, now, max(r.limitEnd, now+modelStep)})
	}
	return earliestFree(hs, nil, j.gpus, now, j.limit)
}

// queueAllowance is what slurmctld adds to the will-run answer for the queue on a
// one-node partition: the queued jobs' limits in whole minutes, summed
// (internal/dialect/slurm/willrun.go).
func (c *mCluster) queueAllowance(jobs []mJob) int64 {
	var mins int64
	for _, q := range c.queue {
		mins += jobs[q].limit / int64(time.Minute)
	}
	return mins * int64(time.Minute)
}

// estimate is policy's start estimate for job id on c at now.
func (c *mCluster) estimate(policy string, jobs []mJob, id int, now int64, pred func(int64) int64) int64 {
	j := jobs[id]
	switch policy {
	case "sbatch-M":
		return c.willRun(j, now) + c.queueAllowance(jobs)
	case "will-run":
		return c.willRun(j, now)
	case "floored":
		limits := (&mCluster{running: c.running, queue: append(slices.Clone(c.queue), id)}).limitsPlan(jobs, now)
		lim := limits[len(limits)-1]
		sim := c.estimate("simulated", jobs, id, now, pred)
		t := max(c.willRun(j, now)+c.queueAllowance(jobs), lim)
		if lim != math.MaxInt64 && sim < lim {
			t = max(t-(lim-sim), now)
		}
		return t
	case "one-plan":
		var hs []mHold
		var reserved []int64
		for _, r := range c.running {
			lim := jobs[r.id].limit
			hs = append(hs, mHold{r.gpus, now, predictedEnd(r, lim, pred(lim), now)})
		}
		for _, q := range c.queue {
			qj := jobs[q]
			s := earliestFree(hs, reserved, qj.gpus, now, qj.limit)
			if s == math.MaxInt64 {
				continue
			}
			hs = append(hs, mHold{qj.gpus, s, s + pred(qj.limit)})
			reserved = append(reserved, s)
		}
		return earliestFree(hs, reserved, j.gpus, now, j.limit)
	case "simulated", "smallest-first":
		sim := &mCluster{queue: c.queued(jobs, id, policy == "smallest-first")}
		for _, r := range c.running {
			lim := jobs[r.id].limit
			r.end = predictedEnd(r, lim, pred(lim), now)
			sim.running = append(sim.running, r)
		}
		// Runtimes in the simulation are the predictions.
		simJobs := slices.Clone(jobs)
		for k := range simJobs {
			simJobs[k].run = pred(simJobs[k].limit)
		}
		t, start := now, int64(-1)
		for range len(sim.running) + len(sim.queue) + 1 {
			sim.schedule(simJobs, t, pred, func(x int, at int64) {
				if x == id {
					start = at
				}
			})
			if start >= 0 {
				return start
			}
			next := int64(math.MaxInt64)
			for _, r := range sim.running {
				next = min(next, r.end)
			}
			if next == math.MaxInt64 {
				break
			}
			t = next
			sim.finish(t)
		}
		return math.MaxInt64
	}
	panic("model: unknown policy " + policy)
}

// modelStream runs one stream under policy, with smallest-first's niceStep, and returns
// each job's wait.
func modelStream(stream []Job, policy string, niceStep int) modelRun {
	jobs := make([]mJob, len(stream))
	byLimit := map[int64][]int64{}
	for i, j := range stream {
		jobs[i] = mJob{at: int64(j.At), run: int64(j.Runtime), limit: int64(j.Walltime), gpus: j.GPUs}
		jobs[i].nice = modelNice(jobs[i], niceStep)
		byLimit[jobs[i].limit] = append(byLimit[jobs[i].limit], jobs[i].run)
	}
	medians := map[int64]int64{}
	for lim, rs := range byLimit {
		slices.Sort(rs)
		n := len(rs)
		medians[lim] = (rs[(n-1)/2] + rs[n/2]) / 2
	}
	pred := func(limit int64) int64 { return medians[limit] }
	clusters := []*mCluster{{}, {}}
	start := make([]int64, len(jobs))
	for i := range start {
		start[i] = -1
	}
	started := func(id int, at int64) { start[id] = at }
	next, left := 0, len(jobs)
	// Bounded: every job starts once the queues drain (each fits a node), well within
	// an hour of model time for the benchmark's streams.
	for now := int64(0); left > 0 && now < int64(time.Hour)+jobs[len(jobs)-1].at; now += modelStep {
		for _, c := range clusters {
			c.finish(now)
		}
		for next < len(jobs) && jobs[next].at <= now {
			switch policy {
			case "pooled", "pooled-smallest":
				clusters[0].queue = clusters[0].queued(jobs, next, policy == "pooled-smallest")
				clusters[0].seq++
			default:
				best, at := 0, int64(math.MaxInt64)
				for k, c := range clusters {
					if e := c.estimate(policy, jobs, next, now, pred); e < at {
						best, at = k, e
					}
				}
				clusters[best].queue = clusters[best].queued(jobs, next, policy == "smallest-first")
				clusters[best].seq++
			}
			next++
		}
		if policy == "pooled" || policy == "pooled-smallest" {
			schedulePooled(clusters, jobs, now, pred, started)
		} else {
			for _, c := range clusters {
				c.schedule(jobs, now, pred, started)
			}
		}
		left = 0
		for _, s := range start {
			if s < 0 {
				left++
			}
		}
	}
	var r modelRun
	for i, j := range jobs {
		if start[i] < 0 {
			r.Waits = append(r.Waits, time.Duration(math.MaxInt64))
			continue
		}
		r.Waits = append(r.Waits, time.Duration(start[i]-j.at))
	}
	return r
}

// schedulePooled plans the one queue (kept on clusters[0]) over both nodes: each job
// in order on the node where it starts first, reserving that node; jobs planned for now
// start there.
func schedulePooled(clusters []*mCluster, jobs []mJob, now int64, pred func(int64) int64, started func(int, int64)) {
	hs := make([][]mHold, len(clusters))
	for k, c := range clusters {
		for _, r := range c.running {
			hs[k] = append(hs[k], mHold{r.gpus, now, max(r.limitEnd, now+modelStep)})
		}
	}
	q := clusters[0].queue
	kept := q[:0]
	for _, id := range q {
		j := jobs[id]
		best, at := 0, int64(math.MaxInt64)
		for k := range clusters {
			if s := earliestFree(hs[k], nil, j.gpus, now, j.limit); s < at {
				best, at = k, s
			}
		}
		switch {
		case at == now:
			hs[best] = append(hs[best], mHold{j.gpus, now, now + j.limit})
			clusters[best].running = append(clusters[best].running, mRun{id: id, gpus: j.gpus, end: now + j.run,
				limitEnd: now + j.limit, predEnd: now + pred(j.limit)})
			started(id, now)
		case at != math.MaxInt64:
			hs[best] = append(hs[best], mHold{modelGPUs, at, at + j.limit})
			kept = append(kept, id)
		default:
			kept = append(kept, id)
		}
	}
	clusters[0].queue = kept
}

// runModel prints the model's mean waits per seed and policy, each policy's ratio to
// sbatch-M's, and the mean of the per-seed ratios over the seeds.
func runModel(w io.Writer, c config) error {
	fmt.Fprintf(w, "offline model of the rig: %d stream(s) of %d jobs, mean gap %s, seeds %d..%d, nice step %d (no rig; see model.go)\n",
		c.streams, c.jobs, c.gap, c.seed, c.seed+uint64(c.streams)-1, c.niceStep)
	fmt.Fprintf(w, "%-6s", "seed")
	for _, p := range modelPolicies {
		fmt.Fprintf(w, " %18s", p+" mean")
	}
	fmt.Fprintln(w)
	sums := make([]float64, len(modelPolicies))
	p95s := make([]float64, len(modelPolicies))
	idx := func(name string) int { return slices.Index(modelPolicies, name) }
	var diffs, floorDiffs, orderDiffs []float64 // simulated − one-plan, simulated − floored, smallest-first − simulated, per seed
	for s := range uint64(c.streams) {
		seed := c.seed + s
		stream, err := Stream(seed, StreamParams{Jobs: c.jobs, MeanGap: c.gap})
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "%-6d", seed)
		ratios := make([]float64, len(modelPolicies))
		var base, baseP95 time.Duration
		for k, p := range modelPolicies {
			r := modelStream(stream, p, c.niceStep)
			m, q := r.mean(), r.p95()
			if k == 0 {
				base, baseP95 = m, q
			}
			if baseP95 > 0 {
				p95s[k] += q.Seconds() / baseP95.Seconds()
			} else {
				p95s[k]++
			}
			ratios[k] = m.Seconds() / base.Seconds()
			if base == 0 {
				ratios[k] = 1
			}
			sums[k] += ratios[k]
			fmt.Fprintf(w, " %11s (%.2f)", m.Round(100*time.Millisecond), ratios[k])
		}
		diffs = append(diffs, ratios[idx("simulated")]-ratios[idx("one-plan")])
		floorDiffs = append(floorDiffs, ratios[idx("simulated")]-ratios[idx("floored")])
		orderDiffs = append(orderDiffs, ratios[idx("smallest-first")]-ratios[idx("simulated")])
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "mean of per-seed ratios to sbatch-M:")
	for k, p := range modelPolicies {
		fmt.Fprintf(w, " %s %.3f", p, sums[k]/float64(c.streams))
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "mean of per-seed p95 ratios to sbatch-M's p95:")
	for k, p := range modelPolicies {
		fmt.Fprintf(w, " %s %.3f", p, p95s[k]/float64(c.streams))
	}
	fmt.Fprintln(w)
	paired(w, "simulated − one-plan", diffs)
	paired(w, "simulated − floored", floorDiffs)
	paired(w, "smallest-first − simulated", orderDiffs)
	return nil
}

// paired prints the mean of per-seed differences ds and its standard error.
func paired(w io.Writer, what string, ds []float64) {
	n := len(ds)
	if n < 2 {
		return
	}
	var m, ss float64
	for _, d := range ds {
		m += d
	}
	m /= float64(n)
	for _, d := range ds {
		ss += (d - m) * (d - m)
	}
	fmt.Fprintf(w, "%s, paired by seed: %+.3f (standard error %.4f)\n", what, m, math.Sqrt(ss/float64(n-1)/float64(n)))
}
