package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

// ErrNoFeasible is wrapped by every Place error caused by no candidate passing the rules.
var ErrNoFeasible = errors.New("no feasible placement")

// PlacementError explains a placement with no feasible candidate: per system, the
// failing rules' reasons. errors.Is(err, ErrNoFeasible) holds.
type PlacementError struct {
	TaskID  string
	Pinned  bool
	Target  *model.Target
	Reasons map[string][]string // system → "partition: rule: reason"
}

// Error implements error.
func (e *PlacementError) Error() string {
	var b strings.Builder
	if e.Pinned && e.Target != nil {
		t := e.Target.System
		if e.Target.Partition != "" {
			t += "/" + e.Target.Partition
		}
		fmt.Fprintf(&b, "task %s is pinned to %s but cannot run there", e.TaskID, t)
	} else {
		fmt.Fprintf(&b, "no feasible placement for task %s", e.TaskID)
	}
	systems := make([]string, 0, len(e.Reasons))
	for s := range e.Reasons {
		systems = append(systems, s)
	}
	sort.Strings(systems)
	for _, s := range systems {
		fmt.Fprintf(&b, "\n  %s: %s", s, strings.Join(e.Reasons[s], "; "))
	}
	if len(systems) == 0 {
		b.WriteString(": the snapshot has no candidates (no probe has succeeded yet?)")
	}
	b.WriteString("\nwiden the envelope, change its constraints or the pin, or wait for capacity")
	return b.String()
}

// Unwrap lets errors.Is match ErrNoFeasible.
func (e *PlacementError) Unwrap() error { return ErrNoFeasible }

// Options configure a Scheduler. Every field is optional.
type Options struct {
	Rules        []Rule    // nil = DefaultRules()
	Estimator    Estimator // site start estimates for the heuristic ranker (a BatchEstimator: every candidate)
	MaxEstimates int       // Estimator calls per placement (default 8; per system with a BatchEstimator, default 32)
	// WalltimeProbes: extra Estimator calls per placement asking whether walltime.min
	// starts materially sooner (default 2, negative for none; see ShorterWalltimeGain).
	WalltimeProbes int
	History        History       // queue-wait history for the heuristic ranker
	LLM            Ranker        // optional second ranker (see NewLLMRanker); nil = heuristics only
	LLMTimeout     time.Duration // per placement; default 20s
	Now            func() time.Time
	Logger         *slog.Logger

	// Waits corrects site estimates by each partition's history of them (optional;
	// see WaitModel and internal/waits).
	Waits WaitModel

	// OnPlace, if set, is told how long each Place took and its outcome: "placed",
	// "infeasible" (a *PlacementError) or "error", for metrics.
	OnPlace func(took time.Duration, outcome string)
}

// Scheduler places tasks. It is safe for concurrent use.
type Scheduler struct {
	rules     []Rule
	ruleNames []string
	heur      *HeuristicRanker
	keyOrd    atomic.Pointer[keyOrder] // see keyOrdinals
	llm       Ranker
	llmTO     time.Duration
	now       func() time.Time
	log       *slog.Logger
	onPlace   func(time.Duration, string)
}

// New builds a Scheduler.
func New(opts Options) *Scheduler {
	s := &Scheduler{
		rules: opts.Rules,
		heur:  &HeuristicRanker{Estimator: opts.Estimator, History: opts.History, MaxEstimates: opts.MaxEstimates, WalltimeProbes: opts.WalltimeProbes},
		llm:   opts.LLM,
		llmTO: opts.LLMTimeout,
		now:   opts.Now,
		log:   opts.Logger,
	}
	s.heur.Waits = opts.Waits
	s.onPlace = opts.OnPlace
	if s.rules == nil {
		s.rules = DefaultRules()
	}
	for _, r := range s.rules {
		s.ruleNames = append(s.ruleNames, r.Name())
	}
	if s.llmTO <= 0 {
		s.llmTO = 20 * time.Second
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	return s
}

// ActiveRanker names the ranker placements use: "heuristic", or the LLM ranker's name
// (e.g. "llm:anthropic/claude-sonnet-4-5") with heuristic fallback. For GET /api/about.
func (s *Scheduler) ActiveRanker() string {
	if s.llm == nil {
		return s.heur.Name()
	}
	return s.llm.Name() + " (fallback: heuristic)"
}

// Rules returns the names of the rule chain in order.
func (s *Scheduler) Rules() []string { return append([]string(nil), s.ruleNames...) }

// PlaceOptions restrict one placement.
type PlaceOptions struct {
	Exclude []string      // systems to leave out (migration away from them)
	Target  *model.Target // overrides task.Target when set
	NoLLM   bool          // heuristics only for this placement
}

// Place evaluates every candidate of snap for task and returns the decision. When no
// candidate is feasible it returns the decision (for the trace) and a *PlacementError.
// An invalid envelope is refused before any candidate is considered.
//
// Every rule's pass/fail is computed for every candidate; the reasons of the verdicts and
// the infeasible candidates' entries are built by Decision.Explain, which MarshalJSON
// and Table call. The decision points into snap: do not modify the snapshot before
// the decision is explained (snapshots are published immutable, so this only matters
// to callers that reuse one for tests).
func (s *Scheduler) Place(ctx context.Context, task *model.Task, snap *model.ResourceSnapshot, opts PlaceOptions) (*Decision, error) {
	if s.onPlace == nil {
		return s.place(ctx, task, snap, opts)
	}
	start := time.Now()
	d, err := s.place(ctx, task, snap, opts)
	s.onPlace(time.Since(start), PlaceOutcome(err))
	return d, err
}

// PlaceOutcome names the outcome of a Place call for metrics: placed, infeasible
// (no candidate passed the rules) or error.
func PlaceOutcome(err error) string {
	var pe *PlacementError
	switch {
	case err == nil:
		return "placed"
	case errors.As(err, &pe):
		return "infeasible"
	default:
		return "error"
	}
}

func (s *Scheduler) place(ctx context.Context, task *model.Task, snap *model.ResourceSnapshot, opts PlaceOptions) (*Decision, error) {
	if task == nil || snap == nil {
		return nil, fmt.Errorf("place: task and snapshot are required")
	}
	if err := task.Envelope.Validate(); err != nil {
		return nil, fmt.Errorf("task %s: invalid envelope: %w", task.ID, err)
	}
	req := &Request{Task: task, Envelope: task.Envelope, Target: task.Target, Exclude: opts.Exclude, Now: s.now()}
	req.Envelope.Normalize()
	if opts.Target != nil {
		req.Target = opts.Target
	}
	d := &Decision{
		TaskID: task.ID, TaskName: task.Name, Objective: req.Envelope.Objective, Envelope: req.Envelope,
		Mode: ModeAuto, Target: req.Target, Exclude: opts.Exclude, SnapshotSeq: snap.Seq,
		SnapshotAt: snap.TakenAt, DecidedAt: req.Now, Rules: s.ruleNames, Ranker: s.heur.Name(),
	}
	if req.Target != nil && req.Target.System != "" {
		d.Mode = ModePinned
	}

	if uint64(len(snap.Records)) > math.MaxUint32 {
		return nil, fmt.Errorf("place: the snapshot has %d records; at most %d are supported", len(snap.Records), uint64(math.MaxUint32))
	}
	if len(s.rules) > MaxRules {
		return nil, fmt.Errorf("place: the rule chain has %d rules; at most %d are supported", len(s.rules), MaxRules)
	}
	health := newHealthIndex(snap.Systems)
	lz := &lazyTrace{rules: s.rules, snap: snap, health: health, req: *req}
	lz.req.explain = true
	d.lazy = lz

	// Pass 1: the rules on every record until one fails, pass/fail only (see runChain).
	n := len(snap.Records)
	codes := make([]failCode, n)
	nf := runChain(s.rules, req, snap.Records, &health, codes)

	// Pass 2: size the feasible candidates into pointer-free rows (see row); the
	// Candidates are built from them only when the decision is read (Decision.build).
	ords := s.keyOrdinals(snap)
	req.keyOrdered = true // each row's keyOrd is its record's position in key order
	rows := make([]row, nf)
	k := 0
	for i := range snap.Records {
		if codes[i] != 0 {
			continue
		}
		rec := &snap.Records[i]
		w := &rows[k]
		note, fail, ok := size(req, rec, &w.size)
		if !ok {
			codes[i] = sizingFailed
			if lz.sizing == nil {
				lz.sizing = map[int]string{}
			}
			lz.sizing[i] = fail
			continue // size wrote nothing: the row serves the next record
		}
		w.rec, w.note = uint32(i), note
		w.keyOrd = uint32(i) // snapshots are published sorted by key: index order is key order...
		if ords != nil {
			w.keyOrd = ords[i] // ...but this one may not be
		}
		k++
	}
	rows = rows[:k]
	lz.codes = codes

	if len(rows) == 0 {
		d.Rationale = "no candidate passed every rule"
		d.Explain()
		return d, s.noFeasible(task.ID, d, req)
	}

	lz.order, lz.least, lz.probes = s.heur.rank(ctx, req, snap.Records, rows)
	lz.rows = rows
	if s.llm != nil && !opts.NoLLM && len(rows) > 1 {
		ranked := d.Feasible() // heuristic order
		lctx, cancel := context.WithTimeout(ctx, s.llmTO)
		order, err := s.llm.Rank(lctx, req, ranked)
		cancel()
		if err == nil {
			err = checkPermutation(ranked, order)
		}
		if err != nil {
			d.FallbackReason = err.Error()
			s.log.Warn("llm ranking discarded; using heuristic order", "task", task.ID, "ranker", s.llm.Name(), "reason", err)
			for _, c := range ranked {
				c.AIRank, c.AIReason = 0, ""
			}
		} else {
			ranked = order
			d.Ranker = s.llm.Name()
		}
		for i, c := range ranked {
			c.Rank = i + 1
		}
		d.Candidates = ranked
		best := ranked[0]
		d.Chosen, d.Spec = best.Key(), best.Sizing
		d.Rationale = rationale(d, best, len(ranked), n)
		return d, nil
	}

	// Heuristic order: only the chosen candidate is built now.
	w := &rows[lz.order[0]]
	best := new(sizedCandidate)
	w.size.specInto(req, &snap.Records[w.rec], &best.spec)
	lz.fill(&best.c, w, &best.spec, 1)
	lz.chosen, d.Spec = &best.c, &best.spec
	d.Chosen = best.c.Key()
	d.Rationale = rationale(d, &best.c, len(rows), n)
	return d, nil
}

// keyOrder is the key order of one snapshot's records: ord[i] is the position of
// Records[i].Key() when the records are sorted by key.
type keyOrder struct {
	snap *model.ResourceSnapshot
	n    int
	ord  []uint32 // nil when not known yet or when the records are sorted (ready tells)
	// ready is set once ord has been computed (on the second placement using snap).
	ready bool
}

// keyOrdinals returns the key order of snap's records, or nil. The ranker uses it to
// break score ties without comparing strings; a wrong order (say, the snapshot was
// modified in place) only costs speed, as sortRanked checks every tie it breaks.
//
// Snapshots are published sorted by key, where the record index is the key order and
// this is not needed. For an unsorted one, sorting its 1,000 keys costs about as much
// as a placement, so it is done on the second placement that uses the same snapshot
// and cached for the following ones. The cache holds only the last snapshot (keeping
// it reachable until a placement uses another one).
func (s *Scheduler) keyOrdinals(snap *model.ResourceSnapshot) []uint32 {
	n := len(snap.Records)
	if n < 2 || uint64(n) > math.MaxUint32 {
		return nil
	}
	ko := s.keyOrd.Load()
	if ko == nil || ko.snap != snap || ko.n != n {
		s.keyOrd.Store(&keyOrder{snap: snap, n: n})
		return nil
	}
	if ko.ready {
		return ko.ord
	}
	recs := snap.Records
	idx := make([]uint32, n)
	sorted := true
	for i := range idx {
		idx[i] = uint32(i)
		if i > 0 && sorted && compareRecordKeys(&recs[i-1], &recs[i]) > 0 {
			sorted = false
		}
	}
	if sorted { // index order is key order: answer nil from now on
		s.keyOrd.Store(&keyOrder{snap: snap, n: n, ready: true})
		return nil
	}
	slices.SortFunc(idx, func(a, b uint32) int { return compareRecordKeys(&recs[a], &recs[b]) })
	ord := make([]uint32, n)
	for pos, i := range idx {
		ord[i] = uint32(pos)
	}
	s.keyOrd.Store(&keyOrder{snap: snap, n: n, ord: ord, ready: true})
	return ord
}

// compareRecordKeys orders records by (system, partition, account), like compareKeys.
func compareRecordKeys(a, b *model.ResourceRecord) int {
	if c := strings.Compare(a.System, b.System); c != 0 {
		return c
	}
	if c := strings.Compare(a.Partition, b.Partition); c != 0 {
		return c
	}
	return strings.Compare(a.Account, b.Account)
}

// checkPermutation accepts order only if it holds exactly the candidates of in.
func checkPermutation(in, order []*Candidate) error {
	if len(order) != len(in) {
		return fmt.Errorf("llm order has %d candidates, want %d", len(order), len(in))
	}
	want := make(map[*Candidate]bool, len(in))
	for _, c := range in {
		want[c] = true
	}
	for _, c := range order {
		if c == nil || !want[c] {
			return fmt.Errorf("llm order names a candidate that is not feasible or repeats one")
		}
		delete(want, c)
	}
	return nil
}

func (s *Scheduler) noFeasible(taskID string, d *Decision, req *Request) error {
	all := d.Candidates
	pe := &PlacementError{TaskID: taskID, Pinned: d.Mode == ModePinned, Target: req.Target, Reasons: map[string][]string{}}
	for _, c := range all {
		var parts []string
		outsidePin := false
		for _, v := range c.Failures() {
			if v.Rule == PinRule.Name(PinRule{}) {
				outsidePin = true
			}
			parts = append(parts, v.Rule+": "+v.Reason)
		}
		if pe.Pinned && outsidePin {
			continue // outside the pin: not worth listing
		}
		pe.Reasons[c.System] = append(pe.Reasons[c.System], c.Partition+": "+strings.Join(parts, ", "))
	}
	if pe.Pinned && len(pe.Reasons) == 0 {
		t := req.Target.System
		if req.Target.Partition != "" {
			t += "/" + req.Target.Partition
		}
		pe.Reasons[t] = []string{"no such system/partition in the snapshot"}
	}
	return pe
}

func rationale(d *Decision, c *Candidate, nFeasible, nAll int) string {
	s := c.Sizing
	// Built with strconv appends rather than fmt (which boxes every argument and
	// parses the format at run time): "SYS/PART/ACCT: SIZE; estimated wait W (SRC),
	// N SU, score S. Best of F feasible among A candidates for OBJ by R ranking", the
	// size as model.JobSpec.AppendSize writes it everywhere.
	buf := make([]byte, 0, 256)
	buf = append(buf, c.System...)
	buf = append(buf, '/')
	buf = append(buf, c.Partition...)
	buf = append(buf, '/')
	buf = append(buf, c.Account...)
	buf = append(buf, ": "...)
	buf = s.AppendSize(buf)
	buf = append(buf, "; estimated wait "...)
	buf = append(buf, c.EstWait.String()...)
	buf = append(buf, " ("...)
	buf = append(buf, c.WaitSource...)
	if c.SiteWait != nil {
		buf = append(buf, ", learned from the site's "...)
		buf = append(buf, c.SiteWait.String()...)
	}
	buf = append(buf, "), "...)
	buf = strconv.AppendFloat(buf, c.CostSU, 'f', 1, 64)
	buf = append(buf, " SU, score "...)
	buf = strconv.AppendFloat(buf, c.Scores.Total, 'f', 3, 64)
	buf = append(buf, ". Best of "...)
	buf = strconv.AppendInt(buf, int64(nFeasible), 10)
	buf = append(buf, " feasible among "...)
	buf = strconv.AppendInt(buf, int64(nAll), 10)
	buf = append(buf, " candidates for "...)
	buf = append(buf, d.Objective...)
	buf = append(buf, " by "...)
	buf = append(buf, d.Ranker...)
	buf = append(buf, " ranking"...)
	if c.WalltimeNote != "" {
		buf = append(buf, "; "...)
		buf = append(buf, c.WalltimeNote...)
	}
	if c.AIReason != "" {
		buf = append(buf, "; AI: "...)
		buf = append(buf, c.AIReason...)
	}
	if c.OverWait {
		buf = append(buf, "; every candidate exceeds max_queue_wait "...)
		buf = append(buf, d.Envelope.MaxQueueWait.String()...)
	}
	if d.Mode == ModePinned {
		buf = append(buf, "; pinned to "...)
		buf = append(buf, d.Target.System...)
	}
	buf = append(buf, '.')
	return string(buf)
}
