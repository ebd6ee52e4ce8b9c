package execution

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/provider"
	"github.com/mosaic-hpc/mosaic/internal/store"
)

// Triggers that make the engine weigh moving a pending job. Each ends in an event: a
// migration, or a stay with the numbers that decided it (docs/EXECUTION.md).
const (
	trigSiteDown    = "site-down"    // the job's site failed SiteDownTicks probes in a row
	trigWait        = "wait"         // the job has queued past its wait limit
	trigDrift       = "drift"        // the site's own estimate drifted past the wait limit
	trigDownRunning = "down-running" // the site is down under a running job (logged, never moved)
)

// trigger is one reason to weigh a pending job, with the job's realistic outlook where
// it is.
type trigger struct {
	kind       string
	what       string    // what happened, for people
	outlook    time.Time // when the job is realistically expected to start where it is
	outlookWhy string
}

// stayNote is the last stay decision of an attempt (hysteresis).
type stayNote struct {
	trigger  string
	alt      string
	altStart time.Time
	outlook  time.Time
	gap      time.Duration // how far the logged decision was from a move
	logged   time.Time     // when a stay was last written to the log
	checked  time.Time     // when the job was last weighed
	backoff  time.Duration // when an unchanged stay is logged again
}

// reestimate is the site's latest answer to "when would this job start".
type reestimate struct {
	at    time.Time
	start time.Time // zero if the site could not say
}

// reestimate asks the site again when its oldest-asked pending jobs would start (the
// drift trigger), at most maxEstimatesPerRound per round and each at most every
// ReestimateEvery. It runs in the site's own round and holds nothing.
func (e *Engine) reestimate(ctx context.Context, p provider.Provider, sys string, items []item) {
	now := e.now()
	type due struct {
		it   item
		last time.Time
	}
	var dues []due
	e.mu.Lock()
	for _, it := range items {
		a, t := it.a, it.t
		pol := policyOf(t)
		if a.State != model.JobPending || t.Target != nil || a.EstimatedStart == nil || !*pol.MigrateOnWait {
			continue
		}
		every := e.wallOf(sys, pol.ReestimateEvery.D())
		last := e.estimated[a.Tag].at
		if last.IsZero() {
			last = a.CreatedAt
		}
		if now.Sub(last) >= every {
			dues = append(dues, due{it, last})
		}
	}
	e.mu.Unlock()
	sort.Slice(dues, func(i, j int) bool { return dues[i].last.Before(dues[j].last) })
	for _, d := range dues[:min(len(dues), maxEstimatesPerRound)] {
		start, err := p.EstimateStart(ctx, d.it.a.Spec)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			e.o.Logger.Debug("re-estimating a pending job's start", "system", sys, "tag", d.it.a.Tag, "err", err)
			start = time.Time{}
		}
		e.mu.Lock()
		e.estimated[d.it.a.Tag] = reestimate{at: e.now(), start: start.UTC()}
		e.mu.Unlock()
	}
}

// triggers checks each open job of a site for a reason to weigh moving it; the weighing
// (which asks other sites) runs as the task's follow-up.
func (e *Engine) triggers(ctx context.Context, wg *sync.WaitGroup, snap *model.ResourceSnapshot, sys string, items []item) {
	var h model.SystemHealth
	var known bool
	if snap != nil {
		h, known = snap.System(sys)
	}
	now := e.now()
	weighed := map[string]bool{}
	defer func() {
		if !e.o.NoReplan && (!known || h.Health.Usable()) {
			e.startReplans(ctx, wg, items, weighed)
		}
	}()
	for _, it := range items {
		a, t := it.a, it.t
		pol := policyOf(t)
		down := known && !h.Health.Usable() && h.ConsecutiveBad >= pol.SiteDownTicks
		var tr *trigger
		switch {
		case down && (a.State == model.JobRunning || a.State == model.JobCompleting || a.State == model.JobSuspended):
			e.stayRunning(ctx, a, h, pol)
			continue
		case a.State != model.JobPending:
			continue
		case down:
			tr = e.downTrigger(a, h, pol, now)
		default:
			tr = e.waitTrigger(t, a, pol, now)
		}
		if tr == nil {
			continue
		}
		weighed[a.Tag] = true // a trigger's weighing, not replanning, looks at it
		if !e.dueForWeighing(a, tr.kind, pol, now) {
			continue
		}
		a, fire := a, *tr
		e.followUp(ctx, wg, a.TaskID, func(ctx context.Context) error { return e.weigh(ctx, a, fire) })
	}
}

// downTrigger: the site has been down for SiteDownTicks probes. Down for N probes is
// not a promise: the job is expected to start no sooner than DownOutlookFactor × the
// outage so far from now (nor before its placement estimate).
func (e *Engine) downTrigger(a *model.Attempt, h model.SystemHealth, pol model.Policy, now time.Time) *trigger {
	since := a.CreatedAt
	if !h.LastSuccess.IsZero() && h.LastSuccess.After(since) {
		since = h.LastSuccess
	}
	downFor := max(now.Sub(since), 0)
	outlook := now.Add(time.Duration(pol.DownOutlookFactor * float64(downFor)))
	if a.EstimatedStart != nil && a.EstimatedStart.After(outlook) {
		outlook = *a.EstimatedStart
	}
	why := fmt.Sprintf("%s down %s so far, so no sooner than %g× that from now", a.System, e.span(a.System, downFor), pol.DownOutlookFactor)
	what := fmt.Sprintf("%s has been %s for %d probes (%s so far)", a.System, h.Health, h.ConsecutiveBad, e.span(a.System, downFor))
	if h.LastError != "" {
		what += ": " + firstLine(h.LastError)
	}
	return &trigger{kind: trigSiteDown, what: what, outlook: outlook, outlookWhy: why}
}

// waitTrigger: the job queued past max_queue_wait (or the policy's limit derived from
// the placement's estimate), or the site's own new estimate drifted past that limit.
func (e *Engine) waitTrigger(t *store.TaskRow, a *model.Attempt, pol model.Policy, now time.Time) *trigger {
	sys := a.System
	waited := e.siteElapsed(sys, now.Sub(a.CreatedAt))
	var limit, placedWait time.Duration
	var source string
	if a.EstimatedStart != nil {
		placedWait = max(e.siteElapsed(sys, a.EstimatedStart.Sub(a.CreatedAt)), 0)
	}
	switch {
	case t.Envelope.MaxQueueWait > 0:
		limit, source = t.Envelope.MaxQueueWait.D(), "max_queue_wait"
	case a.EstimatedStart != nil:
		limit = pol.WaitLimit(placedWait)
		source = fmt.Sprintf("the default wait limit max(%g× the estimated %s, estimate + %s)", pol.WaitFactor, model.Duration(placedWait.Round(time.Second)), pol.WaitSlack)
	default:
		return nil // no limit and no estimate to derive one from
	}
	e.mu.Lock()
	re := e.estimated[a.Tag]
	e.mu.Unlock()
	fresh := !re.start.IsZero() && now.Sub(re.at) <= 2*e.wallOf(sys, pol.ReestimateEvery.D())
	if waited > limit {
		tr := &trigger{kind: trigWait, what: fmt.Sprintf("queued %s on %s, over %s %s", model.Duration(waited.Round(time.Second)), sys, source, model.Duration(limit.Round(time.Second)))}
		switch {
		case fresh:
			tr.outlook, tr.outlookWhy = re.start, sys+"'s own estimate"
		default:
			expected := a.CreatedAt
			if a.EstimatedStart != nil {
				expected = *a.EstimatedStart
			}
			if over := now.Sub(expected); over > 0 {
				since := "the placement's estimate"
				if a.EstimatedStart == nil {
					since = "submission (no estimate)"
				}
				tr.outlook = now.Add(time.Duration(pol.DownOutlookFactor * float64(over)))
				tr.outlookWhy = fmt.Sprintf("no fresh estimate from %s: %s past %s, so no sooner than %g× that from now", sys, e.span(sys, over), since, pol.DownOutlookFactor)
			} else {
				tr.outlook = expected
				tr.outlookWhy = fmt.Sprintf("no fresh estimate from %s: the placement's estimate", sys)
			}
		}
		return tr
	}
	if fresh && a.EstimatedStart != nil && t.Target == nil {
		// The site now says the job will start past its limit: act before the overrun.
		if newWait := e.siteElapsed(sys, re.start.Sub(a.CreatedAt)); newWait > limit {
			return &trigger{kind: trigDrift, outlook: re.start, outlookWhy: sys + "'s own estimate",
				what: fmt.Sprintf("%s now expects the job to start %s after submission, not %s as placed, past %s %s",
					sys, model.Duration(newWait.Round(time.Second)), model.Duration(placedWait.Round(time.Second)), source, model.Duration(limit.Round(time.Second)))}
		}
	}
	return nil
}

// dueForWeighing: a job is weighed when a trigger first fires (or changes kind), then
// at most every MigrateMargin while it persists (a change smaller than the margin
// cannot turn a stay into a move by itself).
func (e *Engine) dueForWeighing(a *model.Attempt, kind string, pol model.Policy, now time.Time) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	n, ok := e.stays[a.Tag]
	return !ok || n.trigger != kind || now.Sub(n.checked) >= e.wallOf(a.System, pol.MigrateMargin.D())
}

// family groups triggers about the same thing for hysteresis: a drift warning followed
// by the overrun it predicted is one story, not two.
func family(kind string) string {
	if kind == trigDrift {
		return trigWait
	}
	return kind
}

// oneLine joins a multi-line message into one line of at most n characters.
func oneLine(s string, n int) string {
	var parts []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			parts = append(parts, l)
		}
	}
	out := strings.Join(parts, "; ")
	if r := []rune(out); len(r) > n {
		out = string(r[:n]) + "…"
	}
	return out
}

// weigh decides, for one trigger, whether a pending job moves or stays, and logs the
// decision either way. The caller holds the task's lock.
func (e *Engine) weigh(ctx context.Context, seen *model.Attempt, tr trigger) error {
	t, a, ok := e.reread(ctx, seen)
	if !ok || a.State != model.JobPending || t.State.Final() {
		return nil
	}
	pol := policyOf(t)
	now := e.now()
	sys := a.System
	e.mu.Lock()
	n := e.stays[a.Tag]
	n.checked = now
	if family(n.trigger) != family(tr.kind) {
		n = stayNote{checked: now}
	}
	n.trigger = tr.kind
	e.stays[a.Tag] = n
	e.mu.Unlock()
	if t.Target != nil {
		how := fmt.Sprintf("mosaic replan %s --clear-target lets it move", t.ID)
		if t.CampaignRun != "" {
			how = "a campaign slice's job is never replanned; stop or relaunch campaign run " + t.CampaignRun + " to move it"
		}
		return e.stay(ctx, a, tr, pol, "", time.Time{}, "pinned: staying despite "+short(tr.kind),
			fmt.Sprintf("%s; the task is pinned to %s, so Mosaic does not move it (%s)", tr.what, t.Target.System, how))
	}
	if (tr.kind == trigWait || tr.kind == trigDrift) && !*pol.MigrateOnWait {
		return e.stay(ctx, a, tr, pol, "", time.Time{}, "stay on "+sys, tr.what+"; migrate_on_wait is off in the task's policy")
	}
	atts, err := e.o.Store.Attempts(ctx, t.ID)
	if err != nil {
		return err
	}
	h := historyOf(atts)
	if h.Migrations >= pol.MaxMigrations || h.Attempts >= pol.MaxAttempts {
		return e.stay(ctx, a, tr, pol, "", time.Time{}, "stay on "+sys,
			fmt.Sprintf("%s; the task's move budget is used up (%d of %d migrations, %d of %d attempts): waiting is better than failing",
				tr.what, h.Migrations, pol.MaxMigrations, h.Attempts, pol.MaxAttempts))
	}
	pl, err := e.o.Placer.Place(ctx, keepGrowth(&t.Task, a), excluded(atts, sys))
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return e.stay(ctx, a, tr, pol, "", time.Time{}, "stay on "+sys, tr.what+"; no other system can take it: "+oneLine(err.Error(), 400))
	}
	alt := pl.System + ":" + pl.Partition
	altStart, altNote := e.altEstimate(ctx, t, len(atts)+1, pl)
	if altStart.IsZero() {
		altStart, altNote = now, " (no estimate; taken as now)"
	}
	margin := e.wallOf(sys, pol.MigrateMargin.D())
	numbers := fmt.Sprintf("best alternative %s starts %s%s, current estimate %s (%s), margin %s%s",
		alt, e.in(sys, altStart.Sub(now)), altNote, e.in(sys, tr.outlook.Sub(now)), tr.outlookWhy, pol.MigrateMargin, e.clockNote(sys))
	if altStart.Add(margin).After(tr.outlook) {
		return e.stay(ctx, a, tr, pol, alt, altStart, "stay on "+sys, tr.what+"; "+numbers)
	}
	why := tr.what + "; " + numbers
	if err := e.o.Store.AppendEventsErr(ctx, ev(t.ID, a.N, sys, "continuation",
		fmt.Sprintf("migrate pending job %s: %s → %s", a.JobID, sys, alt), why, model.ActorRules)); err != nil {
		return err
	}
	e.continued("migrate")
	na, err := e.dispatch(ctx, t, len(atts)+1, pl, why+"; "+pl.Rationale)
	if err != nil || na == nil || na.JobID == "" {
		return err // the new job was not accepted: keep the old one
	}
	return e.cancelAttempt(ctx, a, "migrated to "+pl.System+" as attempt "+fmt.Sprint(na.N))
}

// altEstimate is when the alternative would start: its own scheduler's answer when it
// gives one (compared like with like against the current site's own estimate), else the
// placement's.
func (e *Engine) altEstimate(ctx context.Context, t *store.TaskRow, n int, pl *Placement) (time.Time, string) {
	if p, ok := e.o.Providers.Provider(pl.System); ok {
		spec := pl.Spec
		spec.Tag, spec.Name = model.JobTag(t.ID, n), t.Name
		spec.System, spec.Partition, spec.Account = pl.System, pl.Partition, pl.Account
		spec.Command, spec.Script = t.Command, t.Script
		cctx, cancel := context.WithTimeout(ctx, e.o.CancelTimeout)
		at, err := p.EstimateStart(cctx, spec)
		cancel()
		if err == nil && !at.IsZero() {
			return at.UTC(), " (" + pl.System + "'s own estimate)"
		}
	}
	if pl.EstimatedStart.IsZero() {
		return time.Time{}, ""
	}
	return pl.EstimatedStart, " (placement estimate)"
}

// keepGrowth is the task to replan when a pending job moves: an attempt that was resized
// (more walltime or memory after a timeout or OOM) moves at that size, not back at the
// envelope's minimum.
func keepGrowth(t *model.Task, a *model.Attempt) *model.Task {
	tt := *t
	env := tt.Envelope
	if w := a.Spec.Walltime; w > env.Walltime.Min && env.Walltime.Max > 0 && w <= env.Walltime.Max {
		env.Walltime.Min = w
	}
	if m := a.Spec.MemoryGB * max(a.Spec.Nodes, 1); m > env.MemoryGB.Min && env.MemoryGB.Max > 0 && m <= env.MemoryGB.Max {
		env.MemoryGB.Min = m
	}
	tt.Envelope = env
	return &tt
}

func short(kind string) string {
	switch kind {
	case trigSiteDown:
		return "the site outage"
	case trigDrift:
		return "the estimate drift"
	}
	return "wait overrun"
}

// stay logs a stay decision unless the same picture was logged recently: again only
// when the trigger, the best alternative, or a start moved by more than twice the
// margin, or after StayBackoff.
func (e *Engine) stay(ctx context.Context, a *model.Attempt, tr trigger, pol model.Policy, alt string, altStart time.Time, msg, why string) error {
	now := e.now()
	tol := 2 * e.wallOf(a.System, pol.MigrateMargin.D())
	// gap is how far the decision is from a move: the alternative's start plus the
	// margin, minus the current outlook (zero when there is no alternative).
	var gap time.Duration
	if !altStart.IsZero() {
		gap = altStart.Add(e.wallOf(a.System, pol.MigrateMargin.D())).Sub(tr.outlook)
	}
	e.mu.Lock()
	n := e.stays[a.Tag]
	backoff := n.backoff
	if backoff == 0 {
		backoff = e.wallOf(a.System, pol.StayBackoff.D())
	}
	changed := n.logged.IsZero() || family(n.trigger) != family(tr.kind) || n.alt != alt ||
		absDur(gap-n.gap) > max(tol, absDur(n.gap)/2)
	late := !changed && now.Sub(n.logged) >= backoff
	if changed || late {
		next := e.wallOf(a.System, pol.StayBackoff.D())
		if late {
			next = 2 * backoff // an unchanged picture is repeated ever more rarely
		}
		n = stayNote{trigger: tr.kind, alt: alt, altStart: altStart, outlook: tr.outlook, gap: gap, logged: now, checked: now, backoff: next}
		e.stays[a.Tag] = n
	}
	e.mu.Unlock()
	if !changed && !late {
		return nil
	}
	if !strings.HasPrefix(msg, "pinned") {
		msg += ": " + tr.kind
	}
	return e.o.Store.AppendEventsErr(ctx, ev(a.TaskID, a.N, a.System, "continuation", msg, why, model.ActorRules))
}

// stayRunning logs (once per outage, or after StayBackoff) that a running job on a down
// site is left alone.
func (e *Engine) stayRunning(ctx context.Context, a *model.Attempt, h model.SystemHealth, pol model.Policy) {
	tr := trigger{kind: trigDownRunning}
	why := fmt.Sprintf("%s has been %s for %d probes; an unreachable login node does not stop a running job, so Mosaic keeps following it (if it is gone once %s answers again, it is lost after lost_grace %s and the policy retries it)",
		a.System, h.Health, h.ConsecutiveBad, a.System, pol.LostGrace)
	if err := e.stay(ctx, a, tr, pol, "", time.Time{}, "stay on "+a.System, why); err != nil {
		e.o.Logger.Error("logging a stay decision", "tag", a.Tag, "err", err)
	}
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// span renders a wall-clock duration in the site's time.
func (e *Engine) span(sys string, d time.Duration) string {
	return model.Duration(e.siteElapsed(sys, d).Round(time.Second)).String()
}

// in renders "in 2h34m" (site time) or "now".
func (e *Engine) in(sys string, d time.Duration) string {
	if d <= 0 {
		return "now"
	}
	return "in " + e.span(sys, d)
}

// clockNote says when durations are simulated.
func (e *Engine) clockNote(sys string) string {
	if s := e.speed(sys); s != 1 {
		return fmt.Sprintf(" (simulated time, %g× the wall clock)", s)
	}
	return ""
}
