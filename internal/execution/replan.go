package execution

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/provider"
	"github.com/mosaic-hpc/mosaic/internal/scheduler"
	"github.com/mosaic-hpc/mosaic/internal/store"
)

// Replanning of waiting jobs: every ReplanEvery (site time; for a job expected to
// start sooner more often, scheduler.ReplanConfig.CheckEvery) each pending job that no
// other trigger is weighing is looked at again, at most ReplanPerRound per site round:
// the current site is asked again when the job would start, the placer finds the best
// placement elsewhere and that site gives its own estimate, and scheduler.Replan (the
// decision the trace replay takes too) says stay or move. A move submits the new job
// first and cancels the old one only once the new one is accepted and the old one is
// confirmed still queued; otherwise the new one is cancelled: nothing runs twice.

// Defaults of the live replanning.
const (
	DefaultReplanEvery    = 10 * time.Minute // site time
	DefaultReplanPerRound = 4
)

// replanNote is replanning's memory of an attempt: when it was last weighed, and the
// hysteresis streak.
type replanNote struct {
	checked  time.Time
	start    time.Time // the current site's estimate of the job's start at that weighing (zero: unknown)
	streak   int
	streakTo string
	spent    bool // the task's move budget is used up: never weighed again
}

// replanDue picks the pending jobs of a site's round due for replanning (weighed
// longest ago first), at most ReplanPerRound.
func (e *Engine) replanDue(items []item, skip map[string]bool, now time.Time) []item {
	type due struct {
		it   item
		last time.Time
	}
	var dues []due
	e.mu.Lock()
	for _, it := range items {
		a, t := it.a, it.t
		pol := policyOf(t)
		if skip[a.Tag] || e.busy[a.TaskID] || e.replans[a.Tag].spent || a.State != model.JobPending || a.JobID == "" || t.Target != nil || t.CampaignRun != "" || !*pol.MigrateOnWait || t.UnstoredEnv {
			continue
		}
		last := e.replans[a.Tag].checked
		if last.IsZero() {
			last = a.CreatedAt
		}
		if now.Sub(last) >= e.wallOf(a.System, e.replanEvery(pol, a, e.replans[a.Tag])) {
			dues = append(dues, due{it, last})
		}
	}
	sort.SliceStable(dues, func(i, j int) bool { return dues[i].last.Before(dues[j].last) })
	out := make([]item, 0, min(len(dues), e.o.ReplanPerRound))
	for _, d := range dues[:min(len(dues), e.o.ReplanPerRound)] {
		out = append(out, d.it)
		// Stamped when picked: a weighing that returns early (or never runs: the task
		// got busy) does not keep the job at the head of the line.
		n := e.replans[d.it.a.Tag]
		n.checked = now
		e.replans[d.it.a.Tag] = n
	}
	e.mu.Unlock()
	return out
}

// startReplans runs replanning as follow-ups of the tasks due (a busy task is skipped:
// something else is acting on it).
func (e *Engine) startReplans(ctx context.Context, wg *sync.WaitGroup, items []item, skip map[string]bool) {
	for _, it := range e.replanDue(items, skip, e.now()) {
		a := it.a
		e.followUp(ctx, wg, a.TaskID, func(ctx context.Context) error { return e.replanPending(ctx, a) })
	}
}

// replanInput gathers scheduler.Replan's inputs for a pending attempt: the current
// site's refreshed estimate, the placer's best placement elsewhere with that site's own
// estimate, and the task's moves so far.
func (e *Engine) replanInput(ctx context.Context, t *store.TaskRow, a *model.Attempt, atts []*model.Attempt) (scheduler.ReplanInput, *Placement) {
	now := e.now()
	sys := a.System
	cur := scheduler.ReplanOption{System: sys, Partition: a.Partition, Source: sys + "'s own estimate"}
	if p, err := e.provider(sys); err == nil {
		// The job's own place in line (squeue --start) where the site can say; else
		// when a new job like it would start (--test-only), which queues behind it and
		// so is pessimistic: the thresholds absorb that.
		var start time.Time
		if qs, ok := p.(provider.QueuedStarter); ok {
			cctx, cancel := context.WithTimeout(ctx, e.o.CancelTimeout)
			start, err = qs.QueuedStart(cctx, a.JobID)
			cancel()
			if err != nil || start.IsZero() {
				start = time.Time{}
			}
		}
		if start.IsZero() {
			cctx, cancel := context.WithTimeout(ctx, e.o.CancelTimeout)
			s, err := p.EstimateStart(cctx, a.Spec)
			cancel()
			if err == nil && !s.IsZero() {
				start = s
				cur.Source = sys + "'s estimate for a new job like it"
			}
		}
		if !start.IsZero() {
			// Kept to this decision: the drift trigger has its own pace (reestimate_every).
			cur.Start, cur.At = start.UTC(), e.now()
		}
	}
	h := historyOf(atts)
	ex := excluded(atts, sys)
	e.mu.Lock()
	n := e.replans[a.Tag]
	e.mu.Unlock()
	in := scheduler.ReplanInput{Now: now, Current: cur, Moves: h.Migrations, Left: ex[1:], Streak: n.streak, StreakTo: n.streakTo, Speed: e.speed(sys),
		Walltime: a.Spec.Walltime.D()}
	pl, err := e.o.Placer.Place(ctx, keepGrowth(&t.Task, a), []string{sys})
	if err != nil {
		return in, nil
	}
	alt, ok := e.replanAlt(ctx, t, len(atts)+1, pl)
	if !ok {
		return in, nil // the alternative's site failed to answer: no move toward it
	}
	in.Alternatives = []scheduler.ReplanOption{alt}
	return in, pl
}

// replanAlt is the alternative placement with its site's own estimate, stamped now. A
// site that cannot estimate (ErrUnsupported) is weighed on the placement's estimate,
// stamped with the snapshot's time so that an old one is stale (MaxAge) and not decided
// on; a site whose estimate call failed otherwise (down, timed out) is no alternative
// (false): a job is not moved toward a site that just did not answer.
func (e *Engine) replanAlt(ctx context.Context, t *store.TaskRow, n int, pl *Placement) (scheduler.ReplanOption, bool) {
	alt := scheduler.ReplanOption{System: pl.System, Partition: pl.Partition}
	p, err := e.provider(pl.System)
	if err != nil {
		return alt, false
	}
	spec := pl.Spec
	spec.Tag, spec.Name = model.JobTag(t.ID, n), t.Name
	spec.System, spec.Partition, spec.Account = pl.System, pl.Partition, pl.Account
	spec.Command, spec.Script = t.Command, t.Script
	cctx, cancel := context.WithTimeout(ctx, e.o.CancelTimeout)
	at, err := p.EstimateStart(cctx, spec)
	cancel()
	switch {
	case err == nil && !at.IsZero():
		alt.Start, alt.At, alt.Source = at.UTC(), e.now(), pl.System+"'s own estimate"
	case err != nil && !errors.Is(err, provider.ErrUnsupported):
		e.o.Logger.Debug("replan: the alternative's site did not answer", "system", pl.System, "err", err)
		return alt, false
	case !pl.EstimatedStart.IsZero():
		alt.Start, alt.Source = pl.EstimatedStart.UTC(), "placement estimate"
		if snap := e.o.Snapshot(); snap != nil {
			alt.At = snap.TakenAt
		}
	}
	return alt, true
}

// replanEvery is how long (site time) the pending attempt a is left before it is
// weighed again: the engine's ReplanEvery, shorter for a job expected to start soon
// (scheduler.ReplanConfig.CheckEvery, the replay's schedule too). The expected
// wait is the current site's answer at the last weighing (n), else the placement's.
func (e *Engine) replanEvery(pol model.Policy, a *model.Attempt, n replanNote) time.Duration {
	wait := time.Duration(-1)
	from := n.checked
	if from.IsZero() {
		from = a.CreatedAt
	}
	switch {
	case !n.start.IsZero():
		wait = e.siteElapsed(a.System, max(n.start.Sub(from), 0))
	case a.EstimatedStart != nil:
		wait = e.siteElapsed(a.System, max(a.EstimatedStart.Sub(from), 0))
	}
	return e.replanConfig(pol).CheckEvery(e.o.ReplanEvery, wait)
}

// replanConfig is the engine's thresholds with the task's move budget.
func (e *Engine) replanConfig(pol model.Policy) scheduler.ReplanConfig {
	c := e.o.Replan
	c.MaxMoves = pol.MaxMigrations
	return c.WithDefaults()
}

// replanPending weighs one pending job (the caller holds the task's lock) and moves it when
// scheduler.Replan says so.
func (e *Engine) replanPending(ctx context.Context, seen *model.Attempt) error {
	t, a, ok := e.reread(ctx, seen)
	if !ok || a.State != model.JobPending || t.State.Final() || t.Target != nil {
		return nil
	}
	pol := policyOf(t)
	atts, err := e.o.Store.Attempts(ctx, t.ID)
	if err != nil {
		return err
	}
	if len(chain(atts)) >= pol.MaxAttempts || historyOf(atts).Migrations >= e.replanConfig(pol).MaxMoves {
		// No move is left: the job is not weighed again (no site is asked for it).
		e.mu.Lock()
		e.replans[a.Tag] = replanNote{checked: e.now(), spent: true}
		e.mu.Unlock()
		return nil
	}
	in, pl := e.replanInput(ctx, t, a, atts)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	dec := scheduler.Replan(in, e.replanConfig(pol))
	if dec.Move && pl != nil {
		if r := e.recentRevert(atts, pl.System); r != nil {
			e.noteReplan(a.Tag, scheduler.ReplanDecision{}, in.Current.Start)
			e.o.Logger.Debug("replan: stay (backoff)", "task", t.ID, "tag", a.Tag, "to", pl.System, "reverted attempt", r.N)
			return nil
		}
	}
	e.noteReplan(a.Tag, dec, in.Current.Start)
	if !dec.Move || pl == nil {
		e.o.Logger.Debug("replan: stay", "task", t.ID, "tag", a.Tag, "why", dec.Reason)
		return nil
	}
	why := dec.Reason + "; candidates: " + dec.TableText(in.Now, in.Speed) + e.clockNote(a.System)
	if err := e.o.Store.AppendEventsErr(ctx, ev(t.ID, a.N, a.System, "continuation",
		fmt.Sprintf("replan: move pending job %s: %s → %s:%s", a.JobID, a.System, pl.System, pl.Partition), why, model.ActorRules)); err != nil {
		return err
	}
	e.continued("replan")
	return e.moveFirst(ctx, t, a, len(atts)+1, pl, why)
}

// revertBackoff is how many replanning periods (the reverted job's) a target is left
// alone after a move to it was reverted (the old job started, its cancel was refused,
// the new submit's outcome was unknown): retrying at once would repeat the same submit
// and cancel.
const revertBackoff = 3

// recentRevert is the task's latest move to sys that did not happen (an attempt off
// the chain) if it ended within revertBackoff replanning periods, else nil.
func (e *Engine) recentRevert(atts []*model.Attempt, sys string) *model.Attempt {
	on := map[*model.Attempt]bool{}
	for _, a := range chain(atts) {
		on[a] = true
	}
	for i := len(atts) - 1; i >= 0; i-- {
		a := atts[i]
		if on[a] || a.System != sys {
			continue
		}
		end := a.CreatedAt
		if a.EndedAt != nil {
			end = *a.EndedAt
		}
		// The reverted job's walltime stands in for its wait (a short job's periods are short).
		if e.now().Sub(end) < revertBackoff*e.wallOf(sys, e.o.Replan.WithDefaults().CheckEvery(e.o.ReplanEvery, a.Spec.Walltime.D())) {
			return a
		}
		return nil
	}
	return nil
}

// noteReplan keeps the decision's streak, and the current site's estimate (start),
// for the next check.
func (e *Engine) noteReplan(tag string, dec scheduler.ReplanDecision, start time.Time) {
	n := replanNote{checked: e.now(), streak: dec.Streak, start: start}
	if dec.To != nil {
		n.streakTo = dec.To.Key()
	}
	if dec.Move {
		n.streak, n.streakTo = 0, ""
	}
	e.mu.Lock()
	e.replans[tag] = n
	e.mu.Unlock()
}

// moveFirst moves a pending job without ever letting two run: attempt n is persisted
// and submitted (dispatch), and only once the site has accepted it is the old job
// checked to be still queued and cancelled. If the new submission's outcome is
// unknown, recording it failed, the old job has started meanwhile or its state cannot
// be read, the new job is cancelled instead and the old one keeps its place. A cancel
// of the old job that answers with an error may still have worked (scancel ran, the
// answer was lost): the old job's state is read again, and only a job still queued
// there reverts the move; a site that cannot say leaves the old job cancelling (the
// monitor asks again each tick) and the new one is the task's job.
func (e *Engine) moveFirst(ctx context.Context, t *store.TaskRow, old *model.Attempt, n int, pl *Placement, why string) error {
	na, err := e.dispatch(ctx, t, n, pl, why+"; "+pl.Rationale)
	if na == nil || na.State == model.JobSubmitError {
		return err // not persisted, or refused: continueAfter logged that the old job stays
	}
	if err != nil {
		// The site accepted the job (or may have) but storing that failed: the new job
		// must not stay beside the old one.
		return errors.Join(err, e.revertMove(ctx, t, old, na, nil, fmt.Sprintf("recording the new job on %s failed (%v)", pl.System, err)))
	}
	if na.JobID == "" {
		return e.revertMove(ctx, t, old, na, nil, fmt.Sprintf("the new job's submit outcome on %s is unknown", pl.System))
	}
	p, err := e.provider(old.System)
	if err != nil {
		return e.revertMove(ctx, t, old, na, nil, err.Error())
	}
	st, found, err := e.listedStatusOf(ctx, p, old.JobID)
	if err != nil {
		return e.revertMove(ctx, t, old, na, nil, fmt.Sprintf("%s did not say whether job %s is still queued: %v", old.System, old.JobID, err))
	}
	if !found {
		// Not "started": a site's accounting (sacct) can lag behind its queue for a job
		// submitted seconds ago. Unknown is not queued, so the old job keeps its place.
		return e.revertMove(ctx, t, old, na, nil, fmt.Sprintf("%s does not list job %s (its accounting may lag behind the queue), so it cannot be known to be still queued", old.System, old.JobID))
	}
	if st.State != model.JobPending {
		return e.revertMove(ctx, t, old, na, &observed{st, found}, fmt.Sprintf("job %s on %s started meanwhile (%s)", old.JobID, old.System, st.State))
	}
	// Where the scheduler can cancel a job only while it is queued (scancel
	// --state=PENDING), the old job is never killed after its command began: if it
	// started since the check above, the cancel leaves it running and the check below
	// reverts the move. Elsewhere (PBS) a job starting between the check and the cancel
	// is killed, and its command then runs again as the new job.
	pc, onlyQueued := p.(provider.PendingCanceller)
	var cerr error
	if err := e.mayAct(ctx); err != nil {
		// Deposed between the claim and here: the new leader settles both attempts.
		return err
	}
	// Stored before the cancel is sent (a crash in between is covered too): if this
	// cancel lands only after the move was reverted, the continuation resubmits the
	// task instead of taking its end for a cancel from outside Mosaic.
	if err := e.o.Store.AppendEventsErr(ctx, ev(old.TaskID, old.N, old.System, moveCancelKind,
		fmt.Sprintf("%s%s for the move to %s (attempt %d)", moveCancelMsg, old.JobID, pl.System, na.N),
		"Mosaic's own cancel, for a move: if the job ends cancelled while the task has no other job, the task is submitted again, not ended", model.ActorSystem)); err != nil {
		return errors.Join(err, e.revertMove(ctx, t, old, na, nil, fmt.Sprintf("recording the cancel of job %s failed (%v)", old.JobID, err)))
	}
	cctx, cancel := context.WithTimeout(ctx, e.o.CancelTimeout)
	if onlyQueued {
		cerr = pc.CancelPending(cctx, []string{old.JobID})
		if errors.Is(cerr, provider.ErrUnsupported) {
			onlyQueued = false
		}
	}
	if !onlyQueued {
		cerr = p.Cancel(cctx, []string{old.JobID})
	}
	cancel()
	reason := fmt.Sprintf("replanned to %s as attempt %d", pl.System, na.N)
	msg := fmt.Sprintf("cancel requested for job %s", old.JobID)
	if cerr != nil || onlyQueued {
		// The cancel may have worked though it answered with an error (scancel ran, the
		// answer was lost), or (only-queued) left a job that started alone: ask again.
		// Where the site has one, the controller's own view (squeue) decides: it shows
		// the cancel, or the start, at once, while accounting can say PENDING for both.
		// Else, after a cancel that answered success, accounting is asked again while it
		// still says queued (on the rig sacct showed a just-cancelled job PENDING, the
		// move was reverted, and the cancel then landed: the task was left with no job;
		// past those retries the move-cancel mark above has the task continued).
		st, found, live := e.liveStatusOf(ctx, p, old.JobID)
		var err error
		if !live {
			ask := e.statusOf
			if cerr == nil {
				ask = e.cancelledStatusOf
			}
			st, found, err = ask(ctx, p, old.JobID)
		}
		detail := "left it queued"
		if cerr != nil {
			detail = "failed: " + cerr.Error()
		}
		if live {
			detail += " (the controller's own listing says so)"
		}
		switch {
		case err != nil && cerr == nil:
			msg = fmt.Sprintf("cancel requested for job %s (%s did not say whether it landed: %v; the monitor follows it)", old.JobID, old.System, err)
		case err != nil:
			msg = fmt.Sprintf("cancel of job %s pending: the cancel answered %v and %s did not say whether it landed (%v); the monitor asks again until the site confirms", old.JobID, cerr, old.System, err)
		case found && (st.State == model.JobPending || st.State == model.JobRequeued):
			return e.revertMove(ctx, t, old, na, &observed{st, found}, fmt.Sprintf("the cancel of job %s on %s %s", old.JobID, old.System, detail))
		case found && begun(st.State):
			return e.revertMove(ctx, t, old, na, &observed{st, found}, fmt.Sprintf("job %s on %s started meanwhile (%s); the cancel left it running", old.JobID, old.System, st.State))
		case cerr != nil:
			msg = fmt.Sprintf("cancel of job %s landed although it answered %v: the job is no longer queued", old.JobID, cerr)
		}
	}
	return e.o.Store.UpdateAttempt(ctx, old.TaskID, old.N, store.AttemptUpdate{State: ptr(model.JobCancelling), Reason: &reason},
		ev(old.TaskID, old.N, old.System, "transition", msg, reason, model.ActorSystem))
}

// observed is a job's state as a site reported it (found false: not listed).
type observed struct {
	st    model.JobStatus
	found bool
}

// listedStatusOf is statusOf asked again, a bounded few times, while the site does
// not list the job: accounting (Slurm's sacct) records a job a moment after the queue
// has it, so a job submitted seconds ago can be missing from an answer although it is
// queued (seen on the rig: a move reverted as "started" for a job still pending).
func (e *Engine) listedStatusOf(ctx context.Context, p provider.Provider, id string) (model.JobStatus, bool, error) {
	return e.statusAskedAgain(ctx, p, id, func(_ model.JobStatus, found bool) bool { return !found })
}

// cancelledStatusOf is statusOf for a job just asked to cancel, asked again (a bounded
// few times) while the site still lists it as queued or does not list it: the cancel
// takes a moment to show in accounting.
func (e *Engine) cancelledStatusOf(ctx context.Context, p provider.Provider, id string) (model.JobStatus, bool, error) {
	return e.statusAskedAgain(ctx, p, id, func(st model.JobStatus, found bool) bool {
		return !found || st.State == model.JobPending || st.State == model.JobRequeued
	})
}

// statusAskedAgain is statusOf, asked again statusListWait apart, at most
// statusListTries times in all, while again says the answer may be stale.
func (e *Engine) statusAskedAgain(ctx context.Context, p provider.Provider, id string, again func(model.JobStatus, bool) bool) (model.JobStatus, bool, error) {
	for try := 0; ; try++ {
		st, found, err := e.statusOf(ctx, p, id)
		if err != nil || !again(st, found) || try == statusListTries-1 {
			return st, found, err
		}
		select {
		case <-ctx.Done():
			return st, found, ctx.Err()
		case <-time.After(statusListWait):
		}
	}
}

// How often and how far apart statusAskedAgain asks.
const (
	statusListTries = 4
	statusListWait  = time.Second
)

// The event a move stores on its old attempt before cancelling its job, the mark
// that the cancel is Mosaic's own (cancelledForMove): of kind moveCancelKind, its
// message begins with moveCancelMsg.
const (
	moveCancelKind = "replan"
	moveCancelMsg  = "move: cancelling queued job "
)

// liveStatusOf is one job's state as the site's controller lists it now
// (provider.LiveStatuser), bounded by CancelTimeout. ok is false when the site has no
// such listing, it failed, or it does not list the job: the caller asks accounting.
func (e *Engine) liveStatusOf(ctx context.Context, p provider.Provider, id string) (st model.JobStatus, found, ok bool) {
	ls, is := p.(provider.LiveStatuser)
	if !is {
		return st, false, false
	}
	cctx, cancel := context.WithTimeout(ctx, e.o.CancelTimeout)
	sts, err := ls.LiveStatus(cctx, []string{id})
	cancel()
	if err != nil {
		if !errors.Is(err, provider.ErrUnsupported) {
			e.o.Logger.Debug("live status failed; asking accounting", "system", p.System(), "job", id, "err", err)
		}
		return st, false, false
	}
	st, found = sts[id]
	return st, found, found
}

// statusOf asks a site for one job's state, bounded by CancelTimeout.
func (e *Engine) statusOf(ctx context.Context, p provider.Provider, id string) (model.JobStatus, bool, error) {
	cctx, cancel := context.WithTimeout(ctx, e.o.CancelTimeout)
	sts, err := p.Status(cctx, []string{id})
	cancel()
	if err != nil {
		return model.JobStatus{}, false, err
	}
	st, ok := sts[id]
	return st, ok, nil
}

// revertMove cancels the new attempt of a move that must not go ahead (first, so that
// no failure of the store leaves it queued beside the old job), then says so; the old
// job stays where it is, and what its site said of it (obs, when asked) is applied as
// the monitor would. A new job whose submit outcome is unknown is kept cancelling
// without a job id: the monitor looks it up by its tag (for the lost grace) and cancels
// whatever turns up, so a job that reaches the queue late does not run untracked.
func (e *Engine) revertMove(ctx context.Context, t *store.TaskRow, old, na *model.Attempt, obs *observed, why string) error {
	var cerr error
	if na.JobID == "" {
		r := revertedReason + why
		cerr = e.o.Store.UpdateAttempt(ctx, na.TaskID, na.N, store.AttemptUpdate{State: ptr(model.JobCancelling), Reason: &r},
			ev(na.TaskID, na.N, na.System, "transition", "cancel pending: the submit's outcome is unknown; the monitor looks job "+na.Tag+" up by its tag and cancels it if it turns up", r, model.ActorSystem))
	} else {
		_, cerr = e.cancelJob(ctx, na, revertedReason+why)
	}
	lerr := e.o.Store.AppendEventsErr(ctx, ev(old.TaskID, old.N, old.System, "continuation",
		fmt.Sprintf("stay on %s: move reverted, attempt %d cancelled", old.System, na.N),
		why+"; job "+old.JobID+" keeps its place, and the new job is cancelled so that only one runs", model.ActorRules))
	if err := errors.Join(cerr, lerr); err != nil {
		return err
	}
	if err := e.o.Store.UpdateTask(ctx, old.TaskID, store.TaskUpdate{State: ptr(model.TaskQueued)}); err != nil || obs == nil {
		return err
	}
	_, final, err := e.observe(ctx, t, old, obs.st, obs.found)
	if err != nil || !final || old.State == model.JobSucceeded {
		return err
	}
	return e.continueFinal(ctx, old)
}

// duplicates lists the tasks with more than one live job (open, with a job id, not
// being cancelled). A move holds the task's lock from the new job's submit to the old
// one's cancel and dedupe runs under that lock, so what it finds there is a leftover:
// a move cut short by a crash, or a step of a move that failed half-way in this process
// (the new job's id could not be stored and it was adopted by its tag later).
func (e *Engine) duplicates(open []*model.Attempt) []string {
	n := map[string]int{}
	var out []string
	for _, a := range open {
		if a.JobID == "" || a.State == model.JobCancelling || a.State.Final() {
			continue
		}
		if n[a.TaskID]++; n[a.TaskID] == 2 {
			out = append(out, a.TaskID)
		}
	}
	sort.Strings(out)
	return out
}

// begun reports whether a job the site lists has started its command: it runs, or it
// ran to an end of its own.
func begun(s model.JobState) bool {
	return s == model.JobRunning || s == model.JobCompleting || s == model.JobSuspended || ranAnyway(s)
}

// dedupe finishes a move that was cut short (the caller holds the task's lock): of a
// task's live jobs it asks each site for the real state. The task's job is the one that
// has started (running, completing, suspended, or ran to its end), else the newest the
// site lists as queued; the other queued ones are cancelled, so its command runs once.
// A job the site lists as ended without running (cancelled: the old job's cancel landed
// before the crash) or does not list is never chosen, and never a reason to cancel
// another: when no job qualifies nothing is done, and the monitor settles each attempt
// from the site's state (continuation included).
func (e *Engine) dedupe(ctx context.Context, taskID string) error {
	t, err := e.o.Store.Task(ctx, taskID)
	if err != nil || t.State.Final() {
		return err
	}
	atts, err := e.o.Store.Attempts(ctx, taskID)
	if err != nil {
		return err
	}
	var live []*model.Attempt
	for _, a := range atts {
		if a.JobID == "" || a.State == model.JobCancelling || a.State.Final() {
			continue
		}
		live = append(live, a)
	}
	if len(live) < 2 {
		return nil
	}
	// The store may be behind (the core was down, or a cancel landed before its answer
	// was stored): ask each site; a site that cannot say leaves the decision to a later
	// tick.
	site := make([]model.JobState, len(live)) // "" when the site does not list the job
	said := make([]model.JobStatus, len(live))
	for i, a := range live {
		p, err := e.provider(a.System)
		if err != nil {
			return err
		}
		// The controller's view where the site has one: accounting can list a job that
		// has started as PENDING, and cancelling it as "queued" would run it twice.
		if st, _, ok := e.liveStatusOf(ctx, p, a.JobID); ok {
			site[i], said[i] = st.State, st
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, e.o.CancelTimeout)
		sts, err := p.Status(cctx, []string{a.JobID})
		cancel()
		if err != nil {
			return fmt.Errorf("task %s has two live jobs; %s did not say whether job %s has started (the next tick asks again): %w", taskID, a.System, a.JobID, err)
		}
		if st, ok := sts[a.JobID]; ok {
			site[i], said[i] = st.State, st
		}
	}
	queued := func(i int) bool { return site[i] == model.JobPending || site[i] == model.JobRequeued }
	// What the sites said is applied as the monitor would (dedupe holds the task while
	// the task has two live jobs in the store, so the monitor's own round skips it).
	cancelled := map[int]bool{}
	defer func() {
		for i, a := range live {
			if cancelled[i] {
				continue
			}
			_, final, err := e.observe(ctx, t, a, said[i], site[i] != "")
			if err == nil && final && a.State != model.JobSucceeded {
				err = e.continueFinal(ctx, a)
			}
			if err != nil {
				e.o.Logger.Error("applying a job's state after two live jobs", "task", taskID, "tag", a.Tag, "err", err)
			}
		}
	}()
	keep := -1
	for i := range live {
		if begun(site[i]) {
			keep = i
		}
	}
	for i := len(live) - 1; keep < 0 && i >= 0; i-- {
		if queued(i) {
			keep = i // the newest queued: the move's target
		}
	}
	if keep < 0 {
		return nil // none runs or waits: the monitor records what the sites say
	}
	k := live[keep]
	for i, a := range live {
		if i == keep || !queued(i) {
			continue // a second job that has started too is left to run (killing it saves nothing)
		}
		why := fmt.Sprintf("the task has two live jobs (a move was cut short): job %s on %s (attempt %d) is its job, this one is cancelled so that only one runs", k.JobID, k.System, k.N)
		cancelled[i] = true
		if _, err := e.cancelJob(ctx, a, why); err != nil {
			return err
		}
	}
	return nil
}
