package scheduler

import (
	"context"
	"math"
	"slices"
	"strings"
	"sync"
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
	// wait are asked (default 8). With a BatchEstimator it bounds the candidates of
	// each system asked in that system's one batch instead (default
	// DefaultSiteBatch), those with the shortest such wait first.
	MaxEstimates int
	// Waits, optional, corrects every site estimate by the partition's history of
	// them (see WaitModel); the corrected wait is what the candidate is scored on.
	Waits WaitModel
	// WalltimeProbes bounds the extra Estimator calls per placement that ask whether
	// walltime.min would start materially sooner than the walltime sizing chose (the
	// envelope's maximum): default 2, negative for none. See ShorterWalltimeGain.
	WalltimeProbes int
}

// A shorter walltime is requested only when the site says it starts materially sooner,
// because a job cut short by its walltime costs a whole new attempt (and its queue
// wait): at least ShorterWalltimeMinGain sooner and at least ShorterWalltimeGainShare of
// the wait at the longer walltime. Both are in the site's (for a simulated system,
// simulated) time.
const (
	ShorterWalltimeMinGain   = 15 * time.Minute
	ShorterWalltimeGainShare = 0.25
)

// ShorterWalltimeGain is how much sooner walltime.min must start than the longer
// walltime, whose wait is longWait, to be chosen instead.
func ShorterWalltimeGain(longWait time.Duration) time.Duration {
	return max(ShorterWalltimeMinGain, time.Duration(float64(longWait)*ShorterWalltimeGainShare).Round(time.Second))
}

// wallProbe is one walltime comparison of a placement: the site's start estimates for
// the candidate of record rec at walltime long (what sizing chose) and short
// (walltime.min), and whether short was taken.
type wallProbe struct {
	rec                 uint32
	taken               bool
	long, short         model.Duration
	longWait, shortWait model.Duration
}

// note explains the comparison in a candidate's rationale.
func (p *wallProbe) note() string {
	gain := (p.longWait - p.shortWait).D()
	if p.taken {
		return "walltime " + p.short.String() + " instead of " + p.long.String() + ": starts " + model.Duration(gain).String() +
			" sooner by backfill (site estimates " + p.shortWait.String() + " vs " + p.longWait.String() + ")"
	}
	need := model.Duration(ShorterWalltimeGain(p.longWait.D())).String()
	if gain <= 0 {
		return "walltime " + p.long.String() + ", the envelope's max: " + p.short.String() + " would start no sooner"
	}
	return "walltime " + p.long.String() + ", the envelope's max: " + p.short.String() + " would start only " +
		model.Duration(gain).String() + " sooner (needs " + need + ")"
}

// probeNote is the note of the probe of record rec, or "".
func probeNote(probes []wallProbe, rec uint32) string {
	for i := range probes {
		if probes[i].rec == rec {
			return probes[i].note()
		}
	}
	return ""
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

// row is one feasible candidate during a placement: its record (an index into the
// placement's records), sizing and the heuristic ranker's results. It holds no
// pointers, so a placement's 72-byte rows are one block the garbage collector never
// scans; Decision builds the Candidates from them when they are asked for (and the
// score components with them: a row keeps only the total the order needs).
type row struct {
	rec    uint32 // index of the record
	keyOrd uint32 // position of the record's key in key order; see Request.keyOrdered
	size   sizing
	wait   model.Duration
	cost   float64 // SU
	total  float64 // Scores.Total, set by setTotal
	q      uint16  // total×10⁴ for sortRows, or noQ
	note   uint8   // sizingNotes code
	src    uint8   // waitSources code
	over   bool    // wait over the envelope's max_queue_wait
	// learned: wait is Waits' correction of the site's estimate raw.
	learned bool
	raw     model.Duration
}

// Where an estimated wait came from, by code.
const (
	srcNone uint8 = iota
	srcQueue
	srcHistory
	srcSite
)

var waitSources = [...]string{srcNone: "", srcQueue: "queue", srcHistory: "history", srcSite: "site"}

// Rank implements Ranker over materialized candidates by rank (the ranking Place runs on
// its rows), recording the results on them: it fills EstWait, WaitSource, CostSU and Scores on every
// candidate and sorts them by total score (ties by key), candidates over the envelope's
// max_queue_wait last. Site estimates are asked for the job spec Size gives the
// candidate's sizing (what Place's candidates hold).
func (h *HeuristicRanker) Rank(ctx context.Context, r *Request, feasible []*Candidate) ([]*Candidate, error) {
	recs := make([]model.ResourceRecord, len(feasible))
	rows := make([]row, len(feasible))
	for i, c := range feasible {
		if c.Record != nil {
			recs[i] = *c.Record
		}
		recs[i].System, recs[i].Partition, recs[i].Account = c.System, c.Partition, c.Account
		rows[i] = row{rec: uint32(i), keyOrd: c.keyOrd}
		if c.Sizing != nil {
			rows[i].size = sizingOf(c.Sizing)
		}
	}
	order, least, probes := h.rank(ctx, r, recs, rows)
	out := make([]*Candidate, len(feasible))
	for pos, k := range order {
		w, c := &rows[k], feasible[k]
		c.EstWait, c.WaitSource, c.CostSU, c.OverWait = w.wait, waitSources[w.src], w.cost, w.over
		c.SiteWait = w.siteWait()
		c.WalltimeNote = probeNote(probes, w.rec)
		if c.Sizing != nil && c.Sizing.Walltime != w.size.wall {
			c.Sizing.Walltime = w.size.wall // a probe chose walltime.min
		}
		c.Scores = roundedScores(&r.Envelope, &recs[k], w, least)
		c.HeuristicRank = pos + 1
		out[pos] = c
	}
	return out, nil
}

// rank is the heuristic ranking, the one ranking function: Place calls it on its rows
// and Rank on rows made from Candidates. It scores rows (recs[w.rec] is row w's
// record) and returns their order, best first (the heuristic ranks), the least cost and
// wait among them (for roundedScores) and the walltime probes made (see
// WalltimeProbes). The heuristic ranker never fails.
func (h *HeuristicRanker) rank(ctx context.Context, r *Request, recs []model.ResourceRecord, rows []row) (order []uint32, least leastOf, probes []wallProbe) {
	minCost := math.Inf(1)
	for i := range rows {
		w := &rows[i]
		h.estimate(&recs[w.rec], w)
		if w.cost < minCost {
			minCost = w.cost
		}
	}
	if h.Estimator != nil {
		h.siteEstimates(ctx, r, recs, rows)
		probes = h.walltimeProbes(ctx, r, recs, rows)
		for i := range probes {
			if p := &probes[i]; p.taken {
				for k := range rows {
					if w := &rows[k]; w.rec == p.rec {
						minCost = min(minCost, w.cost)
					}
				}
			}
		}
		h.correctWaits(recs, rows)
	}
	least = leastOf{cost: minCost, wait: time.Duration(math.MaxInt64)}
	for i := range rows {
		least.wait = min(least.wait, rows[i].wait.D())
	}
	mqw := r.Envelope.MaxQueueWait
	for i := range rows {
		w := &rows[i]
		w.setTotal(scores(&r.Envelope, &recs[w.rec], w, least).Total)
		w.over = mqw > 0 && w.wait > mqw
	}
	return sortRows(r, recs, rows), least, probes
}

// leastOf is the least cost and the least (corrected) wait among the candidates
// ranked together: the cost and wait scores are relative to them.
type leastOf struct {
	cost float64
	wait time.Duration
}

// noQ marks a row whose total is not a round4 value in [0,1] (NaN, say).
const noQ = 1<<16 - 1

// setTotal sets w's total score to round4(x), keeping its multiple of 10⁻⁴ for sortRows.
func (w *row) setTotal(x float64) {
	q := roundHalfAway(x * 1e4)
	w.total, w.q = q/1e4, noQ
	if q >= 0 && q <= 1e4 {
		w.q = uint16(q)
	}
}

// scores are row w's score components and their objective-weighted total, unrounded;
// least is the least cost and wait among the candidates ranked together. Cost and
// wait are both scored against the best candidate's (1 for it): a wait by
// relativeWaitScore, a cost as least.cost/cost.
func scores(env *model.Envelope, rec *model.ResourceRecord, w *row, least leastOf) Scores {
	var s Scores
	wt := objectiveWeights(env.Objective)
	s.Wait = relativeWaitScore(w.wait.D(), least.wait, w.size.wall.D())
	s.Size = sizeScore(env, &w.size)
	s.Fit = fitScore(rec, &w.size)
	s.Cost = 1
	if w.cost > 0 && least.cost > 0 && !math.IsInf(least.cost, 0) {
		s.Cost = least.cost / w.cost
	}
	s.Total = wt.wait*s.Wait + wt.size*s.Size + wt.fit*s.Fit + wt.cost*s.Cost
	return s
}

// WaitScale is the yardstick of the wait score of a job that asks for an hour or more
// (see waitScore); a shorter job's is its walltime, at least MinWaitScale.
const (
	WaitScale    = time.Hour
	MinWaitScale = time.Minute
)

// waitScore is 1/(1 + wait/scale): 1 for a start now, ½ for a wait of one scale. The
// scale is the job's requested walltime up to WaitScale (an hour): a wait is weighed
// against the job's own length, as bounded slowdown weighs it, so a one-minute job
// that waits three minutes scores as poorly as an hour's job that waits three hours.
// With the scale fixed at an hour, waits of seconds to minutes all scored about 1,
// and the other components decided alone: on the demo federation jobs of one to a few
// minutes went to the cheapest site (Vista, node-charged at 0.33) to wait minutes when
// four others would start them at once, 4–9 s per job of mean wait. A longer job keeps
// the hour: a long job does not make a wait cheap (scaled by the whole walltime, a
// 48-hour job's five-hour wait scored like a one-hour job's six minutes, and size,
// fit and cost bought hours of wait: 0.99× earliest-start's mean on nasa-lublin against
// 0.84× with the hour, seeds 1–10, docs/PLACEMENT.md). Walltime 0 (unknown) uses the
// hour; MinWaitScale is Slurm's walltime resolution.
func waitScore(wait, walltime time.Duration) float64 {
	scale := WaitScale
	if walltime > 0 && walltime < scale {
		scale = max(walltime, MinWaitScale)
	}
	return 1 / (1 + float64(wait)/float64(scale))
}

// relativeWaitScore is waitScore(wait)/waitScore(best) = (scale+best)/(scale+wait):
// 1 for the candidate with the least wait best, ½ for one that waits scale + 2·best. Scored as an absolute 1/(1+wait/scale), waits of hours
// all scored near 0, and cost decided between them: on nasa-lublin a job went to a
// site it would wait 40 hours on rather than one of 6 hours (scores 0.024 and 0.14),
// because the first charged 16× fewer SUs for it. Relative to the best candidate's,
// as cost already was, the hours count again: over seeds 1–30 mosaic's mean wait is
// 5.4% lower on nasa-lublin and 1.4% on demo, and even on grid (docs/PLACEMENT.md,
// "The wait score, relative"). Where every other component ties and the candidates
// ask the same walltime (the rig's two identical clusters), it orders them as
// waitScore does.
func relativeWaitScore(wait, best, walltime time.Duration) float64 {
	best = min(max(best, 0), wait)
	return waitScore(wait, walltime) / waitScore(best, walltime)
}

// roundedScores is scores rounded to 4 decimals, as traces show them (the total is
// rounded from the unrounded components).
func roundedScores(env *model.Envelope, rec *model.ResourceRecord, w *row, least leastOf) Scores {
	s := scores(env, rec, w, least)
	s.Wait, s.Size, s.Fit, s.Cost, s.Total = round4(s.Wait), round4(s.Size), round4(s.Fit), round4(s.Cost), round4(s.Total)
	return s
}

// sortRows returns the indices of rows ordered by compareRows: over max_queue_wait
// last, then the higher total score first, then the record key ascending.
//
// Many candidates tie on the score (round4 leaves 10,001 possible totals and partitions
// of one shape score alike), and each tie costs up to three string comparisons, so
// a comparison sort was most of the ranking. Instead, when every total is a round4
// value in [0,1] (always, by construction of the scores; setTotal notes it), each row gets a uint64 key
// packing (over, 10000 - total×10⁴, key ordinal, row index), sorted with the ordered
// sort (inlined integer comparisons). The key ordinal is the record's position in key
// order when Place knows it (see Scheduler.keyOrdinals), else 0, leaving ties in input
// order. Each run of equal (over, total) is then checked to be in key order and sorted
// by key only if it is not, so the result is always the order compareRows gives,
// whatever the ordinals.
func sortRows(r *Request, recs []model.ResourceRecord, rows []row) []uint32 {
	order := make([]uint32, len(rows))
	byKey := func(a, b uint32) int { return compareRecordKeys(&recs[rows[a].rec], &recs[rows[b].rec]) }
	packed, ok := packRankKeys(rows, r.keyOrdered)
	if !ok {
		for i := range order {
			order[i] = uint32(i)
		}
		slices.SortFunc(order, func(a, b uint32) int {
			if c := compareScores(&rows[a], &rows[b]); c != 0 {
				return c
			}
			return byKey(a, b)
		})
		return order
	}
	slices.Sort(packed)
	for i, p := range packed {
		order[i] = uint32(p & idxMask)
	}
	for lo := 0; lo < len(packed); {
		hi := lo + 1
		for hi < len(packed) && packed[hi]>>scoreShift == packed[lo]>>scoreShift {
			hi++
		}
		if run := order[lo:hi]; len(run) > 1 && !slices.IsSortedFunc(run, byKey) {
			slices.SortFunc(run, byKey)
		}
		lo = hi
	}
	return order
}

// Layout of sortRows' keys: bit 63 over max_queue_wait, bits 49-62 10000 - total×10⁴
// (14 bits), bits 17-48 the key ordinal, bits 0-16 the row index.
const (
	scoreShift = 49
	ordShift   = 17
	idxMask    = 1<<ordShift - 1
)

// packRankKeys builds sortRows' keys; ok is false when a total is not a round4 value
// in [0,1] (see setTotal) or there are too many rows to index in 17 bits.
func packRankKeys(rows []row, useOrd bool) (packed []uint64, ok bool) {
	if len(rows) > idxMask+1 {
		return nil, false
	}
	packed = make([]uint64, len(rows))
	for i := range rows {
		w := &rows[i]
		if w.q == noQ {
			return nil, false
		}
		var over, ord uint64
		if w.over {
			over = 1
		}
		if useOrd {
			ord = uint64(w.keyOrd)
		}
		packed[i] = over<<63 | uint64(10000-w.q)<<scoreShift | ord<<ordShift | uint64(i)
	}
	return packed, true
}

// compareScores orders rows by over max_queue_wait (last), then total score (higher
// first); 0 when both tie.
func compareScores(a, b *row) int {
	if a.over != b.over {
		if a.over {
			return 1
		}
		return -1
	}
	if a.total != b.total {
		if a.total > b.total {
			return -1
		}
		return 1
	}
	return 0
}

// compareCandidates is the heuristic rank order of materialized candidates (what
// compareScores then the key give for rows); it is a total order (keys are unique).
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

func round4(f float64) float64 { return roundHalfAway(f*1e4) / 1e4 }

// roundHalfAway is math.Round (half away from zero), bit for bit, written so that it
// inlines: truncate, then compare the fraction (exact for any float) with one half.
// math.Round's bit manipulation behind a call was a tenth of the ranking.
func roundHalfAway(x float64) float64 {
	const big = 1 << 52 // from here on every float is an integer
	if !(x > -big && x < big) {
		return x // NaN, ±Inf, or already an integer
	}
	t := float64(int64(x)) // truncates toward zero
	if d := x - t; d >= 0.5 {
		t++
	} else if d <= -0.5 {
		t--
	}
	if t == 0 {
		return x * 0 // zero with x's sign, as math.Round gives for (-0.5, 0.5)
	}
	return t
}

// siteWait is the site's own estimate when the ranker's wait is a learned correction
// of it (Candidate.SiteWait), else nil.
func (w *row) siteWait() *model.Duration {
	if !w.learned {
		return nil
	}
	d := w.raw
	return &d
}

// correctWaits replaces every site estimate with Waits' correction of it where that
// differs (the site's own answer stays in raw, for the trace and the attempt's record).
func (h *HeuristicRanker) correctWaits(recs []model.ResourceRecord, rows []row) {
	if h.Waits == nil {
		return
	}
	for i := range rows {
		w := &rows[i]
		if w.src != srcSite {
			continue
		}
		rec := &recs[w.rec]
		c := model.Duration(min(max(h.Waits.Correct(rec.System, rec.Partition, w.wait.D()), 0), maxWait).Round(time.Second))
		if c != w.wait { // no history (or an exact site) leaves the site's answer as it is
			w.raw, w.learned, w.wait = w.wait, true, c
		}
	}
}

// siteEstimates replaces the waits of the most promising candidates with the site's own
// start estimate, the most trusted source; failures keep the earlier estimate. With a
// BatchEstimator every candidate is asked (up to MaxEstimates per system), one batch
// per system, the systems concurrently.
func (h *HeuristicRanker) siteEstimates(ctx context.Context, r *Request, recs []model.ResourceRecord, rows []row) {
	if be, ok := h.Estimator.(BatchEstimator); ok {
		h.batchEstimates(ctx, be, r, recs, rows)
		return
	}
	n := h.MaxEstimates
	if n <= 0 {
		n = 8
	}
	type ask struct {
		w   *row
		key string
	}
	asks := make([]ask, len(rows))
	for i := range rows {
		rec := &recs[rows[i].rec]
		asks[i] = ask{&rows[i], rec.System + "/" + rec.Partition + "/" + rec.Account}
	}
	slices.SortFunc(asks, func(a, b ask) int {
		if a.w.wait != b.w.wait {
			if a.w.wait < b.w.wait {
				return -1
			}
			return 1
		}
		return strings.Compare(a.key, b.key)
	})
	var tag string // one per placement
	for _, a := range asks[:min(n, len(asks))] {
		if ctx.Err() != nil {
			return
		}
		rec := &recs[a.w.rec]
		var spec model.JobSpec
		a.w.size.specInto(r, rec, &spec)
		if tag == "" {
			tag = estimateTag(r)
		}
		spec.Tag = tag
		if t, err := h.Estimator.EstimateStart(ctx, rec.System, spec); err == nil && !t.IsZero() {
			a.w.wait, a.w.src = model.Duration(min(max(t.Sub(r.Now), 0), maxWait).Round(time.Second)), srcSite
		}
	}
}

// batchEstimates is siteEstimates with a BatchEstimator: per system, its candidates
// with the shortest history/queue-model wait first, at most MaxEstimates (default
// DefaultSiteBatch) of them, in one call; the systems concurrently when the estimator
// says its systems are independent remote sites (ConcurrentEstimator).
func (h *HeuristicRanker) batchEstimates(ctx context.Context, be BatchEstimator, r *Request, recs []model.ResourceRecord, rows []row) {
	per := h.MaxEstimates
	if per <= 0 {
		per = DefaultSiteBatch
	}
	// By system, then the shortest preliminary wait, then key: each system's asks are
	// one run of order.
	order := make([]uint32, len(rows))
	for i := range order {
		order[i] = uint32(i)
	}
	slices.SortFunc(order, func(a, b uint32) int {
		wa, wb := &rows[a], &rows[b]
		ra, rb := &recs[wa.rec], &recs[wb.rec]
		if c := strings.Compare(ra.System, rb.System); c != 0 {
			return c
		}
		if wa.wait != wb.wait {
			if wa.wait < wb.wait {
				return -1
			}
			return 1
		}
		return compareRecordKeys(ra, rb)
	})
	type batch struct {
		system     string
		start, end int // of specs and asked
		res        []EstimateResult
		err        error
	}
	sp := specPool.Get().(*[]model.JobSpec)
	defer func() {
		clear(*sp) // drop the strings they point to
		*sp = (*sp)[:0]
		specPool.Put(sp)
	}()
	specs := (*sp)[:0]
	asked := make([]uint32, 0, len(rows))
	batches := make([]batch, 0, min(len(rows), 16))
	tag := estimateTag(r)
	for lo := 0; lo < len(order); {
		sys := recs[rows[order[lo]].rec].System
		hi := lo + 1
		for hi < len(order) && recs[rows[order[hi]].rec].System == sys {
			hi++
		}
		b := batch{system: sys, start: len(specs)}
		for _, i := range order[lo:min(hi, lo+per)] {
			rec := &recs[rows[i].rec]
			specs = append(specs, model.JobSpec{})
			s := &specs[len(specs)-1]
			rows[i].size.specInto(r, rec, s)
			s.Tag = tag
			asked = append(asked, i)
		}
		b.end = len(specs)
		batches = append(batches, b)
		lo = hi
	}
	*sp = specs // keep the grown buffer for the pool
	ask := func(b *batch) { b.res, b.err = be.EstimateStarts(ctx, b.system, specs[b.start:b.end:b.end]) }
	if ce, ok := be.(ConcurrentEstimator); ok && ce.ConcurrentBatches() && len(batches) > 1 {
		var wg sync.WaitGroup
		for k := range batches {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ask(&batches[k])
			}()
		}
		wg.Wait()
	} else {
		for k := range batches {
			if ctx.Err() != nil {
				return
			}
			ask(&batches[k])
		}
	}
	for k := range batches {
		b := &batches[k]
		if b.err != nil || len(b.res) != b.end-b.start {
			continue // the queue model's (or history's) waits stand
		}
		for j, i := range asked[b.start:b.end] {
			if t := b.res[j].Start; b.res[j].Err == nil && !t.IsZero() {
				w := &rows[i]
				w.wait, w.src = model.Duration(min(max(t.Sub(r.Now), 0), maxWait).Round(time.Second)), srcSite
			}
		}
	}
}

// specPool holds batchEstimates' job-spec buffers: a spec is large and holds
// pointers, and a replay places a job every few microseconds.
var specPool = sync.Pool{New: func() any { s := make([]model.JobSpec, 0, 16); return &s }}

// walltimeProbes asks the site, for at most WalltimeProbes candidates, whether
// walltime.min would start materially sooner than the walltime sizing chose, and takes
// it where it would (the row's walltime, wait and cost change). Only candidates with a
// site estimate of at least ShorterWalltimeMinGain are asked (neither history nor the
// queue model knows walltimes), those with the shortest such wait first.
func (h *HeuristicRanker) walltimeProbes(ctx context.Context, r *Request, recs []model.ResourceRecord, rows []row) []wallProbe {
	n := h.WalltimeProbes
	if n == 0 {
		n = 2
	}
	short := r.Envelope.Walltime.Min
	if n < 0 || short <= 0 {
		return nil
	}
	var ask []uint32 // row indices
	for i := range rows {
		if w := &rows[i]; w.src == srcSite && w.size.wall > short && w.wait.D() >= ShorterWalltimeMinGain {
			ask = append(ask, uint32(i))
		}
	}
	if len(ask) == 0 {
		return nil
	}
	slices.SortFunc(ask, func(a, b uint32) int {
		wa, wb := &rows[a], &rows[b]
		if wa.wait != wb.wait {
			if wa.wait < wb.wait {
				return -1
			}
			return 1
		}
		return compareRecordKeys(&recs[wa.rec], &recs[wb.rec])
	})
	probes := make([]wallProbe, 0, min(n, len(ask)))
	tag := estimateTag(r)
	for _, i := range ask[:min(n, len(ask))] {
		if ctx.Err() != nil {
			break
		}
		w := &rows[i]
		rec := &recs[w.rec]
		z := w.size
		z.wall = short
		var spec model.JobSpec
		z.specInto(r, rec, &spec)
		spec.Tag = tag
		t, err := h.Estimator.EstimateStart(ctx, rec.System, spec)
		if err != nil || t.IsZero() {
			continue
		}
		p := wallProbe{rec: w.rec, long: w.size.wall, short: short, longWait: w.wait,
			shortWait: model.Duration(min(max(t.Sub(r.Now), 0), maxWait).Round(time.Second))}
		if gain := (p.longWait - p.shortWait).D(); gain >= ShorterWalltimeGain(p.longWait.D()) {
			p.taken = true
			w.size.wall, w.wait = short, p.shortWait
			w.cost = cost(rec, &w.size)
		}
		probes = append(probes, p)
	}
	return probes
}

// estimateTag is the job name a start estimate asks with: providers validate specs,
// which need a tag, and the task's attempt 0 is never submitted. (Without one, every
// estimate the simulated provider was asked failed and the queue model stood in.)
func estimateTag(r *Request) string {
	id := ""
	if r.Task != nil {
		id = r.Task.ID
	}
	return "mosaic-" + id + "-0" // model.JobTag(id, 0) without fmt
}

// estimate fills the row's wait, its source and cost from queue history when known,
// else a queue model over the snapshot (siteEstimates may then refine the best ones).
func (h *HeuristicRanker) estimate(rec *model.ResourceRecord, w *row) {
	z := &w.size
	w.cost = cost(rec, z)
	units := z.gpus()
	if !gpuBound(rec, z) {
		units = int(z.nodes) * int(z.cores)
	}
	if h.History != nil {
		if wt, ok := h.History.TypicalWait(rec.System, rec.Partition, units); ok {
			w.wait, w.src = model.Duration(min(max(wt, 0), maxWait).Round(time.Second)), srcHistory
			return
		}
	}
	w.wait, w.src = model.Duration(h.queueWait(rec, z, units)), srcQueue
}

// gpuBound reports whether a request is measured in GPUs on rec: a GPU job on a GPU
// partition. A CPU-only job on a partition whose nodes have GPUs (PBS queues share
// nodes; Slurm CPU partitions often span GPU nodes) waits for cores, not GPUs: counted
// in GPUs it asked for none, "fit" a full node and was estimated to start at once.
func gpuBound(rec *model.ResourceRecord, spec *sizing) bool {
	return rec.IsGPU() && spec.gpus() > 0
}

// queueWait models the wait from the snapshot: a request that fits the idle resources
// and has no queue ahead starts now; a queue ahead of a fitting request costs a short
// backfill delay; a shortfall waits for running work to drain at total/AvgJobRuntime.
func (h *HeuristicRanker) queueWait(rec *model.ResourceRecord, spec *sizing, units int) time.Duration {
	avg := h.AvgJobRuntime
	if avg <= 0 {
		avg = 4 * time.Hour
	}
	free, total := rec.FreeCores, rec.TotalCores
	if gpuBound(rec, spec) {
		free, total = rec.FreeGPUs, rec.TotalGPUs
	}
	idleNodesOK := true
	if rec.Exclusive && rec.Nodes.Total > 0 {
		idleNodesOK = rec.Nodes.Idle >= int(spec.nodes)
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
func cost(rec *model.ResourceRecord, spec *sizing) float64 {
	cf := rec.ChargeFactor
	if cf <= 0 {
		cf = 1
	}
	var units float64
	switch {
	case rec.Exclusive:
		units = float64(spec.nodes)
	case gpuBound(rec, spec):
		units = float64(spec.gpus())
	default: // cores, also for a CPU-only job on a GPU partition (it would cost nothing)
		units = float64(int(spec.nodes) * int(spec.cores))
	}
	return round4(cf * units * spec.wall.D().Hours())
}

// sizeScore is how much of the envelope's max useful size the request gets.
func sizeScore(env *model.Envelope, spec *sizing) float64 {
	if env.GPUs.Max > 0 {
		return float64(spec.gpus()) / float64(env.GPUs.Max)
	}
	if env.CPUCores.Max > 0 {
		return math.Min(1, float64(int(spec.nodes)*int(spec.cores))/float64(env.CPUCores.Max))
	}
	return 1
}

// fitScore is the used share of what is charged: 1 on shared partitions, the GPU (or
// core) share of the allocated nodes on exclusive ones, 0 for a CPU job on GPU nodes.
func fitScore(rec *model.ResourceRecord, spec *sizing) float64 {
	if rec.IsGPU() && spec.gpn == 0 {
		return 0 // a CPU job on GPU nodes leaves the GPUs idle
	}
	if !rec.Exclusive {
		return 1
	}
	if rec.IsGPU() && rec.GPUsPerNode > 0 {
		return float64(spec.gpn) / float64(rec.GPUsPerNode)
	}
	if rec.CPUCoresPerNode > 0 {
		return math.Min(1, float64(spec.cores)/float64(rec.CPUCoresPerNode))
	}
	return 1
}
