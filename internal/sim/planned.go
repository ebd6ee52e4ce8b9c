package sim

import (
	"fmt"
	"math"
	"time"
)

// PlannedStart answers "when will this queued job start?" the way `squeue --start`
// does: it plans the partition's current queue forward on a copy, assuming every job
// runs to its requested walltime and nothing else arrives, and reports when job id
// starts. Unlike EstimateStart (a new job queued last) the job keeps its place in
// line. A running job reports its start. The model itself is not changed.
func (c *Cluster) PlannedStart(id int64) (time.Time, error) {
	j, ok := c.jobs[id]
	if !ok {
		return time.Time{}, fmt.Errorf("sim %s: job %d: %w", c.cfg.Name, id, ErrUnknownJob)
	}
	switch {
	case j.state == Running:
		return c.epoch.Add(j.start), nil
	case j.state != Pending:
		return time.Time{}, fmt.Errorf("sim %s: job %d ended (%s) before it started: %w", c.cfg.Name, id, j.state, ErrNoEstimate)
	}
	p := j.part
	now := c.outageEnd(c.now)
	q := c.estimateCopy(p)
	var mine *job
	for _, x := range q.queue {
		if x.id == id {
			mine = x
			break
		}
	}
	if mine == nil {
		return time.Time{}, fmt.Errorf("sim %s: job %d is not in partition %s's queue: %w", c.cfg.Name, id, p.cfg.Name, ErrNoEstimate)
	}
	for range estimateMaxIterations {
		q.schedule(now, c.cfg.BackfillDepth)
		if mine.state == Running {
			return c.epoch.Add(now), nil
		}
		next := time.Duration(math.MaxInt64)
		for _, r := range q.running {
			next = min(next, r.expEnd())
		}
		for i := range q.nodes {
			if q.nodes[i].down && q.nodes[i].upAt > 0 {
				next = min(next, q.nodes[i].upAt)
			}
		}
		if next == math.MaxInt64 {
			return time.Time{}, fmt.Errorf("sim %s: %w: partition %s cannot fit job %d with the nodes it has up", c.cfg.Name, ErrNoEstimate, p.cfg.Name, id)
		}
		now = c.outageEnd(max(next, now))
		kept := q.running[:0]
		for _, r := range q.running {
			if r.expEnd() <= now {
				give(q.nodes, r, r.alloc)
				continue
			}
			kept = append(kept, r)
		}
		q.running = kept
		for i := range q.nodes {
			if q.nodes[i].down && q.nodes[i].upAt > 0 && q.nodes[i].upAt <= now {
				q.nodes[i] = node{cores: p.cfg.CoresPerNode, gpus: p.cfg.GPUsPerNode, mem: p.cfg.MemGBPerNode}
			}
		}
	}
	return time.Time{}, fmt.Errorf("sim %s: %w: gave up after %d planning steps", c.cfg.Name, ErrNoEstimate, estimateMaxIterations)
}
