package core

import (
	"context"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/provider"
	"github.com/mosaic-hpc/mosaic/internal/scheduler"
	"github.com/mosaic-hpc/mosaic/internal/waits"
)

// waitHistoryLoad is how many of the store's latest started attempts feed the learner
// of site-estimate errors at start (its windows keep fewer per partition).
const waitHistoryLoad = 20000

// loadWaitHistory feeds the learner the store's history of predicted against
// observed starts; a store that cannot be read leaves it cold (no correction).
func (c *Core) loadWaitHistory(ctx context.Context) {
	if c.store == nil || c.waits == nil {
		return
	}
	obs, err := c.store.StartHistory(ctx, waitHistoryLoad)
	if err != nil {
		c.log.Warn("start-estimate history not loaded; site estimates are used uncorrected until attempts start", "err", err)
		return
	}
	for _, o := range obs {
		c.learnStart(o.System, o.Partition, o.Created, o.Estimated, o.Started)
	}
}

// observeStart is the execution engine's hook for an attempt seen starting.
func (c *Core) observeStart(a *model.Attempt, started time.Time) {
	if a == nil || a.EstimatedStart == nil || c.waits == nil {
		return
	}
	c.learnStart(a.System, a.Partition, a.CreatedAt, *a.EstimatedStart, started)
}

// learnStart feeds one attempt to the learner, its waits in the site's time (a
// simulated site runs faster than the wall clock; its estimates are in its own time).
func (c *Core) learnStart(system, partition string, created, est, started time.Time) {
	speed := 1.0
	if p, ok := c.collector.Provider(system); ok {
		speed = speedOf(p)
	}
	site := func(d time.Duration) time.Duration { return time.Duration(float64(d) * speed) }
	c.waits.Observe(system, partition, site(est.Sub(created)), site(started.Sub(created)))
}

// ConcurrentBatches implements scheduler.ConcurrentEstimator: the systems are
// separate sites (separate connections), asked at the same time.
func (estimator) ConcurrentBatches() bool { return true }

// estimatorBudget is how many single estimates the core's estimator asks of a
// provider that cannot batch them, per system and placement (the old MaxEstimates).
const estimatorBudget = 8

// EstimateStarts implements scheduler.BatchEstimator: one batch per system when the
// provider batches (provider.BatchEstimator), else at most estimatorBudget single
// estimates (the rest are left to the queue model).
func (e estimator) EstimateStarts(ctx context.Context, system string, specs []model.JobSpec) ([]scheduler.EstimateResult, error) {
	p, ok := e.c.collector.Provider(system)
	if !ok {
		return nil, errUnknownSystem(system)
	}
	out := make([]scheduler.EstimateResult, len(specs))
	if be, ok := p.(provider.BatchEstimator); ok {
		res, err := be.EstimateStarts(ctx, specs)
		if err != nil {
			return nil, err
		}
		now := e.c.clock()
		for i := range out {
			if i < len(res) {
				out[i] = scheduler.EstimateResult{Start: siteTime(p, now, res[i].Start), Err: res[i].Err}
			} else {
				out[i].Err = errShortBatch
			}
		}
		return out, nil
	}
	for i := range specs {
		if i >= estimatorBudget {
			out[i].Err = provider.ErrUnsupported
			continue
		}
		out[i].Start, out[i].Err = e.EstimateStart(ctx, system, specs[i])
	}
	return out, nil
}

var errShortBatch = waitsError("the site answered fewer estimates than it was asked")

type waitsError string

func (e waitsError) Error() string { return string(e) }

func errUnknownSystem(system string) error { return waitsError("unknown system " + system) }

// newWaitLearner is the core's learner of site-estimate errors, default options.
func newWaitLearner() *waits.Learner { return waits.New(waits.Options{}) }
