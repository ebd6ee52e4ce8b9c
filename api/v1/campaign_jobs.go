package v1

// CampaignJobRequest is one submit-mode site's slice job, handed by a campaign
// launcher to the core that owns the store (POST /api/campaign-jobs). The core
// stores it as a task pinned to Spec's system and partition with exactly this
// spec (no placement), with an event naming the run, and submits it once: it is
// never retried, resized or moved.
type CampaignJobRequest struct {
	// RunID is the campaign run the job belongs to (its events name it).
	RunID string `json:"run_id" doc:"Campaign run id"`
	// Site is the site's name in the launch (a system of the core's catalog).
	Site string `json:"site" doc:"The site's name in the launch"`
	// Agents are the slice's agents, in order.
	Agents []string `json:"agents,omitempty" doc:"The slice's agents"`
	// Spec is the exact job: system, partition, account, nodes, tasks, cores,
	// walltime, command, work directory, and Tag (the job name). Spec.Env holds
	// the forwarded values: exported in the job, never stored, logged or echoed.
	Spec JobSpec `json:"spec" doc:"The exact job; env holds forwarded values, exported in the job and never stored"`
}

// CampaignJob is a campaign job's task as the launcher follows it
// (GET /api/campaign-jobs/{task}).
type CampaignJob struct {
	TaskID string `json:"task_id"`
	// TaskState is the task's state (final: succeeded, failed, cancelled).
	TaskState string `json:"task_state"`
	// JobID, State, ExitCode and Reason are the latest attempt's ("" before any);
	// Reason is the task's when it has one.
	JobID    string `json:"job_id,omitempty"`
	State    string `json:"state,omitempty"`
	ExitCode *int   `json:"exit_code,omitempty"`
	Reason   string `json:"reason,omitempty"`
	// CancelPending (cancel answers only) says the site has not confirmed the cancel
	// yet: the core keeps asking; a launcher stopping the run also cancels at the site.
	CancelPending bool `json:"cancel_pending,omitempty"`
}

// Final reports whether the job's task is over.
func (j *CampaignJob) Final() bool { return FinalTaskState(j.TaskState) }

// CampaignJobSubmitted answers POST /api/campaign-jobs (201 Created) once the
// task is stored. Error is set when the stored task's job was not submitted
// (the site refused it: the task is failed, with the site's reason); the task
// exists either way, so the answer always names it. A request refused before
// any task was stored is an error answer (a problem) instead.
type CampaignJobSubmitted struct {
	TaskID string `json:"task_id"`
	// Job is the task as it stood after the submission.
	Job *CampaignJob `json:"job,omitempty"`
	// Error says why the stored task's job was not submitted.
	Error *Error `json:"error,omitempty"`
}

// CampaignJobCancelRequest is the body of POST /api/campaign-jobs/{task}/cancel.
type CampaignJobCancelRequest struct {
	// Reason is recorded in the task's events ("campaign run R stopped").
	Reason string `json:"reason,omitempty" maxLength:"500" doc:"Why (recorded in the task's events)"`
}
