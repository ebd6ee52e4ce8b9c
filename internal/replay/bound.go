package replay

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/scheduler"
)

// PolicyBound names the lower-bound row of a report (it is not a policy).
const PolicyBound = "bound"

// Bound is a lower bound on each federated job's wait that no policy can beat: not
// the one that submits each job once, not one that migrates, replans, shrinks within
// the envelope or submits redundantly.
//
// Why it is a bound. Fix a job J that arrives at a. Whatever a policy does:
//
//  1. J is placed at a decision tick at or after a (the replay decides only on
//     ticks), and it cannot start before it is submitted: start ≥ tickCeil(a).
//  2. It starts on some partition P the rule chain admits for its envelope. The
//     rule chain on an idle federation (every node up and free, no queue, none of the
//     user's jobs) admits a superset of what it admits in any real state, so P is
//     among those candidates; and J holds at least its envelope's minimum cores, on
//     an exclusive partition at least ⌈min cores / cores per node⌉ whole nodes.
//  3. The models do not preempt. The background jobs running on P at t0 (the
//     replay's start, before any federated job exists) are the same under every
//     policy, and each holds its cores until it ends: at start + min(runtime,
//     walltime), or earlier only if a configured node failure kills it, which the
//     bound allows (such a job is assumed to end at the first failure on P). So at
//     any t, P's free capacity is at most its total minus what those jobs still hold
//     (other background jobs, preloads and federated jobs only take more).
//  4. Nothing starts during an outage window.
//
// So J's start is at least the earliest t ≥ tickCeil(a), outside P's outages, at which
// that relaxed free capacity of P covers J's minimum, minimised over the admitted P;
// its wait is that minus a. Summing or sorting per-job bounds bounds the mean and
// every percentile of any policy whose jobs all start (the k-th smallest wait is at
// least the k-th smallest bound, because each wait is at least its own bound).
//
// What is relaxed away, and why nothing tighter is claimed: the queue (background jobs
// pending at t0 and those that arrive later) and the other federated jobs. Their start
// times depend on the policy, and EASY backfill is not monotone: adding a job can make
// another start sooner (a federated job K that takes a free node delays a big head
// job, whose reservation then leaves a hole a short job J backfills into at once;
// without K the head starts and J waits for hours). So "J alone with the background
// load" (a what-if without the other federated jobs) is not a bound, and a bound that
// charges J for the queue would need the model's anomalies ruled out first. The bound
// is therefore loose on long replays (most jobs' bound is the tick delay once the
// jobs running at t0 are gone); the exhaustive optimum (tiny instances) is the tight
// reference. TestBoundNeverBeaten checks both facts on random instances.
type Bound struct {
	// Waits is each job's bound, in arrival order; -1 for a job no partition admits
	// (every policy rejects it).
	Waits []time.Duration
	// IDs are the jobs, in the same order.
	IDs []string
	// Result is the "bound" row: the mean, p95 and max of the per-job bounds over the
	// admitted jobs (other fields zero).
	Result *Result
}

// committed is what a partition's jobs running at t0 still hold: amount (cores, or
// whole nodes on an exclusive partition) released at each end, in end order.
type committed struct {
	free      int // at t0
	total     int
	ends      []release
	exclusive bool
	cpn       int
	outages   []window
}

type release struct {
	at     time.Time
	amount int
}

type window struct{ from, to time.Time }

// ComputeBound computes the bound for cfg (its jobs, federation and seed).
func ComputeBound(ctx context.Context, cfg Config) (*Bound, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	w, err := newWorld(cfg.Federation, cfg.Seed)
	if err != nil {
		return nil, err
	}
	caps := make(map[*unit]*committed, len(w.units))
	for _, u := range w.units {
		caps[u] = commitments(u)
	}
	sched := scheduler.New(scheduler.Options{Now: func() time.Time { return w.now }})
	jobs := slices.Clone(cfg.Jobs)
	slices.SortStableFunc(jobs, func(a, b Job) int { return int(a.Arrival - b.Arrival) })
	r := &runner{cfg: &cfg, w: w}
	b := &Bound{Result: &Result{Policy: PolicyBound, Jobs: len(jobs), Utilisation: map[string]float64{}, Placed: map[string]int{}}}
	var sum float64
	for _, j := range jobs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		b.IDs = append(b.IDs, j.ID)
		task := model.Task{ID: j.ID, Name: j.ID, Command: "bound " + j.ID, Envelope: j.Envelope(false)}
		d, err := sched.Place(ctx, &task, idleSnapshot(w), scheduler.PlaceOptions{NoLLM: true})
		if errors.Is(err, scheduler.ErrNoFeasible) {
			b.Waits = append(b.Waits, -1)
			b.Result.Rejected++
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("bound, job %s: %w", j.ID, err)
		}
		arr := Epoch.Add(j.Arrival)
		t0 := r.tickCeil(arr)
		best := time.Time{}
		for _, c := range d.Feasible() {
			u, ok := w.unitFor(c.System, c.Partition)
			if !ok {
				continue
			}
			t := caps[u].earliest(t0, j.MinCores)
			if best.IsZero() || t.Before(best) {
				best = t
			}
		}
		if best.IsZero() {
			return nil, fmt.Errorf("bound, job %s: the scheduler admitted no modelled partition", j.ID)
		}
		wait := best.Sub(arr)
		b.Waits = append(b.Waits, wait)
		b.Result.Started++
		b.Result.Waits = append(b.Result.Waits, wait.Seconds())
		sum += wait.Seconds()
	}
	res := b.Result
	res.Finished = res.Started
	slices.Sort(res.Waits)
	if n := len(res.Waits); n > 0 {
		res.MeanWait = sum / float64(n)
		res.P95Wait = percentile(res.Waits, 0.95)
		res.MaxWait = res.Waits[n-1]
	}
	return b, nil
}

// idleSnapshot is the federation with every node up and free and nothing queued (as
// everFeasible builds it): the rule chain's most permissive state.
func idleSnapshot(w *world) *model.ResourceSnapshot {
	snap := &model.ResourceSnapshot{TakenAt: w.now}
	for _, u := range w.units {
		rec := u.rec
		pc := u.cfg.Partitions[0]
		rec.Timestamp, rec.Health = w.now, model.HealthOK
		rec.Nodes = model.NodeCounts{Idle: pc.Nodes, Total: pc.Nodes}
		rec.TotalCores, rec.FreeCores = pc.Nodes*pc.CoresPerNode, pc.Nodes*pc.CoresPerNode
		rec.MaxNodesPerJob = pc.MaxNodesPerJob
		if rec.MaxNodesPerJob == 0 {
			rec.MaxNodesPerJob = pc.Nodes
		}
		rec.Exclusive = pc.Exclusive
		snap.Records = append(snap.Records, rec)
	}
	model.SortRecords(snap.Records)
	return snap
}

// commitments reads what u's jobs running at t0 hold and when they let go (point 3 of
// Bound), and u's outage windows (point 4).
func commitments(u *unit) *committed {
	pc := u.cfg.Partitions[0]
	c := &committed{exclusive: pc.Exclusive, cpn: pc.CoresPerNode}
	c.total = pc.Nodes * pc.CoresPerNode
	if c.exclusive {
		c.total = pc.Nodes
	}
	var fail time.Time // the first node failure on this partition at or after t0
	for _, nf := range u.cfg.NodeFailures {
		if nf.Partition == pc.Name && nf.Nodes > 0 && nf.At >= 0 {
			if t := Epoch.Add(nf.At); fail.IsZero() || t.Before(fail) {
				fail = t
			}
		}
	}
	held := 0
	for _, j := range u.c.Running(pc.Name) {
		amount := len(j.NodeList)
		if !c.exclusive {
			amount *= j.CoresPerNode
		}
		run := min(j.Runtime, j.Walltime)
		if j.External {
			run = j.Walltime
		}
		end := j.Start.Add(run)
		if !fail.IsZero() && fail.Before(end) {
			end = fail
		}
		if !end.After(Epoch) {
			continue
		}
		held += amount
		c.ends = append(c.ends, release{at: end, amount: amount})
	}
	c.free = max(c.total-held, 0)
	slices.SortFunc(c.ends, func(a, b release) int { return a.at.Compare(b.at) })
	for _, o := range u.cfg.Outages {
		c.outages = append(c.outages, window{from: Epoch.Add(o.Start), to: Epoch.Add(o.Start + o.Duration)})
	}
	return c
}

// earliest is the first t ≥ from, outside every outage, at which the relaxed free
// capacity covers a job of cores cores.
func (c *committed) earliest(from time.Time, cores int) time.Time {
	need := cores
	if c.exclusive {
		need = (cores + c.cpn - 1) / c.cpn
	}
	t, free, i := from, c.free, 0
	for ; i < len(c.ends) && !c.ends[i].at.After(t); i++ {
		free += c.ends[i].amount
	}
	for free < need && i < len(c.ends) {
		t = c.ends[i].at
		for ; i < len(c.ends) && !c.ends[i].at.After(t); i++ {
			free += c.ends[i].amount
		}
	}
	// Step past outages (windows may touch or overlap: bounded by their number).
	for range len(c.outages) + 1 {
		moved := false
		for _, o := range c.outages {
			if !t.Before(o.from) && t.Before(o.to) {
				t, moved = o.to, true
			}
		}
		if !moved {
			break
		}
	}
	return t
}

// Violations counts, for a policy's result, the jobs that started sooner than their
// bound (a bug in the bound or the replay if ever non-zero).
func (b *Bound) Violations(res *Result) int {
	idx := make(map[string]int, len(b.IDs))
	for i, id := range b.IDs {
		idx[id] = i
	}
	n := 0
	for _, o := range res.Outcomes {
		i, ok := idx[o.ID]
		if !ok || o.Wait < 0 {
			continue
		}
		if b.Waits[i] < 0 || o.Wait < b.Waits[i] {
			n++
		}
	}
	return n
}
