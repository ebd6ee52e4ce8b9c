package sim

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// Check validates req against its partition the way Slurm's EnforcePartLimits does
// at submit time and returns it normalised (at least one core per node; memory 0
// becomes a share of the node proportional to the cores). Errors over a limit are
// *LimitError (errors.Is(err, ErrLimit)).
func (c *Cluster) Check(req JobRequest) (JobRequest, error) {
	p, ok := c.byName[req.Partition]
	if !ok {
		return req, fmt.Errorf("%q: partition %q does not exist on %s (partitions: %s)",
			"invalid partition specified", req.Partition, c.cfg.Name, strings.Join(c.Partitions(), ", "))
	}
	pc := p.cfg
	if req.CoresPerNode < 1 {
		req.CoresPerNode = 1
	}
	if req.MemGBPerNode == 0 {
		req.MemGBPerNode = int(math.Ceil(float64(pc.MemGBPerNode) * float64(req.CoresPerNode) / float64(pc.CoresPerNode)))
		req.MemGBPerNode = min(req.MemGBPerNode, pc.MemGBPerNode)
	}
	lim := func(limit, asked, allowed, slurm string) error {
		return &LimitError{Partition: pc.Name, Limit: limit, Asked: asked, Allowed: allowed, Slurm: slurm}
	}
	const nodeConf = "Requested node configuration is not available"
	switch {
	case req.Nodes < 1:
		return req, lim("nodes per job", fmt.Sprint(req.Nodes), "at least 1", "Node count specification invalid")
	case req.Nodes > pc.MaxNodesPerJob:
		return req, lim("nodes per job", fmt.Sprint(req.Nodes), fmt.Sprint(pc.MaxNodesPerJob), "Node count specification invalid")
	case req.Walltime <= 0:
		return req, lim("walltime", req.Walltime.String(), "a positive", "Requested time limit is invalid (missing or exceeds some limit)")
	case pc.MaxWalltime > 0 && req.Walltime > pc.MaxWalltime:
		return req, lim("walltime", req.Walltime.String(), pc.MaxWalltime.String(), "Requested time limit is invalid (missing or exceeds some limit)")
	case req.CoresPerNode > pc.CoresPerNode:
		return req, lim("cores per node", fmt.Sprint(req.CoresPerNode), fmt.Sprint(pc.CoresPerNode), nodeConf)
	case req.GPUsPerNode < 0 || req.GPUsPerNode > pc.GPUsPerNode:
		return req, lim("gpus per node", fmt.Sprint(req.GPUsPerNode), fmt.Sprint(pc.GPUsPerNode), nodeConf)
	case req.MemGBPerNode < 0 || req.MemGBPerNode > pc.MemGBPerNode:
		return req, lim("memory per node (GB)", fmt.Sprint(req.MemGBPerNode), fmt.Sprint(pc.MemGBPerNode), nodeConf)
	case !req.External && req.Runtime <= 0:
		return req, fmt.Errorf("sim %s: a job that is not external needs a positive runtime", c.cfg.Name)
	}
	if req.User && pc.MaxSubmitPerUser > 0 {
		n := 0
		for _, j := range p.running {
			if j.req.User {
				n++
			}
		}
		for _, j := range p.queue {
			if j.req.User {
				n++
			}
		}
		if n >= pc.MaxSubmitPerUser {
			return req, lim("jobs per user", fmt.Sprint(n+1), fmt.Sprint(pc.MaxSubmitPerUser),
				"Job violates accounting/QOS policy (job submit limit, user's size and/or time limits)")
		}
	}
	return req, nil
}

// Submit queues a job at the model's current time and returns its id. It fails with
// ErrDown during an outage and with a *LimitError when the request exceeds the
// partition. The job starts at a later AdvanceTo (possibly one for the same time).
func (c *Cluster) Submit(req JobRequest) (int64, error) {
	if c.downAt(c.now) {
		return 0, fmt.Errorf("sim %s: %w until %s", c.cfg.Name, ErrDown, c.epoch.Add(c.outageEnd(c.now)).Format(time.RFC3339))
	}
	req, err := c.Check(req)
	if err != nil {
		return 0, err
	}
	return c.enqueue(c.byName[req.Partition], req).id, nil
}

// outageEnd returns the end of the outage covering d (d itself if none).
func (c *Cluster) outageEnd(d time.Duration) time.Duration {
	for range len(c.cfg.Outages) + 1 {
		moved := false
		for _, w := range c.cfg.Outages {
			if d >= w.Start && d < w.Start+w.Duration {
				d = w.Start + w.Duration
				moved = true
			}
		}
		if !moved {
			break
		}
	}
	return d
}

// Finish ends a running external job at the model's current time: exit code 0 is
// COMPLETED, anything else FAILED.
func (c *Cluster) Finish(id int64, exitCode int) error {
	j, ok := c.jobs[id]
	if !ok {
		return fmt.Errorf("sim %s: job %d: %w", c.cfg.Name, id, ErrUnknownJob)
	}
	if j.state != Running {
		return fmt.Errorf("sim %s: job %d is %s: %w", c.cfg.Name, id, j.state, ErrNotRunning)
	}
	st, reason := Completed, ReasonNone
	if exitCode != 0 {
		st, reason = Failed, "NonZeroExitCode"
	}
	c.finish(j, st, exitCode, reason)
	return nil
}

// Cancel cancels a pending or running job. Finished jobs are left alone (no error).
func (c *Cluster) Cancel(id int64) error {
	j, ok := c.jobs[id]
	if !ok {
		return fmt.Errorf("sim %s: job %d: %w", c.cfg.Name, id, ErrUnknownJob)
	}
	switch j.state {
	case Pending:
		j.part.removeQueued(j)
		j.state, j.reason, j.end = Cancelled, "Cancelled", c.now
		j.part.dirty = true
		c.emit(j, JobEnded)
		if !j.req.User {
			delete(c.jobs, id)
		}
	case Running:
		c.finish(j, Cancelled, 0, "Cancelled")
	}
	return nil
}

// Job returns a snapshot of one job. Finished background jobs are forgotten.
func (c *Cluster) Job(id int64) (Job, bool) {
	j, ok := c.jobs[id]
	if !ok {
		return Job{}, false
	}
	return c.snapshot(j), true
}

// Jobs returns every user job (all states), by id.
func (c *Cluster) Jobs() []Job {
	var out []Job
	for _, j := range c.jobs {
		if j.req.User {
			out = append(out, c.snapshot(j))
		}
	}
	slices.SortFunc(out, func(a, b Job) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// Partitions lists partition names in configuration order.
func (c *Cluster) Partitions() []string {
	out := make([]string, len(c.parts))
	for i, p := range c.parts {
		out[i] = p.cfg.Name
	}
	return out
}

// PartitionState reports node counts, free resources and queue depths now.
func (c *Cluster) PartitionState(name string) (PartitionState, bool) {
	p, ok := c.byName[name]
	if !ok {
		return PartitionState{}, false
	}
	return p.state(), true
}

// Running returns every job running on partition now, background ones included, in
// start order (the replay's lower bound uses what is committed at t0). Held is not
// in Job: on an exclusive partition a job holds its nodes whole.
func (c *Cluster) Running(partition string) []Job {
	p, ok := c.byName[partition]
	if !ok {
		return nil
	}
	out := make([]Job, 0, len(p.running))
	for _, j := range p.running {
		out = append(out, c.snapshot(j))
	}
	return out
}
