package sim

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// ErrNoEstimate means the what-if planner could not find a start time within its
// bounds (for example nodes that never come back).
var ErrNoEstimate = errors.New("no start-time estimate")

// EstimateStart answers "when would a job like req start if submitted now?" the way
// `sbatch --test-only` does: it plans the current queue forward on a copy of the
// partition, assuming every job runs to its requested walltime and nothing else
// arrives, with req queued last. The model itself is not changed.
func (c *Cluster) EstimateStart(req JobRequest) (time.Time, error) {
	req.External = true
	req, err := c.Check(req)
	if err != nil {
		return time.Time{}, err
	}
	p := c.byName[req.Partition]
	now := c.outageEnd(c.now)

	q := c.estimateCopy(p)
	probe := &q.slab[len(q.slab)-1]
	*probe = job{id: -1, req: req, part: &q.partition, state: Pending, dc: req.CoresPerNode, dg: req.GPUsPerNode, dm: req.MemGBPerNode}
	if p.cfg.Exclusive {
		probe.dc, probe.dg, probe.dm = p.cfg.CoresPerNode, p.cfg.GPUsPerNode, p.cfg.MemGBPerNode
	}
	probe.req.User = true
	q.queue = append(q.queue, probe)

	return c.planUntil(q, p, now, probe, "the job")
}

// planUntil plans q (the scratch copy of p) forward from now, as if every running job
// used its full walltime and nothing else arrived, until target starts, and returns
// when; what names target in errors. EstimateStart and PlannedStart share it.
func (c *Cluster) planUntil(q *estimatePart, p *partition, now time.Duration, target *job, what string) (time.Time, error) {
	for range estimateMaxIterations {
		q.schedule(now, c.cfg.BackfillDepth)
		if target.state == Running {
			return c.epoch.Add(now), nil
		}
		next := time.Duration(math.MaxInt64)
		for _, j := range q.running {
			next = min(next, j.expEnd())
		}
		for i := range q.nodes {
			if q.nodes[i].down && q.nodes[i].upAt > 0 {
				next = min(next, q.nodes[i].upAt)
			}
		}
		if next == math.MaxInt64 {
			return time.Time{}, fmt.Errorf("sim %s: %w: partition %s cannot fit %s with the nodes it has up", c.cfg.Name, ErrNoEstimate, p.cfg.Name, what)
		}
		now = c.outageEnd(max(next, now))
		kept := q.running[:0]
		for _, j := range q.running {
			if j.expEnd() <= now {
				give(q.nodes, j, j.alloc)
				continue
			}
			kept = append(kept, j)
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

// estimatePart is the scratch copy of a partition that EstimateStart plans on. One is
// kept per cluster and reused (the cluster is not safe for concurrent use anyway),
// so a what-if costs copies into existing buffers rather than fresh allocations.
type estimatePart struct {
	partition
	slab []job // copies of the running and queued jobs, then the probe
}

// estimateCopy loads c's estimate scratch with a copy of p: its nodes, its running
// jobs and its queue (job structs copied, so planning never touches the real ones),
// plus one spare job at the end of the slab for the probe.
func (c *Cluster) estimateCopy(p *partition) *estimatePart {
	q := c.est
	if q == nil {
		q = &estimatePart{}
		c.est = q
	}
	q.cfg, q.pendBG = p.cfg, p.pendBG
	q.nodes = append(q.nodes[:0], p.nodes...)
	n := len(p.running) + len(p.queue) + 1
	clear(q.slab) // drop pointers held from the previous estimate
	q.slab = resize(q.slab, n)
	q.running, q.queue = q.running[:0], q.queue[:0]
	k := 0
	for _, j := range p.running {
		q.slab[k] = *j
		q.running = append(q.running, &q.slab[k])
		k++
	}
	for _, j := range p.queue {
		q.slab[k] = *j
		q.queue = append(q.queue, &q.slab[k])
		k++
	}
	return q
}
