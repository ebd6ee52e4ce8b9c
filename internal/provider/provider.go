// Package provider defines the contract every kind of site implements: the simulator
// (internal/provider/simprov) and real batch systems reached through a transport
// (internal/provider/hpc). The federation collector, the dispatcher and the monitor
// see only this interface.
package provider

import (
	"context"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/errs"
	"github.com/mosaic-hpc/mosaic/internal/model"
)

// The contract's sentinel errors live in the leaf package internal/errs, so that
// transports, auth and dialects below the contract can wrap them; these names are the
// same values, and errors.Is works with either.
var (
	// ErrUnsupported is returned by optional operations a provider cannot perform
	// (for example a start-time estimate on a scheduler without one).
	ErrUnsupported = errs.ErrUnsupported
	// ErrSiteDown is wrapped by errors that mean the site cannot be reached at all
	// (as opposed to refusing one request). The collector marks the system down.
	ErrSiteDown = errs.ErrSiteDown
	// ErrNeedsLogin is wrapped by errors that mean credentials are missing or expired.
	ErrNeedsLogin = errs.ErrNeedsLogin
	// ErrTransient marks a submit refusal that may go away by itself (the dialect
	// classified the scheduler's message); the dispatcher retries it.
	ErrTransient = errs.ErrTransient
	// ErrOutcomeUnknown marks a failure after which the site may have queued the job;
	// the dispatcher looks the job up by its tag before trying again.
	ErrOutcomeUnknown = errs.ErrOutcomeUnknown
)

// Provider is one system of the federation.
type Provider interface {
	// System is the catalog name, e.g. "Delta@NCSA".
	System() string
	// Kind is the provider kind: sim, ssh, local or globus.
	Kind() string
	// Endpoint is the login host, Globus endpoint id, or sim:// address.
	Endpoint() string

	// Probe reports every (partition, account) of the system.
	Probe(ctx context.Context) ([]model.ResourceRecord, error)
	// Submit hands a job to the batch system and returns its id.
	Submit(ctx context.Context, spec model.JobSpec) (jobID string, err error)
	// Status reports many jobs in one call. Ids the site does not know are absent
	// from the map (the caller decides when absence means lost).
	Status(ctx context.Context, jobIDs []string) (map[string]model.JobStatus, error)
	// Cancel asks the site to stop jobs. Unknown or finished ids are not an error.
	Cancel(ctx context.Context, jobIDs []string) error
	// EstimateStart asks the site when a job like spec would start; ErrUnsupported if it cannot tell.
	EstimateStart(ctx context.Context, spec model.JobSpec) (time.Time, error)
	// Logs returns the last tail bytes of a job's stdout and stderr.
	Logs(ctx context.Context, jobID string, tail int) (model.Logs, error)
}

// TagFinder is implemented by providers that can look jobs up by their Mosaic tag
// (the job name), used to reconcile after a crash.
type TagFinder interface {
	FindByTag(ctx context.Context, tags []string) (map[string]model.JobStatus, error)
}

// PendingCanceller is implemented by providers whose scheduler can cancel a job only
// if it is still queued, in one step: a job that started meanwhile is left running and
// is not an error (Slurm's `scancel --state=PENDING`; the simulator). A move uses it
// so that the old job is never killed after its command began; the caller asks the
// job's state afterwards to learn which happened.
type PendingCanceller interface {
	CancelPending(ctx context.Context, jobIDs []string) error
}

// LiveStatuser is implemented by providers that can report jobs as the scheduler's
// controller sees them now, beside Status's answer from accounting, which can lag
// behind by seconds (Slurm: squeue and scontrol, where Status is sacct). A move asks
// it right after cancelling its old job: sacct can still list a job PENDING that the
// controller already shows CANCELLED, or one that has started. ErrUnsupported when the
// site has no such listing (the caller falls back to Status). A job the controller no
// longer remembers (it ended longer ago than Slurm's MinJobAge) is absent.
type LiveStatuser interface {
	LiveStatus(ctx context.Context, jobIDs []string) (map[string]model.JobStatus, error)
}

// QueuedStarter is implemented by providers that can say when a job already queued is
// expected to start, in its own place in line (squeue --start; PBS's
// estimated.start_time; the simulator's plan). Zero time and no error: the scheduler
// has no estimate for it now. EstimateStart (a new job, queued last) is the fallback.
type QueuedStarter interface {
	QueuedStart(ctx context.Context, jobID string) (time.Time, error)
}

// Closer is implemented by providers holding processes or connections.
type Closer interface {
	Close() error
}
