package sim

import (
	"slices"
	"time"
)

// schedule runs one scheduling pass at time now: FCFS from the head of the queue
// while jobs fit, then EASY backfill. The first job that does not fit (the head) gets
// a reservation at the earliest time running jobs' requested walltimes free enough
// nodes for it (the shadow time). A later job may start now only if it fits now and
// either ends (by its requested walltime) before the shadow time or leaves enough of
// the nodes free at the shadow time for the head. At most depth jobs after the head
// are considered. Started jobs are moved to the running list and returned.
func (p *partition) schedule(now time.Duration, depth int) []*job {
	if len(p.queue) == 0 {
		return nil
	}
	var started []*job
	userRun := 0
	for _, j := range p.running {
		if j.req.User {
			userRun++
		}
	}
	limit := p.cfg.MaxRunningPerUser
	eligible := func(j *job) bool { return !j.req.User || limit == 0 || userRun < limit }
	start := func(j *job, alloc []int) {
		take(p.nodes, j, alloc)
		j.alloc = alloc
		j.state = Running
		j.started = true
		j.start = now
		j.reason = ReasonNone
		p.running = append(p.running, j)
		started = append(started, j)
		if j.req.User {
			userRun++
		} else {
			p.pendBG--
		}
	}
	var cache fitCache
	choose := func(j *job, avoid []bool) []int {
		if k, ok := cache.bound(j); ok && j.req.Nodes > k {
			return nil
		}
		alloc, k := p.chooseCount(p.nodes, j, avoid)
		cache.set(j, k)
		return alloc
	}
	rest := make([]*job, 0, len(p.queue))
	i := 0
	var head *job
	for ; i < len(p.queue); i++ {
		j := p.queue[i]
		if !eligible(j) {
			j.reason = ReasonUserLimit
			rest = append(rest, j)
			continue
		}
		alloc := choose(j, nil)
		if alloc == nil {
			head = j
			j.reason = ReasonResources
			rest = append(rest, j)
			i++
			break
		}
		start(j, alloc)
	}
	if head != nil {
		shadow, free, ok := p.reservation(head, now)
		var avoid []bool
		if ok {
			avoid = make([]bool, len(p.nodes))
			for _, n := range p.choose(free, head, nil) {
				avoid[n] = true
			}
		}
		considered := 0
		for ; i < len(p.queue); i++ {
			j := p.queue[i]
			if considered >= depth {
				rest = append(rest, p.queue[i:]...)
				break
			}
			if !eligible(j) {
				j.reason = ReasonUserLimit
				rest = append(rest, j)
				continue
			}
			considered++
			j.reason = ReasonPriority
			alloc := choose(j, avoid)
			if alloc == nil {
				rest = append(rest, j)
				continue
			}
			if !ok || now+j.req.Walltime <= shadow {
				start(j, alloc)
				continue
			}
			take(free, j, alloc)
			if countFit(free, head) >= head.req.Nodes {
				start(j, alloc)
				continue
			}
			give(free, j, alloc)
			rest = append(rest, j)
		}
	}
	p.queue = rest
	return started
}

// reservation computes when head could start if running jobs end at their requested
// walltimes and down nodes return on time: the shadow time and the free resources
// at that moment. ok is false when head never fits.
func (p *partition) reservation(head *job, now time.Duration) (shadow time.Duration, free []node, ok bool) {
	free = slices.Clone(p.nodes)
	type release struct {
		at   time.Duration
		j    *job
		node int
	}
	rels := make([]release, 0, len(p.running)+4)
	for _, j := range p.running {
		rels = append(rels, release{at: j.expEnd(), j: j, node: -1})
	}
	for i := range free {
		if free[i].down && free[i].upAt > 0 {
			rels = append(rels, release{at: free[i].upAt, node: i})
		}
	}
	slices.SortStableFunc(rels, func(a, b release) int {
		switch {
		case a.at < b.at:
			return -1
		case a.at > b.at:
			return 1
		}
		return 0
	})
	if countFit(free, head) >= head.req.Nodes {
		return now, free, true
	}
	for k := 0; k < len(rels); {
		t := rels[k].at
		for ; k < len(rels) && rels[k].at == t; k++ {
			r := rels[k]
			if r.j != nil {
				give(free, r.j, r.j.alloc)
			} else {
				free[r.node] = node{cores: p.cfg.CoresPerNode, gpus: p.cfg.GPUsPerNode, mem: p.cfg.MemGBPerNode}
			}
		}
		if countFit(free, head) >= head.req.Nodes {
			return max(t, now), free, true
		}
	}
	return 0, free, false
}
