package sim

import (
	"time"
)

// schedule runs one scheduling pass at time now: FCFS from the head of the queue
// while jobs fit, then EASY backfill. The first job that does not fit (the head) gets
// a reservation at the earliest time running jobs' requested walltimes free enough
// nodes for it (the shadow time). A later job may start now only if it fits now and
// either ends (by its requested walltime) before the shadow time or leaves enough of
// the nodes free at the shadow time for the head. At most depth jobs after the head
// are considered. Started jobs are moved to the running list and returned; the
// returned slice is the partition's scratch buffer, valid until the next pass.
func (p *partition) schedule(now time.Duration, depth int) []*job {
	if len(p.queue) == 0 {
		return nil
	}
	started := p.startedBuf[:0]
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
	// The new queue is built in the spare buffer; the old queue's array becomes the
	// spare of the next pass (double buffering avoids one allocation per pass).
	rest := p.spareQueue[:0]
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
			avoid = resize(p.avoidBuf, len(p.nodes))
			clear(avoid)
			p.avoidBuf = avoid
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
	clear(p.queue[len(rest):]) // drop stale pointers so finished jobs can be collected
	p.spareQueue, p.queue = p.queue[:0], rest
	p.startedBuf = started
	return started
}

// resize returns buf with length n, reallocating only when its capacity is short.
func resize[T any](buf []T, n int) []T {
	if cap(buf) < n {
		return make([]T, n)
	}
	return buf[:n]
}

// release is a moment when resources of a running job or a down node come back.
type release struct {
	at   time.Duration
	j    *job // nil for a node coming back up
	node int
}

// reservation computes when head could start if running jobs end at their requested
// walltimes and down nodes return on time: the shadow time and the free resources
// at that moment. ok is false when head never fits. The returned free slice is the
// partition's scratch buffer, valid until the next call.
//
// Releases are visited in time order through a binary heap (most passes find the
// shadow after a few releases, so a full sort would be wasted), and the number of
// nodes that fit head is kept incrementally: giving resources back only ever turns
// a node from "does not fit" into "fits". Releases at the same instant are applied
// together before the count is checked, so their order does not matter.
func (p *partition) reservation(head *job, now time.Duration) (shadow time.Duration, free []node, ok bool) {
	free = append(p.freeBuf[:0], p.nodes...)
	p.freeBuf = free
	fit := countFit(free, head)
	if fit >= head.req.Nodes {
		return now, free, true
	}
	rels := p.relBuf[:0]
	for _, j := range p.running {
		rels = append(rels, release{at: j.expEnd(), j: j, node: -1})
	}
	for i := range free {
		if free[i].down && free[i].upAt > 0 {
			rels = append(rels, release{at: free[i].upAt, node: i})
		}
	}
	p.relBuf = rels
	h := relHeap(rels)
	h.init()
	up := node{cores: p.cfg.CoresPerNode, gpus: p.cfg.GPUsPerNode, mem: p.cfg.MemGBPerNode}
	for len(h) > 0 {
		t := h[0].at
		for len(h) > 0 && h[0].at == t {
			r := h.pop()
			if r.j != nil {
				for _, n := range r.j.alloc {
					was := fits(&free[n], head)
					free[n].cores += r.j.dc
					free[n].gpus += r.j.dg
					free[n].mem += r.j.dm
					free[n].jobs--
					if !was && fits(&free[n], head) {
						fit++
					}
				}
			} else {
				was := fits(&free[r.node], head)
				free[r.node] = up
				if !was && fits(&free[r.node], head) {
					fit++
				}
			}
		}
		if fit >= head.req.Nodes {
			return max(t, now), free, true
		}
	}
	return 0, free, false
}

// relHeap is a min-heap of releases by time (hand-written to avoid container/heap's
// interface boxing on this hot path).
type relHeap []release

func (h relHeap) init() {
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h relHeap) down(i int) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && h[r].at < h[l].at {
			m = r
		}
		if h[i].at <= h[m].at {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

func (h *relHeap) pop() release {
	old := *h
	r := old[0]
	n := len(old) - 1
	old[0] = old[n]
	*h = old[:n]
	h.down(0)
	return r
}
