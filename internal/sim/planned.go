package sim

import (
	"fmt"
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
	return c.planUntil(q, p, now, mine, fmt.Sprintf("job %d", id))
}
