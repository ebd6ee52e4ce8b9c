package model

import (
	"fmt"
	"time"
)

// Policy is a task's continuation policy: what Mosaic does when an attempt fails, waits
// too long, or its site goes down. Zero fields take the defaults of DefaultPolicy.
//
// This is the one place the continuation thresholds live; docs/EXECUTION.md shows the
// trigger → decision table built from them. Durations are in the site's own time (a
// simulated site's clock runs faster than the wall clock).
//
// Triggers and their thresholds:
//   - a job ends badly (failed, timeout, out of memory, node failure, lost): retry,
//     resize or migrate within MaxAttempts and MaxMigrations;
//   - a pending job's site is down for SiteDownTicks probes in a row: its realistic
//     outlook is max(the placement's estimate, now + DownOutlookFactor × the outage so
//     far), weighed against the best other system;
//   - a pending job waits longer than the envelope's max_queue_wait, or else than
//     WaitLimit(estimated wait) = max(WaitFactor × estimate, estimate + WaitSlack);
//   - the site's own estimate for the job (asked again every ReestimateEvery) drifts
//     past that same limit (max_queue_wait or WaitLimit): Mosaic acts before the overrun.
//
// A move happens only if the best alternative starts at least MigrateMargin before the
// current outlook; otherwise the task stays and an event says why. While a trigger
// persists the job is weighed again at most every MigrateMargin. A stay is logged
// again only when the picture changes materially (the best alternative changes, or the
// distance from a move changes by more than max(2 × MigrateMargin, half of itself)),
// or else after StayBackoff, doubling each time.
type Policy struct {
	MaxAttempts     int      `json:"max_attempts,omitempty" yaml:"max_attempts,omitempty"`           // total attempts, all sites; default 4
	MaxMigrations   int      `json:"max_migrations,omitempty" yaml:"max_migrations,omitempty"`       // moves to another system; default 2
	RetryFailed     int      `json:"retry_failed,omitempty" yaml:"retry_failed,omitempty"`           // non-zero exit → retry in place this many times; default 1 (-1 = never)
	RetryTransient  *bool    `json:"retry_transient,omitempty" yaml:"retry_transient,omitempty"`     // NODE_FAIL, BOOT_FAIL, lost → retry in place; default true
	ResizeOnTimeout *bool    `json:"resize_on_timeout,omitempty" yaml:"resize_on_timeout,omitempty"` // TIMEOUT → the rest of the envelope's walltime, else migrate; default true
	ResizeOnOOM     *bool    `json:"resize_on_oom,omitempty" yaml:"resize_on_oom,omitempty"`         // OUT_OF_MEMORY → more memory within the envelope; default true
	Growth          float64  `json:"growth,omitempty" yaml:"growth,omitempty"`                       // memory resize factor; default 2
	MigrateOnWait   *bool    `json:"migrate_on_wait,omitempty" yaml:"migrate_on_wait,omitempty"`     // queue wait overrun → replan elsewhere; default true
	WaitFactor      float64  `json:"wait_factor,omitempty" yaml:"wait_factor,omitempty"`             // default wait limit = max(factor × estimate, estimate + wait_slack); default 3
	WaitSlack       Duration `json:"wait_slack,omitempty" yaml:"wait_slack,omitempty"`               // see wait_factor; default 30m
	SiteDownTicks   int      `json:"site_down_ticks,omitempty" yaml:"site_down_ticks,omitempty"`     // circuit breaker: probes a site must be down before its pending jobs are weighed; default 3
	LostGrace       Duration `json:"lost_grace,omitempty" yaml:"lost_grace,omitempty"`               // how long a job may be missing from the site before it is lost; default 2m
	// DownOutlookFactor k: a site down for D is expected to start the job no sooner
	// than now + k × D (down for N probes is not a promise); default 2.
	DownOutlookFactor float64 `json:"down_outlook_factor,omitempty" yaml:"down_outlook_factor,omitempty"`
	// MigrateMargin: move only if the alternative starts at least this much sooner
	// than the current outlook (a move costs a new queue position); default 15m.
	MigrateMargin Duration `json:"migrate_margin,omitempty" yaml:"migrate_margin,omitempty"`
	// ReestimateEvery: how often the site is asked again when a pending job would
	// start (the drift trigger); default 15m.
	ReestimateEvery Duration `json:"reestimate_every,omitempty" yaml:"reestimate_every,omitempty"`
	// StayBackoff: an unchanged stay decision is logged again after this long; default 1h.
	StayBackoff Duration `json:"stay_backoff,omitempty" yaml:"stay_backoff,omitempty"`
}

// DefaultPolicy returns the defaults.
func DefaultPolicy() Policy {
	t := true
	return Policy{MaxAttempts: 4, MaxMigrations: 2, RetryFailed: 1, RetryTransient: &t, ResizeOnTimeout: &t, ResizeOnOOM: &t,
		Growth: 2, MigrateOnWait: &t, WaitFactor: 3, WaitSlack: Duration(30 * time.Minute), SiteDownTicks: 3,
		LostGrace: Duration(2 * time.Minute), DownOutlookFactor: 2, MigrateMargin: Duration(15 * time.Minute),
		ReestimateEvery: Duration(15 * time.Minute), StayBackoff: Duration(time.Hour)}
}

// WithDefaults fills zero fields from DefaultPolicy.
func (p Policy) WithDefaults() Policy {
	d := DefaultPolicy()
	fillZero(&p.MaxAttempts, d.MaxAttempts)
	fillZero(&p.MaxMigrations, d.MaxMigrations)
	fillZero(&p.RetryFailed, d.RetryFailed)
	fillZero(&p.RetryTransient, d.RetryTransient)
	fillZero(&p.ResizeOnTimeout, d.ResizeOnTimeout)
	fillZero(&p.ResizeOnOOM, d.ResizeOnOOM)
	fillZero(&p.Growth, d.Growth)
	fillZero(&p.MigrateOnWait, d.MigrateOnWait)
	fillZero(&p.WaitFactor, d.WaitFactor)
	fillZero(&p.WaitSlack, d.WaitSlack)
	fillZero(&p.SiteDownTicks, d.SiteDownTicks)
	fillZero(&p.LostGrace, d.LostGrace)
	fillZero(&p.DownOutlookFactor, d.DownOutlookFactor)
	fillZero(&p.MigrateMargin, d.MigrateMargin)
	fillZero(&p.ReestimateEvery, d.ReestimateEvery)
	fillZero(&p.StayBackoff, d.StayBackoff)
	return p
}

// fillZero sets *v to def when *v is its type's zero value (0, nil).
func fillZero[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}

// WaitLimit is the default queue-wait limit of a job whose placement estimated it would
// wait est: max(WaitFactor × est, est + WaitSlack). Call it on a policy with defaults.
func (p Policy) WaitLimit(est time.Duration) time.Duration {
	est = max(est, 0)
	return max(time.Duration(p.WaitFactor*float64(est)), est+p.WaitSlack.D())
}

// Validate refuses nonsensical policies, naming the field.
func (p Policy) Validate() error {
	switch {
	case p.MaxAttempts < 0 || p.MaxAttempts > 100:
		return fmt.Errorf("policy.max_attempts: want 1–100, got %d", p.MaxAttempts)
	case p.RetryFailed < -1 || p.RetryFailed > 10:
		return fmt.Errorf("policy.retry_failed: want -1 (never) to 10, got %d", p.RetryFailed)
	case p.MaxMigrations < 0 || p.MaxMigrations > 100:
		return fmt.Errorf("policy.max_migrations: want 0–100, got %d", p.MaxMigrations)
	case p.Growth != 0 && (p.Growth <= 1 || p.Growth > 16):
		return fmt.Errorf("policy.growth: want a factor above 1 and at most 16, got %g", p.Growth)
	case p.WaitFactor != 0 && p.WaitFactor < 1:
		return fmt.Errorf("policy.wait_factor: want at least 1, got %g", p.WaitFactor)
	case p.WaitSlack < 0:
		return fmt.Errorf("policy.wait_slack: must not be negative")
	case p.SiteDownTicks < 0:
		return fmt.Errorf("policy.site_down_ticks: must not be negative")
	case p.LostGrace < 0:
		return fmt.Errorf("policy.lost_grace: must not be negative")
	case p.DownOutlookFactor != 0 && (p.DownOutlookFactor < 1 || p.DownOutlookFactor > 100):
		return fmt.Errorf("policy.down_outlook_factor: want 1–100, got %g", p.DownOutlookFactor)
	case p.MigrateMargin < 0:
		return fmt.Errorf("policy.migrate_margin: must not be negative")
	case p.ReestimateEvery < 0:
		return fmt.Errorf("policy.reestimate_every: must not be negative")
	case p.StayBackoff < 0:
		return fmt.Errorf("policy.stay_backoff: must not be negative")
	}
	return nil
}
