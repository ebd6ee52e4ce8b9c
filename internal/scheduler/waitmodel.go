package scheduler

import (
	"context"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

// WaitModel corrects a site's own start estimate of a partition by what that
// partition's history says of its estimates (internal/waits.Learner implements it).
// Correct returns the corrected wait for the site's estimated wait est; with no
// history it returns est. It must be safe for concurrent use and cheap (it is called
// for every candidate with a site estimate).
type WaitModel interface {
	Correct(system, partition string, est time.Duration) time.Duration
}

// EstimateResult is one answer of a batched start estimate: the start, or why the
// site could not tell.
type EstimateResult struct {
	Start time.Time
	Err   error
}

// BatchEstimator is an Estimator that answers many specs of one system in one call
// (one sbatch --test-only per spec in one remote command, the simulator's planner on
// one locked model). With one, the heuristic ranker asks every feasible candidate,
// batched per system, up to MaxEstimates per system (DefaultSiteBatch when 0).
type BatchEstimator interface {
	Estimator
	// EstimateStarts returns one result per spec, in order (len(specs) results, or the
	// whole batch failed: the error is then every spec's). It must not keep specs
	// after it returns (the ranker reuses them).
	EstimateStarts(ctx context.Context, system string, specs []model.JobSpec) ([]EstimateResult, error)
}

// ConcurrentEstimator is a BatchEstimator whose systems are independent remote sites:
// the ranker asks them at the same time (one goroutine per system). An in-process
// estimator (the replay's models) is asked one system after another.
type ConcurrentEstimator interface {
	BatchEstimator
	ConcurrentBatches() bool
}

// DefaultSiteBatch is how many candidates of one system a batched estimate asks
// about per placement when MaxEstimates is 0.
const DefaultSiteBatch = 32
