package scheduler

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

// Placement modes.
const (
	ModeAuto   = "auto"
	ModePinned = "pinned"
)

// Decision is the full trace of one placement: every candidate with every rule verdict,
// sizing, scores and ranks, which ranker decided, and what was chosen and why.
// Encode a *Decision (MarshalJSON has a pointer receiver and explains first), or call
// Explain before encoding a copy.
type Decision struct {
	TaskID         string          `json:"task_id"`
	TaskName       string          `json:"task_name,omitempty"`
	Objective      model.Objective `json:"objective"`
	Envelope       model.Envelope  `json:"envelope"` // normalized
	Mode           string          `json:"mode"`     // auto | pinned
	Target         *model.Target   `json:"target,omitempty"`
	Exclude        []string        `json:"exclude,omitempty"`
	SnapshotSeq    uint64          `json:"snapshot_seq"`
	SnapshotAt     time.Time       `json:"snapshot_at"`
	DecidedAt      time.Time       `json:"decided_at"`
	Rules          []string        `json:"rules"`
	Ranker         string          `json:"ranker"`                    // ranker that produced the final order
	FallbackReason string          `json:"fallback_reason,omitempty"` // why the LLM order was discarded
	// Candidates holds the feasible candidates in final rank order, then (after
	// Explain) the infeasible ones in snapshot order. Place leaves it empty when the
	// heuristic order stands: Feasible and ChosenCandidate build the feasible
	// candidates from the placement's compact rows; Explain (which MarshalJSON, Table
	// and every Place error call) also fills in each rule's verdict and reason and
	// appends the infeasible candidates. A decoded Decision has them all.
	Candidates []*Candidate   `json:"candidates"`
	Chosen     string         `json:"chosen,omitempty"` // candidate key
	Spec       *model.JobSpec `json:"spec,omitempty"`   // the chosen sizing
	Rationale  string         `json:"rationale"`

	lazy *lazyTrace // until Explain
}

// failCode is what the decision pass keeps per record for Explain: 0 when the record
// is feasible, i+1 when rule i fails (the first failing one runChain tried), or
// sizingFailed. One byte per record rather than a 64-bit mask keeps the
// per-placement allocation small.
type failCode uint8

// sizingFailed marks a candidate that passed every rule but could not be sized.
const sizingFailed failCode = 255

// lazyTrace keeps what Explain needs to rebuild every verdict with its reason. Rules are
// pure functions of (request, record, system health), so re-running them in explain
// mode gives the verdicts the placement saw, provided the snapshot is not modified
// (snapshots are immutable once published).
type lazyTrace struct {
	req    Request // explaining copy
	rules  []Rule
	snap   *model.ResourceSnapshot
	health healthIndex
	codes  []failCode     // per record: first failing rule, or sizingFailed
	sizing map[int]string // record index → why sizing failed
	rows   []row          // feasible candidates, until built (nil after)
	order  []uint32       // rows' indices in rank order
	least  leastOf        // the least cost and wait among the rows (for their scores)
	probes []wallProbe    // walltime comparisons the ranker made (usually none)
	chosen *Candidate     // the first in rank order, built by Place; build reuses it
}

// sizedCandidate is a feasible candidate with its sizing, allocated together.
type sizedCandidate struct {
	c    Candidate
	spec model.JobSpec
}

// fill writes the feasible candidate of row w, whose job spec is spec and heuristic
// rank hrank, into c.
func (lz *lazyTrace) fill(c *Candidate, w *row, spec *model.JobSpec, hrank int) {
	rec := &lz.snap.Records[w.rec]
	c.System, c.Partition, c.Account, c.Record = rec.System, rec.Partition, rec.Account, rec
	c.SystemHealth, c.Feasible = lz.health.of(rec.System), true
	c.Sizing, c.SizingNote = spec, sizingNotes[w.note]
	c.Scores = roundedScores(&lz.req.Envelope, rec, w, lz.least)
	c.EstWait, c.WaitSource, c.CostSU, c.OverWait = w.wait, waitSources[w.src], w.cost, w.over
	c.SiteWait = w.siteWait()
	c.HeuristicRank, c.Rank = hrank, hrank
	c.keyOrd = w.keyOrd
	if lz.probes != nil {
		c.WalltimeNote = probeNote(lz.probes, w.rec)
	}
}

// build turns the placement's rows into the feasible Candidates, in rank order, once.
// The first is the chosen candidate Place built (whose job spec is Decision.Spec).
func (d *Decision) build() {
	lz := d.lazy
	if lz == nil || lz.rows == nil {
		return
	}
	rows, order := lz.rows, lz.order
	lz.rows, lz.order = nil, nil
	slab := make([]sizedCandidate, len(order))
	cands := make([]*Candidate, len(order))
	for pos, k := range order {
		if pos == 0 && lz.chosen != nil {
			cands[pos] = lz.chosen
			continue
		}
		e := &slab[pos]
		w := &rows[k]
		w.size.specInto(&lz.req, &lz.snap.Records[w.rec], &e.spec)
		lz.fill(&e.c, w, &e.spec, pos+1)
		cands[pos] = &e.c
	}
	d.Candidates = cands
}

// Explain completes the trace: every candidate gets every rule's verdict with its
// reason, and infeasible candidates are appended after the feasible ones. It is
// idempotent; call it before sharing the decision between goroutines.
func (d *Decision) Explain() {
	d.build()
	lz := d.lazy
	if lz == nil {
		return
	}
	d.lazy = nil
	// One block for every verdict (and one for the infeasible candidates) rather than
	// one allocation per candidate: an explained trace of 1,000 partitions holds 12,000
	// verdicts. A sizing failure's extra verdict gets its own slice (rare).
	ex := newExplainer(lz.rules, &lz.req)
	nr := len(lz.rules)
	ninf := 0
	for _, m := range lz.codes {
		if m != 0 {
			ninf++
		}
	}
	verdicts := make([]Verdict, (len(d.Candidates)+ninf)*nr)
	next := func() []Verdict {
		v := verdicts[:nr:nr]
		verdicts = verdicts[nr:]
		return v
	}
	for _, c := range d.Candidates {
		if c.Verdicts == nil {
			c.Verdicts = next()
			ex.verdicts(c, c.Verdicts)
		}
	}
	infeasible := make([]Candidate, ninf)
	d.Candidates = slices.Grow(d.Candidates, ninf)
	k := 0
	for i, m := range lz.codes {
		if m == 0 {
			continue
		}
		rec := &lz.snap.Records[i]
		c := &infeasible[k]
		k++
		c.System, c.Partition, c.Account, c.Record, c.SystemHealth = rec.System, rec.Partition, rec.Account, rec, lz.health.of(rec.System)
		c.Verdicts = next()
		ex.verdicts(c, c.Verdicts)
		if m == sizingFailed {
			c.Verdicts = append(c.Verdicts, Verdict{Rule: "sizing", Reason: lz.sizing[i]})
		}
		d.Candidates = append(d.Candidates, c)
	}
}

// MarshalJSON explains the decision and encodes it.
func (d *Decision) MarshalJSON() ([]byte, error) {
	d.Explain()
	return marshalDecision(d)
}

// ChosenCandidate returns the chosen candidate, or nil.
func (d *Decision) ChosenCandidate() *Candidate {
	if lz := d.lazy; lz != nil && lz.chosen != nil {
		return lz.chosen // without building the others
	}
	for _, c := range d.Candidates {
		if c.Key() == d.Chosen {
			return c
		}
	}
	return nil
}

// Feasible returns the feasible candidates in rank order (building them on first use;
// like Explain, call it before sharing the decision between goroutines).
func (d *Decision) Feasible() []*Candidate {
	d.build()
	var out []*Candidate
	for _, c := range d.Candidates {
		if c.Feasible {
			out = append(out, c)
		}
	}
	return out
}

// Table writes the candidate table with aligned columns, squeue-style, followed by the
// decision summary. It is what `mosaic submit --dry-run` prints.
func (d *Decision) Table(w io.Writer) error {
	d.Explain()
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RANK\tSYSTEM\tPARTITION\tACCOUNT\tOK\tNODES\tGPUS\tCPUS/N\tMEM/N\tTIME\tEST_WAIT\tSCORE\tAI\tREASON")
	for _, c := range d.Candidates {
		rank, ok, nodes, gpus, cpus, mem, tl, wait, score, ai := "-", "no", "-", "-", "-", "-", "-", "-", "-", "-"
		reason := ""
		if c.Feasible {
			ok = "yes"
			if c.Rank > 0 {
				rank = strconv.Itoa(c.Rank)
			}
			if s := c.Sizing; s != nil {
				nodes, cpus, tl = strconv.Itoa(s.Nodes), strconv.Itoa(s.CPUsPerTask), s.Walltime.Slurm()
				gpus = strconv.Itoa(s.GPUs)
				if s.GPUs > 0 && s.GPUModel != "" {
					gpus += "x" + s.GPUModel
				}
				mem = "default"
				if s.MemoryGB > 0 {
					mem = strconv.Itoa(s.MemoryGB) + "G"
				}
			}
			wait = c.EstWait.String()
			if c.WaitSource != "" {
				wait += "(" + c.WaitSource + ")"
			}
			score = strconv.FormatFloat(c.Scores.Total, 'f', 3, 64)
			if c.AIRank > 0 {
				ai = strconv.Itoa(c.AIRank)
			}
			reason = c.SizingNote
			if c.WalltimeNote != "" { // first: the table cuts long reasons
				reason = c.WalltimeNote + "; " + reason
			}
			if c.AIReason != "" {
				reason = c.AIReason
			}
			if c.OverWait {
				reason = "over max_queue_wait; " + reason
			}
		} else if v, bad := c.FirstFailure(); bad {
			reason = v.Rule + ": " + v.Reason
			if n := len(c.Failures()); n > 1 {
				reason += " (+" + strconv.Itoa(n-1) + " more)"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
			rank, c.System, c.Partition, orDash(c.Account), ok, nodes, gpus, cpus, mem, tl, wait, score, ai, oneLine(reason))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write decision table: %w", err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\nmode: %s   objective: %s   ranker: %s\n", d.Mode, d.Objective, d.Ranker)
	if d.FallbackReason != "" {
		fmt.Fprintf(&b, "llm fallback: %s\n", d.FallbackReason)
	}
	if d.Chosen != "" {
		fmt.Fprintf(&b, "chosen: %s\n", d.Chosen)
	}
	fmt.Fprintf(&b, "rationale: %s\n", d.Rationale)
	_, err := io.WriteString(w, b.String())
	if err != nil {
		return fmt.Errorf("write decision table: %w", err)
	}
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 110 {
		s = s[:107] + "..."
	}
	return s
}
