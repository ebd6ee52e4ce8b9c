package scheduler

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

// Replanning: while a job waits in a queue, Mosaic looks again (periodically, not only
// when its wait overruns) whether another feasible site would start it clearly sooner,
// and if so moves it: the new job is submitted first, the old one cancelled only once
// the new one is accepted. Replan is the one decision both the live engine
// (internal/execution) and the trace replay (internal/replay) take; they differ only in
// how they gather its inputs and carry out a move.

// ReplanConfig holds the thresholds of the decision. The zero value means the defaults
// (DefaultReplanConfig); durations are in the site's time.
type ReplanConfig struct {
	// MinGain: an alternative must start at least this much sooner than the current
	// site's refreshed estimate (absolute threshold); default 10m. For a job whose
	// requested walltime is known it scales with the job (GainFor): min(MinGain,
	// MinGainShare × walltime), never below MinGainFloor.
	MinGain time.Duration
	// MinGainShare is the share of the job's requested walltime the absolute threshold
	// shrinks to for short jobs; default 0.25 (a move must win back at least a quarter
	// of the job's own length).
	MinGainShare float64
	// MinGainFloor is the least absolute threshold however short the job: what a move
	// costs (a submit and a cancel, a few site round trips); default 5s.
	MinGainFloor time.Duration
	// EveryShare: a waiting job is weighed again after min(the caller's interval,
	// EveryShare × the wait its site still expects), never sooner than EveryFloor
	// (CheckEvery); default 0.1, so a job is weighed about ten times while it waits.
	EveryShare float64
	// EveryFloor is the shortest interval between two weighings of one job; default 5s.
	EveryFloor time.Duration
	// MinGainRatio: ... and sooner by at least this share of the current remaining wait
	// (relative threshold: 0.3 = 30% earlier); default 0.3.
	MinGainRatio float64
	// Confirm: the same alternative must clear both thresholds on this many consecutive
	// checks before the job moves (hysteresis against a one-off estimate); default 2.
	Confirm int
	// MaxMoves: moves per task (its move budget); default 2.
	MaxMoves int
	// BackFactor: a move back to a system the task has already left needs this many
	// times both thresholds (no ping-pong between two sites); default 2.
	BackFactor float64
	// MaxAge: an estimate older than this is stale and is not decided on (the caller
	// refreshes it first); default 30m.
	MaxAge time.Duration
}

// DefaultReplanConfig returns the measured defaults (docs/PLACEMENT.md, "Replanning").
func DefaultReplanConfig() ReplanConfig {
	return ReplanConfig{MinGain: 10 * time.Minute, MinGainShare: 0.25, MinGainFloor: 5 * time.Second,
		EveryShare: 0.1, EveryFloor: 5 * time.Second,
		MinGainRatio: 0.3, Confirm: 2, MaxMoves: 2, BackFactor: 2, MaxAge: 30 * time.Minute}
}

// GainFor is the absolute threshold for a job of the given requested walltime (site
// time; 0 = unknown: MinGain): min(MinGain, MinGainShare × walltime), at least
// MinGainFloor. A fixed 10 minutes is a fair price for moving a job that runs for hours
// and waits for hours, but a job of a one-minute limit never waits that long, so a fixed
// threshold would never let it move (docs/PLACEMENT.md, "Scale-aware replanning").
// Call it on a config with defaults.
func (c ReplanConfig) GainFor(walltime time.Duration) time.Duration {
	if walltime <= 0 {
		return c.MinGain
	}
	return clampDur(time.Duration(c.MinGainShare*float64(walltime)), c.MinGainFloor, c.MinGain)
}

// CheckEvery is how long a waiting job whose current site expects it to start in wait
// (site time; negative: unknown) is left before it is weighed again, when the caller's
// interval is every: EveryShare × wait, held within [EveryFloor, every]; unknown:
// every. A job is thus weighed about 1/EveryShare times over the wait it still expects,
// whether that is an hour or a minute, and its confirming second check comes while it
// still waits. (The job's walltime is no measure of this: a short job can wait for hours
// behind long ones, and weighing it every minute there made the replays worse;
// docs/PLACEMENT.md, "Scale-aware replanning".) The engine and the replay both schedule
// their checks with it. Call it on a config with defaults.
func (c ReplanConfig) CheckEvery(every, wait time.Duration) time.Duration {
	if wait < 0 {
		return every
	}
	return clampDur(time.Duration(c.EveryShare*float64(wait)), min(c.EveryFloor, every), every)
}

// clampDur is d held within [lo, hi] (hi wins when lo > hi).
func clampDur(d, lo, hi time.Duration) time.Duration {
	return min(max(d, lo), hi)
}

// WithDefaults fills zero fields from DefaultReplanConfig.
func (c ReplanConfig) WithDefaults() ReplanConfig {
	d := DefaultReplanConfig()
	for _, f := range []struct{ v, def *time.Duration }{{&c.MinGain, &d.MinGain}, {&c.MinGainFloor, &d.MinGainFloor}, {&c.EveryFloor, &d.EveryFloor}, {&c.MaxAge, &d.MaxAge}} {
		unsetTo(f.v, *f.def)
	}
	for _, f := range []struct{ v, def *float64 }{{&c.MinGainShare, &d.MinGainShare}, {&c.EveryShare, &d.EveryShare}, {&c.MinGainRatio, &d.MinGainRatio}} {
		unsetTo(f.v, *f.def)
	}
	unsetTo(&c.Confirm, d.Confirm)
	unsetTo(&c.MaxMoves, d.MaxMoves)
	if c.BackFactor < 1 {
		c.BackFactor = d.BackFactor
	}
	return c
}

// unsetTo sets *v to def when *v is not positive (unset).
func unsetTo[T int | float64 | time.Duration](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}

// ReplanOption is one placement with its estimated start.
type ReplanOption struct {
	System    string
	Partition string
	// Start is the estimated start (zero: unknown).
	Start time.Time
	// At is when the estimate was made (zero: unknown, i.e. stale).
	At time.Time
	// Source says where the estimate comes from ("Alpha's own estimate").
	Source string
}

// Key is "system:partition".
func (o ReplanOption) Key() string { return o.System + ":" + o.Partition }

// ReplanInput is everything the decision looks at.
type ReplanInput struct {
	Now time.Time
	// Current is the job's placement with the current site's refreshed estimate of when
	// the queued job starts.
	Current ReplanOption
	// Alternatives are the feasible placements elsewhere (the rule chain's feasible set,
	// in the ranker's order) with their estimates.
	Alternatives []ReplanOption
	// Moves is how many times the task has moved already; Left the systems it moved
	// away from.
	Moves int
	Left  []string
	// Streak is on how many consecutive earlier checks StreakTo (an option's Key) was
	// the best alternative clearing the thresholds (from the previous decision).
	Streak   int
	StreakTo string
	// Walltime is the queued job's requested walltime in site time (0: unknown); the
	// absolute threshold scales with it (ReplanConfig.GainFor).
	Walltime time.Duration
	// Speed is the site's clock rate relative to the inputs' clock (1, or 0, for real
	// sites; 60 for a simulator at 60×): thresholds are in site time, and durations in
	// the reason are shown in site time.
	Speed float64
}

// ReplanRow is one line of the decision's candidate table.
type ReplanRow struct {
	Option  ReplanOption
	Gain    time.Duration // how much sooner than the current estimate (site time)
	Need    time.Duration // the gain it needed (site time)
	Verdict string
}

// ReplanDecision is the outcome: stay, or move to To.
type ReplanDecision struct {
	Move bool
	// To is the best alternative that cleared both thresholds this check (set also when
	// the job stays only because the advantage is not confirmed yet).
	To *ReplanOption
	// Streak is the new streak for To (0 when no alternative cleared the thresholds):
	// the caller passes it, with To's Key, to the next check.
	Streak int
	Gain   time.Duration // To's gain (site time)
	Reason string        // one line with the numbers
	Table  []ReplanRow   // current first, then every alternative with its verdict
}

// TableText renders the candidate table on one line per option.
func (d ReplanDecision) TableText(now time.Time, speed float64) string {
	var b strings.Builder
	for i, r := range d.Table {
		if i > 0 {
			b.WriteString("; ")
		}
		start := "unknown"
		if !r.Option.Start.IsZero() {
			start = "in " + siteDur(r.Option.Start.Sub(now), speed)
		}
		fmt.Fprintf(&b, "%s %s", r.Option.Key(), start)
		if r.Option.Source != "" {
			fmt.Fprintf(&b, " (%s)", r.Option.Source)
		}
		fmt.Fprintf(&b, ": %s", r.Verdict)
	}
	return b.String()
}

// Replan decides whether a pending job moves. It never gives up a place in line for one
// that is not clearly better: the alternative must start at least max(MinGain,
// MinGainRatio × the current remaining wait) sooner (BackFactor times that to a system
// the task left; MinGain scaled to the job's walltime by GainFor), on Confirm consecutive checks, within the move budget, and only on
// fresh estimates. Ties stay; among alternatives with the same gain the ranker's first
// wins.
func Replan(in ReplanInput, cfg ReplanConfig) ReplanDecision {
	cfg = cfg.WithDefaults()
	speed := in.Speed
	if speed <= 0 {
		speed = 1
	}
	site := func(d time.Duration) time.Duration { return time.Duration(float64(d) * speed) }
	cur := in.Current
	d := ReplanDecision{}
	remaining := site(cur.Start.Sub(in.Now))
	curVerdict := "current"
	stale := func(o ReplanOption) bool {
		return o.Start.IsZero() || o.At.IsZero() || site(in.Now.Sub(o.At)) > cfg.MaxAge
	}
	switch {
	case in.Moves >= cfg.MaxMoves:
		curVerdict = "current (move budget used up)"
	case stale(cur):
		curVerdict = "current (estimate stale or unknown)"
	case remaining <= 0:
		curVerdict = "current (starts now)"
	}
	d.Table = append(d.Table, ReplanRow{Option: cur, Verdict: curVerdict})
	if curVerdict != "current" {
		for _, a := range in.Alternatives {
			d.Table = append(d.Table, ReplanRow{Option: a, Verdict: "not weighed"})
		}
		switch {
		case in.Moves >= cfg.MaxMoves:
			d.Reason = fmt.Sprintf("stay on %s: the task has moved %d times, its move budget is %d", cur.Key(), in.Moves, cfg.MaxMoves)
		case stale(cur):
			d.Reason = fmt.Sprintf("stay on %s: its own estimate is stale or unknown (older than %s); refresh it before weighing a move", cur.Key(), model.Duration(cfg.MaxAge))
		default:
			d.Reason = fmt.Sprintf("stay on %s: it is expected to start now; keep its place in line", cur.Key())
		}
		return d
	}
	minGain := cfg.GainFor(in.Walltime)
	base := max(minGain, time.Duration(cfg.MinGainRatio*float64(remaining)))
	best := -1
	for _, a := range in.Alternatives {
		row := ReplanRow{Option: a}
		need := base
		back := slices.Contains(in.Left, a.System)
		if back {
			need = time.Duration(cfg.BackFactor * float64(base))
		}
		row.Need = need
		switch {
		case a.System == cur.System && a.Partition == cur.Partition:
			row.Verdict = "the current placement"
		case stale(a):
			row.Verdict = "estimate stale or unknown"
		default:
			start := a.Start
			if start.Before(in.Now) {
				start = in.Now
			}
			row.Gain = site(cur.Start.Sub(start))
			switch {
			case row.Gain <= 0:
				row.Verdict = "not sooner"
			case row.Gain < need:
				row.Verdict = fmt.Sprintf("%s sooner, below the %s needed", siteDur(row.Gain, 1), siteDur(need, 1))
				if back {
					row.Verdict += fmt.Sprintf(" (a system the task left: %g× the threshold)", cfg.BackFactor)
				}
			default:
				row.Verdict = fmt.Sprintf("%s sooner, clears the %s needed", siteDur(row.Gain, 1), siteDur(need, 1))
				if best < 0 || row.Gain > d.Table[best].Gain {
					best = len(d.Table)
				}
			}
		}
		d.Table = append(d.Table, row)
	}
	gainText := model.Duration(minGain).String()
	if minGain != cfg.MinGain {
		gainText += fmt.Sprintf(" (for a %s walltime)", siteDur(in.Walltime, 1))
	}
	thresholds := fmt.Sprintf("thresholds max(%s, %g%% of the %s wait left) = %s", gainText, cfg.MinGainRatio*100, siteDur(remaining, 1), siteDur(base, 1))
	curText := fmt.Sprintf("%s expected to start in %s", cur.Key(), siteDur(remaining, 1))
	if cur.Source != "" {
		curText += " (" + cur.Source + ")"
	}
	if best < 0 {
		alt := "no alternative"
		if len(in.Alternatives) > 0 {
			alt = "no alternative clears them"
		}
		d.Reason = fmt.Sprintf("stay on %s: %s; %s", cur.Key(), curText, thresholds) + "; " + alt
		return d
	}
	row := &d.Table[best]
	to := row.Option
	d.To, d.Gain = &to, row.Gain
	d.Streak = 1
	if in.StreakTo == to.Key() {
		d.Streak = in.Streak + 1
	}
	altText := fmt.Sprintf("%s in %s", to.Key(), siteDur(site(max(to.Start.Sub(in.Now), 0)), 1))
	if to.Source != "" {
		altText += " (" + to.Source + ")"
	}
	if d.Streak < cfg.Confirm {
		row.Verdict += fmt.Sprintf("; seen on %d of %d consecutive checks", d.Streak, cfg.Confirm)
		d.Reason = fmt.Sprintf("stay on %s for now: %s; %s is %s sooner (%s), on %d of the %d consecutive checks a move needs",
			cur.Key(), curText, altText, siteDur(d.Gain, 1), thresholds, d.Streak, cfg.Confirm)
		return d
	}
	d.Move = true
	row.Verdict += "; chosen"
	d.Reason = fmt.Sprintf("move %s → %s: %s; %s is %s sooner (%s), on %d consecutive checks; move %d of %d",
		cur.Key(), to.Key(), curText, altText, siteDur(d.Gain, 1), thresholds, d.Streak, in.Moves+1, cfg.MaxMoves)
	return d
}

// siteDur renders d (scaled by speed) rounded to the second.
func siteDur(d time.Duration, speed float64) string {
	if speed > 0 && speed != 1 {
		d = time.Duration(float64(d) * speed)
	}
	if d < 0 {
		d = 0
	}
	return model.Duration(d.Round(time.Second)).String()
}
