package execution

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/provider"
	"github.com/mosaic-hpc/mosaic/internal/store"
)

// maxEstimatesPerRound bounds how many pending jobs a site is asked about again (the
// drift trigger) in one round, so a queue of thousands costs a few calls per tick.
const maxEstimatesPerRound = 8

// Run ticks the monitor until ctx ends. Each tick starts a round for every site whose
// previous round has finished and does not wait for them: a site whose login node hangs
// keeps only its own round busy, and the other sites are followed every tick.
func (e *Engine) Run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	var wg sync.WaitGroup
	defer wg.Wait() // rounds end soon after ctx: every call they make honours it
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := e.startTick(ctx, &wg); err != nil && ctx.Err() == nil {
				e.o.Logger.Error("monitor tick", "err", err)
			}
		}
	}
}

// Tick is one monitor round over every site, waiting until the rounds it started, and
// the follow-ups (continuations, migrations) they started, are done. Tools and tests
// use it; the service uses Run.
func (e *Engine) Tick(ctx context.Context) error {
	var wg sync.WaitGroup
	err := e.startTick(ctx, &wg)
	wg.Wait()
	return err
}

// spawn runs fn in a goroutine counted by wg.
func spawn(wg *sync.WaitGroup, fn func()) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		fn()
	}()
}

// startTick reads the open attempts and starts one round per site: ONE status call
// for all of the site's open jobs, then transitions, then the triggers.
func (e *Engine) startTick(ctx context.Context, wg *sync.WaitGroup) error {
	open, err := e.o.Store.OpenAttempts(ctx)
	if err != nil {
		return err
	}
	bySystem := map[string][]*model.Attempt{}
	orphans := map[string][]*model.Attempt{}
	tags := map[string]bool{}
	for _, a := range open {
		tags[a.Tag] = true
		if a.JobID == "" {
			// Either a submit in flight (its task is locked) or a crash leftover;
			// reconcileSystem tells them apart under the task's lock.
			orphans[a.System] = append(orphans[a.System], a)
			continue
		}
		bySystem[a.System] = append(bySystem[a.System], a)
	}
	e.prune(tags)
	systems := make([]string, 0, len(bySystem)+len(orphans))
	for s := range bySystem {
		systems = append(systems, s)
	}
	for s := range orphans {
		if _, ok := bySystem[s]; !ok {
			systems = append(systems, s)
		}
	}
	sort.Strings(systems)
	for _, id := range e.duplicates(open) {
		e.followUp(ctx, wg, id, func(ctx context.Context) error { return e.dedupe(ctx, id) })
	}
	snap := e.o.Snapshot()
	for _, sys := range systems {
		e.mu.Lock()
		running := e.rounds[sys]
		if !running {
			e.rounds[sys] = true
		}
		e.mu.Unlock()
		if running {
			e.o.Logger.Debug("monitor round still running from an earlier tick; skipped", "system", sys)
			continue
		}
		atts, orph := bySystem[sys], orphans[sys]
		spawn(wg, func() {
			defer func() {
				e.mu.Lock()
				delete(e.rounds, sys)
				e.mu.Unlock()
			}()
			e.siteRound(ctx, wg, snap, sys, atts, orph)
		})
	}
	return nil
}

// prune forgets in-memory notes about attempts that are no longer open.
func (e *Engine) prune(open map[string]bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for tag := range e.missing {
		if !open[tag] {
			delete(e.missing, tag)
		}
	}
	for tag := range e.stays {
		if !open[tag] {
			delete(e.stays, tag)
		}
	}
	for tag := range e.estimated {
		if !open[tag] {
			delete(e.estimated, tag)
		}
	}
	for tag := range e.replans {
		if !open[tag] {
			delete(e.replans, tag)
		}
	}
}

// item is one attempt of a site's round with its task as read under the task's lock.
type item struct {
	a *model.Attempt
	t *store.TaskRow
}

// siteRound follows one site. It calls the site without holding anything shared;
// each job's result is applied under its task's lock, and anything that needs another
// site (a continuation, a migration) runs as a follow-up of its own.
func (e *Engine) siteRound(ctx context.Context, wg *sync.WaitGroup, snap *model.ResourceSnapshot, sys string, atts, orphans []*model.Attempt) {
	// Attempts without a job id whose task is locked are submits in flight, not crash
	// leftovers: only the others are looked up at the site (after its jobs are followed).
	var leftovers []*model.Attempt
	for _, a := range orphans {
		if unlock, ok := e.tasks.tryLock(a.TaskID); ok {
			unlock()
			leftovers = append(leftovers, a)
		}
	}
	if len(leftovers) > 0 {
		defer func() {
			if err := e.reconcileSystem(ctx, sys, leftovers, true); err != nil && ctx.Err() == nil {
				e.o.Logger.Warn("reconciling after restart", "system", sys, "err", err)
			}
		}()
	}
	if len(atts) == 0 {
		return
	}
	p, err := e.provider(sys)
	if err != nil {
		return
	}
	ids := make([]string, len(atts))
	for i, a := range atts {
		ids[i] = a.JobID
	}
	statuses, err := p.Status(ctx, ids)
	var items []item
	var recancel []string
	if failed, partial := provider.Partial(err); partial {
		// Some jobs could not be asked about (their owner has no site identity here):
		// the others' answers stand; these stay as they are, with an event saying why.
		var asked []*model.Attempt
		for _, a := range atts {
			if why, ok := failed[a.JobID]; ok {
				e.noteUnroutable(ctx, a, why)
				if t, cur, ok := e.current(ctx, a); ok {
					items = append(items, item{cur, t})
				}
				continue
			}
			asked = append(asked, a)
		}
		atts, err = asked, nil
	}
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		e.o.Logger.Warn("status query failed", "system", sys, "jobs", len(ids), "err", err)
		for _, a := range atts {
			if t, cur, ok := e.current(ctx, a); ok {
				items = append(items, item{cur, t})
			}
		}
	} else {
		for _, a := range atts {
			st, found := statuses[a.JobID]
			it, again, fu := e.apply(ctx, a, st, found)
			if again {
				recancel = append(recancel, a.JobID)
			}
			if it != nil {
				items = append(items, *it)
			}
			if fu != nil {
				// A job that ended must be continued: wait for the task if it is busy
				// (continueFinal sees whether something else already acted).
				e.followUpMust(ctx, wg, a.TaskID, fu)
			}
		}
	}
	if len(recancel) > 0 && e.mayAct(ctx) == nil { // a deposed leader asks the site nothing
		// Not confirmed yet: ask again (idempotent; the site may have been down when
		// the cancel was first asked).
		if err := p.Cancel(ctx, recancel); err != nil {
			e.o.Logger.Warn("repeating cancel", "system", sys, "jobs", len(recancel), "err", err)
		}
	}
	if err == nil {
		e.reestimate(ctx, p, sys, items)
	}
	e.triggers(ctx, wg, snap, sys, items)
}

// noteUnroutable records, once per job, that its status cannot be read because its
// owner has no site identity on its system (the job is left as it is).
func (e *Engine) noteUnroutable(ctx context.Context, a *model.Attempt, why error) {
	e.mu.Lock()
	if e.unroutable == nil {
		e.unroutable = map[string]bool{}
	}
	seen := e.unroutable[a.Tag]
	e.unroutable[a.Tag] = true
	e.mu.Unlock()
	if seen {
		return
	}
	e.o.Logger.Warn("job status not readable: its owner has no site identity", "tag", a.Tag, "job", a.JobID, "err", why)
	what := "job " + a.JobID
	if a.JobID == "" {
		what = "the job tagged " + a.Tag
	}
	if err := e.o.Store.AppendEventsErr(ctx, ev(a.TaskID, a.N, a.System, "transition",
		what+" cannot be monitored on "+a.System+": its owner has no site identity there",
		why.Error()+"; give the owner an entry under the system's users: in sites.yaml (or default_identity: shared) to follow it again",
		model.ActorSystem)); err != nil {
		e.o.Logger.Error("recording an unmonitorable job", "tag", a.Tag, "err", err)
	}
}

// current re-reads an attempt and its task without waiting for a busy task (false if
// the task is busy, gone or the attempt changed since the round began).
func (e *Engine) current(ctx context.Context, a *model.Attempt) (*store.TaskRow, *model.Attempt, bool) {
	if e.isBusy(a.TaskID) {
		return nil, nil, false
	}
	unlock, ok := e.tasks.tryLock(a.TaskID)
	if !ok {
		return nil, nil, false
	}
	defer unlock()
	return e.reread(ctx, a)
}

// reread loads an attempt and its task again (the caller holds the task's lock); false
// if the attempt is no longer the open job the round saw. The task may be final (a
// cancelled task's jobs are followed until the site confirms).
func (e *Engine) reread(ctx context.Context, a *model.Attempt) (*store.TaskRow, *model.Attempt, bool) {
	t, err := e.o.Store.Task(ctx, a.TaskID)
	if err != nil {
		return nil, nil, false
	}
	atts, err := e.o.Store.Attempts(ctx, a.TaskID)
	if err != nil || a.N < 1 || a.N > len(atts) {
		return nil, nil, false
	}
	cur := atts[a.N-1]
	if cur.State.Final() || cur.JobID != a.JobID {
		return nil, nil, false
	}
	return t, cur, true
}

// apply takes the task's lock (skipping a task that is busy: the next round sees the
// job again), re-reads the attempt and applies the site's answer. It returns the
// attempt if it is still open, whether its cancel must be asked again, and a follow-up
// to run when the job ended badly.
func (e *Engine) apply(ctx context.Context, a *model.Attempt, st model.JobStatus, found bool) (*item, bool, func(context.Context) error) {
	if e.isBusy(a.TaskID) {
		return nil, false, nil
	}
	unlock, ok := e.tasks.tryLock(a.TaskID)
	if !ok {
		return nil, false, nil
	}
	defer unlock()
	t, cur, ok := e.reread(ctx, a)
	if !ok {
		return nil, false, nil
	}
	again, final, err := e.observe(ctx, t, cur, st, found)
	if err != nil {
		e.o.Logger.Error("handling job status", "tag", a.Tag, "err", err)
		return nil, false, nil
	}
	if final {
		if cur.State == model.JobSucceeded {
			return nil, false, nil
		}
		return nil, false, func(ctx context.Context) error { return e.continueFinal(ctx, cur) }
	}
	return &item{cur, t}, again, nil
}

// continueFinal runs the continuation policy for an attempt that ended badly, if
// nothing has acted on the task since.
func (e *Engine) continueFinal(ctx context.Context, a *model.Attempt) error {
	t, err := e.o.Store.Task(ctx, a.TaskID)
	if err != nil || t.State.Final() {
		return err
	}
	if a.State == model.JobCancelling {
		return nil // Mosaic itself cancelled it (a move, a reverted move, the user)
	}
	atts, err := e.o.Store.Attempts(ctx, a.TaskID)
	if err != nil {
		return err
	}
	others := atts[min(a.N, len(atts)):]
	if a.State == model.JobCancelled {
		// Cancelled while the store had it open: by a move's own cancel that showed
		// only after the move was reverted (submitted again), or by someone at the site
		// (the task ends cancelled, with who did it when the site says). Either only
		// when no other job of the task is live: that one is then the task's job.
		others = atts
	}
	for _, o := range others {
		if o.N != a.N && !o.State.Final() && o.State != model.JobCancelling {
			return nil // another attempt is open: already handled
		}
	}
	// Every later attempt ended or is being cancelled (a move that was refused or
	// reverted; a user's cancel makes the task final first): this attempt was the task's
	// job, so its end is continued.
	return e.continueAfter(ctx, t, atts[a.N-1], false)
}

func (e *Engine) isBusy(task string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.busy[task]
}

// followUp runs fn for a task in its own goroutine, under the task's lock, unless a
// follow-up for the task is already in flight. Work that calls other sites runs here,
// so it never delays the round that found it.
func (e *Engine) followUp(ctx context.Context, wg *sync.WaitGroup, task string, fn func(context.Context) error) bool {
	e.mu.Lock()
	if e.busy[task] {
		e.mu.Unlock()
		return false
	}
	e.busy[task] = true
	e.mu.Unlock()
	spawn(wg, func() {
		defer func() {
			e.mu.Lock()
			delete(e.busy, task)
			e.mu.Unlock()
		}()
		if err := e.withTask(ctx, task, func() error { return fn(ctx) }); err != nil && ctx.Err() == nil {
			e.o.Logger.Error("acting on a task", "task", task, "err", err)
		}
	})
	return true
}

// followUpMust is followUp for work that must not be dropped when the task is busy.
func (e *Engine) followUpMust(ctx context.Context, wg *sync.WaitGroup, task string, fn func(context.Context) error) {
	if e.followUp(ctx, wg, task, fn) {
		return
	}
	spawn(wg, func() {
		if err := e.withTask(ctx, task, func() error { return fn(ctx) }); err != nil && ctx.Err() == nil {
			e.o.Logger.Error("acting on a task", "task", task, "err", err)
		}
	})
}

// observe applies one job's status (or its absence) to its attempt; the caller holds
// the task's lock. It makes no call to any site: it reports whether a cancel must be
// asked again and whether the attempt reached a final state.
func (e *Engine) observe(ctx context.Context, t *store.TaskRow, a *model.Attempt, st model.JobStatus, found bool) (again, final bool, err error) {
	now := e.now()
	pol := policyOf(t)
	if !found {
		// Absence means nothing while the site is unhealthy (a controller that is down
		// answers with gaps): only a healthy site's silence counts toward lost/gone.
		if !e.siteHealthy(a.System) {
			e.mu.Lock()
			delete(e.missing, a.Tag) // the clock restarts once the site is healthy again
			e.mu.Unlock()
			return false, false, nil
		}
		e.mu.Lock()
		first, seen := e.missing[a.Tag]
		if !seen {
			e.missing[a.Tag] = now
		}
		e.mu.Unlock()
		if !seen {
			return false, false, nil
		}
		if a.State == model.JobCancelling {
			if now.Sub(first) >= min(pol.LostGrace.D(), 30*time.Second) {
				e.forget(a.Tag)
				return false, true, e.finishCancel(ctx, a, "job gone from the site")
			}
			// Not listed, but not long enough to be sure: ask again.
			return true, false, nil
		}
		if now.Sub(first) < pol.LostGrace.D() {
			return false, false, nil
		}
		e.forget(a.Tag)
		st = model.JobStatus{JobID: a.JobID, State: model.JobLost,
			Reason: fmt.Sprintf("job %s vanished from %s without a final state for %s", a.JobID, a.System, pol.LostGrace)}
	} else {
		e.mu.Lock()
		delete(e.missing, a.Tag)
		e.mu.Unlock()
	}

	if a.State == model.JobCancelling {
		if st.State.Final() {
			e.forget(a.Tag)
			if ranAnyway(st.State) && e.replaced(ctx, a) {
				// The cancel did not reach the site in time (it was down when the job was
				// moved): the job ran. Say so plainly: its command may have run twice.
				return false, true, e.o.Store.UpdateAttempt(ctx, a.TaskID, a.N, store.AttemptUpdate{State: ptr(model.JobCancelled), RawState: &st.RawState, Ended: ptr(e.now())},
					ev(a.TaskID, a.N, a.System, "warning", fmt.Sprintf("job %s ran to the end (%s) although it was being cancelled", a.JobID, st.State),
						"the cancel could not reach "+a.System+" before the job started; its command may have run beside the attempt that replaced it", model.ActorSystem))
			}
			return false, true, e.finishCancel(ctx, a, "site confirmed: "+string(st.State))
		}
		if st.State == model.JobRunning && a.RawState != st.RawState && e.replaced(ctx, a) {
			raw := st.RawState
			if err := e.o.Store.UpdateAttempt(ctx, a.TaskID, a.N, store.AttemptUpdate{RawState: &raw},
				ev(a.TaskID, a.N, a.System, "warning", fmt.Sprintf("job %s started although it is being cancelled; cancelling it again", a.JobID),
					"the cancel could not reach "+a.System+" before the job started; if it runs, its command runs beside the attempt that replaced it", model.ActorSystem)); err != nil {
				return true, false, err
			}
		}
		return true, false, nil
	}
	if st.State == a.State || st.State == model.JobUnknown && a.RawState == st.RawState {
		return false, false, nil
	}
	u := store.AttemptUpdate{State: &st.State, RawState: &st.RawState}
	if st.Reason != "" {
		u.Reason = &st.Reason
	}
	if st.State == model.JobRunning && a.StartedAt == nil {
		s := now
		if !st.Start.IsZero() {
			s = st.Start.UTC()
		}
		u.Started = &s
	}
	if st.State.Final() && a.StartedAt == nil {
		// A job that started and ended between two polls: the site's accounting says
		// when (start time, or elapsed before its end), so it is known to have run.
		if s, ok := startedOf(st); ok {
			u.Started = &s
		}
	}
	code, hasCode := exitCodeOf(st)
	if st.State.Final() {
		if hasCode {
			u.ExitCode = &code
		}
		end := now
		if !st.End.IsZero() {
			end = st.End.UTC()
		}
		u.Ended = &end
	}
	msg := fmt.Sprintf("job %s %s", a.JobID, st.State)
	if st.State.Final() && st.State != model.JobSucceeded && (hasCode || st.Signal != 0) {
		var parts []string
		if hasCode {
			parts = append(parts, fmt.Sprintf("exit %d", code))
		}
		if st.Signal != 0 {
			parts = append(parts, fmt.Sprintf("signal %d", st.Signal))
		}
		msg += " (" + joinComma(parts) + ")"
	}
	if st.RawState != "" && st.RawState != string(st.State) {
		msg += " [" + st.RawState + "]"
	}
	evs := []model.Event{ev(a.TaskID, a.N, a.System, "transition", msg, st.Reason, model.ActorSystem)}
	if err := e.o.Store.UpdateAttempt(ctx, a.TaskID, a.N, u, evs...); err != nil {
		return false, false, err
	}
	a.State, a.RawState, a.Reason = st.State, st.RawState, st.Reason
	if u.Started != nil && e.o.OnStart != nil {
		e.o.OnStart(a, *u.Started) // the core learns how good the site's estimate was
	}
	if st.State.Final() {
		e.forget(a.Tag)
		if hasCode {
			a.ExitCode = &code
		}
	}
	switch {
	case st.State == model.JobRunning || st.State == model.JobCompleting:
		return false, false, e.o.Store.UpdateTask(ctx, a.TaskID, store.TaskUpdate{State: ptr(model.TaskRunning)})
	case st.State == model.JobPending || st.State == model.JobRequeued || st.State == model.JobSuspended:
		return false, false, e.o.Store.UpdateTask(ctx, a.TaskID, store.TaskUpdate{State: ptr(model.TaskQueued)})
	case st.State == model.JobSucceeded:
		return false, true, e.endTask(ctx, a.TaskID, store.TaskUpdate{State: ptr(model.TaskSucceeded), Reason: ptr("")},
			ev(a.TaskID, a.N, a.System, "finished", fmt.Sprintf("task succeeded on %s:%s (job %s)", a.System, a.Partition, a.JobID), "", model.ActorSystem))
	case st.State.Final():
		return false, true, nil
	}
	return false, false, nil
}

// startedOf is when a job that ended started, as its site reports it: its start time,
// or its end less its elapsed time.
func startedOf(st model.JobStatus) (time.Time, bool) {
	switch {
	case !st.Start.IsZero():
		return st.Start.UTC(), true
	case st.Elapsed > 0 && !st.End.IsZero():
		return st.End.Add(-time.Duration(st.Elapsed)).UTC(), true
	}
	return time.Time{}, false
}

// exitCodeOf is the job's own exit code, when it has one: a job the site ended
// (walltime, cancel, node failure, preemption, deadline) or that vanished did not exit
// by itself, so it shows no exit code rather than a fake 0.
func exitCodeOf(st model.JobStatus) (int, bool) {
	switch st.State {
	case model.JobSucceeded, model.JobFailed:
		return st.ExitCode, true
	case model.JobOOM:
		return st.ExitCode, st.ExitCode != 0
	}
	return 0, false
}

func joinComma(p []string) string {
	out := ""
	for i, s := range p {
		if i > 0 {
			out += ", "
		}
		out += s
	}
	return out
}

// forget drops the in-memory notes about an attempt that ended.
func (e *Engine) forget(tag string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.missing, tag)
	delete(e.stays, tag)
	delete(e.estimated, tag)
	delete(e.replans, tag)
}

// replaced reports whether a later attempt of the task exists (the job was being
// cancelled because it moved, not because the user stopped the task).
func (e *Engine) replaced(ctx context.Context, a *model.Attempt) bool {
	atts, err := e.o.Store.Attempts(ctx, a.TaskID)
	return err == nil && len(atts) > a.N
}

// ranAnyway reports whether a final state means the job ran rather than being stopped
// before or while it started.
func ranAnyway(s model.JobState) bool {
	switch s {
	case model.JobSucceeded, model.JobFailed, model.JobOOM, model.JobTimeout:
		return true
	}
	return false
}

func (e *Engine) finishCancel(ctx context.Context, a *model.Attempt, why string) error {
	return e.o.Store.UpdateAttempt(ctx, a.TaskID, a.N, store.AttemptUpdate{State: ptr(model.JobCancelled), Ended: ptr(e.now())},
		ev(a.TaskID, a.N, a.System, "transition", fmt.Sprintf("job %s cancelled", a.JobID), why, model.ActorSystem))
}

// speeder is implemented by providers whose clock runs faster than the wall clock (the
// simulator): policy durations and max_queue_wait are in the site's time.
type speeder interface{ Speed() float64 }

// speed is the site's clock rate relative to the wall clock (1 for real sites).
func (e *Engine) speed(system string) float64 {
	if p, ok := e.o.Providers.Provider(system); ok {
		if s, ok := p.(speeder); ok && s.Speed() > 0 {
			return s.Speed()
		}
	}
	return 1
}

// siteElapsed converts a wall-clock duration into the site's time.
func (e *Engine) siteElapsed(system string, d time.Duration) time.Duration {
	return time.Duration(float64(d) * e.speed(system))
}

// wallOf converts a duration in the site's time into wall-clock time.
func (e *Engine) wallOf(system string, d time.Duration) time.Duration {
	return time.Duration(float64(d) / e.speed(system))
}

// siteHealthy reports whether the latest snapshot shows the system fully healthy, so
// that a job missing from its answer means something (true when there is no snapshot).
func (e *Engine) siteHealthy(system string) bool {
	snap := e.o.Snapshot()
	if snap == nil {
		return true
	}
	h, ok := snap.System(system)
	return !ok || h.Health == model.HealthOK
}
