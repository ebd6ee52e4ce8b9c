package model

import "time"

// TaskState is the life of a task across all its attempts.
type TaskState string

// Task states; the last three are final.
const (
	TaskPending   TaskState = "pending"
	TaskPlaced    TaskState = "placed"
	TaskSubmitted TaskState = "submitted"
	TaskQueued    TaskState = "queued"
	TaskRunning   TaskState = "running"
	TaskSucceeded TaskState = "succeeded"
	TaskFailed    TaskState = "failed"
	TaskCancelled TaskState = "cancelled"
)

// Final reports whether the task is over.
func (s TaskState) Final() bool {
	return s == TaskSucceeded || s == TaskFailed || s == TaskCancelled
}

// Target pins a task to a system and optionally a partition.
type Target struct {
	System    string `json:"system"`
	Partition string `json:"partition,omitempty"`
}

// Task is a unit of work the user gave Mosaic.
type Task struct {
	ID          string    `json:"id"`
	Name        string    `json:"name"`
	Command     string    `json:"command,omitempty"`
	Script      string    `json:"script,omitempty"`
	Description string    `json:"description,omitempty"`
	Envelope    Envelope  `json:"envelope"`
	Target      *Target   `json:"target,omitempty"`
	State       TaskState `json:"state"`
	Reason      string    `json:"reason,omitempty"`
	Owner       string    `json:"owner,omitempty"` // the user the task belongs to (LocalUser in laptop mode)
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
}

// Attempt is one submission of a task to one site.
type Attempt struct {
	TaskID    string    `json:"task_id"`
	N         int       `json:"n"` // 1-based
	Tag       string    `json:"tag"`
	System    string    `json:"system"`
	Partition string    `json:"partition"`
	Account   string    `json:"account,omitempty"`
	Spec      JobSpec   `json:"spec"`
	Script    string    `json:"script,omitempty"` // as rendered for the site
	JobID     string    `json:"job_id,omitempty"`
	State     JobState  `json:"state"`
	RawState  string    `json:"raw_state,omitempty"`
	ExitCode  *int      `json:"exit_code,omitempty"`
	Reason    string    `json:"reason,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	// EstimatedStart is when the placement expected the job to start (nil if unknown);
	// the monitor compares real waits against it.
	EstimatedStart *time.Time `json:"estimated_start,omitempty"`
	StartedAt      *time.Time `json:"started_at,omitempty"`
	EndedAt        *time.Time `json:"ended_at,omitempty"`
}

// Actor says who caused an event.
type Actor string

// Actors.
const (
	ActorRules  Actor = "rules"
	ActorAI     Actor = "ai"
	ActorUser   Actor = "user"
	ActorSystem Actor = "system"
)

// Event is one entry in the activity log.
type Event struct {
	ID        int64     `json:"id"`
	Time      time.Time `json:"time"`
	TaskID    string    `json:"task_id,omitempty"`
	Attempt   int       `json:"attempt,omitempty"`
	System    string    `json:"system,omitempty"`
	Kind      string    `json:"kind"` // decision, dispatch, transition, continuation, failure, ...
	Message   string    `json:"message"`
	Rationale string    `json:"rationale,omitempty"`
	Actor     Actor     `json:"actor"`
}
