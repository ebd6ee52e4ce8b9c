package scheduler

import (
	"strings"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

// Verdict is one rule's answer for one candidate.
type Verdict struct {
	Rule   string `json:"rule"`
	Pass   bool   `json:"pass"`
	Reason string `json:"reason"`
}

// Pass and Fail build verdicts from a fixed reason; the chain fills in the rule name.
func Pass(reason string) Verdict { return Verdict{Pass: true, Reason: reason} }

// Fail builds a failing verdict from a fixed reason.
func Fail(reason string) Verdict { return Verdict{Reason: reason} }

// Passf builds a passing verdict whose reason is computed by reason, which runs only
// when the trace is being explained. A rule from outside the package (whose Check the
// decision pass calls) builds every non-constant reason this way so that the pass over
// thousands of candidates does not allocate strings; the built-in rules defer their
// words by returning an outcome instead (see builtin).
func Passf(r *Request, reason func() string) Verdict {
	if !r.explain {
		return Verdict{Pass: true}
	}
	return Verdict{Pass: true, Reason: reason()}
}

// Failf is Passf for a failing verdict.
func Failf(r *Request, reason func() string) Verdict {
	if !r.explain {
		return Verdict{}
	}
	return Verdict{Reason: reason()}
}

// Scores are the heuristic ranker's components, each in [0,1] (higher is better), and
// their objective-weighted sum.
type Scores struct {
	Wait  float64 `json:"wait"`
	Size  float64 `json:"size"`
	Fit   float64 `json:"fit"`
	Cost  float64 `json:"cost"`
	Total float64 `json:"total"`
}

// Candidate is one (system, partition, account) being considered, with everything the
// scheduler learnt about it.
type Candidate struct {
	System    string                `json:"system"`
	Partition string                `json:"partition"`
	Account   string                `json:"account"`
	Record    *model.ResourceRecord `json:"-"`
	// SystemHealth is the system's probe state from the snapshot ("" if the snapshot has no entry).
	SystemHealth model.Health `json:"system_health,omitempty"`

	Verdicts []Verdict `json:"verdicts"`
	Feasible bool      `json:"feasible"`

	Sizing     *model.JobSpec `json:"sizing,omitempty"`
	SizingNote string         `json:"sizing_note,omitempty"`
	// WalltimeNote says why the walltime is what it is when the ranker compared the
	// site's estimates for walltime.min and the longer walltime sizing chose.
	WalltimeNote string `json:"walltime_note,omitempty"`

	Scores     Scores         `json:"scores"`
	EstWait    model.Duration `json:"est_wait"`
	WaitSource string         `json:"wait_source,omitempty"` // site | history | queue
	// SiteWait is the site's own estimate when EstWait is the learned correction of it
	// (Options.Waits) and differs from it; nil otherwise.
	SiteWait *model.Duration `json:"site_wait,omitempty"`
	CostSU   float64         `json:"cost_su"`
	OverWait bool            `json:"over_max_queue_wait,omitempty"`

	HeuristicRank int    `json:"heuristic_rank,omitempty"` // 1-based among feasible
	AIRank        int    `json:"ai_rank,omitempty"`        // 1-based; 0 if the LLM did not rank
	AIReason      string `json:"ai_reason,omitempty"`
	Rank          int    `json:"rank,omitempty"` // final 1-based rank among feasible

	keyOrd uint32 // position of Key in the snapshot's key order; see Request.keyOrdered
}

// Key is "system/partition/account", the candidate's identity in traces and LLM answers.
func (c *Candidate) Key() string { return c.System + "/" + c.Partition + "/" + c.Account }

// FirstFailure returns the first failing verdict, if any.
func (c *Candidate) FirstFailure() (Verdict, bool) {
	for _, v := range c.Verdicts {
		if !v.Pass {
			return v, true
		}
	}
	return Verdict{}, false
}

// Failures returns every failing verdict.
func (c *Candidate) Failures() []Verdict {
	var out []Verdict
	for _, v := range c.Verdicts {
		if !v.Pass {
			out = append(out, v)
		}
	}
	return out
}

// Request is what rules, sizing and rankers see of one placement: the task, its
// normalized envelope and the caller's restrictions.
type Request struct {
	Task     *model.Task
	Envelope model.Envelope // normalized copy of Task.Envelope
	Target   *model.Target  // pin; nil = auto
	Exclude  []string       // systems the caller excludes (migration)
	Now      time.Time

	explain bool // build verdict reasons (see Passf)
	// keyOrdered is set by Place: each candidate's keyOrd is its record's position in
	// key order (or in the snapshot, for a canonical sorted one), a hint that lets the
	// ranker break score ties without comparing strings (see sortRanked).
	keyOrdered bool
	models     modelVerdicts // AcceleratorRule's GPU model answers (see modelExcluded)
}

// Explaining reports whether rules should build their reasons (see Passf).
func (r *Request) Explaining() bool { return r.explain }

// systemMatches reports whether name (as a user writes it: "Delta@NCSA", "delta") names system.
func systemMatches(name, system string) bool {
	if strings.EqualFold(name, system) {
		return true
	}
	short, _, _ := strings.Cut(system, "@")
	return strings.EqualFold(name, short)
}

func containsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}
