package core

import "github.com/mosaic-hpc/mosaic/internal/metrics"

// Metrics returns the core's instruments: placement and probe latency, tasks by
// terminal state, continuations by action, exchange messages. Their Registry is
// the seam where other parts of the core register collectors; the API serves it at
// /metrics. Nil for a nil core.
func (c *Core) Metrics() *metrics.Metrics {
	if c == nil {
		return nil
	}
	return c.metrics
}
