package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
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
	Rules        []Rule        // nil = DefaultRules()
	Estimator    Estimator     // site start estimates for the heuristic ranker
	MaxEstimates int           // Estimator calls per placement (default 8)
	History      History       // queue-wait history for the heuristic ranker
	LLM          Ranker        // optional second ranker (see NewLLMRanker); nil = heuristics only
	LLMTimeout   time.Duration // per placement; default 20s
	Now          func() time.Time
	Logger       *slog.Logger
}

// Scheduler places tasks. It is safe for concurrent use.
type Scheduler struct {
	rules     []Rule
	ruleNames []string
	heur      *HeuristicRanker
	llm       Ranker
	llmTO     time.Duration
	now       func() time.Time
	log       *slog.Logger
}

// New builds a Scheduler.
func New(opts Options) *Scheduler {
	s := &Scheduler{
		rules: opts.Rules,
		heur:  &HeuristicRanker{Estimator: opts.Estimator, History: opts.History, MaxEstimates: opts.MaxEstimates},
		llm:   opts.LLM,
		llmTO: opts.LLMTimeout,
		now:   opts.Now,
		log:   opts.Logger,
	}
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

	if len(s.rules) > MaxRules {
		return nil, fmt.Errorf("place: the rule chain has %d rules; at most %d are supported", len(s.rules), MaxRules)
	}
	health := make(map[string]model.Health, len(snap.Systems))
	for _, h := range snap.Systems {
		health[h.System] = h.Health
	}
	lz := &lazyTrace{rules: s.rules, snap: snap, health: health, req: *req}
	lz.req.explain = true
	d.lazy = lz

	// Pass 1: every rule on every candidate, pass/fail only (no reason strings).
	n := len(snap.Records)
	masks := make([]uint64, n)
	var scratch Candidate
	active, constMask := splitRules(s.rules, req)
	nf := 0
	lastSys, lastHealth := "", model.Health("")
	for i := range snap.Records {
		rec := &snap.Records[i]
		if rec.System != lastSys || i == 0 {
			lastSys, lastHealth = rec.System, health[rec.System]
		}
		// Rules read only these fields; setting them one by one avoids zeroing the rest.
		scratch.System, scratch.Partition, scratch.Account = rec.System, rec.Partition, rec.Account
		scratch.Record, scratch.SystemHealth = rec, lastHealth
		masks[i] = constMask
		if constMask == 0 {
			masks[i] = failMask(active, req, &scratch)
		}
		if masks[i] == 0 {
			nf++
		}
	}

	// Pass 2: size the feasible candidates.
	slab := make([]Candidate, nf)
	specs := make([]model.JobSpec, nf)
	feasible := make([]*Candidate, 0, nf)
	k := 0
	for i := range snap.Records {
		if masks[i] != 0 {
			continue
		}
		rec := &snap.Records[i]
		c := &slab[k]
		*c = Candidate{System: rec.System, Partition: rec.Partition, Account: rec.Account, Record: rec,
			SystemHealth: health[rec.System], Feasible: true}
		if !sizeInto(req, rec, &specs[k], &c.SizingNote) {
			masks[i] = sizingFailed
			if lz.sizing == nil {
				lz.sizing = map[int]string{}
			}
			lz.sizing[i] = c.SizingNote
			continue
		}
		c.Sizing = &specs[k]
		feasible = append(feasible, c)
		k++
	}
	lz.masks = masks

	if len(feasible) == 0 {
		d.Rationale = "no candidate passed every rule"
		d.Explain()
		return d, s.noFeasible(task.ID, d, req)
	}

	ranked, _ := s.heur.Rank(ctx, req, feasible) // the heuristic ranker never fails
	if s.llm != nil && !opts.NoLLM && len(ranked) > 1 {
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
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d node(s)", c.Key(), s.Nodes)
	if s.GPUs > 0 {
		fmt.Fprintf(&b, ", %dx%s", s.GPUs, s.GPUModel)
	}
	fmt.Fprintf(&b, ", %d cpus/node, %s; estimated wait %s (%s), %.1f SU, score %.3f. ",
		s.CPUsPerTask, s.Walltime, c.EstWait, c.WaitSource, c.CostSU, c.Scores.Total)
	fmt.Fprintf(&b, "Best of %d feasible among %d candidates for %s by %s ranking", nFeasible, nAll, d.Objective, d.Ranker)
	if c.AIReason != "" {
		b.WriteString("; AI: " + c.AIReason)
	}
	if c.OverWait {
		b.WriteString("; every candidate exceeds max_queue_wait " + d.Envelope.MaxQueueWait.String())
	}
	if d.Mode == ModePinned {
		b.WriteString("; pinned to " + d.Target.System)
	}
	b.WriteString(".")
	return b.String()
}
