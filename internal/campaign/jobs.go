package campaign

import (
	"context"
	"errors"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

// Jobs runs a submit-mode slice's batch job as a task of the core's execution
// engine: stored before the site is called, followed by the batched monitor,
// listed with the other tasks and in the events (tagged with the run id), and
// cancelled through the engine. The core implements it (core.Core); the
// launcher and `campaign stop` only ever talk to this interface.
type Jobs interface {
	// SubmitCampaignJob stores the job as a task pinned to req.Spec's system and
	// partition and submits it. req.Stored is called with the task id once the
	// task is stored, before the site is called. A job the site refused returns
	// the task id and an error saying why.
	SubmitCampaignJob(ctx context.Context, req JobRequest) (taskID string, err error)
	// CampaignJob reports the task's state and its job's.
	CampaignJob(ctx context.Context, taskID string) (JobView, error)
	// CancelCampaignJob cancels the task (and its job at the site) through the
	// engine; a task that already ended is not an error. A cancel the site has not
	// taken (or not confirmed) is an error wrapping ErrCancelPending: the job may
	// still be queued, so the caller cancels it at the site another way.
	CancelCampaignJob(ctx context.Context, taskID, why string) error
}

// ErrCancelPending: a campaign job's cancel has not reached its site (or the site
// has not confirmed it); the engine keeps asking, and the job may still be queued.
var ErrCancelPending = errors.New("cancel pending")

// JobRequest is one site's slice job.
type JobRequest struct {
	RunID, Site string
	Agents      []string
	// Spec is the exact job: system, partition, account, nodes, tasks, cores,
	// walltime, command, work directory, and Tag (the job name). Spec.Env holds
	// the forwarded values: exported in the job, never stored.
	Spec model.JobSpec
	// Stored receives the task id as soon as the task is stored (the launcher
	// records it in the run directory so that stop can find it after a crash).
	Stored func(taskID string)
}

// JobView is a campaign job's task as the launcher follows it.
type JobView struct {
	TaskID    string          `json:"task_id"`
	TaskState model.TaskState `json:"task_state"`
	// JobID, State, ExitCode and Reason are the latest attempt's ("" before any).
	JobID    string         `json:"job_id,omitempty"`
	State    model.JobState `json:"state,omitempty"`
	ExitCode *int           `json:"exit_code,omitempty"`
	Reason   string         `json:"reason,omitempty"`
}
