package campaign

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/provider/hpc"
	"github.com/mosaic-hpc/mosaic/internal/site"
)

// SubmitBackend submits a batch job (the site's dialect: Slurm or PBS) that
// runs the slice, follows its state and cancels it on stop.
type SubmitBackend struct {
	l    SiteLaunch
	sys  site.System
	conn *siteConn
	prov *hpc.Provider

	mu    sync.Mutex
	job   string
	dir   string
	state model.JobState
	color bool
}

// NewSubmitBackend prepares a submit-mode site.
func NewSubmitBackend(sys site.System, l SiteLaunch, localEnv []string) (*SubmitBackend, error) {
	if l.Spec.Mode != ModeSubmit {
		return nil, fmt.Errorf("site %s: not a submit spec", l.Spec.Name)
	}
	conn, err := newSiteConn(sys, localEnv)
	if err != nil {
		return nil, err
	}
	prov, err := hpc.New(sys, hpc.WithTransport(conn.tr))
	if err != nil {
		return nil, fmt.Errorf("site %s: %w", sys.Name, err)
	}
	return &SubmitBackend{l: l, sys: sys, conn: conn, prov: prov, color: colorOK(l.Out)}, nil
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
	// The dialect exports Env, then sources the site's env script, then runs
	// the inner script: forwarded values are there before the env script.
	return model.JobSpec{
		Tag: b.l.jobName(), Name: "campaign " + b.l.RunID + " on " + sp.Name, System: b.sys.Name,
		Partition: sp.Queue, Account: acct, Nodes: nodes, NTasks: 1, CPUsPerTask: max(len(sp.Agents), 1),
		Walltime: sp.Walltime, Command: b.l.innerScript(dir, true, false, nil), Env: b.l.Forward, WorkDir: dir,
	}
}

// Start implements Backend: prepare the site directory, submit, and persist
// the job id before returning. The submission itself is not cancellable by
// ctx (an interrupted sbatch may still have queued the job); its id is saved
// the moment it is known so that stop can cancel it.
func (b *SubmitBackend) Start(ctx context.Context) error {
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
		s.Login, s.RemoteDir, s.Log, s.State = b.conn.login(), dir, dir+"/site.log", string(model.JobSubmitting)
	}); err != nil {
		return fmt.Errorf("site %s: record state before submitting: %w", b.l.Spec.Name, err)
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	id, err := b.prov.Submit(sctx, b.JobSpec(dir))
	if err != nil {
		_ = b.l.Dir.UpdateSite(b.l.Spec.Name, func(s *SiteState) { s.State, s.Error = string(model.JobSubmitError), err.Error() })
		return fmt.Errorf("site %s: submit: %w", b.l.Spec.Name, err)
	}
	b.mu.Lock()
	b.job = id
	b.mu.Unlock()
	if err := b.l.Dir.UpdateSite(b.l.Spec.Name, func(s *SiteState) { s.SubmittedJob, s.State = id, string(model.JobPending) }); err != nil {
		b.l.printf("WARNING: job %s was submitted but could not be recorded (%v); cancel it by hand if the launch fails", id, err)
	}
	b.l.printf("submitted job %s to %s (queue %s, walltime %s); log %s/site.log", paint(b.color, "1;36", id), b.conn.login(), b.l.Spec.Queue, b.l.Spec.Walltime.Slurm(), dir)
	return nil
}

// Poll implements Backend, printing each state transition.
func (b *SubmitBackend) Poll(ctx context.Context) (string, bool, error) {
	b.mu.Lock()
	id, dir, prev := b.job, b.dir, b.state
	b.mu.Unlock()
	if id == "" {
		return "not submitted", false, nil
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	st, err := b.prov.Status(ctx, []string{id})
	if err != nil {
		return string(prev), false, fmt.Errorf("site %s: status of job %s: %w", b.l.Spec.Name, id, err)
	}
	js, ok := st[id]
	if !ok {
		return string(prev), false, nil // not visible yet
	}
	if js.State != prev {
		b.mu.Lock()
		b.state = js.State
		b.mu.Unlock()
		b.l.printf("job %s: %s -> %s", id, orDash(string(prev)), paint(b.color, stateColor(js.State), string(js.State)))
		_ = b.l.Dir.UpdateSite(b.l.Spec.Name, func(s *SiteState) { s.State = string(js.State) })
	}
	if !js.State.Final() {
		return string(js.State), false, nil
	}
	if js.State == model.JobSucceeded {
		return string(js.State), true, nil
	}
	return string(js.State), true, fmt.Errorf("site %s: job %s ended %s (exit %d)\n--- tail of %s/site.log on %s ---\n%s",
		b.l.Spec.Name, id, js.State, js.ExitCode, dir, b.conn.login(), b.conn.tail(ctx, dir+"/site.log", 30))
}

// Stop implements Backend: cancel the job unless it already ended.
func (b *SubmitBackend) Stop(ctx context.Context) error {
	b.mu.Lock()
	id, st := b.job, b.state
	b.mu.Unlock()
	if id == "" || st.Final() {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := b.prov.Cancel(ctx, []string{id}); err != nil {
		return fmt.Errorf("site %s: cancel job %s: %w (cancel it by hand with scancel/qdel)", b.l.Spec.Name, id, err)
	}
	b.l.printf("cancelled job %s", id)
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

// colorOK: colour only on a terminal and without NO_COLOR (https://no-color.org).
func colorOK(w any) bool {
	if os.Getenv("NO_COLOR") != "" {
		return false
	}
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

func paint(on bool, code, s string) string {
	if !on {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}
