package execution

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/provider"
	"github.com/mosaic-hpc/mosaic/internal/store"
)

// Recover reconciles what a crash may have left behind. It is safe to run at any time
// and is run at start:
//   - an attempt still "submitting" without a job id is looked up at its site by its
//     tag: adopted if the job exists, submitted exactly once if it does not;
//   - a task that is not final but has no open attempt is carried on: placed and
//     dispatched if it never had one, else its last attempt goes through the policy.
//     Only tasks an earlier process created: one this engine's process created after
//     it started is still being dispatched by its submit call.
//
// Sites that cannot be reached are left for a later call (the monitor calls it too).
//
// Each task is handled under its own lock; nothing shared is held across site calls.
func (e *Engine) Recover(ctx context.Context) error {
	open, err := e.o.Store.OpenAttempts(ctx)
	if err != nil {
		return err
	}
	bySystem := map[string][]*model.Attempt{}
	openTask := map[string]bool{}
	for _, a := range open {
		openTask[a.TaskID] = true
		if orphan(a) {
			bySystem[a.System] = append(bySystem[a.System], a)
		}
	}
	// Sites in parallel: one that does not answer delays only its own jobs.
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	for sys, atts := range bySystem {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := e.reconcileSystem(ctx, sys, atts, false)
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		}()
	}
	// Meanwhile, tasks without an open attempt carry on (they have no orphan to wait for).
	tasks, err := e.o.Store.Tasks(ctx, []model.TaskState{model.TaskPending, model.TaskPlaced, model.TaskSubmitted, model.TaskQueued, model.TaskRunning}, 10000)
	if err != nil {
		wg.Wait()
		return err
	}
	started, _ := e.startedAt()
	for _, t := range tasks {
		if openTask[t.ID] || !t.CreatedAt.Before(started) {
			continue
		}
		err := e.withTask(ctx, t.ID, func() error { return e.resume(ctx, t.ID) })
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// reconcileSystem settles attempts left "submitting" without a job id: adopted by tag
// or submitted exactly once. Each is re-read under its task's lock first: a submit in
// flight holds that lock and leaves a job id (or a submit error) behind, so what is
// still submitting under the lock is a crash leftover. With try, a busy task is left
// for a later round instead of waited for.
func (e *Engine) reconcileSystem(ctx context.Context, sys string, atts []*model.Attempt, try bool) error {
	p, err := e.provider(sys)
	if err != nil {
		return err
	}
	tf, ok := p.(provider.TagFinder)
	if !ok {
		for _, seen := range atts {
			unlock, a, ok := e.lockOrphan(ctx, seen, try)
			if !ok {
				continue
			}
			why := "Mosaic restarted during the submit and " + sys + " cannot look jobs up by name, so it cannot tell whether the job exists; check the site's queue for " + a.Tag
			state, msg := model.JobLost, "attempt state unknown after restart"
			if a.State == model.JobCancelling {
				why = sys + " cannot look jobs up by name, so the job of a submit whose outcome is unknown cannot be found to cancel it; check the site's queue for " + a.Tag
				state, msg = model.JobCancelled, "attempt cancelled without finding its job"
			}
			if err := e.o.Store.UpdateAttempt(ctx, a.TaskID, a.N, store.AttemptUpdate{State: &state, Reason: &why, Ended: ptr(e.now())},
				ev(a.TaskID, a.N, sys, "recovery", msg, why, model.ActorSystem)); err != nil {
				unlock()
				return err
			}
			unlock()
		}
		return nil
	}
	tags := make([]string, len(atts))
	for i, a := range atts {
		tags[i] = a.Tag
	}
	found, err := tf.FindByTag(ctx, tags)
	failed, partial := provider.Partial(err)
	if err != nil && !partial {
		return fmt.Errorf("recovery: looking up %d job tags on %s: %w (will retry)", len(tags), sys, err)
	}
	for _, seen := range atts {
		if why, ok := failed[seen.Tag]; ok {
			// Not looked up (its owner has no site identity here): left as it is, said once.
			e.noteUnroutable(ctx, seen, why)
			continue
		}
		unlock, a, ok := e.lockOrphan(ctx, seen, try)
		if !ok {
			continue
		}
		err := e.settleOrphan(ctx, p, sys, a, found)
		unlock()
		if err != nil {
			return err
		}
	}
	return nil
}

// orphan reports whether an open attempt has no job id although it may have a job: a
// submit whose outcome is unknown (submitting), or one being cancelled (cancelling).
func orphan(a *model.Attempt) bool {
	return a.JobID == "" && (a.State == model.JobSubmitting || a.State == model.JobCancelling)
}

// lockOrphan takes the task's lock (waiting unless try) and re-reads the attempt; false
// if it is no longer an orphan (see orphan).
func (e *Engine) lockOrphan(ctx context.Context, seen *model.Attempt, try bool) (func(), *model.Attempt, bool) {
	var unlock func()
	if try {
		u, ok := e.tasks.tryLock(seen.TaskID)
		if !ok {
			return nil, nil, false
		}
		unlock = u
	} else {
		u, err := e.tasks.lock(ctx, seen.TaskID)
		if err != nil {
			return nil, nil, false
		}
		unlock = u
	}
	atts, err := e.o.Store.Attempts(ctx, seen.TaskID)
	if err != nil || seen.N < 1 || seen.N > len(atts) {
		unlock()
		return nil, nil, false
	}
	a := atts[seen.N-1]
	if !orphan(a) {
		unlock()
		return nil, nil, false
	}
	return unlock, a, true
}

// settleOrphan adopts the job found by the attempt's tag or submits it once. An
// attempt being cancelled has the job found cancelled instead (or, absent, is
// cancelled); one whose task's job was given unstored values (a campaign's forwarded
// variables) is never submitted again: it is lost, and the task goes through its policy.
func (e *Engine) settleOrphan(ctx context.Context, p provider.Provider, sys string, a *model.Attempt, found map[string]model.JobStatus) error {
	st, ok := found[a.Tag]
	ok = ok && st.JobID != ""
	if a.State == model.JobCancelling {
		if !ok {
			// A submit's answer lost in flight can still be followed by its job: look
			// again for the lost grace before saying there is none, so a late job is
			// cancelled rather than left to run untracked.
			if t, err := e.o.Store.Task(ctx, a.TaskID); err == nil && e.now().Sub(a.CreatedAt) < policyOf(t).LostGrace.D() {
				return nil
			}
			// Team mode: the previous leader's claimed submit may land until the claim
			// grace after the takeover (so the wait is the longer of the two).
			if wait, err := e.claimInFlight(ctx, a); err != nil || wait {
				return err
			}
			return e.o.Store.UpdateAttempt(ctx, a.TaskID, a.N, store.AttemptUpdate{State: ptr(model.JobCancelled), Ended: ptr(e.now())},
				ev(a.TaskID, a.N, sys, "transition", "attempt cancelled: no job "+a.Tag+" at "+sys, "the submit whose outcome was unknown never reached the site", model.ActorSystem))
		}
		// Record the job first (the monitor follows it by id from now on and asks for the
		// cancel again each tick until the site confirms), then ask.
		id := st.JobID
		if err := e.o.Store.UpdateAttempt(ctx, a.TaskID, a.N, store.AttemptUpdate{JobID: &id},
			ev(a.TaskID, a.N, sys, "transition", fmt.Sprintf("found job %s by its tag %s; cancelling it", id, a.Tag), a.Reason, model.ActorSystem)); err != nil {
			return err
		}
		if err := e.mayAct(ctx); err != nil {
			return err
		}
		cctx, cancel := context.WithTimeout(ctx, e.o.CancelTimeout)
		err := p.Cancel(cctx, []string{id})
		cancel()
		if err != nil {
			e.o.Logger.Warn("cancel of a job found by its tag", "system", sys, "job", id, "err", err)
		}
		return nil
	}
	if ok {
		id := st.JobID
		// Adopt it as pending even if it has ended: the next monitor round observes the
		// real final state, so the task's finish or continuation runs as usual (storing a
		// final state here would leave the task waiting for an attempt that is over).
		state := st.State
		if state == "" || state == model.JobUnknown || state.Final() {
			state = model.JobPending
		}
		if err := e.o.Store.UpdateAttempt(ctx, a.TaskID, a.N, store.AttemptUpdate{JobID: &id, State: &state},
			ev(a.TaskID, a.N, sys, "recovery", fmt.Sprintf("adopted job %s found by its tag %s after a restart", id, a.Tag), "the submit had reached the site before the crash", model.ActorSystem)); err != nil {
			return err
		}
		return nil
	}
	t, err := e.o.Store.Task(ctx, a.TaskID)
	if err != nil {
		return err
	}
	if wait, err := e.claimInFlight(ctx, a); err != nil || wait {
		return err // another leader's submit may still land: look again later (before
		// anything else: a move cut short may still be completing)
	}
	prev, err := livePredecessor(ctx, e.o.Store, a)
	if err != nil {
		return err
	}
	if prev != nil {
		// A move cut short between persisting its new job and submitting it: the old
		// job still holds its place. Submitting now (maybe hours later) would give that
		// place up without weighing the move again; the attempt is abandoned instead,
		// and replanning weighs the job afresh.
		why := fmt.Sprintf("move cut short by a restart: job %s on %s (attempt %d) keeps its place; no job %s reached %s, and the move is weighed again rather than made late", prev.JobID, prev.System, prev.N, a.Tag, sys)
		return e.o.Store.UpdateAttempt(ctx, a.TaskID, a.N, store.AttemptUpdate{State: ptr(model.JobCancelled), Reason: &why, Ended: ptr(e.now())},
			ev(a.TaskID, a.N, sys, "recovery", "attempt abandoned: move cut short by a restart", why, model.ActorSystem))
	}
	if t.UnstoredEnv {
		why := "cannot resubmit: forwarded variables are not stored. No job " + a.Tag + " is at " + sys + " (the submit's answer was lost before the job arrived); relaunch the campaign"
		if err := e.o.Store.UpdateAttempt(ctx, a.TaskID, a.N, store.AttemptUpdate{State: ptr(model.JobLost), Reason: &why, Ended: ptr(e.now())},
			ev(a.TaskID, a.N, sys, "recovery", "attempt lost: it cannot be submitted again", why, model.ActorSystem)); err != nil {
			return err
		}
		if t.State.Final() {
			return nil
		}
		a.State, a.Reason = model.JobLost, why
		return e.fail(ctx, t, a, why) // no next attempt can have the values either
	}
	id, err := e.submit(ctx, p, a.Spec)
	if errors.Is(err, errSubmitUnknown) {
		return nil // still cannot tell: a later round looks it up again
	}
	if err != nil {
		reason := err.Error()
		if uerr := e.o.Store.UpdateAttempt(ctx, a.TaskID, a.N, store.AttemptUpdate{State: ptr(model.JobSubmitError), Reason: &reason, Ended: ptr(e.now())},
			ev(a.TaskID, a.N, sys, "recovery", "resubmit after restart refused: "+reason, classify(err), model.ActorSystem)); uerr != nil {
			return uerr
		}
		t, terr := e.o.Store.Task(ctx, a.TaskID)
		if terr != nil {
			return terr
		}
		a.State, a.Reason = model.JobSubmitError, reason
		return e.continueAfter(ctx, t, a, transientErr(err))
	}
	if err := e.o.Store.UpdateAttempt(ctx, a.TaskID, a.N, store.AttemptUpdate{JobID: &id, State: ptr(model.JobPending)},
		ev(a.TaskID, a.N, sys, "recovery", fmt.Sprintf("resubmitted as job %s after a restart", id), "no job with tag "+a.Tag+" existed at the site", model.ActorSystem)); err != nil {
		return err
	}
	return e.o.Store.UpdateTask(ctx, a.TaskID, store.TaskUpdate{State: ptr(model.TaskSubmitted)})
}

// resume carries on a non-final task that has no open attempt; the caller holds the
// task's lock, and the task is read again under it.
func (e *Engine) resume(ctx context.Context, id string) error {
	t, err := e.o.Store.Task(ctx, id)
	if err != nil || t.State.Final() {
		return err
	}
	atts, err := e.o.Store.Attempts(ctx, t.ID)
	if err != nil {
		return err
	}
	for _, a := range atts {
		if !a.State.Final() {
			return nil // an attempt is open again: the monitor follows it
		}
	}
	if len(atts) == 0 && (t.CampaignRun != "" || t.UnstoredEnv) {
		// Its launcher placed it and held its forwarded variables; placed here it would
		// run under another job name, without them, with nobody following its agents.
		reason := "stored but never submitted (Mosaic stopped in between); a campaign slice's job is not placed again after a restart: its forwarded variables are not stored and its launcher is gone. Relaunch the campaign"
		if t.CampaignRun != "" {
			reason = "campaign run " + t.CampaignRun + ": " + reason
		}
		return e.endTask(ctx, t.ID, store.TaskUpdate{State: ptr(model.TaskFailed), Reason: &reason},
			ev(t.ID, 0, "", "failure", "task failed", reason, model.ActorSystem))
	}
	if len(atts) == 0 {
		pl, err := e.o.Placer.Place(ctx, &t.Task, nil)
		if err != nil {
			reason := "after a restart no system can take it: " + firstLine(err.Error())
			return e.endTask(ctx, t.ID, store.TaskUpdate{State: ptr(model.TaskFailed), Reason: &reason},
				ev(t.ID, 0, "", "failure", "task failed", reason, model.ActorRules))
		}
		if err := e.o.Store.UpdateTask(ctx, t.ID, store.TaskUpdate{Decision: pl.Decision, State: ptr(model.TaskPlaced)},
			ev(t.ID, 0, pl.System, "recovery", "placed after a restart → "+pl.System+":"+pl.Partition, pl.Rationale, model.ActorSystem)); err != nil {
			return err
		}
		_, err = e.dispatch(ctx, t, 1, pl, "dispatched after a restart")
		return err
	}
	// The task's job is the last of its chain: a reverted move's attempt (cancelled
	// while its predecessor went on) is not what the task ended with.
	c := chain(atts)
	last := c[len(c)-1]
	if last.State == model.JobSucceeded {
		return e.endTask(ctx, t.ID, store.TaskUpdate{State: ptr(model.TaskSucceeded)})
	}
	moved, err := e.cancelledForMove(ctx, last)
	if err != nil {
		return err
	}
	if last.State == model.JobCancelled && !moved {
		// A cancel was cut short between the site confirming and the task being marked
		// (a move's own cancel, shown after the move was reverted, is continued below).
		why := "cancelled (confirmed after a restart)"
		return e.endTask(ctx, t.ID, store.TaskUpdate{State: ptr(model.TaskCancelled), Reason: &why},
			ev(t.ID, last.N, last.System, "cancelled", "task cancelled", why, model.ActorSystem))
	}
	return e.continueAfter(ctx, t, last, false)
}

// livePredecessor is an earlier attempt of a's task that still has a live job (with a
// job id, open, not being cancelled), or nil: a's attempt was a move's new job.
func livePredecessor(ctx context.Context, st *store.Store, a *model.Attempt) (*model.Attempt, error) {
	atts, err := st.Attempts(ctx, a.TaskID)
	if err != nil {
		return nil, err
	}
	for _, p := range atts[:min(max(a.N-1, 0), len(atts))] {
		if p.JobID != "" && !p.State.Final() && p.State != model.JobCancelling {
			return p, nil
		}
	}
	return nil, nil
}

// claimInFlight reports whether attempt a, not found at its site by its tag, was
// claimed by another leader whose submit could still land: in team mode, until
// ClaimGrace after this engine took over (the deposed leader stopped acting before
// that, and one submit call is bounded by its timeout). Such an attempt is looked up
// again on later rounds, never submitted a second time meanwhile.
func (e *Engine) claimInFlight(ctx context.Context, a *model.Attempt) (bool, error) {
	if e.o.Leading == nil {
		return false, nil // laptop mode: the only submitter is this process
	}
	since, mine := e.startedAt()
	claim, err := e.o.Store.ClaimToken(ctx, a.TaskID, a.N)
	if err != nil {
		return false, err
	}
	if claim == mine && mine != 0 {
		return false, nil // our own claim: our submit has ended (we hold the task's lock)
	}
	if e.now().Before(since.Add(e.o.ClaimGrace)) {
		e.o.Logger.Info("attempt claimed by the previous leader and not found by its tag yet; waiting out its submit before submitting it",
			"task", a.TaskID, "attempt", a.N, "tag", a.Tag, "claim_token", claim, "until", since.Add(e.o.ClaimGrace))
		return true, nil
	}
	return false, nil
}
