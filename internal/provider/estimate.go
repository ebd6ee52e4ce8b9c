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
