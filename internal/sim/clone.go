package sim

import (
	"math/rand/v2"
	"slices"
)

// Clone returns an independent copy of the model in exactly its current state: the
// same nodes, jobs, queues, pending events, background generators and random streams,
// so the copy evolves exactly as the original would under the same calls. What-if
// studies (the replay's clairvoyant policy) simulate a clone forward instead of
// re-executing the model's history on a fresh one, which costs the whole history per
// question. The configuration (and its Observer) is shared; the copy keeps no
// estimate scratch.
func (c *Cluster) Clone() *Cluster {
	n := &Cluster{cfg: c.cfg, epoch: c.epoch, now: c.now, nextID: c.nextID, seq: c.seq, stats: c.stats,
		byName: make(map[string]*partition, len(c.byName)), jobs: make(map[int64]*job, len(c.jobs))}
	fs, us := *c.faultsSrc, *c.userSrc
	n.faultsSrc, n.userSrc = &fs, &us
	n.faults, n.userRNG = rand.New(n.faultsSrc), rand.New(n.userSrc)
	parts := make(map[*partition]*partition, len(c.parts))
	for _, p := range c.parts {
		q := &partition{cfg: p.cfg, nodes: slices.Clone(p.nodes), dirty: p.dirty, pendBG: p.pendBG}
		if p.load != nil {
			q.load = p.load.clone()
		}
		parts[p] = q
		n.parts = append(n.parts, q)
		n.byName[q.cfg.Name] = q
	}
	jobs := make(map[*job]*job, len(c.jobs))
	cp := func(j *job) *job {
		if j == nil {
			return nil
		}
		if k, ok := jobs[j]; ok {
			return k
		}
		k := new(job)
		*k = *j
		k.alloc = slices.Clone(j.alloc)
		k.part = parts[j.part]
		jobs[j] = k
		return k
	}
	for id, j := range c.jobs {
		n.jobs[id] = cp(j)
	}
	for _, p := range c.parts {
		q := parts[p]
		q.running = make([]*job, len(p.running))
		for i, j := range p.running {
			q.running[i] = cp(j)
		}
		q.queue = make([]*job, len(p.queue))
		for i, j := range p.queue {
			q.queue[i] = cp(j)
		}
	}
	// The heap's slice order is its invariant: copying it in place keeps it a heap.
	n.events = make(eventHeap, len(c.events))
	for i, e := range c.events {
		f := *e
		f.part, f.j, f.nodes = parts[e.part], cp(e.j), slices.Clone(e.nodes)
		n.events[i] = &f
	}
	n.out = slices.Clone(c.out)
	return n
}
