package mcp

import (
	"fmt"
	"time"

	v1 "github.com/mosaic-hpc/mosaic/api/v1"
	"github.com/mosaic-hpc/mosaic/internal/model"
)

// TaskView is a task as the tools return it: state, attempts, the decision trace and a
// hint for what to do next.
type TaskView struct {
	ID            string        `json:"id"`
	Name          string        `json:"name"`
	State         string        `json:"state" jsonschema:"pending, placed, submitted, queued, running (active) or succeeded, failed, cancelled (final)"`
	Final         bool          `json:"final" jsonschema:"true once the task will not change again"`
	Reason        string        `json:"reason,omitempty" jsonschema:"why the task is in this state (failures, cancellations)"`
	Command       string        `json:"command,omitempty"`
	Target        *v1.Target    `json:"target,omitempty" jsonschema:"the pin, if the task was submitted pinned"`
	Envelope      v1.Envelope   `json:"envelope"`
	Policy        v1.Policy     `json:"policy"`
	CreatedAt     time.Time     `json:"created_at"`
	UpdatedAt     time.Time     `json:"updated_at"`
	Attempts      []*v1.Attempt `json:"attempts" jsonschema:"one per submission to a site, oldest first; state is the batch job's state"`
	Trace         *Trace        `json:"trace,omitempty" jsonschema:"the placement decision of the latest plan"`
	DraftFallback string        `json:"draft_fallback,omitempty"`
	Next          string        `json:"next" jsonschema:"what an agent would usually do now"`
}

// Trace is a placement decision: every candidate with its rule verdicts, scores and rank.
type Trace struct {
	Mode           string           `json:"mode" jsonschema:"auto (Mosaic chose) or pinned (the caller chose a system)"`
	Objective      string           `json:"objective"`
	Ranker         string           `json:"ranker" jsonschema:"heuristic or llm:…; the ranker that produced the final order"`
	FallbackReason string           `json:"fallback_reason,omitempty" jsonschema:"why an LLM order was discarded"`
	Chosen         string           `json:"chosen,omitempty" jsonschema:"system/partition/account of the winner"`
	Spec           *v1.JobSpec      `json:"spec,omitempty" jsonschema:"the concrete sizing submitted"`
	Rationale      string           `json:"rationale"`
	Rules          []string         `json:"rules" jsonschema:"the rule chain, in order"`
	Feasible       int              `json:"feasible" jsonschema:"how many candidates passed every rule"`
	Candidates     []TraceCandidate `json:"candidates" jsonschema:"feasible ones in rank order, then infeasible ones"`
	Omitted        int              `json:"omitted,omitempty" jsonschema:"infeasible candidates left out (ask with full_trace)"`
	DecidedAt      time.Time        `json:"decided_at"`
	Envelope       *v1.Envelope     `json:"envelope,omitempty" jsonschema:"the normalized envelope the decision used"`
}

// TraceCandidate is one (system, partition, account) the scheduler considered.
type TraceCandidate struct {
	Key           string       `json:"key" jsonschema:"system/partition/account"`
	Feasible      bool         `json:"feasible"`
	Rank          int          `json:"rank,omitempty" jsonschema:"final 1-based rank among feasible candidates"`
	HeuristicRank int          `json:"heuristic_rank,omitempty"`
	AIRank        int          `json:"ai_rank,omitempty"`
	AIReason      string       `json:"ai_reason,omitempty"`
	Scores        *v1.Scores   `json:"scores,omitempty" jsonschema:"heuristic components in [0,1], higher is better, and their weighted total"`
	EstWait       string       `json:"est_wait,omitempty" jsonschema:"estimated queue wait"`
	WaitSource    string       `json:"wait_source,omitempty" jsonschema:"site (the batch system's own estimate), history or queue"`
	CostSU        float64      `json:"cost_su,omitempty"`
	SizingNote    string       `json:"sizing_note,omitempty"`
	Failed        []v1.Verdict `json:"failed,omitempty" jsonschema:"the rules this candidate failed, with reasons"`
	Verdicts      []v1.Verdict `json:"verdicts,omitempty" jsonschema:"every rule's verdict (full_trace only)"`
}

// maxInfeasible bounds the infeasible candidates a compact trace lists.
const maxInfeasible = 12

// traceOf builds a Trace from a decision (the explained trace: every candidate with
// every verdict). full keeps every verdict and candidate.
func traceOf(d *v1.Decision, full bool) *Trace {
	if d == nil {
		return nil
	}
	t := &Trace{Mode: d.Mode, Objective: d.Objective, Ranker: d.Ranker, FallbackReason: d.FallbackReason,
		Chosen: d.Chosen, Spec: d.Spec, Rationale: d.Rationale, Rules: d.Rules, DecidedAt: d.DecidedAt}
	env := d.Envelope
	t.Envelope = &env
	infeasible := 0
	for _, c := range d.Candidates {
		tc := TraceCandidate{Key: c.Key(), Feasible: c.Feasible, Rank: c.Rank, HeuristicRank: c.HeuristicRank,
			AIRank: c.AIRank, AIReason: c.AIReason, WaitSource: c.WaitSource, CostSU: c.CostSU, SizingNote: c.SizingNote}
		if c.Feasible {
			t.Feasible++
			sc := c.Scores
			tc.Scores = &sc
			if c.EstWait > 0 {
				tc.EstWait = c.EstWait.String()
			}
		} else {
			infeasible++
			if !full && infeasible > maxInfeasible {
				t.Omitted++
				continue
			}
		}
		for _, v := range c.Verdicts {
			if !v.Pass {
				tc.Failed = append(tc.Failed, v)
			}
		}
		if full {
			tc.Verdicts = c.Verdicts
		}
		t.Candidates = append(t.Candidates, tc)
	}
	return t
}

// viewOf converts a task detail.
func viewOf(t *v1.TaskDetail, full bool) (*TaskView, error) {
	d, err := t.DecisionTrace()
	if err != nil {
		return nil, err
	}
	tr := traceOf(d, full)
	v := &TaskView{ID: t.ID, Name: t.Name, State: t.State, Final: t.Final(), Reason: t.Reason, Command: t.Command,
		Target: t.Target, Envelope: t.Envelope, Policy: t.Policy, CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt,
		Attempts: t.Attempts, Trace: tr, DraftFallback: t.DraftFallback}
	if v.Attempts == nil {
		v.Attempts = []*v1.Attempt{}
	}
	v.Next = nextHint(v)
	return v, nil
}

// nextHint suggests the usual next step for a task in its state.
func nextHint(v *TaskView) string {
	switch model.TaskState(v.State) {
	case model.TaskPending, model.TaskPlaced, model.TaskSubmitted:
		return fmt.Sprintf("being submitted; call wait_task {\"id\":%q} to follow it", v.ID)
	case model.TaskQueued:
		return fmt.Sprintf("waiting in a site queue; wait_task {\"id\":%q} follows it, replan_task moves it if the wait is too long, cancel_task stops it", v.ID)
	case model.TaskRunning:
		return fmt.Sprintf("running; wait_task {\"id\":%q} until it ends, task_logs shows its output so far", v.ID)
	case model.TaskSucceeded:
		return fmt.Sprintf("finished successfully; task_logs {\"id\":%q} shows its output", v.ID)
	case model.TaskFailed:
		return fmt.Sprintf("failed (see reason and the last attempt); task_logs {\"id\":%q} shows stderr, recent_events {\"task\":%q} the continuation decisions; submit again with a changed envelope if needed", v.ID, v.ID)
	case model.TaskCancelled:
		return "cancelled; nothing more will happen"
	}
	return ""
}
