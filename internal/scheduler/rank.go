package scheduler

import (
	"context"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

// Estimator asks a site when a job would start (Slurm's sbatch --test-only). It may
// return an error (for example provider.ErrUnsupported); the ranker then falls back.
type Estimator interface {
	EstimateStart(ctx context.Context, system string, spec model.JobSpec) (time.Time, error)
}

// History knows how long jobs recently waited in a partition's queue.
type History interface {
	// TypicalWait returns a representative recent queue wait for a job of about gpus
	// GPUs (or cores on CPU partitions); ok is false when there is too little history.
	TypicalWait(system, partition string, units int) (wait time.Duration, ok bool)
}

// Ranker orders feasible candidates, best first. It must return a permutation of its
// input; the scheduler checks that.
type Ranker interface {
	Name() string
	Rank(ctx context.Context, r *Request, feasible []*Candidate) ([]*Candidate, error)
}

// HeuristicRanker scores candidates from queue state, optional site start estimates and
// history, fit and cost, weighted by the objective. It is deterministic.
type HeuristicRanker struct {
	Estimator Estimator // optional
	History   History   // optional
	// AvgJobRuntime is the assumed mean runtime of other users' jobs, used to turn a
	// resource shortfall into a wait (default 4h).
	AvgJobRuntime time.Duration
	// MaxEstimates bounds the Estimator calls per placement (each may be a remote
	// sbatch --test-only): only the candidates with the shortest history/queue-model
	// wait are asked (default 8).
	MaxEstimates int
}

// Name implements Ranker.
func (h *HeuristicRanker) Name() string { return "heuristic" }

// weights are the objective's weights for wait, size, fit and cost.
type weights struct{ wait, size, fit, cost float64 }

func objectiveWeights(o model.Objective) weights {
	switch o {
	case model.ObjFastestFinish:
		return weights{wait: 0.45, size: 0.4, fit: 0.1, cost: 0.05}
	case model.ObjMaxThroughput:
		return weights{wait: 0.3, size: 0.5, fit: 0.1, cost: 0.1}
	case model.ObjMinCost:
		return weights{wait: 0.25, size: 0, fit: 0.15, cost: 0.6}
	default: // earliest_start
		return weights{wait: 0.7, size: 0.1, fit: 0.1, cost: 0.1}
	}
}

// maxWait caps every estimate so arithmetic stays finite.
const maxWait = 14 * 24 * time.Hour

// Rank implements Ranker: it fills EstWait, WaitSource, CostSU and Scores on every
// candidate and sorts them by total score (ties by key), candidates over the envelope's
// max_queue_wait last.
func (h *HeuristicRanker) Rank(ctx context.Context, r *Request, feasible []*Candidate) ([]*Candidate, error) {
	minCost := math.Inf(1)
	for _, c := range feasible {
		h.estimate(c)
		if c.CostSU < minCost {
			minCost = c.CostSU
		}
	}
	if h.Estimator != nil {
		h.siteEstimates(ctx, r, feasible)
	}
	w := objectiveWeights(r.Envelope.Objective)
	mqw := r.Envelope.MaxQueueWait
	for _, c := range feasible {
		s := &c.Scores
		s.Wait = 1 / (1 + c.EstWait.D().Hours())
		s.Size = sizeScore(&r.Envelope, c.Sizing)
		s.Fit = fitScore(c.Record, c.Sizing)
		s.Cost = 1
		if c.CostSU > 0 && minCost > 0 && !math.IsInf(minCost, 0) {
			s.Cost = minCost / c.CostSU
		}
		s.Total = round4(w.wait*s.Wait + w.size*s.Size + w.fit*s.Fit + w.cost*s.Cost)
		s.Wait, s.Size, s.Fit, s.Cost = round4(s.Wait), round4(s.Size), round4(s.Fit), round4(s.Cost)
		c.OverWait = mqw > 0 && c.EstWait > mqw
	}
	out := sortRanked(r, feasible)
	for i, c := range out {
		c.HeuristicRank = i + 1
	}
	return out, nil
}

// sortRanked returns the candidates ordered by compareCandidates: over max_queue_wait
// last, then the higher total score first, then the candidate key ascending.
//
// Many candidates tie on the score (round4 leaves 10,001 possible totals and partitions
// of one shape score alike), and each tie costs up to three string comparisons, so
// the full comparison sort was most of Rank. Instead, when every total is a round4
// value in [0,1] (always, by construction of the scores), each candidate gets a
// uint64 key packing (over, 10000 - total×10⁴, key ordinal, input index), sorted with
// the ordered sort (inlined integer comparisons, no pointer swaps). The key ordinal is
// the record's position in key order when Place knows it (see Scheduler.keyOrdinals),
// else 0, leaving ties in input order. Each run of equal (over, total) is then checked
// to be in key order and sorted by key only if it is not, so the result is always the
// order compareCandidates gives, whatever the ordinals.
func sortRanked(r *Request, in []*Candidate) []*Candidate {
	out := make([]*Candidate, len(in))
	packed, ok := packRankKeys(in, r.keyOrdered)
	if !ok {
		copy(out, in)
		slices.SortFunc(out, compareCandidates)
		return out
	}
	slices.Sort(packed)
	for i, p := range packed {
		out[i] = in[p&idxMask]
	}
	for lo := 0; lo < len(packed); {
		hi := lo + 1
		for hi < len(packed) && packed[hi]>>scoreShift == packed[lo]>>scoreShift {
			hi++
		}
		if run := out[lo:hi]; len(run) > 1 && !slices.IsSortedFunc(run, compareKeys) {
			slices.SortFunc(run, compareKeys)
		}
		lo = hi
	}
	return out
}

// Layout of sortRanked's keys: bit 63 over max_queue_wait, bits 49-62 10000 - total×10⁴
// (14 bits), bits 17-48 the key ordinal, bits 0-16 the input index.
const (
	scoreShift = 49
	ordShift   = 17
	idxMask    = 1<<ordShift - 1
)

// packRankKeys builds sortRanked's keys; ok is false when a total is not a round4
// value in [0,1] (NaN, say) or there are too many candidates to index in 17 bits.
func packRankKeys(in []*Candidate, useOrd bool) (packed []uint64, ok bool) {
	if len(in) > idxMask+1 {
		return nil, false
	}
	packed = make([]uint64, len(in))
	for i, c := range in {
		t := c.Scores.Total
		if !(t >= 0 && t <= 1) { // also catches NaN
			return nil, false
		}
		q := math.Round(t * 1e4)
		if q/1e4 != t { // not a round4 value: equal q would not mean equal totals
			return nil, false
		}
		var over, ord uint64
		if c.OverWait {
			over = 1
		}
		if useOrd {
			ord = uint64(c.keyOrd)
		}
		packed[i] = over<<63 | uint64(10000-q)<<scoreShift | ord<<ordShift | uint64(i)
	}
	return packed, true
}

// compareCandidates is the heuristic rank order; it is a total order (keys are unique).
func compareCandidates(a, b *Candidate) int {
	if a.OverWait != b.OverWait {
		if a.OverWait {
			return 1
		}
		return -1
	}
	if a.Scores.Total != b.Scores.Total {
		if a.Scores.Total > b.Scores.Total {
			return -1
		}
		return 1
	}
	return compareKeys(a, b)
}

// compareKeys orders candidates by (system, partition, account).
func compareKeys(a, b *Candidate) int {
	if c := strings.Compare(a.System, b.System); c != 0 {
		return c
	}
	if c := strings.Compare(a.Partition, b.Partition); c != 0 {
		return c
	}
	return strings.Compare(a.Account, b.Account)
}

func round4(f float64) float64 { return math.Round(f*1e4) / 1e4 }

// siteEstimates replaces the waits of the most promising candidates with the site's own
// start estimate, the most trusted source; failures keep the earlier estimate.
func (h *HeuristicRanker) siteEstimates(ctx context.Context, r *Request, feasible []*Candidate) {
	n := h.MaxEstimates
	if n <= 0 {
		n = 8
	}
	ask := append([]*Candidate(nil), feasible...)
	slices.SortFunc(ask, func(a, b *Candidate) int {
		if a.EstWait != b.EstWait {
			if a.EstWait < b.EstWait {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Key(), b.Key())
	})
	for _, c := range ask[:min(n, len(ask))] {
		if ctx.Err() != nil {
			return
		}
		if t, err := h.Estimator.EstimateStart(ctx, c.System, *c.Sizing); err == nil && !t.IsZero() {
			c.EstWait, c.WaitSource = model.Duration(min(max(t.Sub(r.Now), 0), maxWait).Round(time.Second)), "site"
		}
	}
}

// estimate fills EstWait, WaitSource and CostSU from queue history when known, else a
// queue model over the snapshot (siteEstimates may then refine the best ones).
func (h *HeuristicRanker) estimate(c *Candidate) {
	rec, spec := c.Record, c.Sizing
	c.CostSU = cost(rec, spec)
	units := spec.GPUs
	if !rec.IsGPU() {
		units = spec.Nodes * spec.CPUsPerTask
	}
	if h.History != nil {
		if w, ok := h.History.TypicalWait(c.System, c.Partition, units); ok {
			c.EstWait, c.WaitSource = model.Duration(min(max(w, 0), maxWait).Round(time.Second)), "history"
			return
		}
	}
	c.EstWait, c.WaitSource = model.Duration(h.queueWait(rec, spec, units)), "queue"
}

// queueWait models the wait from the snapshot: a request that fits the idle resources
// and has no queue ahead starts now; a queue ahead of a fitting request costs a short
// backfill delay; a shortfall waits for running work to drain at total/AvgJobRuntime.
func (h *HeuristicRanker) queueWait(rec *model.ResourceRecord, spec *model.JobSpec, units int) time.Duration {
	avg := h.AvgJobRuntime
	if avg <= 0 {
		avg = 4 * time.Hour
	}
	free, _ := rec.FreeUnits()
	total := rec.TotalGPUs
	if !rec.IsGPU() {
		total = rec.TotalCores
	}
	idleNodesOK := true
	if rec.Exclusive && rec.Nodes.Total > 0 {
		idleNodesOK = rec.Nodes.Idle >= spec.Nodes
	}
	var w time.Duration
	switch {
	case units <= free && idleNodesOK && rec.PendingJobs == 0:
		w = 0
	case units <= free && idleNodesOK:
		w = min(time.Duration(rec.PendingJobs)*time.Minute, 30*time.Minute)
	case total <= 0:
		w = maxWait / 2 // nothing known about the partition's size
	default:
		short := float64(max(units-free, 1))
		// Pending jobs ahead each want roughly the average running job's share.
		perJob := float64(total) / float64(max(rec.RunningJobs, 1))
		demand := short + float64(rec.PendingJobs)*perJob*0.5
		rate := float64(total) / avg.Hours() // units freed per hour
		w = time.Duration(demand / rate * float64(time.Hour))
	}
	if rec.MaxRunningPerUser > 0 && rec.MyRunningJobs >= rec.MaxRunningPerUser {
		w += avg / 2 // one of the user's own jobs must finish first
	}
	if rec.Health == model.HealthDegraded {
		w += w / 2
	}
	return min(w, maxWait).Round(time.Second)
}

// cost is the allocation charge in SU: charge factor × charged units × walltime hours,
// where exclusive partitions charge whole nodes, GPU partitions GPUs and CPU partitions cores.
func cost(rec *model.ResourceRecord, spec *model.JobSpec) float64 {
	cf := rec.ChargeFactor
	if cf <= 0 {
		cf = 1
	}
	var units float64
	switch {
	case rec.Exclusive:
		units = float64(spec.Nodes)
	case rec.IsGPU():
		units = float64(spec.GPUs)
	default:
		units = float64(spec.Nodes * spec.CPUsPerTask)
	}
	return round4(cf * units * spec.Walltime.D().Hours())
}

// sizeScore is how much of the envelope's max useful size the request gets.
func sizeScore(env *model.Envelope, spec *model.JobSpec) float64 {
	if env.GPUs.Max > 0 {
		return float64(spec.GPUs) / float64(env.GPUs.Max)
	}
	if env.CPUCores.Max > 0 {
		return math.Min(1, float64(spec.Nodes*spec.CPUsPerTask)/float64(env.CPUCores.Max))
	}
	return 1
}

// fitScore is the used share of what is charged: 1 on shared partitions, the GPU (or
// core) share of the allocated nodes on exclusive ones, 0 for a CPU job on GPU nodes.
func fitScore(rec *model.ResourceRecord, spec *model.JobSpec) float64 {
	if rec.IsGPU() && spec.GPUs == 0 {
		return 0 // a CPU job on GPU nodes leaves the GPUs idle
	}
	if !rec.Exclusive {
		return 1
	}
	if rec.IsGPU() && rec.GPUsPerNode > 0 {
		return float64(spec.GPUsPerNode) / float64(rec.GPUsPerNode)
	}
	if rec.CPUCoresPerNode > 0 {
		return math.Min(1, float64(spec.CPUsPerTask)/float64(rec.CPUCoresPerNode))
	}
	return 1
}
