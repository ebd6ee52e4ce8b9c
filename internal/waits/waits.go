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
// (predicted: the site's estimated wait at placement; observed: the real wait) and
// corrects a new estimate by the empirical Quantile q of e, in the spirit of QBETS
// (Nurmi, Brevik, Wolski: binomial quantile bounds on batch-queue delay):
//
//	corrected = (est + Slack) · exp(q(e)) − Slack
//
// With fewer than MinSamples observations the prior holds: no correction. Slack keeps
// the ratio finite when the site says "now" and bounds the correction of short waits.
// The median (q = 0.5) is the default: it minimises the absolute log-error, which is
// what ranking candidates by wait needs; a higher quantile gives QBETS-style
// conservative bounds.
//
// Memory is bounded: Window float64s per partition and at most MaxPartitions
// partitions (observations of further partitions are dropped). A Learner is safe for
// concurrent use.
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
	DefaultWindow        = 256
	DefaultMinSamples    = 16
	DefaultQuantile      = 0.5
	DefaultSlack         = 5 * time.Minute
	DefaultMaxPartitions = 4096
)

// Options configure a Learner; zero (or out-of-range, NaN) fields take the defaults.
type Options struct {
	Window        int           // observations kept per partition (a ring)
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

// ring is one partition's last observations of the log-error.
type ring struct {
	v     []float64 // len ≤ Window
	next  int       // where the next observation goes once v is full
	total int64     // observations ever made
	// q is the cached quantile of v; stale after an observation.
	q     float64
	stale bool
}

// Learner is a per-partition correction of site start estimates.
type Learner struct {
	opts  Options
	mu    sync.Mutex
	parts map[key]*ring
}

// New returns a Learner with no observations (every correction the identity).
func New(opts Options) *Learner {
	return &Learner{opts: opts.norm(), parts: map[key]*ring{}}
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
	r := l.parts[k]
	if r == nil {
		if len(l.parts) >= l.opts.MaxPartitions {
			return false
		}
		r = &ring{v: make([]float64, 0, min(l.opts.Window, 64))}
		l.parts[k] = r
	}
	if len(r.v) < l.opts.Window {
		r.v = append(r.v, e)
	} else {
		r.v[r.next] = e
		r.next = (r.next + 1) % l.opts.Window
	}
	r.total++
	r.stale = true
	return true
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

// factorLocked is the partition's correction factor exp(q(e)), and whether it has
// enough observations.
func (l *Learner) factorLocked(k key) (float64, bool) {
	r := l.parts[k]
	if r == nil || len(r.v) < l.opts.MinSamples {
		return 1, false
	}
	if r.stale {
		s := slices.Clone(r.v)
		slices.Sort(s)
		r.q, r.stale = quantile(s, l.opts.Quantile), false
	}
	return math.Exp(r.q), true
}

// Factor is system/partition's learned correction factor of est+Slack (1 and false
// before MinSamples observations).
func (l *Learner) Factor(system, partition string) (float64, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.factorLocked(key{system, partition})
}

// Correct returns the site's estimated wait est corrected by what system/partition's
// history says of its estimates: est itself (clamped to [0, MaxWait]) before
// MinSamples observations. The result
// is in [0, MaxWait] and does not decrease as est grows. It implements
// scheduler.WaitModel.
func (l *Learner) Correct(system, partition string, est time.Duration) time.Duration {
	f, ok := l.Factor(system, partition)
	if !ok {
		return clampWait(est)
	}
	return apply(est, f, l.opts.Slack)
}

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
	Kept              int     // observations in the window
	Total             int64   // observations ever made
	Factor            float64 // the correction factor in use (1 before MinSamples)
	Learned           bool    // Kept ≥ MinSamples
}

// Stats lists every partition's state, by system then partition.
func (l *Learner) Stats() []Stat {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]Stat, 0, len(l.parts))
	for k, r := range l.parts {
		f, ok := l.factorLocked(k)
		out = append(out, Stat{System: k.system, Partition: k.partition, Kept: len(r.v), Total: r.total, Factor: f, Learned: ok})
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
