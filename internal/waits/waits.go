// Package waits learns how wrong each partition's own start estimates are and
// corrects them.
//
// A site's planner (Slurm's sbatch --test-only, the simulator's backfill plan) assumes
// that every running job uses its full walltime and that nothing else arrives, so its
// error is systematic and partition-specific: jobs ending early make it pessimistic,
// later arrivals with higher priority make it optimistic. A Learner keeps, per
// partition, the last Window observations of the log-error
//
//	e = ln((observed + Slack) / (predicted + Slack))
//
// (predicted: the site's estimated wait at placement; observed: the real wait) in
// each of a few classes of the predicted wait (Bins: under a minute, to 10 minutes, to
// an hour, to 6 hours, longer), and corrects a new estimate by the empirical Quantile
// q of e in its class, in the spirit of QBETS (Nurmi, Brevik, Wolski: binomial
// quantile bounds on batch-queue delay, with jobs clustered by what they ask):
//
//	corrected = (est + Slack) · exp(q(e)) − Slack
//
// The classes matter: a site that says "now" is nearly always right (the job fits the
// idle nodes), while a site that says "in 3 hours" is typically 2-4× pessimistic,
// because the running jobs it plans around end before their walltime. A class with
// fewer than MinSamples observations borrows the pooled quantile of every class from a
// minute up (when that has MinSamples); else the prior holds: no correction.
//
// A partition's own quantile is used only where its history shows that its estimates
// err differently from the federation's: the learner also keeps the same rings over
// every partition, and a partition whose observations sit about the federation's
// quantile as a sample of it would (a binomial test of how many fall below it, at
// about 95%: ZCrit) takes the federation's correction instead of its own. With a few
// dozen observations two partitions that behave alike (two identical clusters) would
// otherwise get corrections that differ by sampling noise alone, and that noise, not
// the sites, would order them (docs/PLACEMENT.md, "On real Slurm"); a partition with
// no history of its own (a site rarely chosen) starts from the federation's
// correction instead of none, so it is not ranked against corrected sites on its raw,
// pessimistic estimates. Slack
// keeps the ratio finite when the site says "now". The median (q = 0.5) is the
// default: it minimises the absolute log-error, which is what ranking candidates by
// wait needs; a higher quantile gives QBETS-style conservative bounds. Corrections
// keep the site's order: across a class boundary the correction starts at least at
// what the class below gives at its edge and grows from there (slowly: see Correct).
//
// Memory is bounded: Window float64s per class and partition (and once more for the
// federation) and at most MaxPartitions partitions (observations of further partitions are dropped). A
// Learner is safe for concurrent use.
package waits

import (
	"math"
	"slices"
	"sync"
	"time"
)

// MaxWait caps every wait the learner takes in or gives out (the scheduler's cap too),
// so arithmetic stays finite.
const MaxWait = 14 * 24 * time.Hour

// Defaults of Options.
const (
	DefaultWindow        = 128
	DefaultMinSamples    = 8
	DefaultQuantile      = 0.5
	DefaultSlack         = time.Minute
	DefaultMaxPartitions = 4096
)

// Bins are the upper edges of the classes of predicted wait the learner keeps apart;
// the last class is open.
var Bins = [...]time.Duration{time.Minute, 10 * time.Minute, time.Hour, 6 * time.Hour}

// nBins is the number of classes.
const nBins = len(Bins) + 1

// binOf is the class of a predicted wait.
func binOf(d time.Duration) int {
	for i, e := range Bins {
		if d < e {
			return i
		}
	}
	return len(Bins)
}

// Options configure a Learner; zero (or out-of-range, NaN) fields take the defaults.
type Options struct {
	Window        int           // observations kept per class of predicted wait and partition (a ring)
	MinSamples    int           // observations before any correction (the prior: none)
	Quantile      float64       // of the log-error, in (0, 1)
	Slack         time.Duration // added to both waits of a ratio
	MaxPartitions int           // partitions remembered at most
}

func (o Options) norm() Options {
	if o.Window <= 0 {
		o.Window = DefaultWindow
	}
	if o.MinSamples <= 0 {
		o.MinSamples = DefaultMinSamples
	}
	o.MinSamples = min(o.MinSamples, o.Window)
	if !(o.Quantile > 0 && o.Quantile < 1) { // also NaN
		o.Quantile = DefaultQuantile
	}
	if o.Slack <= 0 {
		o.Slack = DefaultSlack
	}
	if o.MaxPartitions <= 0 {
		o.MaxPartitions = DefaultMaxPartitions
	}
	return o
}

type key struct{ system, partition string }

// part is one partition's rings: one per class, and the pooled one of every class
// from a minute up.
type part struct {
	bins   [nBins]ring
	pooled ring
}

// ring is the last observations of the log-error of one class, in arrival order (v)
// and sorted (for the quantile, kept sorted as observations come and go).
type ring struct {
	v      []float64 // len ≤ Window
	sorted []float64 // v's values, ascending
	next   int       // where the next observation goes once v is full
	total  int64     // observations ever made
}

// Learner is a per-partition correction of site start estimates.
type Learner struct {
	opts  Options
	mu    sync.Mutex
	parts map[key]*part
	fed   part // every kept observation of every partition
}

// ZCrit is the binomial test's threshold: a partition's own quantile is used once the
// count of its observations below the federation's quantile is more than ZCrit
// standard deviations from what a sample of the federation's would give (two-sided,
// about 95%).
const ZCrit = 1.96

// New returns a Learner with no observations (every correction the identity).
func New(opts Options) *Learner {
	return &Learner{opts: opts.norm(), parts: map[key]*part{}}
}

// Options returns the learner's options after defaults.
func (l *Learner) Options() Options { return l.opts }

// clampWait bounds a wait to [0, MaxWait].
func clampWait(d time.Duration) time.Duration { return min(max(d, 0), MaxWait) }

// LogError is the learner's error measure of one observation:
// ln((observed+slack)/(predicted+slack)), both waits clamped to [0, MaxWait].
func LogError(predicted, observed, slack time.Duration) float64 {
	p, o := float64(clampWait(predicted)+slack), float64(clampWait(observed)+slack)
	return math.Log(o / p)
}

// Observe records that a job the site expected to wait predicted really waited
// observed in system/partition. Negative waits (clock skew) count as zero and waits
// over MaxWait as MaxWait. It reports whether the observation was kept: not when the
// system or partition is empty, or when MaxPartitions other partitions are known.
func (l *Learner) Observe(system, partition string, predicted, observed time.Duration) bool {
	if system == "" || partition == "" {
		return false
	}
	e := LogError(predicted, observed, l.opts.Slack)
	l.mu.Lock()
	defer l.mu.Unlock()
	k := key{system, partition}
	p := l.parts[k]
	if p == nil {
		if len(l.parts) >= l.opts.MaxPartitions {
			return false
		}
		p = &part{}
		l.parts[k] = p
	}
	b := binOf(clampWait(predicted))
	for _, q := range [...]*part{p, &l.fed} {
		q.bins[b].add(e, l.opts.Window)
		if b > 0 {
			q.pooled.add(e, l.opts.Window)
		}
	}
	return true
}

func (r *ring) add(e float64, window int) {
	if len(r.v) < window {
		if r.v == nil {
			r.v, r.sorted = make([]float64, 0, min(window, 16)), make([]float64, 0, min(window, 16))
		}
		r.v = append(r.v, e)
	} else {
		old := r.v[r.next]
		r.v[r.next] = e
		r.next = (r.next + 1) % window
		if i, ok := slices.BinarySearch(r.sorted, old); ok {
			r.sorted = slices.Delete(r.sorted, i, i+1)
		}
	}
	i, _ := slices.BinarySearch(r.sorted, e)
	r.sorted = slices.Insert(r.sorted, i, e)
	r.total++
}

// quantileOf is r's Quantile, and whether r has MinSamples observations.
func (l *Learner) quantileOf(r *ring) (float64, bool) {
	if len(r.v) < l.opts.MinSamples {
		return 0, false
	}
	return quantile(r.sorted, l.opts.Quantile), true
}

// quantile is the q-quantile of sorted xs (linear interpolation between order
// statistics, numpy's default); xs is not empty.
func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 1 {
		return sorted[0]
	}
	pos := q * float64(len(sorted)-1)
	lo := int(math.Floor(pos))
	if lo >= len(sorted)-1 {
		return sorted[len(sorted)-1]
	}
	f := pos - float64(lo)
	return sorted[lo] + f*(sorted[lo+1]-sorted[lo])
}

// factorLocked is the correction factor exp(q(e)) of class b of partition k, and
// whether it is learned: the class's (the partition's own where it differs from the
// federation's, see pick), else from a minute up the pooled classes' (likewise), else
// none.
func (l *Learner) factorLocked(k key, b int) (float64, bool) {
	f, _, ok := l.factorFrom(k, b)
	return f, ok
}

// factorFrom is factorLocked, and whether the factor is the federation's.
func (l *Learner) factorFrom(k key, b int) (f float64, shared, ok bool) {
	p := l.parts[k]
	if p == nil {
		p = &noHistory // no history of its own: the federation's, if any
	}
	if q, shared, ok := l.pick(&p.bins[b], &l.fed.bins[b]); ok {
		return math.Exp(q), shared, true
	}
	if b > 0 {
		if q, shared, ok := l.pick(&p.pooled, &l.fed.pooled); ok {
			return math.Exp(q), shared, true
		}
	}
	return 1, false, false
}

// noHistory is the (empty, never written) rings of a partition the learner has not
// seen, so a correction for it allocates nothing.
var noHistory part

// pick is the quantile of a partition's ring own, or the federation's ring fed's when
// own has too few observations or they do not differ from fed's quantile (differs);
// shared says it is fed's.
func (l *Learner) pick(own, fed *ring) (q float64, shared, ok bool) {
	qo, oko := l.quantileOf(own)
	qf, okf := l.quantileOf(fed)
	switch {
	case oko && (!okf || l.differs(own, qf)):
		return qo, false, true
	case okf:
		return qf, true, true
	}
	return 0, false, false
}

// differs reports whether r's observations are unlikely (|z| > ZCrit) to be a sample
// of a distribution whose Quantile is qf: the count below qf (ties half) against its
// binomial mean n·q and deviation √(n·q·(1−q)).
func (l *Learner) differs(r *ring, qf float64) bool {
	n := float64(len(r.sorted))
	lo, _ := slices.BinarySearch(r.sorted, qf)
	hi := lo
	for hi < len(r.sorted) && r.sorted[hi] == qf {
		hi++
	}
	below := float64(lo) + float64(hi-lo)/2
	q := l.opts.Quantile
	return math.Abs(below-n*q) > ZCrit*math.Sqrt(n*q*(1-q))
}

// Factor is system/partition's learned correction factor of est+Slack for an
// estimate est (1 and false while there is too little history).
func (l *Learner) Factor(system, partition string, est time.Duration) (float64, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.factorLocked(key{system, partition}, binOf(clampWait(est)))
}

// Correct returns the site's estimated wait est corrected by what system/partition's
// history (or, where that does not differ from it, the federation's) says of its
// estimates: est itself (clamped to [0, MaxWait]) before MinSamples observations of
// either. The result
// is in [0, MaxWait] and does not decrease as est grows. It implements
// scheduler.WaitModel.
func (l *Learner) Correct(system, partition string, est time.Duration) time.Duration {
	est = clampWait(est)
	k := key{system, partition}
	l.mu.Lock()
	defer l.mu.Unlock()
	// From the lowest class up to est's: in each class the correction is the class's
	// own, but never below the value at the class's lower edge (the class below's) plus
	// half the class's own rate times the distance from that edge. So corrections
	// never decrease, and they keep the site's order (up to rounding to the second, and
	// the clamps at 0 and MaxWait), which a flat floor at the edge did not
	// (on the rig every estimate from 1 to 6 minutes became "1m", and candidates tied on
	// the wait were ranked by name; docs/PLACEMENT.md, "On real Slurm"). The rate is
	// half the class's: enough that estimates 15 s apart stay seconds apart after a 3×
	// correction (a tenth left them equal at the second), little enough that the
	// class's own (measured) correction takes over from the edge well inside the class.
	b := binOf(est)
	var c time.Duration
	for j := 0; j <= b; j++ {
		fj, _ := l.factorLocked(k, j)
		hi := est
		if j < b {
			hi = Bins[j]
		}
		v := apply(hi, fj, l.opts.Slack)
		if j > 0 {
			lo := Bins[j-1]
			v = max(v, min(c+time.Duration(floorRate*fj*float64(hi-lo)).Round(time.Second), MaxWait))
		}
		c = v
	}
	return c
}

// floorRate is the share of a class's own rate at which its floor grows from the
// class below's edge (see Correct).
const floorRate = 0.5

// apply corrects est by factor f: (est+slack)·f − slack, rounded to the second and
// clamped to [0, MaxWait].
func apply(est time.Duration, f float64, slack time.Duration) time.Duration {
	x := (float64(clampWait(est)+slack))*f - float64(slack)
	if !(x > 0) { // also NaN
		return 0
	}
	if x >= float64(MaxWait) {
		return MaxWait
	}
	return time.Duration(x).Round(time.Second)
}

// Stat is one partition's state, for reports.
type Stat struct {
	System, Partition string
	Kept              int            // observations in the windows
	Total             int64          // observations ever made
	Factors           [nBins]float64 // the correction factor in use per class (1: none)
	Learned           [nBins]bool    // the class's factor is learned (its own or pooled)
	Shared            [nBins]bool    // the learned factor is the federation's (the partition's history does not differ from it)
}

// Stats lists every partition's state, by system then partition.
func (l *Learner) Stats() []Stat {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]Stat, 0, len(l.parts))
	for k, p := range l.parts {
		st := Stat{System: k.system, Partition: k.partition}
		for b := range p.bins {
			st.Kept += len(p.bins[b].v)
			st.Total += p.bins[b].total
			st.Factors[b], st.Shared[b], st.Learned[b] = l.factorFrom(k, b)
		}
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b Stat) int {
		if a.System != b.System {
			return cmpStr(a.System, b.System)
		}
		return cmpStr(a.Partition, b.Partition)
	})
	return out
}

func cmpStr(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
