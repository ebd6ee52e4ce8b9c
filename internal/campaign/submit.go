package campaign

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/errs"
	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/site"
	"github.com/mosaic-hpc/mosaic/internal/term"
)

// SubmitBackend runs the slice as a batch job (the site's dialect: Slurm or
// PBS) that is a task of the core's execution engine (Jobs): stored before the
// site is called, followed by the engine's monitor, cancelled through it.
type SubmitBackend struct {
	l    SiteLaunch
	sys  site.System
	conn *siteConn
	jobs Jobs

	mu    sync.Mutex
	task  string
	job   string
	dir   string
	state model.JobState
	final bool
	color bool
}

// NewSubmitBackend prepares a submit-mode site whose job jobs runs.
func NewSubmitBackend(sys site.System, l SiteLaunch, localEnv []string, jobs Jobs) (*SubmitBackend, error) {
	if l.Spec.Mode != ModeSubmit {
		return nil, fmt.Errorf("site %s: not a submit spec", l.Spec.Name)
	}
	conn, err := newSiteConn(sys, localEnv)
	if err != nil {
		return nil, err
	}
	if l.EnvScript == "" {
		l.EnvScript = sys.EnvScript
	}
	return &SubmitBackend{l: l, sys: sys, conn: conn, jobs: jobs, color: l.Color}, nil
}

// Site implements Backend.
func (b *SubmitBackend) Site() string { return b.l.Spec.Name }

// JobSpec is the batch job that runs the slice in dir.
func (b *SubmitBackend) JobSpec(dir string) model.JobSpec {
	sp := b.l.Spec
	nodes := max(sp.Nodes, 1)
	acct := sp.Account
	if acct == "" && len(b.sys.Accounts) == 1 {
		acct = b.sys.Accounts[0]
	}
	// The dialect exports Env (the forwarded values: never stored, written only
	// into the 0600 batch script) and runs the inner script, which redirects into
	// site.log and only then sources the site's env script, checked: its failure
	// is in the log tail the launcher shows, and the job ends at once. So the
	// dialect must not source it too (NoSiteEnvScript).
	return model.JobSpec{
		Tag: b.l.jobName(), Name: "campaign " + b.l.RunID + " on " + sp.Name, System: b.sys.Name,
		Partition: sp.Queue, Account: acct, Nodes: nodes, NTasks: 1, CPUsPerTask: max(len(sp.Agents), 1),
		Walltime: sp.Walltime, Command: b.l.innerScript(dir, true, false, nil), Env: b.l.Forward, WorkDir: dir,
		NoSiteEnvScript: true,
	}
}

// Start implements Backend: prepare the site directory, then hand the job to
// the engine, which stores the task (its id is in the run directory before the
// site is called) and submits it. The submission itself is not cancellable by
// ctx (an interrupted sbatch may still have queued the job); the engine records
// the job id the moment it is known so that stop can cancel it.
func (b *SubmitBackend) Start(ctx context.Context) error {
	if b.jobs == nil {
		return fmt.Errorf("site %s: submit mode runs the job as a task of Mosaic's core, and this launcher has none (campaign.LaunchOptions.Jobs); `mosaic campaign launch` opens one on the store", b.l.Spec.Name)
	}
	rd := b.l.remoteDir(b.sys.WorkDir)
	res, err := b.conn.sh(ctx, prepareScript, strings.NewReader(b.l.tokensFile()), rd)
	if err != nil {
		return err
	}
	if !res.OK() {
		return fmt.Errorf("site %s: cannot create %s on %s: %s", b.l.Spec.Name, rd, b.conn.login(), res.Message())
	}
	dir := strings.TrimSpace(string(res.Stdout))
	b.mu.Lock()
	b.dir = dir
	b.mu.Unlock()
	if err := b.l.Dir.UpdateSite(b.l.Spec.Name, func(s *SiteState) {
		s.Login, s.RemoteDir, s.Log, s.State, s.JobTag = b.conn.login(), dir, dir+"/site.log", string(model.JobSubmitting), b.l.jobName()
	}); err != nil {
		return fmt.Errorf("site %s: record state before submitting: %w", b.l.Spec.Name, err)
	}
	wait := b.l.SubmitTimeout
	if wait <= 0 {
		wait = 2 * time.Minute
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), wait)
	defer cancel()
	var recErr error
	req := JobRequest{RunID: b.l.RunID, Site: b.l.Spec.Name, Agents: b.l.Spec.Agents, Spec: b.JobSpec(dir),
		Stored: func(id string) {
			b.mu.Lock()
			b.task = id
			b.mu.Unlock()
			recErr = b.l.Dir.UpdateSite(b.l.Spec.Name, func(s *SiteState) { s.TaskID = id })
		}}
	task, err := b.jobs.SubmitCampaignJob(sctx, req)
	// A slow submit may have used up sctx: the reads below get a deadline of their own
	// (the job may be queued; a failed read must not fail the launch and cancel it).
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer rcancel()
	if recErr != nil {
		b.l.printf("WARNING: task %s could not be recorded in the run directory (%v); cancel it with `mosaic cancel %s` if the launch fails", task, recErr, task)
	}
	if err != nil {
		if v, verr := b.jobs.CampaignJob(rctx, task); task != "" && verr == nil && v.TaskState.Final() {
			b.mu.Lock()
			b.final = true // the engine recorded the refusal: nothing to cancel
			b.mu.Unlock()
		}
		if task == "" && errors.Is(err, errs.ErrOutcomeUnknown) {
			// The job may be queued under its name: the site stays "submitting", so
			// `campaign stop` looks it up by tag and cancels it.
			_ = b.l.Dir.UpdateSite(b.l.Spec.Name, func(s *SiteState) { s.Error = err.Error() })
			return fmt.Errorf("site %s: submit: %w (run `mosaic campaign stop %s` to cancel it if it was queued)", b.l.Spec.Name, err, b.l.RunID)
		}
		_ = b.l.Dir.UpdateSite(b.l.Spec.Name, func(s *SiteState) { s.State, s.Error = string(model.JobSubmitError), err.Error() })
		return fmt.Errorf("site %s: submit: %w", b.l.Spec.Name, err)
	}
	v, err := b.jobs.CampaignJob(rctx, task)
	if err != nil {
		return fmt.Errorf("site %s: task %s: %w", b.l.Spec.Name, task, err)
	}
	b.mu.Lock()
	b.task, b.job = task, v.JobID
	b.mu.Unlock()
	if err := b.l.Dir.UpdateSite(b.l.Spec.Name, func(s *SiteState) { s.TaskID, s.SubmittedJob, s.State = task, v.JobID, string(model.JobPending) }); err != nil {
		b.l.printf("WARNING: job %s (task %s) was submitted but could not be recorded (%v); cancel it with `mosaic cancel %s` if the launch fails", v.JobID, task, err, task)
	}
	b.l.printf("submitted job %s to %s (queue %s, walltime %s, task %s); log %s/site.log", paint(b.color, "1;36", orDash(v.JobID)), b.conn.login(), b.l.Spec.Queue, b.l.Spec.Walltime.Slurm(), task, dir)
	return nil
}

// Poll implements Backend: the task's state as the engine's monitor last saw
// it, printing each job state transition.
func (b *SubmitBackend) Poll(ctx context.Context) (string, bool, error) {
	b.mu.Lock()
	task, job, dir, prev := b.task, b.job, b.dir, b.state
	b.mu.Unlock()
	if task == "" {
		return "not submitted", false, nil
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	v, err := b.jobs.CampaignJob(ctx, task)
	if err != nil {
		return string(prev), false, fmt.Errorf("site %s: task %s: %w", b.l.Spec.Name, task, err)
	}
	if v.JobID != "" && v.JobID != job {
		b.mu.Lock()
		b.job = v.JobID
		b.mu.Unlock()
		job = v.JobID
		_ = b.l.Dir.UpdateSite(b.l.Spec.Name, func(s *SiteState) { s.SubmittedJob = v.JobID })
	}
	state := v.State
	if (state == "" || state == model.JobSubmitting) && v.TaskState.Final() {
		// The task ended before its job reached the site (refused, lost, or failed by a
		// restart): nothing will ever come from the site, so say why now.
		b.mu.Lock()
		b.final = true
		b.mu.Unlock()
		_ = b.l.Dir.UpdateSite(b.l.Spec.Name, func(s *SiteState) { s.State, s.Error = string(v.TaskState), v.Reason })
		if v.TaskState == model.TaskSucceeded {
			return string(v.TaskState), true, nil
		}
		return string(v.TaskState), true, fmt.Errorf("site %s: task %s %s before its job reached the site: %s", b.l.Spec.Name, task, v.TaskState, orDash(v.Reason))
	}
	if state == "" || state == model.JobSubmitting {
		return string(prev), false, nil // not at the site yet
	}
	if state != prev {
		b.mu.Lock()
		b.state = state
		b.mu.Unlock()
		b.l.printf("job %s: %s -> %s", job, orDash(string(prev)), paint(b.color, stateColor(state), string(state)))
		_ = b.l.Dir.UpdateSite(b.l.Spec.Name, func(s *SiteState) { s.State = string(state) })
	}
	if !v.TaskState.Final() {
		return string(state), false, nil
	}
	b.mu.Lock()
	b.final = true
	b.mu.Unlock()
	if v.TaskState == model.TaskSucceeded {
		return string(state), true, nil
	}
	code := "-"
	if v.ExitCode != nil {
		code = fmt.Sprint(*v.ExitCode)
	}
	return string(state), true, fmt.Errorf("site %s: job %s (task %s) ended %s (exit %s)\n--- tail of %s/site.log on %s ---\n%s",
		b.l.Spec.Name, job, task, state, code, dir, b.conn.login(), b.conn.tail(ctx, dir+"/site.log", 30))
}

// Stop implements Backend: cancel the task through the engine unless it
// already ended.
func (b *SubmitBackend) Stop(ctx context.Context) error {
	b.mu.Lock()
	task, job, final := b.task, b.job, b.final
	b.mu.Unlock()
	if task == "" || final {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := b.jobs.CancelCampaignJob(ctx, task, "campaign run "+b.l.RunID+" stopped"); err != nil {
		if errors.Is(err, ErrCancelPending) {
			b.l.printf("cancel of job %s (task %s) pending: %v", orDash(job), task, err)
			_ = b.l.Dir.UpdateSite(b.l.Spec.Name, func(s *SiteState) { s.State = "cancel pending" })
			return fmt.Errorf("site %s: %w; `mosaic campaign stop %s` cancels the job at the site, or cancel job %s by hand (scancel/qdel)",
				b.l.Spec.Name, err, b.l.RunID, b.l.jobName())
		}
		return fmt.Errorf("site %s: cancel task %s (job %s): %w (cancel it with `mosaic cancel %s`, or by hand with scancel/qdel)", b.l.Spec.Name, task, orDash(job), err, task)
	}
	b.mu.Lock()
	b.final = true
	b.mu.Unlock()
	b.l.printf("cancelled job %s (task %s)", orDash(job), task)
	_ = b.l.Dir.UpdateSite(b.l.Spec.Name, func(s *SiteState) { s.State = string(model.JobCancelled) })
	return nil
}

// Close implements Backend.
func (b *SubmitBackend) Close() error { return b.conn.Close() }

// stateColor picks a colour for a job state: green running, yellow waiting,
// red failed.
func stateColor(s model.JobState) string {
	switch {
	case s == model.JobRunning || s == model.JobSucceeded:
		return "1;32"
	case s.Final():
		return "1;31"
	default:
		return "33"
	}
}

func paint(on bool, code, s string) string { return term.Paint(on, code, s) }
