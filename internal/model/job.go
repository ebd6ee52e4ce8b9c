package model

import (
	"fmt"
	"time"
)

// JobState is Mosaic's normalised batch-job state. Dialects map every scheduler state
// to one of these explicitly; anything unmapped becomes JobUnknown with the raw value kept.
type JobState string

// Job states.
const (
	JobPending     JobState = "pending"
	JobRunning     JobState = "running"
	JobCompleting  JobState = "completing"
	JobSuspended   JobState = "suspended"
	JobRequeued    JobState = "requeued"
	JobSucceeded   JobState = "succeeded"
	JobFailed      JobState = "failed"
	JobTimeout     JobState = "timeout"
	JobOOM         JobState = "out_of_memory"
	JobNodeFail    JobState = "node_fail"
	JobBootFail    JobState = "boot_fail"
	JobCancelled   JobState = "cancelled"
	JobPreempted   JobState = "preempted"
	JobDeadline    JobState = "deadline"
	JobLost        JobState = "lost" // vanished from the site without a final state
	JobUnknown     JobState = "unknown"
	JobSubmitting  JobState = "submitting" // Mosaic-side: written before the submit call
	JobCancelling  JobState = "cancelling" // Mosaic-side: cancel requested, site not yet confirmed
	JobSubmitError JobState = "submit_error"
)

// Final reports whether a job in this state will not change again.
func (s JobState) Final() bool {
	switch s {
	case JobSucceeded, JobFailed, JobTimeout, JobOOM, JobNodeFail, JobBootFail,
		JobCancelled, JobPreempted, JobDeadline, JobLost, JobSubmitError:
		return true
	}
	return false
}

// Active reports whether the job is known to the site and not final.
func (s JobState) Active() bool {
	switch s {
	case JobPending, JobRunning, JobCompleting, JobSuspended, JobRequeued, JobCancelling:
		return true
	}
	return false
}

// Container asks for the job to run inside an image.
type Container struct {
	Image   string `json:"image" yaml:"image"`
	Runtime string `json:"runtime,omitempty" yaml:"runtime,omitempty"` // apptainer | singularity
}

// JobSpec is one concrete batch job: what a provider renders and submits.
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
	Command     string            `json:"command,omitempty"` // shell command line
	Script      string            `json:"script,omitempty"`  // full script body (overrides Command)
	Env         map[string]string `json:"env,omitempty"`
	WorkDir     string            `json:"workdir,omitempty"`
	Container   *Container        `json:"container,omitempty"`
	// Nice lowers the job's priority at its site by this much (Slurm's --nice; 0: as
	// submitted). The site's provider sets it from the site's order_own_jobs, never
	// the user: it only ever lowers a job, so it reorders the user's own work and
	// cannot take a place from anyone else. Dialects without it ignore it.
	Nice int `json:"nice,omitempty"`
	// NoSiteEnvScript: the command sources the site's env script itself (a campaign
	// slice does, after redirecting into its log), so the dialect must not.
	NoSiteEnvScript bool `json:"no_site_env_script,omitempty"`
	// Owner is the Mosaic user whose task this is (placement sets it): a start estimate
	// runs under their site identity and account, as their job would. In memory only:
	// not part of the spec's wire form (the task carries its owner).
	Owner string `json:"-"`
}

// MaxNice bounds JobSpec.Nice (Slurm takes up to 2147483645; more than this is a bug).
const MaxNice = 10000

// Validate checks the fields every provider needs.
func (j *JobSpec) Validate() error {
	switch {
	case j.Tag == "":
		return fmt.Errorf("job spec: tag is empty")
	case j.Partition == "":
		return fmt.Errorf("job spec %s: partition is empty", j.Tag)
	case j.Nodes < 1:
		return fmt.Errorf("job spec %s: nodes must be at least 1, got %d", j.Tag, j.Nodes)
	case j.GPUs < 0 || j.CPUsPerTask < 0 || j.MemoryGB < 0:
		return fmt.Errorf("job spec %s: negative resource request", j.Tag)
	case j.Walltime <= 0:
		return fmt.Errorf("job spec %s: walltime must be positive", j.Tag)
	case j.Nice < 0 || j.Nice > MaxNice:
		return fmt.Errorf("job spec %s: nice %d: want 0 to %d (a job's priority is only ever lowered)", j.Tag, j.Nice, MaxNice)
	case j.Command == "" && j.Script == "":
		return fmt.Errorf("job spec %s: neither command nor script given", j.Tag)
	}
	return j.checkText()
}

// checkText refuses control characters in every field a dialect writes into a batch
// script. The API refuses them first; this is the second line, so a value that
// bypassed it cannot add a directive or a shell line (a newline in Name would end the
// comment it is written in).
func (j *JobSpec) checkText() error {
	lines := []struct{ field, v string }{{"tag", j.Tag}, {"name", j.Name}, {"system", j.System},
		{"partition", j.Partition}, {"account", j.Account}, {"gpu_model", j.GPUModel}, {"workdir", j.WorkDir}}
	if c := j.Container; c != nil {
		lines = append(lines, struct{ field, v string }{"container.image", c.Image}, struct{ field, v string }{"container.runtime", c.Runtime})
	}
	for _, l := range lines {
		if err := CheckLine(l.field, l.v, MaxLineChars); err != nil {
			return fmt.Errorf("job spec %q: %w", j.Tag, err)
		}
	}
	if err := CheckText("command", j.Command, MaxScriptChars); err != nil {
		return fmt.Errorf("job spec %q: %w", j.Tag, err)
	}
	if err := CheckText("script", j.Script, MaxScriptChars); err != nil {
		return fmt.Errorf("job spec %q: %w", j.Tag, err)
	}
	for k, v := range j.Env {
		if err := CheckLine("environment variable name", k, MaxLineChars); err != nil {
			return fmt.Errorf("job spec %q: %w", j.Tag, err)
		}
		if err := CheckText("environment variable "+k, v, MaxEnvValueChars); err != nil {
			return fmt.Errorf("job spec %q: %w", j.Tag, err)
		}
	}
	return nil
}

// TotalCores is the number of cores the job occupies.
func (j *JobSpec) TotalCores() int {
	nt := j.NTasks
	if nt < 1 {
		nt = 1
	}
	c := j.CPUsPerTask
	if c < 1 {
		c = 1
	}
	return nt * c
}

// JobStatus is what a site says about one job.
type JobStatus struct {
	JobID    string    `json:"job_id"`
	Name     string    `json:"name,omitempty"`
	State    JobState  `json:"state"`
	RawState string    `json:"raw_state,omitempty"` // the scheduler's own word
	ExitCode int       `json:"exit_code"`
	Signal   int       `json:"signal,omitempty"`
	Reason   string    `json:"reason,omitempty"`
	Submit   time.Time `json:"submit,omitzero"`
	Start    time.Time `json:"start,omitzero"`
	End      time.Time `json:"end,omitzero"`
	Elapsed  Duration  `json:"elapsed"`
	NodeList string    `json:"node_list,omitempty"`
}

// Logs are tails of a job's output files.
type Logs struct {
	JobID      string `json:"job_id"`
	StdoutPath string `json:"stdout_path,omitempty"`
	StderrPath string `json:"stderr_path,omitempty"`
	Stdout     string `json:"stdout"`
	Stderr     string `json:"stderr"`
	Truncated  bool   `json:"truncated"`
}

// JobTag builds the idempotency tag that goes into the job name.
func JobTag(taskID string, attempt int) string { return fmt.Sprintf("mosaic-%s-%d", taskID, attempt) }
