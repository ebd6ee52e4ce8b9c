package execution

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/provider"
	"github.com/mosaic-hpc/mosaic/internal/store"
)

// ActionKind is what the continuation policy does after an attempt ends badly.
type ActionKind string

// Actions.
const (
	ActRetry   ActionKind = "retry"   // same site, same size
	ActResize  ActionKind = "resize"  // same site, more walltime or memory
	ActMigrate ActionKind = "migrate" // replan elsewhere
	ActFail    ActionKind = "fail"    // give up; the task fails with the story
	ActCancel  ActionKind = "cancel"  // someone cancelled the job at the site
)

// Action is a continuation decision with its rationale.
type Action struct {
	Kind      ActionKind
	Spec      model.JobSpec   // for retry/resize: the next attempt's sizing
	Envelope  *model.Envelope // for migrate: the envelope to replan with (raised minimums)
	Rationale string
}

// History summarises a task's attempts for the policy.
type History struct {
	Attempts   int
	Migrations int
	Retries    map[model.JobState]int // in-place retries per failure class
	// MoveCancel: the attempt decided on ended cancelled by Mosaic's own cancel, sent
	// for a move that was then reverted (the cancel showed late), never started. Such
	// an attempt is Mosaic's doing, not a failure: it is not counted in Attempts.
	MoveCancel bool
}

func historyOf(all []*model.Attempt) History {
	atts := chain(all)
	h := History{Attempts: len(atts), Retries: map[model.JobState]int{}}
	for i := 1; i < len(atts); i++ {
		if atts[i].System != atts[i-1].System {
			h.Migrations++
		} else {
			h.Retries[atts[i-1].State]++
		}
	}
	return h
}

// chain is the task's attempts without the moves that did not happen: a new job that
// was refused, or cancelled again because the old one had to stay (its predecessor
// outlived it). Attempts (toward max_attempts), migrations, retries and the systems
// left are counted on the chain: a move that did not happen used no attempt.
func chain(atts []*model.Attempt) []*model.Attempt {
	out := make([]*model.Attempt, 0, len(atts))
	for _, a := range atts {
		if len(out) > 0 && aborted(out[len(out)-1], a) {
			continue
		}
		out = append(out, a)
	}
	return out
}

// aborted reports whether attempt a was a move abandoned while prev, the job it was
// to replace, went on.
func aborted(prev, a *model.Attempt) bool {
	if a.State != model.JobCancelled && a.State != model.JobSubmitError {
		return false
	}
	if a.State == model.JobCancelled && strings.HasPrefix(a.Reason, revertedReason) {
		// Reverted, whatever the timing: the old job's cancel may have landed earlier
		// (it showed late), which the order of the ends cannot tell.
		return true
	}
	return prev.EndedAt == nil || (a.EndedAt != nil && prev.EndedAt.After(*a.EndedAt))
}

// revertedReason begins the reason of a move's new attempt cancelled because the
// move did not go ahead (revertMove).
const revertedReason = "move reverted: "

// Decide is the continuation policy as a pure function: given the task's envelope and
// policy, what the attempt ended with, the partition it ran on (may be nil), and the
// history, what happens next.
func Decide(env model.Envelope, pol model.Policy, a *model.Attempt, part *model.ResourceRecord, h History, transientSubmit bool) Action {
	pol = pol.WithDefaults()
	spec := a.Spec
	if a.State == model.JobCancelled {
		// Before the attempt budget: a cancel is no failure. Mosaic's own (a reverted
		// move's) used no attempt; anyone else's ends the task cancelled, not failed.
		if h.MoveCancel {
			return Action{Kind: ActRetry, Spec: spec, Rationale: fmt.Sprintf("job %s was cancelled by Mosaic itself, for a move that was reverted before the cancel showed (the site's accounting lagged): nobody cancelled the task and the job never started, so it is submitted again in place; this uses none of the policy's attempts", orTag(a))}
		}
		return Action{Kind: ActCancel, Rationale: cancelledAtSite(a)}
	}
	if h.Attempts >= pol.MaxAttempts {
		return Action{Kind: ActFail, Rationale: fmt.Sprintf("attempt %d ended %s and the policy allows %d attempts", a.N, a.State, pol.MaxAttempts)}
	}
	migrate := func(why string, e model.Envelope) Action {
		if h.Migrations >= pol.MaxMigrations {
			return Action{Kind: ActFail, Rationale: why + fmt.Sprintf("; migration needed but the policy's %d migrations are used up", pol.MaxMigrations)}
		}
		return Action{Kind: ActMigrate, Envelope: &e, Rationale: why}
	}
	switch a.State {
	case model.JobNodeFail, model.JobBootFail, model.JobLost, model.JobPreempted:
		if *pol.RetryTransient {
			return Action{Kind: ActRetry, Spec: spec, Rationale: fmt.Sprintf("%s is a transient failure of the site, not of the job: retry in place", a.State)}
		}
		return migrate(fmt.Sprintf("%s and in-place retries are off", a.State), env)
	case model.JobSubmitError:
		if transientSubmit && h.Retries[model.JobSubmitError] < 1 {
			return Action{Kind: ActRetry, Spec: spec, Rationale: "the site was unreachable at submit: retry in place once"}
		}
		return migrate("the site refused the submission: "+firstLine(a.Reason), env)
	case model.JobTimeout:
		// Straight to what is left of the envelope: doubling step by step costs a queue
		// wait per step, and the job has already shown it needs more than it had.
		cur := spec.Walltime
		if !*pol.ResizeOnTimeout {
			return Action{Kind: ActFail, Rationale: "the job hit its walltime and resizing is off"}
		}
		max := env.Walltime.Max
		if max == 0 {
			max = env.Walltime.Min
		}
		if cur >= max {
			return Action{Kind: ActFail, Rationale: fmt.Sprintf("the job hit its walltime of %s, already the envelope's maximum; raise walltime.max to let Mosaic give it longer", cur)}
		}
		next := max
		if part != nil && part.WalltimeCap > 0 && next > part.WalltimeCap {
			if cur < part.WalltimeCap {
				spec.Walltime = part.WalltimeCap
				return Action{Kind: ActResize, Spec: spec, Rationale: fmt.Sprintf("the job hit its walltime of %s: resize to %s, the most %s:%s allows (envelope max %s)",
					cur, part.WalltimeCap, a.System, a.Partition, max)}
			}
			e := env
			e.Walltime.Min = next
			return migrate(fmt.Sprintf("the job hit its walltime of %s, the most %s:%s allows (%s); it moves to a system that allows the envelope's maximum %s",
				cur, a.System, a.Partition, part.WalltimeCap, next), e)
		}
		spec.Walltime = next
		return Action{Kind: ActResize, Spec: spec, Rationale: fmt.Sprintf("the job hit its walltime of %s: resize to %s, the rest of the envelope (walltime.max)", cur, next)}
	case model.JobOOM:
		if !*pol.ResizeOnOOM {
			return Action{Kind: ActFail, Rationale: "the job ran out of memory and resizing is off"}
		}
		nodes := max(spec.Nodes, 1)
		curTotal := spec.MemoryGB * nodes
		if curTotal == 0 && part != nil {
			curTotal = part.MemoryPerNodeGB * nodes / 2 // site default: assume about half a node
		}
		maxTotal := env.MemoryGB.Max
		if maxTotal == 0 {
			maxTotal = env.MemoryGB.Min
		}
		if maxTotal == 0 && part != nil {
			maxTotal = part.MemoryPerNodeGB * nodes
		}
		if curTotal >= maxTotal {
			return Action{Kind: ActFail, Rationale: fmt.Sprintf("the job ran out of memory at %d GB, already the envelope's maximum; raise memory_gb.max", curTotal)}
		}
		nextTotal := min(int(float64(curTotal)*pol.Growth+0.5), maxTotal)
		perNode := (nextTotal + nodes - 1) / nodes
		if part != nil && part.MemoryPerNodeGB > 0 && perNode > part.MemoryPerNodeGB {
			e := env
			e.MemoryGB.Min = nextTotal
			return migrate(fmt.Sprintf("the job ran out of memory at %d GB; it needs %d GB/node, more than a %s:%s node has (%d GB)", curTotal, perNode, a.System, a.Partition, part.MemoryPerNodeGB), e)
		}
		spec.MemoryGB = perNode
		return Action{Kind: ActResize, Spec: spec, Rationale: fmt.Sprintf("the job ran out of memory at %d GB: resize to %d GB (%d GB/node)", curTotal, nextTotal, perNode)}
	case model.JobFailed:
		if h.Retries[model.JobFailed] < max(pol.RetryFailed, 0) {
			return Action{Kind: ActRetry, Spec: spec, Rationale: fmt.Sprintf("the job exited %s; the policy retries a failed run %d time(s) in place", exitText(a), pol.RetryFailed)}
		}
		return Action{Kind: ActFail, Rationale: fmt.Sprintf("the job exited %s: its own failure, not the site's; fix the command and resubmit", exitText(a))}
	case model.JobDeadline:
		return Action{Kind: ActFail, Rationale: "the job missed its deadline at the site"}
	}
	return Action{Kind: ActFail, Rationale: fmt.Sprintf("the job ended %s (%s)", a.State, a.RawState)}
}

// cancelledAtSite is the reason a task ends with when its job was cancelled at the
// site, outside Mosaic: with who cancelled it when the site says (Slurm's "CANCELLED
// by 1234", the uid), and whether it had started. Such a cancel is never resubmitted.
func cancelledAtSite(a *model.Attempt) string {
	why := fmt.Sprintf("job %s was cancelled at %s, outside Mosaic", orTag(a), a.System)
	if raw := strings.TrimSpace(a.RawState); raw != "" && !strings.EqualFold(raw, string(model.JobCancelled)) {
		why += " (the site says: " + raw + ")"
	}
	if a.StartedAt != nil {
		why += ", after it had started"
	}
	return why + "; the task is not submitted again (submit it anew if the cancel was a mistake)"
}

func exitText(a *model.Attempt) string {
	if a.ExitCode != nil {
		return fmt.Sprintf("with code %d", *a.ExitCode)
	}
	return "non-zero"
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

func (e *Engine) partition(system, partition string) *model.ResourceRecord {
	snap := e.o.Snapshot()
	if snap == nil {
		return nil
	}
	for i := range snap.Records {
		r := &snap.Records[i]
		if r.System == system && r.Partition == partition {
			return r
		}
	}
	return nil
}

// continueAfter runs the policy after attempt a ended badly and acts on it.
func (e *Engine) continueAfter(ctx context.Context, t *store.TaskRow, a *model.Attempt, transientSubmit bool) error {
	atts, err := e.o.Store.Attempts(ctx, t.ID)
	if err != nil {
		return err
	}
	if a.State == model.JobSubmitError {
		// A move (migration, replan) whose new job was refused: the old job is still
		// open, so the task keeps it rather than failing or moving on.
		for _, o := range atts {
			if o.N != a.N && !o.State.Final() {
				return e.o.Store.AppendEventsErr(ctx, ev(t.ID, o.N, o.System, "continuation", "stay on "+o.System+": the move was refused",
					fmt.Sprintf("%s refused attempt %d (%s); job %s on %s stays", a.System, a.N, firstLine(a.Reason), o.JobID, o.System), model.ActorRules))
			}
		}
	}
	// Each branch counts its action (OnContinuation) once it happened, not when it was
	// decided: a migration that cannot happen ends as a failure, counted by e.fail.
	h := historyOf(atts)
	if err := e.discountMoveCancels(ctx, &h, atts, a); err != nil {
		return err
	}
	act := Decide(t.Envelope, policyOf(t), a, e.partition(a.System, a.Partition), h, transientSubmit)
	if t.UnstoredEnv && (act.Kind == ActRetry || act.Kind == ActResize || act.Kind == ActMigrate) {
		// Its job was given values the store does not keep: a new attempt would run without them.
		return e.fail(ctx, t, a, act.Rationale+"; but it cannot be submitted again: its forwarded variables are not stored")
	}
	if act.Kind == ActRetry || act.Kind == ActResize || act.Kind == ActMigrate {
		if why := e.ownerRevoked(ctx, t); why != "" {
			return e.fail(ctx, t, a, act.Rationale+"; but "+why)
		}
	}
	next := len(atts) + 1
	switch act.Kind {
	case ActRetry, ActResize:
		if err := e.o.Store.AppendEventsErr(ctx, ev(t.ID, a.N, a.System, "continuation", string(act.Kind)+" on "+a.System, act.Rationale, model.ActorRules)); err != nil {
			return err
		}
		pl := &Placement{System: a.System, Partition: a.Partition, Account: a.Account, Spec: act.Spec}
		_, err := e.dispatch(ctx, t, next, pl, act.Rationale)
		if err == nil {
			e.continued(string(act.Kind)) // the next attempt exists
		}
		return err
	case ActMigrate:
		if t.Target != nil {
			return e.fail(ctx, t, a, act.Rationale+"; the task is pinned to "+t.Target.System+", so it cannot move (replan with --clear-target)")
		}
		tt := t.Task
		tt.Envelope = *act.Envelope
		pl, err := e.o.Placer.Place(ctx, &tt, excluded(atts, a.System))
		if err != nil {
			return e.fail(ctx, t, a, act.Rationale+"; no other system can take it: "+firstLine(err.Error()))
		}
		if err := e.o.Store.UpdateTask(ctx, t.ID, store.TaskUpdate{Decision: pl.Decision, Envelope: act.Envelope},
			ev(t.ID, a.N, a.System, "continuation", fmt.Sprintf("migrate %s → %s:%s", a.System, pl.System, pl.Partition), act.Rationale, model.ActorRules)); err != nil {
			return err
		}
		_, err = e.dispatch(ctx, t, next, pl, act.Rationale+"; "+pl.Rationale)
		if err == nil {
			e.continued(string(act.Kind))
		}
		return err
	case ActCancel:
		if err := e.endTask(ctx, t.ID, store.TaskUpdate{State: ptr(model.TaskCancelled), Reason: &act.Rationale},
			ev(t.ID, a.N, a.System, "cancelled", "task cancelled", act.Rationale, model.ActorSystem)); err != nil {
			return err
		}
		e.continued(string(act.Kind))
		return nil
	}
	return e.fail(ctx, t, a, act.Rationale)
}

// How near a move's mark (its event, stored just before its cancel) the end of a
// cancelled job must be for the cancel to count as the move's own: the site's end
// time may be a little before the mark (clocks differ) and, when accounting gives no
// end time, it is when Mosaic saw the cancel, which lags by the accounting's delay.
// A cancel outside the window (a user's scancel hours later) is the site's: the task
// ends cancelled. Wider would resubmit a user's cancel; narrower, when accounting
// lags more than the window, ends the task cancelled instead of continuing it (the
// safe side: never a second run).
const (
	moveCancelSkew   = time.Minute
	moveCancelWindow = 10 * time.Minute
)

// cancelledForMove reports whether attempt a ended cancelled by the cancel a move
// sent for it (moveCancelMsg, stored before the cancel), never having started: nobody
// cancelled the task. The mark covers only the move's own cancel: the job's end must
// fall within moveCancelWindow of it. A job that started is not (a queued-only cancel
// leaves it running, and a start the site reports — its accounting's start time or
// elapsed, a RUNNING state seen — means it ran: it is never submitted again blind).
func (e *Engine) cancelledForMove(ctx context.Context, a *model.Attempt) (bool, error) {
	if !mayBeMoveCancel(a) {
		return false, nil
	}
	marks, err := e.moveMarks(ctx, a.TaskID)
	if err != nil {
		return false, err
	}
	return coveredByMark(a, marks), nil
}

// discountMoveCancels sets h.MoveCancel for attempt a and takes the attempts of the
// task's chain that ended by a reverted move's own cancel out of h.Attempts: Mosaic's
// own cancel is not a failure and uses no attempt.
func (e *Engine) discountMoveCancels(ctx context.Context, h *History, atts []*model.Attempt, a *model.Attempt) error {
	c := chain(atts)
	maybe := false
	for _, x := range c {
		maybe = maybe || mayBeMoveCancel(x)
	}
	if !maybe && !mayBeMoveCancel(a) {
		return nil
	}
	marks, err := e.moveMarks(ctx, a.TaskID)
	if err != nil {
		return err
	}
	for _, x := range c {
		if coveredByMark(x, marks) {
			h.Attempts--
		}
	}
	h.MoveCancel = coveredByMark(a, marks)
	return nil
}

func mayBeMoveCancel(a *model.Attempt) bool {
	return a.State == model.JobCancelled && a.StartedAt == nil
}

// moveMarks is when each of a task's attempts was marked by a move as cancelled by
// Mosaic itself, by attempt number.
func (e *Engine) moveMarks(ctx context.Context, taskID string) (map[int][]time.Time, error) {
	evs, err := e.o.Store.Events(ctx, store.EventQuery{TaskID: taskID, Kinds: []string{moveCancelKind}, Limit: 10000})
	if err != nil {
		return nil, fmt.Errorf("reading whether Mosaic itself cancelled a job of task %s for a move: %w (the next tick asks again)", taskID, err)
	}
	marks := map[int][]time.Time{}
	for _, x := range evs {
		if strings.HasPrefix(x.Message, moveCancelMsg) {
			marks[x.Attempt] = append(marks[x.Attempt], x.Time)
		}
	}
	return marks, nil
}

// coveredByMark reports whether a, cancelled and never started, ended within the
// window of one of its move marks.
func coveredByMark(a *model.Attempt, marks map[int][]time.Time) bool {
	if !mayBeMoveCancel(a) || a.EndedAt == nil {
		return false
	}
	for _, m := range marks[a.N] {
		if !a.EndedAt.Before(m.Add(-moveCancelSkew)) && !a.EndedAt.After(m.Add(moveCancelWindow)) {
			return true
		}
	}
	return false
}

// ownerRevoked says why no new attempt of t may be submitted when its owner's user
// was revoked ("" while they are active, or unknown to the store: tasks of a store
// without users): a revoked user's work is not continued under their identity.
func (e *Engine) ownerRevoked(ctx context.Context, t *store.TaskRow) string {
	if t.Owner == "" || t.Owner == model.LocalUser {
		return ""
	}
	u, err := e.o.Store.User(ctx, t.Owner)
	if err != nil || u.RevokedAt.IsZero() {
		return ""
	}
	return "owner revoked: user " + t.Owner + " was revoked, so no new attempt is submitted under their identity (an admin may resubmit the work)"
}

// excluded lists systems to avoid when migrating: the one that just failed, plus any
// system an earlier attempt was migrated away from.
func excluded(all []*model.Attempt, current string) []string {
	atts := chain(all)
	out := []string{current}
	for i := 1; i < len(atts); i++ {
		if atts[i].System != atts[i-1].System {
			out = append(out, atts[i-1].System)
		}
	}
	return out
}

func (e *Engine) fail(ctx context.Context, t *store.TaskRow, a *model.Attempt, why string) error {
	atts, _ := e.o.Store.Attempts(ctx, t.ID)
	var story []string
	for _, x := range atts {
		s := fmt.Sprintf("#%d %s:%s %s", x.N, x.System, x.Partition, x.State)
		if x.JobID != "" {
			s += " (job " + x.JobID + ")"
		}
		story = append(story, s)
	}
	reason := why + ". Attempts: " + strings.Join(story, "; ")
	if err := e.endTask(ctx, t.ID, store.TaskUpdate{State: ptr(model.TaskFailed), Reason: &reason},
		ev(t.ID, a.N, a.System, "failure", "task failed", reason, model.ActorRules)); err != nil {
		return err
	}
	e.continued(string(ActFail))
	return nil
}

// cancelAttempt asks the site to cancel; if it cannot be reached the attempt stays in
// cancelling and the monitor asks again every tick until the site confirms. An attempt
// whose submit outcome is unknown (submitting, no job id) is looked up by its tag
// first: the job may be queued. It reports pending when the cancel did not reach the
// site now (the monitor carries it on).
func (e *Engine) cancelAttempt(ctx context.Context, a *model.Attempt, why string) error {
	_, err := e.cancelJob(ctx, a, why)
	return err
}

// cancelJob is cancelAttempt, reporting whether the cancel is still pending.
func (e *Engine) cancelJob(ctx context.Context, a *model.Attempt, why string) (pending bool, err error) {
	if err := e.mayAct(ctx); err != nil {
		return true, err // a deposed leader neither asks the site nor writes
	}
	p, perr := e.provider(a.System)
	var adopted *string
	if a.JobID == "" {
		tf, ok := p.(provider.TagFinder)
		if perr != nil || !ok {
			msg := "attempt cancelled before a job existed"
			if a.State == model.JobSubmitting {
				msg = "attempt cancelled; its submit's outcome is unknown and " + a.System + " cannot look jobs up by name: if a job named " + a.Tag + " is in its queue, cancel it there"
			}
			return false, e.o.Store.UpdateAttempt(ctx, a.TaskID, a.N, store.AttemptUpdate{State: ptr(model.JobCancelled), Ended: ptr(e.now())},
				ev(a.TaskID, a.N, a.System, "transition", msg, why, model.ActorSystem))
		}
		cctx, cancel := context.WithTimeout(ctx, e.o.CancelTimeout)
		found, ferr := tf.FindByTag(cctx, []string{a.Tag})
		cancel()
		if ferr != nil {
			// The job may be queued: keep the attempt cancelling without a job id; the
			// monitor's reconciliation looks it up by its tag and cancels what it finds.
			return true, e.o.Store.UpdateAttempt(ctx, a.TaskID, a.N, store.AttemptUpdate{State: ptr(model.JobCancelling), Reason: &why},
				ev(a.TaskID, a.N, a.System, "transition", fmt.Sprintf("cancel pending: the submit's outcome is unknown and %s did not answer the look-up of job %s (%v); the monitor cancels it when it finds it", a.System, a.Tag, ferr), why, model.ActorSystem))
		}
		st, ok := found[a.Tag]
		if !ok || st.JobID == "" {
			if a.State == model.JobSubmitting {
				// Team mode: the previous leader's submit may still land within the
				// claim grace. Closing the attempt now would leave that job untracked;
				// it stays cancelling, and recovery cancels a late job by its tag.
				if wait, cerr := e.claimInFlight(ctx, a); cerr != nil || wait {
					if cerr != nil {
						return true, cerr
					}
					return true, e.o.Store.UpdateAttempt(ctx, a.TaskID, a.N, store.AttemptUpdate{State: ptr(model.JobCancelling), Reason: &why},
						ev(a.TaskID, a.N, a.System, "transition", "cancel pending: no job "+a.Tag+" at "+a.System+" yet, but the previous leader's submit may still land; the monitor cancels it if it does", why, model.ActorSystem))
				}
			}
			return false, e.o.Store.UpdateAttempt(ctx, a.TaskID, a.N, store.AttemptUpdate{State: ptr(model.JobCancelled), Ended: ptr(e.now())},
				ev(a.TaskID, a.N, a.System, "transition", "attempt cancelled: no job "+a.Tag+" at "+a.System, why, model.ActorSystem))
		}
		id := st.JobID
		a.JobID, adopted = id, &id
	}
	err = perr
	if err == nil {
		// Bounded: an unreachable site must not hold the caller (a user's cancel); the
		// attempt stays cancelling and the monitor asks again every tick.
		cctx, cancel := context.WithTimeout(ctx, e.o.CancelTimeout)
		err = p.Cancel(cctx, []string{a.JobID})
		cancel()
	}
	found := ""
	if adopted != nil {
		found = fmt.Sprintf(" (found by its tag %s)", a.Tag)
	}
	u := store.AttemptUpdate{JobID: adopted, State: ptr(model.JobCancelling), Reason: &why}
	if err != nil {
		return true, e.o.Store.UpdateAttempt(ctx, a.TaskID, a.N, u,
			ev(a.TaskID, a.N, a.System, "transition", fmt.Sprintf("cancel of job %s%s pending: %v", a.JobID, found, err), why, model.ActorSystem))
	}
	return false, e.o.Store.UpdateAttempt(ctx, a.TaskID, a.N, u,
		ev(a.TaskID, a.N, a.System, "transition", fmt.Sprintf("cancel requested for job %s%s", a.JobID, found), why, model.ActorSystem))
}

// ErrCancelPending means a job's cancel did not reach its site now (the site did not
// answer, or a job whose submit outcome is unknown could not be looked up): the task
// is cancelled and the monitor asks the site again every tick until it confirms.
var ErrCancelPending = errors.New("cancel pending")

// Cancel stops a task: every open attempt's job is cancelled at its site. A cancel
// the site did not take now is carried on by the monitor and is not an error here.
func (e *Engine) Cancel(ctx context.Context, taskID, why string) error {
	if err := e.CancelDelivered(ctx, taskID, why); err != nil && !errors.Is(err, ErrCancelPending) {
		return err
	}
	return nil
}

// CancelDelivered is Cancel that also says (an error wrapping ErrCancelPending) when a
// job's cancel did not reach its site now: a caller that must know the job is going
// (a campaign's stop) can then cancel it at the site another way.
func (e *Engine) CancelDelivered(ctx context.Context, taskID, why string) error {
	return e.withTaskForUser(ctx, taskID, func() error { return e.cancelTask(ctx, taskID, why) })
}

func (e *Engine) cancelTask(ctx context.Context, taskID, why string) error {
	t, err := e.o.Store.Task(ctx, taskID)
	if err != nil {
		return err
	}
	if t.State.Final() {
		return fmt.Errorf("task %s is already %s", taskID, t.State)
	}
	atts, err := e.o.Store.Attempts(ctx, taskID)
	if err != nil {
		return err
	}
	var pending []string
	for _, a := range atts {
		if a.State.Final() || a.State == model.JobCancelling {
			continue
		}
		p, err := e.cancelJob(ctx, a, why)
		if err != nil {
			return err
		}
		if p {
			pending = append(pending, fmt.Sprintf("attempt %d (job %s) on %s", a.N, orTag(a), a.System))
		}
	}
	if err := e.endTask(ctx, taskID, store.TaskUpdate{State: ptr(model.TaskCancelled), Reason: &why},
		ev(taskID, 0, "", "cancelled", "task cancelled", why, model.ActorUser)); err != nil {
		return err
	}
	if len(pending) > 0 {
		return fmt.Errorf("task %s: %w for %s: the site did not take it now; the monitor asks again every tick (or cancel the job at the site by hand)",
			taskID, ErrCancelPending, strings.Join(pending, ", "))
	}
	return nil
}

// orTag names an attempt's job: its id, else its tag.
func orTag(a *model.Attempt) string {
	if a.JobID != "" {
		return a.JobID
	}
	return a.Tag
}

// Replan places a task anew (optionally without its pin). A pending job is replaced
// (new job first, old one cancelled after); a running task is refused.
func (e *Engine) Replan(ctx context.Context, taskID string, clearTarget bool) error {
	return e.withTaskForUser(ctx, taskID, func() error { return e.replan(ctx, taskID, clearTarget) })
}

func (e *Engine) replan(ctx context.Context, taskID string, clearTarget bool) error {
	t, err := e.o.Store.Task(ctx, taskID)
	if err != nil {
		return err
	}
	if t.State.Final() {
		return fmt.Errorf("task %s is %s; submit it again instead", taskID, t.State)
	}
	if t.CampaignRun != "" {
		return fmt.Errorf("task %s is the job of a slice of campaign run %s: it runs once, where the launch placed it, and is never replanned; stop or relaunch the campaign (mosaic campaign stop %s)", taskID, t.CampaignRun, t.CampaignRun)
	}
	atts, err := e.o.Store.Attempts(ctx, taskID)
	if err != nil {
		return err
	}
	var pending *model.Attempt
	for _, a := range atts {
		switch a.State {
		case model.JobRunning, model.JobCompleting:
			return fmt.Errorf("task %s is running on %s (job %s); cancel it first if you want it elsewhere", taskID, a.System, a.JobID)
		case model.JobPending, model.JobRequeued, model.JobSubmitting, model.JobSuspended:
			pending = a
		}
	}
	if clearTarget && t.Target != nil {
		var none *model.Target
		if err := e.o.Store.UpdateTask(ctx, taskID, store.TaskUpdate{Target: &none},
			ev(taskID, 0, "", "replan", "pin to "+t.Target.System+" cleared", "requested by the user", model.ActorUser)); err != nil {
			return err
		}
		t.Target = nil
	}
	pl, err := e.o.Placer.Place(ctx, &t.Task, nil)
	if err != nil {
		return err
	}
	if pending != nil && pending.System == pl.System && pending.Partition == pl.Partition {
		return e.o.Store.UpdateTask(ctx, taskID, store.TaskUpdate{Decision: pl.Decision},
			ev(taskID, pending.N, pl.System, "replan", "replanned: staying on "+pl.System+":"+pl.Partition, pl.Rationale, model.ActorUser))
	}
	if err := e.o.Store.UpdateTask(ctx, taskID, store.TaskUpdate{Decision: pl.Decision, State: ptr(model.TaskPlaced)},
		ev(taskID, 0, pl.System, "replan", "replanned → "+pl.System+":"+pl.Partition, pl.Rationale, model.ActorUser)); err != nil {
		return err
	}
	na, err := e.dispatch(ctx, t, len(atts)+1, pl, "replan: "+pl.Rationale)
	if err != nil {
		return err
	}
	if pending != nil && na != nil && na.JobID != "" {
		return e.cancelAttempt(ctx, pending, "replanned to "+pl.System)
	}
	return nil
}
