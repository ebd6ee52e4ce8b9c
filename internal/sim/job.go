package sim

import (
	"errors"
	"fmt"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

// State is a job's state in Slurm's words.
type State string

// Job states.
const (
	Pending   State = "PENDING"
	Running   State = "RUNNING"
	Completed State = "COMPLETED"
	Failed    State = "FAILED"
	Timeout   State = "TIMEOUT"
	NodeFail  State = "NODE_FAIL"
	Cancelled State = "CANCELLED"
)

// Final reports whether the job is over.
func (s State) Final() bool {
	switch s {
	case Completed, Failed, Timeout, NodeFail, Cancelled:
		return true
	}
	return false
}

// Model maps the state to Mosaic's normalised job state.
func (s State) Model() model.JobState {
	switch s {
	case Pending:
		return model.JobPending
	case Running:
		return model.JobRunning
	case Completed:
		return model.JobSucceeded
	case Failed:
		return model.JobFailed
	case Timeout:
		return model.JobTimeout
	case NodeFail:
		return model.JobNodeFail
	case Cancelled:
		return model.JobCancelled
	}
	return model.JobUnknown
}

// Pending reasons, as squeue prints them.
const (
	ReasonNone      = "None"
	ReasonPriority  = "Priority"
	ReasonResources = "Resources"
	ReasonUserLimit = "QOSMaxJobsPerUserLimit"
	ReasonOutage    = "PartitionDown"
)

// Errors returned by the model.
var (
	// ErrUnknownJob: the id was never issued, or the job was a finished background job.
	ErrUnknownJob = errors.New("unknown job id")
	// ErrNotRunning: Finish on a job that is not running (pending or already over).
	ErrNotRunning = errors.New("job is not running")
	// ErrDown: the site is in an outage window.
	ErrDown = errors.New("site is in an outage")
	// ErrLimit is wrapped by *LimitError.
	ErrLimit = errors.New("request exceeds a partition limit")
)

// LimitError says which partition limit a request exceeds, like Slurm's
// EnforcePartLimits refusal at submit time.
type LimitError struct {
	Partition string
	Limit     string // "nodes", "walltime", "cores per node", "gpus per node", "memory per node", "jobs per user"
	Asked     string
	Allowed   string
	Slurm     string // the message sbatch would print
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("%q (partition %s allows %s %s; asked %s)", e.Slurm, e.Partition, e.Allowed, e.Limit, e.Asked)
}

// Unwrap makes errors.Is(err, ErrLimit) true.
func (e *LimitError) Unwrap() error { return ErrLimit }

// JobRequest is what a job asks for. Per-node quantities: on an exclusive partition
// the job is given whole nodes whatever it asks.
type JobRequest struct {
	Partition    string
	Nodes        int
	CoresPerNode int // at least 1
	GPUsPerNode  int
	MemGBPerNode int // 0 = a share of the node's memory proportional to cores
	Walltime     time.Duration
	// Runtime is how long the job really runs (background jobs). Ignored when External.
	Runtime time.Duration
	// External jobs end when the caller calls Finish (or by walltime, fault, cancel).
	External bool
	// User marks the Mosaic user's own jobs (counted in "my running/pending").
	User bool
	Tag  string // job name
}

// Job is a snapshot of one job.
type Job struct {
	ID int64
	JobRequest
	State    State
	Reason   string // pending reason or why it ended
	ExitCode int
	Submit   time.Time
	Start    time.Time // zero while pending
	End      time.Time // zero while active
	NodeList []int     // node indices within the partition while/after running
}

// EventKind says what happened to a job.
type EventKind string

// Event kinds.
const (
	JobStarted EventKind = "started"
	JobEnded   EventKind = "ended"
)

// Event is a job starting or ending.
type Event struct {
	Time      time.Time
	Kind      EventKind
	JobID     int64
	Partition string
	User      bool
	State     State // Running for starts, the final state for ends
	ExitCode  int
	Tag       string
}

// job is the model's mutable job.
type job struct {
	id      int64
	req     JobRequest
	part    *partition
	dc      int // per-node demand actually held (whole node on exclusive partitions)
	dg      int
	dm      int
	state   State
	reason  string
	exit    int
	submit  time.Duration
	start   time.Duration
	end     time.Duration
	alloc   []int
	started bool
	gen     uint32        // bumps when the pending end event becomes stale
	endAt   time.Duration // planned end event time while running
	endWhat State         // what happens at endAt
}

// expEnd is when the scheduler assumes the job ends: start + requested walltime.
func (j *job) expEnd() time.Duration { return j.start + j.req.Walltime }

func (c *Cluster) snapshot(j *job) Job {
	out := Job{
		ID: j.id, JobRequest: j.req, State: j.state, Reason: j.reason, ExitCode: j.exit,
		Submit: c.epoch.Add(j.submit),
	}
	if j.started {
		out.Start = c.epoch.Add(j.start)
		out.NodeList = append([]int(nil), j.alloc...)
	}
	if j.state.Final() {
		out.End = c.epoch.Add(j.end)
	}
	return out
}
