package hpc

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/dialect"
	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/provider"
	"github.com/mosaic-hpc/mosaic/internal/transport/shellquote"
)

// prepare fills defaults (account, workdir, the site's order's nice) and renders the
// script for spec.
func (p *Provider) prepare(spec model.JobSpec) (model.JobSpec, dialect.JobFiles, []byte, error) {
	if err := spec.Validate(); err != nil {
		return spec, dialect.JobFiles{}, nil, err
	}
	files, err := p.jobFiles(spec.Tag)
	if err != nil {
		return spec, files, nil, err
	}
	if spec.WorkDir == "" {
		spec.WorkDir, _ = p.workDir()
	}
	if spec.Account == "" && len(p.sys.Accounts) == 1 {
		spec.Account = p.sys.Accounts[0]
	}
	spec = p.ordered(spec)
	script, err := p.d.RenderJob(spec, files)
	if err != nil {
		return spec, files, nil, fmt.Errorf("%s: %w", p.sys.Name, err)
	}
	return spec, files, script, nil
}

// Submit renders spec, uploads the script to <workdir>/mosaic/<tag><ext> and submits
// it. A refusal is marked with the dialect's class of the scheduler's message.
func (p *Provider) Submit(ctx context.Context, spec model.JobSpec) (string, error) {
	if p.perUser() { // as the task's owner (identity.go)
		q, err := p.forTag(ctx, spec.Tag)
		if err != nil {
			return "", fmt.Errorf("%s: submit %s: %w", p.sys.Name, spec.Tag, err)
		}
		if q != p {
			spec.Account = q.userAccount(spec.Account)
			return q.Submit(ctx, spec)
		}
	}
	spec, files, script, err := p.prepare(spec)
	if err != nil {
		return "", err
	}
	rec := p.submitted.begin(p, spec) // until the site answers, estimates plan it ahead
	if err := p.upload(ctx, files.Script, script); err != nil {
		p.submitted.end(rec, "", false)
		return "", err
	}
	out, err := p.run(ctx, p.d.SubmitCommand(files.Script), nil)
	if err != nil {
		// The outcome may be open (a lost connection after sbatch ran): counted, like
		// an accepted job, by the estimate batches that overlapped it.
		p.submitted.end(rec, "", true)
		return "", err
	}
	id, err := p.d.ParseSubmit(out)
	p.submitted.end(rec, id, err == nil)
	if err != nil {
		// The dialect says whether the refusal is transient or left the outcome open
		// (errs.ErrTransient, errs.ErrOutcomeUnknown); the dispatcher acts on that.
		return "", dialect.Mark(p.d, out, fmt.Errorf("%s: submit %s: %w", p.sys.Name, spec.Tag, err))
	}
	p.log.Debug("submitted", "tag", spec.Tag, "job", id)
	return id, nil
}

// Status reports many jobs with one remote call per MaxIDsPerCall ids (two on Slurm
// sites without accounting). On a system with per-user identities, jobs whose owner
// has none are not asked about: the answer holds the others, with a
// *provider.PartialError naming them (Cancel, CancelPending and FindByTag alike).
func (p *Provider) Status(ctx context.Context, jobIDs []string) (map[string]model.JobStatus, error) {
	return p.routedStatus(ctx, jobIDs, (*Provider).statusChunk)
}

// routedStatus asks chunk, MaxIDsPerCall ids at a time, as each job's owner on a
// system with per-user identities (else as this provider's identity).
func (p *Provider) routedStatus(ctx context.Context, jobIDs []string, chunk func(*Provider, context.Context, []string) (map[string]model.JobStatus, error)) (map[string]model.JobStatus, error) {
	res := map[string]model.JobStatus{}
	if routed, err := p.eachOwner(ctx, dedupe(jobIDs), p.byJobs, func(q *Provider, ids []string) error {
		got, err := q.statusAll(ctx, ids, chunk)
		maps.Copy(res, got)
		return err
	}); routed {
		if _, partial := provider.Partial(err); err != nil && !partial {
			return nil, err
		}
		return res, err // with a PartialError, res holds the jobs that were asked about
	}
	return p.statusAll(ctx, jobIDs, chunk)
}

// statusAll asks chunk as this provider's identity.
func (p *Provider) statusAll(ctx context.Context, jobIDs []string, chunk func(*Provider, context.Context, []string) (map[string]model.JobStatus, error)) (map[string]model.JobStatus, error) {
	res := map[string]model.JobStatus{}
	for _, ids := range chunks(dedupe(jobIDs), MaxIDsPerCall) {
		got, err := chunk(p, ctx, ids)
		if err != nil {
			return nil, err
		}
		maps.Copy(res, got)
	}
	return res, nil
}

func (p *Provider) statusChunk(ctx context.Context, ids []string) (map[string]model.JobStatus, error) {
	p.mu.Lock()
	fallback := p.noAccounting
	p.mu.Unlock()
	if !fallback {
		out, err := p.run(ctx, p.d.StatusCommand(ids), nil)
		if err != nil {
			return nil, err
		}
		got, err := p.d.ParseStatus(ids, out)
		if err == nil {
			return got, nil
		}
		if !errors.Is(err, dialect.ErrFallback) {
			return nil, fmt.Errorf("%s: status: %w", p.sys.Name, err)
		}
		p.log.Info("job accounting unavailable; using the fallback status query", "reason", err)
		p.mu.Lock()
		p.noAccounting = true
		p.mu.Unlock()
	}
	return p.fallbackStatus(ctx, ids)
}

// fallbackStatus asks the dialect's fallback status query (Slurm: squeue for the ids
// and scontrol for exit codes: the controller's own view, no accounting) for ids, in
// one batch; an error wrapping provider.ErrUnsupported when the dialect has none.
func (p *Provider) fallbackStatus(ctx context.Context, ids []string) (map[string]model.JobStatus, error) {
	cmds := p.d.FallbackStatusCommands(ids)
	if cmds == nil {
		return nil, fmt.Errorf("%s: status: no fallback query for %s: %w", p.sys.Name, p.d.Name(), provider.ErrUnsupported)
	}
	var outs []dialect.Output
	for _, argv := range cmds {
		out, err := p.run(ctx, argv, nil)
		if err != nil {
			return nil, err
		}
		outs = append(outs, out)
	}
	got, err := p.d.ParseFallbackStatus(ids, outs)
	if err != nil {
		return nil, fmt.Errorf("%s: status: %w", p.sys.Name, err)
	}
	return got, nil
}

// Cancel asks the site to stop jobs; unknown or finished ids are not an error.
func (p *Provider) Cancel(ctx context.Context, jobIDs []string) error {
	if routed, err := p.eachOwner(ctx, dedupe(jobIDs), p.byJobs, func(q *Provider, ids []string) error {
		return q.cancelAll(ctx, ids)
	}); routed {
		return err
	}
	return p.cancelAll(ctx, jobIDs)
}

// cancelAll is Cancel as this provider's identity.
func (p *Provider) cancelAll(ctx context.Context, jobIDs []string) error {
	for _, ids := range chunks(dedupe(jobIDs), MaxIDsPerCall) {
		out, err := p.run(ctx, p.d.CancelCommand(ids), nil)
		if err != nil {
			return err
		}
		if err := p.d.ParseCancel(out); err != nil {
			return fmt.Errorf("%s: %w", p.sys.Name, err)
		}
	}
	return nil
}

// QueuedStart asks the scheduler when queued job id is expected to start, in its own
// place in line, when the dialect can (squeue --start, qstat's estimated.start_time);
// ErrUnsupported otherwise. The zero time means the scheduler has no estimate now.
func (p *Provider) QueuedStart(ctx context.Context, jobID string) (time.Time, error) {
	if q, err := p.forJob(ctx, jobID); err != nil {
		return time.Time{}, err
	} else if q != p {
		return q.QueuedStart(ctx, jobID)
	}
	qs, ok := p.d.(dialect.QueuedStarter)
	if !ok {
		return time.Time{}, fmt.Errorf("%s: %s cannot say when a queued job starts: %w", p.sys.Name, p.d.Name(), provider.ErrUnsupported)
	}
	if pc := p.planCommands(); pc.qp != nil {
		return p.queuedStartPlanned(ctx, qs, pc, jobID)
	}
	out, err := p.run(ctx, qs.QueuedStartCommand(jobID), nil)
	if err != nil {
		return time.Time{}, err
	}
	t, err := qs.ParseQueuedStart(jobID, out)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s: %w", p.sys.Name, err)
	}
	return t, nil
}

// queuedStartScript prints the queued-start command's output as the block
// queuedBlock of an estimate batch (its stderr stays the whole command's stderr: the
// plan steps drop theirs), then the plan's blocks (planScript). $1 is the boundary.
const queuedStartScript = `b=$1
printf '%%s %%s\n' "$b" ` + queuedBlock + `
%s
printf '\n%%s rc=%%d\n' "$b" "$?"
`

const queuedBlock = "@queued"

// queuedStartPlanned is QueuedStart with the queue plan in the same remote command:
// the scheduler's answer for the job's own place in line, moved earlier by what
// planning the user's own jobs for their predicted runtimes gains (applyPlan; the
// scheduler's backfill plans on the limits), and no later than the plan's own slot
// for the job. A plan that fails leaves the answer.
func (p *Provider) queuedStartPlanned(ctx context.Context, qs dialect.QueuedStarter, pc planCmds, jobID string) (time.Time, error) {
	boundary, err := newBoundary()
	if err != nil {
		return time.Time{}, err
	}
	cmd := qs.QueuedStartCommand(jobID)
	q := make([]string, len(cmd))
	for i, a := range cmd {
		q[i] = shellquote.Quote(a)
	}
	script := fmt.Sprintf(queuedStartScript, strings.Join(q, " ")) + planScript(pc)
	res, err := p.run(ctx, []string{"sh", "-c", script, "sh", boundary}, nil)
	if err != nil {
		return time.Time{}, err
	}
	blocks, err := parseEstimateBatch(res.Stdout, boundary)
	if err != nil {
		return time.Time{}, dialect.Mark(p.d, res, fmt.Errorf("%s: queued start of %s (exit %d): %s: %w", p.sys.Name, jobID, res.ExitCode,
			strings.TrimSpace(string(res.Stderr)), err))
	}
	b, ok := blocks[queuedBlock]
	if !ok {
		return time.Time{}, fmt.Errorf("%s: the queued start of %s printed nothing (the login node stopped early?); retry", p.sys.Name, jobID)
	}
	now := time.Now()
	t, err := qs.ParseQueuedStart(jobID, dialect.Output{Stdout: b.out, Stderr: res.Stderr, ExitCode: b.rc})
	if err != nil {
		return time.Time{}, fmt.Errorf("%s: %w", p.sys.Name, err)
	}
	if t.IsZero() {
		return t, nil
	}
	outs, ok := p.planOutputs(pc, blocks)
	if !ok {
		return t, nil
	}
	ps, err := pc.qp.PlanQueued(outs, jobID, now)
	if err != nil {
		p.log.Info("queue plan: not planned; Slurm's own start stands", "job", jobID, "err", err)
		return t, nil
	}
	ps = p.planned(ps)
	if g := ps.Gain(); g > 0 {
		t = later(t.Add(-g), now)
	}
	// Where the queue decides, a new job's estimate elsewhere is the plan's own time
	// (applyPlan: the will-run test ignores the queue), so the job's own start is the
	// plan's too when that is sooner: squeue --start is set when the scheduler last
	// looked at the job and runs late (seen on the rig: 52 s for a job that could
	// start 7 s later), which made a job look slower than a new one elsewhere and
	// moved it for nothing. A sooner plan can only keep a job where it is.
	if pt := cmp.Or(ps.Predicted, ps.Limits); !pt.IsZero() && pt.Before(t) {
		t = later(pt, now)
	}
	return t, nil
}

// CancelPending cancels the jobs still queued and leaves those that have started, in
// one scheduler call, when the dialect can (Slurm); ErrUnsupported otherwise (PBS's
// qdel has no such filter).
func (p *Provider) CancelPending(ctx context.Context, jobIDs []string) error {
	pc, ok := p.d.(dialect.PendingCanceller)
	if !ok {
		return fmt.Errorf("%s: %s cannot cancel only a queued job: %w", p.sys.Name, p.d.Name(), provider.ErrUnsupported)
	}
	if routed, err := p.eachOwner(ctx, dedupe(jobIDs), p.byJobs, func(q *Provider, ids []string) error {
		return q.cancelPendingAll(ctx, pc, ids)
	}); routed {
		return err
	}
	return p.cancelPendingAll(ctx, pc, jobIDs)
}

// cancelPendingAll is CancelPending as this provider's identity.
func (p *Provider) cancelPendingAll(ctx context.Context, pc dialect.PendingCanceller, jobIDs []string) error {
	for _, ids := range chunks(dedupe(jobIDs), MaxIDsPerCall) {
		out, err := p.run(ctx, pc.CancelPendingCommand(ids), nil)
		if err != nil {
			return err
		}
		if err := p.d.ParseCancel(out); err != nil {
			return fmt.Errorf("%s: %w", p.sys.Name, err)
		}
	}
	return nil
}

// FindByTag looks jobs up by their Mosaic tag (the job name); the newest job per tag.
// It asks both the primary query (accounting: jobs of the last 30 days) and, when the
// dialect has one, the fallback (the live queue), because accounting can lag behind
// for jobs that just ended.
func (p *Provider) FindByTag(ctx context.Context, tags []string) (map[string]model.JobStatus, error) {
	res := map[string]model.JobStatus{}
	if routed, err := p.eachOwner(ctx, dedupe(tags), p.byTags, func(q *Provider, ts []string) error {
		got, err := q.findByTagAll(ctx, ts)
		merge(res, got)
		return err
	}); routed {
		if _, partial := provider.Partial(err); err != nil && !partial {
			return nil, err
		}
		return res, err // with a PartialError, res holds the tags that were looked up
	}
	return p.findByTagAll(ctx, tags)
}

// findByTagAll is FindByTag as this provider's identity.
func (p *Provider) findByTagAll(ctx context.Context, tags []string) (map[string]model.JobStatus, error) {
	res := map[string]model.JobStatus{}
	for _, ts := range chunks(dedupe(tags), 100) {
		out, err := p.run(ctx, p.d.FindByTagCommand(ts), nil)
		if err != nil {
			return nil, err
		}
		got, err := p.d.ParseFindByTag(ts, out)
		needFallback := errors.Is(err, dialect.ErrFallback)
		if err != nil && !needFallback {
			return nil, fmt.Errorf("%s: find by tag: %w", p.sys.Name, err)
		}
		merge(res, got)
		if argv := p.d.FallbackFindByTagCommand(ts); argv != nil {
			out, err := p.run(ctx, argv, nil)
			if err != nil {
				return nil, err
			}
			got, err := p.d.ParseFallbackFindByTag(ts, out)
			if err != nil && needFallback {
				return nil, fmt.Errorf("%s: find by tag: %w", p.sys.Name, err)
			}
			merge(res, got) // a failing live query is not fatal when accounting answered
		} else if needFallback {
			return nil, fmt.Errorf("%s: find by tag: no fallback query for %s", p.sys.Name, p.d.Name())
		}
	}
	return res, nil
}

// merge keeps, per tag, the status with the newest job id (longer ids are newer).
func merge(dst, src map[string]model.JobStatus) {
	for k, v := range src {
		cur, ok := dst[k]
		if !ok || len(cur.JobID) < len(v.JobID) || (len(cur.JobID) == len(v.JobID) && cur.JobID < v.JobID) {
			dst[k] = v
		}
	}
}

// EstimateStart uploads the script for spec under a separate name and asks the
// scheduler when it would start (sbatch --test-only); provider.ErrUnsupported when the
// dialect cannot tell. It runs under the identity of spec.Owner (refused when they
// have none here), as their job would.
func (p *Provider) EstimateStart(ctx context.Context, spec model.JobSpec) (time.Time, error) {
	if p.d.EstimateCommand("x") == nil {
		return time.Time{}, fmt.Errorf("%s: start estimate with %s: %w", p.sys.Name, p.d.Name(), provider.ErrUnsupported)
	}
	if _, ok := p.d.(dialect.QueuePlanner); ok {
		// A batch of one: the batch plans the job behind the queue as well.
		est, err := p.EstimateStarts(ctx, []model.JobSpec{spec})
		if err != nil {
			return time.Time{}, err
		}
		return est[0].Start, est[0].Err
	}
	if p.perUser() { // as the task's owner would submit it (identity.go)
		q, err := p.forOwner(spec.Owner)
		if err != nil {
			return time.Time{}, fmt.Errorf("%s: start estimate for %s: %w", p.sys.Name, spec.Owner, err)
		}
		if q != p {
			spec.Account = q.userAccount(spec.Account)
			return q.EstimateStart(ctx, spec)
		}
	}
	spec.Tag = spec.Tag + "-estimate"
	_, files, script, err := p.prepare(spec)
	if err != nil {
		return time.Time{}, err
	}
	if err := p.upload(ctx, files.Script, script); err != nil {
		return time.Time{}, err
	}
	out, err := p.run(ctx, p.d.EstimateCommand(files.Script), nil)
	if err != nil {
		return time.Time{}, err
	}
	t, err := p.d.ParseEstimate(out)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s: %w", p.sys.Name, err)
	}
	return t, nil
}

// Logs returns the last tail bytes of a job's stdout and stderr. The job's tag (its
// name) locates the files; a job that has not started yet has empty logs. The core
// reads logs of its own attempts with ReadOutput and the location recorded at submit,
// which needs no lookup at the site.
func (p *Provider) Logs(ctx context.Context, jobID string, tail int) (model.Logs, error) {
	if q, err := p.forJob(ctx, jobID); err != nil {
		return model.Logs{}, err
	} else if q != p {
		return q.Logs(ctx, jobID, tail)
	}
	name, err := p.jobName(ctx, jobID)
	if err != nil {
		return model.Logs{}, err
	}
	out, err := p.Output(model.JobSpec{Tag: name}, jobID)
	if err != nil {
		return model.Logs{}, err
	}
	logs, err := p.ReadOutput(ctx, out, tail)
	logs.JobID = jobID
	if errors.Is(err, provider.ErrNoOutput) {
		return logs, nil // not started yet
	}
	return logs, err
}

// Output is where a job submitted with spec writes: <workdir>/mosaic/<tag>.{out,err}
// on the system's login host (the paths Submit puts into the script).
func (p *Provider) Output(spec model.JobSpec, _ string) (model.JobOutput, error) {
	files, err := p.jobFiles(spec.Tag)
	if err != nil {
		return model.JobOutput{}, err
	}
	return model.JobOutput{Host: p.endpoint, Stdout: files.Stdout, Stderr: files.Stderr}, nil
}

// ReadOutput tails a recorded output location through the transport. Only Mosaic's own
// output files are read: absolute, clean paths named mosaic-*.out / mosaic-*.err.
func (p *Provider) ReadOutput(ctx context.Context, out model.JobOutput, tail int) (model.Logs, error) {
	if q, err := p.forTag(ctx, tagOfOutput(out.Stdout)); err != nil {
		return model.Logs{}, err
	} else if q != p {
		return q.ReadOutput(ctx, out, tail)
	}
	if tail <= 0 {
		tail = 64 << 10
	}
	logs := model.Logs{StdoutPath: out.Stdout, StderrPath: out.Stderr}
	for _, f := range []struct{ path, ext string }{{out.Stdout, ".out"}, {out.Stderr, ".err"}} {
		base := path.Base(f.path)
		if !path.IsAbs(f.path) || path.Clean(f.path) != f.path || !strings.HasPrefix(base, "mosaic-") || !strings.HasSuffix(base, f.ext) ||
			strings.ContainsAny(f.path, "\x00\n\r") {
			return logs, fmt.Errorf("%s: %q is not a Mosaic job output file (want <workdir>/mosaic/mosaic-<task>-<n>%s)", p.sys.Name, f.path, f.ext)
		}
	}
	if out.Host != "" && out.Host != p.endpoint {
		p.log.Debug("reading job output recorded on another host", "recorded", out.Host, "now", p.endpoint)
	}
	var t1, t2, e1, e2 bool
	var err error
	if logs.Stdout, t1, e1, err = p.tailFile(ctx, out.Stdout, tail); err != nil {
		return logs, err
	}
	if logs.Stderr, t2, e2, err = p.tailFile(ctx, out.Stderr, tail); err != nil {
		return logs, err
	}
	logs.Truncated = t1 || t2
	if !e1 && !e2 {
		return logs, fmt.Errorf("%s: %s and %s on %s: %w", p.sys.Name, out.Stdout, out.Stderr, cmp.Or(out.Host, p.endpoint), provider.ErrNoOutput)
	}
	return logs, nil
}

// jobName finds a job's name (its Mosaic tag), asking the fallback query when the
// primary one does not know the name (yet).
func (p *Provider) jobName(ctx context.Context, jobID string) (string, error) {
	st, err := p.Status(ctx, []string{jobID})
	if err != nil {
		return "", err
	}
	if s, ok := st[jobID]; ok && s.Name != "" {
		return s.Name, nil
	}
	got, err := p.fallbackStatus(ctx, []string{jobID})
	if err == nil && got[jobID].Name != "" {
		return got[jobID].Name, nil
	}
	if err != nil && ctx.Err() != nil {
		return "", err
	}
	return "", fmt.Errorf("%s: job %s is unknown to the site (or its name is not known yet); retry in a few seconds", p.sys.Name, jobID)
}

// tailFile prints the file size then its last n bytes (`tail -c`); a missing file is
// empty and reports exists=false.
func (p *Provider) tailFile(ctx context.Context, file string, n int) (body string, truncated, exists bool, err error) {
	out, err := p.run(ctx, []string{"sh", "-c", `[ -e "$1" ] || exit 0; wc -c < "$1" && tail -c "$2" "$1"`, "sh", file, strconv.Itoa(n)}, nil)
	if err != nil {
		return "", false, false, err
	}
	if out.ExitCode != 0 {
		return "", false, false, fmt.Errorf("%s: read %s: %s", p.sys.Name, file, strings.TrimSpace(string(out.Stderr)))
	}
	size, body, ok := strings.Cut(string(out.Stdout), "\n")
	if !ok {
		return "", false, false, nil
	}
	total, _ := strconv.Atoi(strings.TrimSpace(size))
	return body, total > n, true, nil
}

func dedupe(ids []string) []string {
	seen := make(map[string]bool, len(ids))
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		if id != "" && !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}
