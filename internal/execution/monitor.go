package execution

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/store"
)

// Run ticks the monitor until ctx ends.
func (e *Engine) Run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := e.Tick(ctx); err != nil && ctx.Err() == nil {
				e.o.Logger.Error("monitor tick", "err", err)
			}
		}
	}
}

// Tick is one monitor round: for each site, ONE status call for all of its open
// jobs, then transitions, continuations, queue-wait and site-outage checks.
func (e *Engine) Tick(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	open, err := e.o.Store.OpenAttempts(ctx)
	if err != nil {
		return err
	}
	bySystem := map[string][]*model.Attempt{}
	orphans := map[string][]*model.Attempt{}
	for _, a := range open {
		if a.JobID == "" {
			// Under the engine's lock no submit is in flight, so a submitting row
			// without a job id is a crash leftover that recovery has not settled yet.
			orphans[a.System] = append(orphans[a.System], a)
			continue
		}
		bySystem[a.System] = append(bySystem[a.System], a)
	}
	for sys, atts := range orphans {
		if err := e.reconcileSystem(ctx, sys, atts); err != nil {
			e.o.Logger.Warn("reconciling after restart", "system", sys, "err", err)
		}
	}
	systems := make([]string, 0, len(bySystem))
	for s := range bySystem {
		systems = append(systems, s)
	}
	sort.Strings(systems)
	snap := e.o.Snapshot()
	for _, sys := range systems {
		atts := bySystem[sys]
		p, err := e.provider(sys)
		if err != nil {
			continue
		}
		ids := make([]string, len(atts))
		for i, a := range atts {
			ids[i] = a.JobID
		}
		statuses, err := p.Status(ctx, ids)
		if err != nil {
			e.o.Logger.Warn("status query failed", "system", sys, "jobs", len(ids), "err", err)
			e.siteTrouble(ctx, snap, sys, atts)
			continue
		}
		for _, a := range atts {
			st, ok := statuses[a.JobID]
			if err := e.observe(ctx, a, st, ok); err != nil {
				e.o.Logger.Error("handling job status", "tag", a.Tag, "err", err)
			}
		}
		e.siteTrouble(ctx, snap, sys, atts)
	}
	return nil
}

// observe applies one job's status (or its absence) to its attempt.
func (e *Engine) observe(ctx context.Context, a *model.Attempt, st model.JobStatus, found bool) error {
	now := e.now()
	t, err := e.o.Store.Task(ctx, a.TaskID)
	if err != nil {
		return err
	}
	pol := policyOf(t)
	if !found {
		// Absence means nothing while the site is unhealthy (a controller that is down
		// answers with gaps): only a healthy site's silence counts toward lost/gone.
		if !e.siteHealthy(a.System) {
			delete(e.missing, a.Tag) // the clock restarts once the site is healthy again
			return nil
		}
		first, seen := e.missing[a.Tag]
		if !seen {
			e.missing[a.Tag] = now
			return nil
		}
		if a.State == model.JobCancelling {
			if now.Sub(first) >= min(pol.LostGrace.D(), 30*time.Second) {
				delete(e.missing, a.Tag)
				return e.finishCancel(ctx, a, "job gone from the site")
			}
			// Not listed, but not long enough to be sure: ask again (idempotent).
			if p, err := e.provider(a.System); err == nil {
				_ = p.Cancel(ctx, []string{a.JobID})
			}
			return nil
		}
		if now.Sub(first) < pol.LostGrace.D() {
			return nil
		}
		delete(e.missing, a.Tag)
		st = model.JobStatus{JobID: a.JobID, State: model.JobLost,
			Reason: fmt.Sprintf("job %s vanished from %s without a final state for %s", a.JobID, a.System, pol.LostGrace)}
	} else {
		delete(e.missing, a.Tag)
	}

	if a.State == model.JobCancelling {
		if st.State.Final() {
			return e.finishCancel(ctx, a, "site confirmed: "+string(st.State))
		}
		// Not confirmed yet: ask again (the site may have been down when we first asked).
		if p, err := e.provider(a.System); err == nil {
			_ = p.Cancel(ctx, []string{a.JobID})
		}
		return nil
	}
	if st.State == a.State || st.State == model.JobUnknown && a.RawState == st.RawState {
		return e.checkWait(ctx, t, a, pol)
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
	if st.State.Final() {
		u.ExitCode = &st.ExitCode
		end := now
		if !st.End.IsZero() {
			end = st.End.UTC()
		}
		u.Ended = &end
	}
	msg := fmt.Sprintf("job %s %s", a.JobID, st.State)
	if st.State.Final() && st.State != model.JobSucceeded {
		msg += fmt.Sprintf(" (exit %d", st.ExitCode)
		if st.Signal != 0 {
			msg += fmt.Sprintf(", signal %d", st.Signal)
		}
		msg += ")"
	}
	if st.RawState != "" && st.RawState != string(st.State) {
		msg += " [" + st.RawState + "]"
	}
	evs := []model.Event{ev(a.TaskID, a.N, a.System, "transition", msg, st.Reason, model.ActorSystem)}
	if err := e.o.Store.UpdateAttempt(ctx, a.TaskID, a.N, u, evs...); err != nil {
		return err
	}
	a.State, a.RawState, a.Reason = st.State, st.RawState, st.Reason
	if st.State.Final() {
		a.ExitCode = &st.ExitCode
	}
	switch {
	case st.State == model.JobRunning || st.State == model.JobCompleting:
		return e.o.Store.UpdateTask(ctx, a.TaskID, store.TaskUpdate{State: ptr(model.TaskRunning)})
	case st.State == model.JobPending || st.State == model.JobRequeued || st.State == model.JobSuspended:
		return e.o.Store.UpdateTask(ctx, a.TaskID, store.TaskUpdate{State: ptr(model.TaskQueued)})
	case st.State == model.JobSucceeded:
		return e.o.Store.UpdateTask(ctx, a.TaskID, store.TaskUpdate{State: ptr(model.TaskSucceeded), Reason: ptr("")},
			ev(a.TaskID, a.N, a.System, "finished", fmt.Sprintf("task succeeded on %s:%s (job %s)", a.System, a.Partition, a.JobID), "", model.ActorSystem))
	case st.State.Final():
		return e.continueAfter(ctx, t, a, false)
	}
	return nil
}

func (e *Engine) finishCancel(ctx context.Context, a *model.Attempt, why string) error {
	return e.o.Store.UpdateAttempt(ctx, a.TaskID, a.N, store.AttemptUpdate{State: ptr(model.JobCancelled), Ended: ptr(e.now())},
		ev(a.TaskID, a.N, a.System, "transition", fmt.Sprintf("job %s cancelled", a.JobID), why, model.ActorSystem))
}

// checkWait migrates a pending job whose queue wait overran max_queue_wait, or the
// placement's estimate by the policy's factor.
func (e *Engine) checkWait(ctx context.Context, t *store.TaskRow, a *model.Attempt, pol model.Policy) error {
	if a.State != model.JobPending || !*pol.MigrateOnWait || t.Target != nil {
		return nil
	}
	wall := e.now().Sub(a.CreatedAt)
	waited := e.siteElapsed(a.System, wall) // max_queue_wait is in the site's time
	var why string
	switch {
	case t.Envelope.MaxQueueWait > 0 && waited > t.Envelope.MaxQueueWait.D():
		why = fmt.Sprintf("queued %s on %s, over max_queue_wait %s", waited.Round(time.Second), a.System, t.Envelope.MaxQueueWait)
	case a.EstimatedStart != nil:
		est := a.EstimatedStart.Sub(a.CreatedAt) // both wall-clock
		if est < time.Minute {
			est = time.Minute
		}
		if wall > time.Duration(pol.WaitFactor*float64(est)) {
			why = fmt.Sprintf("queued %s on %s, %.0f× the estimated wait of %s", wall.Round(time.Second), a.System, pol.WaitFactor, est.Round(time.Second))
		}
	}
	if why == "" {
		return nil
	}
	return e.migratePending(ctx, t, a, why)
}

// siteTrouble is the per-site circuit breaker: when a site has been down for the
// policy's number of probes, its pending jobs move; running ones are left alone.
func (e *Engine) siteTrouble(ctx context.Context, snap *model.ResourceSnapshot, system string, atts []*model.Attempt) {
	if snap == nil {
		return
	}
	h, ok := snap.System(system)
	if !ok || h.Health.Usable() {
		return
	}
	for _, a := range atts {
		if a.State != model.JobPending {
			continue
		}
		t, err := e.o.Store.Task(ctx, a.TaskID)
		if err != nil || t.Target != nil {
			continue
		}
		pol := policyOf(t)
		if h.ConsecutiveBad < pol.SiteDownTicks {
			continue
		}
		why := fmt.Sprintf("%s has been %s for %d probes (%s)", system, h.Health, h.ConsecutiveBad, h.LastError)
		if err := e.migratePending(ctx, t, a, why); err != nil {
			e.o.Logger.Error("migrating away from a down site", "tag", a.Tag, "err", err)
		}
	}
}

// speeder is implemented by providers whose clock runs faster than the wall clock (the
// simulator): envelope durations such as max_queue_wait are in the site's time.
type speeder interface{ Speed() float64 }

// siteElapsed converts a wall-clock duration into the site's time.
func (e *Engine) siteElapsed(system string, d time.Duration) time.Duration {
	if p, ok := e.o.Providers.Provider(system); ok {
		if s, ok := p.(speeder); ok && s.Speed() > 0 {
			return time.Duration(float64(d) * s.Speed())
		}
	}
	return d
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
