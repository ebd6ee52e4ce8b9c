package execution

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/provider"
	"github.com/mosaic-hpc/mosaic/internal/store"
)

// Dispatch submits the first (or next) attempt of a placed task. It holds only the
// task's own lock, so a slow site delays this task and no other.
func (e *Engine) Dispatch(ctx context.Context, taskID string, pl *Placement, why string) error {
	return e.withTask(ctx, taskID, func() error {
		t, err := e.o.Store.Task(ctx, taskID)
		if err != nil {
			return err
		}
		atts, err := e.o.Store.Attempts(ctx, taskID)
		if err != nil {
			return err
		}
		_, err = e.dispatch(ctx, t, len(atts)+1, pl, why)
		return err
	})
}

// dispatch writes attempt n (state submitting) BEFORE calling the site, submits, and
// stores the job id as soon as it is known. It returns the attempt. A submit failure is
// recorded on the attempt and handed to the continuation policy.
func (e *Engine) dispatch(ctx context.Context, t *store.TaskRow, n int, pl *Placement, why string) (*model.Attempt, error) {
	if n > 1 { // a continuation or a move: never for a revoked owner (continueAfter fails the task)
		if why := e.ownerRevoked(ctx, t); why != "" {
			return nil, errors.New(why)
		}
	}
	spec := pl.Spec
	spec.Tag = model.JobTag(t.ID, n)
	spec.Name = t.Name
	spec.System, spec.Partition, spec.Account = pl.System, pl.Partition, pl.Account
	spec.Command, spec.Script = t.Command, t.Script
	if pl.Tag != "" {
		spec.Tag = pl.Tag
	}
	// The site gets the secret values; the store keeps the spec without them.
	sub := spec
	if len(pl.Env) > 0 {
		sub.Env = make(map[string]string, len(spec.Env)+len(pl.Env))
		for k, v := range spec.Env {
			sub.Env[k] = v
		}
		for k, v := range pl.Env {
			sub.Env[k] = v
		}
	}
	// Until the site has the job, estimates made meanwhile (another placement, a
	// move's alternative) count it: the site's listing cannot show it yet.
	if p, ok := e.o.Providers.Provider(pl.System); ok {
		if ex, ok := p.(provider.SubmissionExpecter); ok {
			defer ex.ExpectSubmit(spec)()
		}
	}
	a := &model.Attempt{TaskID: t.ID, N: n, Tag: spec.Tag, System: pl.System, Partition: pl.Partition, Account: pl.Account,
		Spec: spec, State: model.JobSubmitting, CreatedAt: e.now()}
	if !pl.EstimatedStart.IsZero() {
		a.EstimatedStart = ptr(pl.EstimatedStart.UTC())
	}
	msg := fmt.Sprintf("attempt %d → %s:%s (%s)", n, pl.System, pl.Partition, spec.Size())
	if err := e.o.Store.CreateAttempt(ctx, a, ev(t.ID, n, pl.System, "dispatch", msg, why, model.ActorRules)); err != nil {
		return nil, err
	}
	p, err := e.provider(pl.System)
	var jobID string
	if err == nil {
		jobID, err = e.submit(ctx, p, sub)
	}
	if errors.Is(err, errSubmitUnknown) {
		// The site may hold the job: leave the attempt submitting without a job id. The
		// monitor looks it up by its tag once the site answers and adopts it, or submits
		// it once if it is not there (the crash-recovery path, exactly once).
		why := err.Error()
		return a, e.o.Store.AppendEventsErr(ctx, ev(t.ID, n, pl.System, "transition", "submit outcome unknown: the job will be looked up by its tag "+spec.Tag, why, model.ActorSystem))
	}
	if err != nil {
		reason := err.Error()
		if err := e.o.Store.UpdateAttempt(ctx, t.ID, n, store.AttemptUpdate{State: ptr(model.JobSubmitError), Reason: &reason, Ended: ptr(e.now())},
			ev(t.ID, n, pl.System, "failure", "submit refused: "+reason, classify(err), model.ActorSystem)); err != nil {
			return a, err
		}
		a.State, a.Reason = model.JobSubmitError, reason
		return a, e.continueAfter(ctx, t, a, transientErr(err))
	}
	a.JobID, a.State = jobID, model.JobPending
	if err := e.o.Store.UpdateAttempt(ctx, t.ID, n, store.AttemptUpdate{JobID: &jobID, State: ptr(model.JobPending), Output: provider.OutputOf(p, spec, jobID)},
		ev(t.ID, n, pl.System, "transition", fmt.Sprintf("job %s accepted by %s", jobID, pl.System), "", model.ActorSystem)); err != nil {
		return a, err
	}
	return a, e.o.Store.UpdateTask(ctx, t.ID, store.TaskUpdate{State: ptr(model.TaskSubmitted), Reason: ptr("")})
}

// errSubmitUnknown means a submit may or may not have reached the site and the site
// could not be asked: the attempt must be settled by its tag, never submitted again blind.
var errSubmitUnknown = errors.New("the submit may have reached the site")

// submit calls the provider, retrying transient errors with exponential backoff. The
// caller holds only the task's lock: the backoff waits delay nothing else.
//
// A timeout or a connection cut while the command ran is ambiguous: sbatch may have
// queued the job before the answer was lost (Slurm's "Socket timed out" is the classic
// case). Before trying again the site is asked for the job by its tag: found, it is
// adopted; absent, the retry is safe; when the site cannot say, submit returns
// errSubmitUnknown and the attempt is settled by tag later, so no command runs twice.
func (e *Engine) submit(ctx context.Context, p provider.Provider, spec model.JobSpec) (string, error) {
	var last error
	wait := e.o.SubmitBackoff
	for try := 1; try <= e.o.SubmitTries; try++ {
		if !e.leading() {
			// A deposed leader stops here: the new one settles the attempt by its tag.
			return "", fmt.Errorf("%w: %w", errSubmitUnknown, ErrNotLeader)
		}
		id, err := p.Submit(ctx, spec)
		if err == nil {
			return id, nil
		}
		last = err
		if ambiguousErr(err) {
			tf, ok := p.(provider.TagFinder)
			if !ok {
				break // cannot tell: do not submit again blind
			}
			found, ferr := tf.FindByTag(ctx, []string{spec.Tag})
			if ferr != nil {
				return "", fmt.Errorf("%w: %w; looking it up by its tag failed too: %w", errSubmitUnknown, err, ferr)
			}
			if st, ok := found[spec.Tag]; ok && st.JobID != "" {
				e.o.Logger.Warn("submit answer lost, job found by its tag", "system", spec.System, "tag", spec.Tag, "job", st.JobID, "err", err)
				return st.JobID, nil
			}
		}
		if !transientErr(err) || try == e.o.SubmitTries {
			break
		}
		e.o.Logger.Warn("transient submit error, retrying", "system", spec.System, "tag", spec.Tag, "try", try, "err", err)
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(wait):
		}
		wait *= 2
	}
	return "", last
}

// transientErr reports whether an error may go away by itself: the site was
// unreachable or slow, as opposed to refusing the request. The provider says so: the
// hpc provider marks scheduler messages with its dialect's class (errs.ErrTransient),
// transports wrap ErrSiteDown.
func transientErr(err error) bool {
	return errors.Is(err, provider.ErrSiteDown) || errors.Is(err, provider.ErrTransient) ||
		errors.Is(err, context.DeadlineExceeded)
}

// ambiguousErr reports whether a submit error leaves open whether the site queued the
// job: the command timed out, or the connection broke while it ran (the dialect or
// the transport marked it errs.ErrOutcomeUnknown).
func ambiguousErr(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, provider.ErrOutcomeUnknown)
}

func classify(err error) string {
	if transientErr(err) {
		return "transient: the site was unreachable or busy"
	}
	return "permanent: the site refused the request"
}
