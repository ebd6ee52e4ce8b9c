package provider

import (
	"context"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

// Estimate is one answer of EstimateStarts: when the job would start, or why the
// site cannot tell.
type Estimate struct {
	Start time.Time
	Err   error
}

// BatchEstimator is implemented by providers that answer many start estimates in one
// call: the simulator plans them on one locked model; a Slurm site runs one
// `sbatch --test-only` per spec in one remote command. The scheduler asks every
// feasible candidate of a system this way, once per placement.
type BatchEstimator interface {
	// EstimateStarts returns one Estimate per spec, in order. An error means the
	// whole batch failed (the site is unreachable, say); a spec the site refuses has
	// its own Err.
	EstimateStarts(ctx context.Context, specs []model.JobSpec) ([]Estimate, error)
}

// SubmissionExpecter is implemented by providers whose estimates count this core's own
// submissions that the site does not list yet (hpc: its queue plan). The core
// announces a job the moment it decides on it, before storing and dispatching it (a
// few hundred milliseconds on a real site), so that a placement made meanwhile does
// not see the same idle GPUs. release drops the announcement, unless a Submit with
// the same tag has taken it over (then the submission's own record stands).
type SubmissionExpecter interface {
	ExpectSubmit(spec model.JobSpec) (release func())
}
