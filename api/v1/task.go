package v1

import (
	"encoding/json"
	"fmt"
	"time"
)

// SubmitRequest is a task to place and run (POST /api/tasks).
type SubmitRequest struct {
	Name        string `json:"name" doc:"Short task name"`
	Command     string `json:"command,omitempty" doc:"Shell command line the job runs"`
	Script      string `json:"script,omitempty" doc:"Full batch script body (instead of command)"`
	Description string `json:"description,omitempty" doc:"What the task does; used to draft an envelope"`
	// Envelope is the resource request; omit it with AutoEnvelope to have one drafted.
	Envelope     *Envelope `json:"envelope,omitempty" doc:"Resource envelope; omit with auto_envelope to draft one"`
	AutoEnvelope bool      `json:"auto_envelope,omitempty" doc:"Draft the envelope from the description"`
	// Target pins the task: SYSTEM or SYSTEM:PARTITION; the rules still apply.
	Target    string  `json:"target,omitempty" doc:"Pin: SYSTEM or SYSTEM:PARTITION; the rules still apply"`
	Objective string  `json:"objective,omitempty" doc:"earliest_start (default), fastest_finish, max_throughput or min_cost"`
	Policy    *Policy `json:"policy,omitempty" doc:"Continuation policy; defaults are sensible"`
	// DryRun only places the task: nothing is stored or submitted.
	DryRun bool `json:"dry_run,omitempty" doc:"Place but do not store or submit; returns the decision"`
}

// SubmitResult answers a submission: the stored task (nil on a dry run) and the
// placement decision.
type SubmitResult struct {
	Task     *TaskDetail `json:"task,omitempty"`
	Decision *Decision   `json:"decision"`
	DryRun   bool        `json:"dry_run"`
}

// Target pins a task to a system and optionally a partition.
type Target struct {
	System    string `json:"system"`
	Partition string `json:"partition,omitempty"`
}

// Task is a unit of work the user gave Mosaic.
type Task struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Command     string   `json:"command,omitempty"`
	Script      string   `json:"script,omitempty"`
	Description string   `json:"description,omitempty"`
	Envelope    Envelope `json:"envelope"`
	Target      *Target  `json:"target,omitempty"`
	// State is pending, placed, submitted, queued, running, succeeded, failed or
	// cancelled (the last three are final).
	State     string    `json:"state"`
	Reason    string    `json:"reason,omitempty"`
	Owner     string    `json:"owner,omitempty"` // the user the task belongs to ("local" in laptop mode)
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Final reports whether the task is over (succeeded, failed or cancelled).
func (t *Task) Final() bool { return FinalTaskState(t.State) }

// FinalTaskState reports whether a task state is final.
func FinalTaskState(s string) bool { return s == "succeeded" || s == "failed" || s == "cancelled" }

// JobSpec is one concrete batch job: the sizing a placement chose.
type JobSpec struct {
	Tag         string            `json:"tag"`  // mosaic-<task>-<attempt>: job name, idempotency key
	Name        string            `json:"name"` // human task name
	System      string            `json:"system"`
	Partition   string            `json:"partition"`
	Account     string            `json:"account,omitempty"`
	Nodes       int               `json:"nodes"`
	NTasks      int               `json:"ntasks"`
	CPUsPerTask int               `json:"cpus_per_task"`
	GPUs        int               `json:"gpus"` // total over all nodes
	GPUsPerNode int               `json:"gpus_per_node"`
	GPUModel    string            `json:"gpu_model,omitempty"`
	MemoryGB    int               `json:"memory_gb"` // per node; 0 = site default
	Walltime    Duration          `json:"walltime"`
	Command     string            `json:"command,omitempty"`
	Script      string            `json:"script,omitempty"`
	Env         map[string]string `json:"env,omitempty"`
	WorkDir     string            `json:"workdir,omitempty"`
	Container   *Container        `json:"container,omitempty"`
	// Nice lowers the job's priority at its site by this much (Slurm's --nice; a site's
	// order_own_jobs: smallest-first sets it so a user's small jobs go before their large ones).
	Nice int `json:"nice,omitempty"`
	// NoSiteEnvScript: the command sources the site's env script itself (a campaign slice).
	NoSiteEnvScript bool `json:"no_site_env_script,omitempty"`
}

// Attempt is one submission of a task to one site.
type Attempt struct {
	TaskID    string  `json:"task_id"`
	N         int     `json:"n"` // 1-based
	Tag       string  `json:"tag"`
	System    string  `json:"system"`
	Partition string  `json:"partition"`
	Account   string  `json:"account,omitempty"`
	Spec      JobSpec `json:"spec"`
	Script    string  `json:"script,omitempty"` // as rendered for the site
	JobID     string  `json:"job_id,omitempty"`
	// State is the normalised job state (pending, running, succeeded, failed,
	// timeout, out_of_memory, ...); RawState is the site's own word.
	State     string    `json:"state"`
	RawState  string    `json:"raw_state,omitempty"`
	ExitCode  *int      `json:"exit_code,omitempty"`
	Reason    string    `json:"reason,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	// EstimatedStart is when the placement expected the job to start (nil if unknown).
	EstimatedStart *time.Time `json:"estimated_start,omitempty"`
	StartedAt      *time.Time `json:"started_at,omitempty"`
	EndedAt        *time.Time `json:"ended_at,omitempty"`
}

// TaskDetail is a task with everything known about it (GET /api/tasks/{id}).
type TaskDetail struct {
	Task
	Policy   Policy     `json:"policy"`
	Attempts []*Attempt `json:"attempts"`
	// Decision is the latest placement decision with its candidate table: a Decision
	// in JSON, as the core stored it (DecisionTrace decodes it). It is kept raw so a
	// task read costs no decoding of a trace that may list thousands of candidates.
	Decision json.RawMessage `json:"decision,omitempty"`
	// DraftFallback says why an LLM-drafted envelope was not used (heuristic instead).
	DraftFallback string `json:"draft_fallback,omitempty"`
}

// DecisionTrace decodes the task's decision; nil when it has none.
func (t *TaskDetail) DecisionTrace() (*Decision, error) {
	if len(t.Decision) == 0 || string(t.Decision) == "null" {
		return nil, nil
	}
	var d Decision
	if err := json.Unmarshal(t.Decision, &d); err != nil {
		return nil, fmt.Errorf("task %s: decoding its decision trace: %w", t.ID, err)
	}
	return &d, nil
}

// TaskSummary is one row of the task list (GET /api/tasks).
type TaskSummary struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	State     string    `json:"state"`
	System    string    `json:"system,omitempty"`
	Partition string    `json:"partition,omitempty"`
	JobID     string    `json:"job_id,omitempty"`
	JobState  string    `json:"job_state,omitempty"`
	Attempts  int       `json:"attempts"`
	Sizing    string    `json:"sizing,omitempty"`
	Pinned    bool      `json:"pinned"`
	Reason    string    `json:"reason,omitempty"`
	Owner     string    `json:"owner,omitempty"` // the user the task belongs to ("local" in laptop mode)
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Logs are the stdout/stderr tails of one attempt of a task, and where they are
// (GET /api/tasks/{id}/logs).
type Logs struct {
	JobID      string `json:"job_id"`
	StdoutPath string `json:"stdout_path,omitempty"`
	StderrPath string `json:"stderr_path,omitempty"`
	Stdout     string `json:"stdout"`
	Stderr     string `json:"stderr"`
	Truncated  bool   `json:"truncated"`
	TaskID     string `json:"task_id"`
	Attempt    int    `json:"attempt"`
	System     string `json:"system"`
	Host       string `json:"host,omitempty" doc:"Where the files are: the login host, or localhost"`
	JobState   string `json:"job_state"`
	Note       string `json:"note,omitempty" doc:"Why the logs are empty, when they are (the job has not started)"`
}

// Event is one entry in the activity log.
type Event struct {
	ID      int64     `json:"id"`
	Time    time.Time `json:"time"`
	TaskID  string    `json:"task_id,omitempty"`
	Attempt int       `json:"attempt,omitempty"`
	System  string    `json:"system,omitempty"`
	// Kind is decision, dispatch, transition, continuation, failure, finished,
	// cancelled, replan, recovery, draft, ...
	Kind      string `json:"kind"`
	Message   string `json:"message"`
	Rationale string `json:"rationale,omitempty"`
	// Actor says who caused it: rules, ai, user or system.
	Actor string `json:"actor"`
}

// EventPage is one page of the activity log with the cursors to continue
// (GET /api/events).
type EventPage struct {
	Events []Event `json:"events"`
	// NextBefore is set when older events exist: pass it as before for the next page.
	NextBefore int64 `json:"next_before,omitempty" doc:"Cursor of the next older page: pass as before"`
	// NextAfter is set when newer events exist: pass it as after_id to read on.
	NextAfter int64 `json:"next_after,omitempty" doc:"Cursor of the next newer page: pass as after_id"`
	// LastID is the newest matching event id when the page was read.
	LastID int64 `json:"last_id" doc:"The newest matching event id: pass as after_id, or to the stream, to follow from here"`
}
