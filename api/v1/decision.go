package v1

import "time"

// Decision is one placement with its full trace: the rule chain, the candidates in
// final rank order (then the infeasible ones) and the chosen sizing.
type Decision struct {
	TaskID    string   `json:"task_id"`
	TaskName  string   `json:"task_name,omitempty"`
	Objective string   `json:"objective"`
	Envelope  Envelope `json:"envelope"` // normalized
	// Mode is auto or pinned.
	Mode        string    `json:"mode"`
	Target      *Target   `json:"target,omitempty"`
	Exclude     []string  `json:"exclude,omitempty"`
	SnapshotSeq uint64    `json:"snapshot_seq"`
	SnapshotAt  time.Time `json:"snapshot_at"`
	DecidedAt   time.Time `json:"decided_at"`
	// Rules is the rule chain in the order it ran.
	Rules []string `json:"rules"`
	// Ranker produced the final order; FallbackReason says why an LLM order was discarded.
	Ranker         string       `json:"ranker"`
	FallbackReason string       `json:"fallback_reason,omitempty"`
	Candidates     []*Candidate `json:"candidates"`
	// Chosen is the key (system/partition/account) of the chosen candidate.
	Chosen    string   `json:"chosen,omitempty"`
	Spec      *JobSpec `json:"spec,omitempty"`
	Rationale string   `json:"rationale"`
}

// Verdict is one rule's answer for one candidate.
type Verdict struct {
	Rule   string `json:"rule"`
	Pass   bool   `json:"pass"`
	Reason string `json:"reason"`
}

// Scores are a candidate's ranking terms.
type Scores struct {
	Wait  float64 `json:"wait"`
	Size  float64 `json:"size"`
	Fit   float64 `json:"fit"`
	Cost  float64 `json:"cost"`
	Total float64 `json:"total"`
}

// Candidate is one (system, partition, account) a placement considered.
type Candidate struct {
	System    string `json:"system"`
	Partition string `json:"partition"`
	Account   string `json:"account"`
	// SystemHealth is the system's probe state ("" if the snapshot has no entry).
	SystemHealth string    `json:"system_health,omitempty"`
	Verdicts     []Verdict `json:"verdicts"`
	Feasible     bool      `json:"feasible"`
	Sizing       *JobSpec  `json:"sizing,omitempty"`
	SizingNote   string    `json:"sizing_note,omitempty"`
	WalltimeNote string    `json:"walltime_note,omitempty"`
	Scores       Scores    `json:"scores"`
	EstWait      Duration  `json:"est_wait"`
	// WaitSource is where EstWait came from: site, history or queue.
	WaitSource string `json:"wait_source,omitempty"`
	// SiteWait is the site's own estimate when EstWait is Mosaic's learned
	// correction of it (the partition's history of its estimates).
	SiteWait      *Duration `json:"site_wait,omitempty"`
	CostSU        float64   `json:"cost_su"`
	OverWait      bool      `json:"over_max_queue_wait,omitempty"`
	HeuristicRank int       `json:"heuristic_rank,omitempty"` // 1-based among feasible
	AIRank        int       `json:"ai_rank,omitempty"`        // 1-based; 0 if the LLM did not rank
	AIReason      string    `json:"ai_reason,omitempty"`
	Rank          int       `json:"rank,omitempty"` // final 1-based rank among feasible
}

// Key is "system/partition/account", the candidate's identity in traces.
func (c *Candidate) Key() string { return c.System + "/" + c.Partition + "/" + c.Account }

// ChosenCandidate returns the chosen candidate, or nil.
func (d *Decision) ChosenCandidate() *Candidate {
	for _, c := range d.Candidates {
		if c.Key() == d.Chosen {
			return c
		}
	}
	return nil
}
