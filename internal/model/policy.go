package model

import (
	"fmt"
	"time"
)

// Policy is a task's continuation policy: what Mosaic does when an attempt fails, waits
// too long, or its site goes down. Zero fields take the defaults of DefaultPolicy.
type Policy struct {
	MaxAttempts     int      `json:"max_attempts,omitempty" yaml:"max_attempts,omitempty"`           // total attempts, all sites; default 4
	MaxMigrations   int      `json:"max_migrations,omitempty" yaml:"max_migrations,omitempty"`       // moves to another system; default 2
	RetryFailed     int      `json:"retry_failed,omitempty" yaml:"retry_failed,omitempty"`           // non-zero exit → retry in place this many times; default 1 (-1 = never)
	RetryTransient  *bool    `json:"retry_transient,omitempty" yaml:"retry_transient,omitempty"`     // NODE_FAIL, BOOT_FAIL, lost → retry in place; default true
	ResizeOnTimeout *bool    `json:"resize_on_timeout,omitempty" yaml:"resize_on_timeout,omitempty"` // TIMEOUT → more walltime within the envelope, else migrate; default true
	ResizeOnOOM     *bool    `json:"resize_on_oom,omitempty" yaml:"resize_on_oom,omitempty"`         // OUT_OF_MEMORY → more memory within the envelope; default true
	Growth          float64  `json:"growth,omitempty" yaml:"growth,omitempty"`                       // resize factor; default 2
	MigrateOnWait   *bool    `json:"migrate_on_wait,omitempty" yaml:"migrate_on_wait,omitempty"`     // queue wait overrun → replan elsewhere; default true
	WaitFactor      float64  `json:"wait_factor,omitempty" yaml:"wait_factor,omitempty"`             // overrun = wait > factor × estimate (when no max_queue_wait); default 3
	SiteDownTicks   int      `json:"site_down_ticks,omitempty" yaml:"site_down_ticks,omitempty"`     // circuit breaker: ticks a site must be down before pending jobs move; default 3
	LostGrace       Duration `json:"lost_grace,omitempty" yaml:"lost_grace,omitempty"`               // how long a job may be missing from the site before it is lost; default 2m
}

// DefaultPolicy returns the defaults.
func DefaultPolicy() Policy {
	t := true
	return Policy{MaxAttempts: 4, MaxMigrations: 2, RetryFailed: 1, RetryTransient: &t, ResizeOnTimeout: &t, ResizeOnOOM: &t,
		Growth: 2, MigrateOnWait: &t, WaitFactor: 3, SiteDownTicks: 3, LostGrace: Duration(2 * time.Minute)}
}

// WithDefaults fills zero fields from DefaultPolicy.
func (p Policy) WithDefaults() Policy {
	d := DefaultPolicy()
	if p.MaxAttempts == 0 {
		p.MaxAttempts = d.MaxAttempts
	}
	if p.MaxMigrations == 0 {
		p.MaxMigrations = d.MaxMigrations
	}
	if p.RetryFailed == 0 {
		p.RetryFailed = d.RetryFailed
	}
	if p.RetryTransient == nil {
		p.RetryTransient = d.RetryTransient
	}
	if p.ResizeOnTimeout == nil {
		p.ResizeOnTimeout = d.ResizeOnTimeout
	}
	if p.ResizeOnOOM == nil {
		p.ResizeOnOOM = d.ResizeOnOOM
	}
	if p.Growth == 0 {
		p.Growth = d.Growth
	}
	if p.MigrateOnWait == nil {
		p.MigrateOnWait = d.MigrateOnWait
	}
	if p.WaitFactor == 0 {
		p.WaitFactor = d.WaitFactor
	}
	if p.SiteDownTicks == 0 {
		p.SiteDownTicks = d.SiteDownTicks
	}
	if p.LostGrace == 0 {
		p.LostGrace = d.LostGrace
	}
	return p
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
	case p.SiteDownTicks < 0:
		return fmt.Errorf("policy.site_down_ticks: must not be negative")
	case p.LostGrace < 0:
		return fmt.Errorf("policy.lost_grace: must not be negative")
	}
	return nil
}
