package sim

import (
	"container/heap"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"time"
)

// Cluster is one simulated system with its partitions. It is not safe for concurrent
// use; the caller serialises calls.
type Cluster struct {
	cfg     Config
	epoch   time.Time     // Config.Start
	now     time.Duration // simulated time relative to epoch
	parts   []*partition
	byName  map[string]*partition
	jobs    map[int64]*job // active jobs and every user job
	nextID  int64
	events  eventHeap
	seq     uint64
	out     []Event
	faults  *rand.Rand // node choice for node failures
	userRNG *rand.Rand // injected user-job failures
	// The generators' states, kept so Clone can copy them.
	faultsSrc, userSrc *rand.PCG
	stats              Stats
	est                *estimatePart // EstimateStart's reused scratch copy
}

// Stats counts what the model did (background jobs included).
type Stats struct {
	Submitted, Started, Ended, Dropped int64
	Timeouts, NodeFails                int64
}

// stream derives a PCG stream id from a name so each partition draws independently.
func stream(name string, salt uint64) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return h.Sum64() ^ salt
}

// New builds a cluster from cfg. The background load of every partition starts
// cfg.WarmUp before cfg.Start and the model is advanced to cfg.Start, so queues and
// nodes are already busy at t0. The same cfg and seed give the same history.
func New(cfg Config, seed int64) (*Cluster, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	c := &Cluster{
		cfg:       cfg,
		epoch:     cfg.Start,
		byName:    map[string]*partition{},
		jobs:      map[int64]*job{},
		nextID:    cfg.FirstJobID,
		faultsSrc: rand.NewPCG(uint64(seed), stream(cfg.Name, 0xfa17)),
		userSrc:   rand.NewPCG(uint64(seed), stream(cfg.Name, 0x05e4)),
	}
	c.faults, c.userRNG = rand.New(c.faultsSrc), rand.New(c.userSrc)
	warm := cfg.WarmUp
	if warm == 0 {
		warm = c.defaultWarmUp()
	}
	if warm < 0 {
		warm = 0
	}
	c.now = -warm
	for _, pc := range cfg.Partitions {
		p := newPartition(pc)
		c.parts = append(c.parts, p)
		c.byName[pc.Name] = p
		if pc.Load.Utilization > 0 {
			g, err := newGenerator(pc, rand.NewPCG(uint64(seed), stream(cfg.Name+"/"+pc.Name, 0x10ad)))
			if err != nil {
				return nil, fmt.Errorf("sim %s partition %s: %w", cfg.Name, pc.Name, err)
			}
			p.load = g
			c.push(&event{at: c.now + g.next(), kind: evArrival, part: p})
		}
	}
	for i, nf := range cfg.NodeFailures {
		if nf.Nodes > 0 {
			c.push(&event{at: nf.At, kind: evNodeDown, part: c.byName[nf.Partition], nf: i})
		}
	}
	for _, w := range cfg.Outages {
		c.push(&event{at: w.Start + w.Duration, kind: evOutageEnd})
	}
	c.AdvanceTo(cfg.Start)
	return c, nil
}

func (c *Cluster) defaultWarmUp() time.Duration {
	mean := time.Duration(0)
	for _, p := range c.cfg.Partitions {
		m := p.Load.MeanRuntime
		if m == 0 {
			m = DefaultMeanRuntime
		}
		mean = max(mean, m)
	}
	return min(max(3*mean, minWarmUp), maxWarmUp)
}

// Now is the model's current simulated time.
func (c *Cluster) Now() time.Time { return c.epoch.Add(c.now) }

// Start is simulated time zero (Config.Start).
func (c *Cluster) Start() time.Time { return c.epoch }

// Stats reports counters since construction (warm-up included).
func (c *Cluster) Stats() Stats { return c.stats }

// NextID is the id the next submitted job (background or user) gets.
func (c *Cluster) NextID() int64 { return c.nextID }

// Down reports whether t falls in an outage window.
func (c *Cluster) Down(t time.Time) bool { return c.downAt(t.Sub(c.epoch)) }

func (c *Cluster) downAt(d time.Duration) bool {
	for _, w := range c.cfg.Outages {
		if d >= w.Start && d < w.Start+w.Duration {
			return true
		}
	}
	return false
}

// AdvanceTo processes every event up to t (arrivals, completions, timeouts, faults,
// scheduling passes) and returns the user jobs that started or ended since the last
// call, in order. Times before the current model time are ignored (the model never
// goes back). Work is proportional to the events in the interval; each scheduling
// pass is bounded by the backfill depth.
func (c *Cluster) AdvanceTo(t time.Time) []Event {
	target := max(t.Sub(c.epoch), c.now)
	c.scheduleDirty()
	for len(c.events) > 0 && c.events[0].at <= target {
		at := c.events[0].at
		c.now = max(at, c.now)
		for len(c.events) > 0 && c.events[0].at == at {
			c.handle(heap.Pop(&c.events).(*event))
		}
		c.scheduleDirty()
	}
	c.now = target
	out := c.out
	c.out = nil
	return out
}

func (c *Cluster) scheduleDirty() {
	if c.downAt(c.now) {
		return
	}
	for _, p := range c.parts {
		if !p.dirty {
			continue
		}
		p.dirty = false
		for _, j := range p.schedule(c.now, c.cfg.BackfillDepth) {
			c.started(j)
		}
	}
}

// started plans the end of a job that just started.
func (c *Cluster) started(j *job) {
	c.stats.Started++
	end, what := j.start+j.req.Walltime, Timeout
	if !j.req.External && j.req.Runtime <= j.req.Walltime {
		end, what = j.start+j.req.Runtime, Completed
	}
	if j.req.User && c.cfg.JobFailureProb > 0 && c.userRNG.Float64() < c.cfg.JobFailureProb {
		at := j.start + time.Duration(c.userRNG.Float64()*float64(j.req.Walltime))
		if at < end {
			end, what = at, NodeFail
		}
	}
	j.endAt, j.endWhat = end, what
	c.push(&event{at: end, kind: evJobEnd, j: j, gen: j.gen})
	c.emit(j, JobStarted)
}

func (c *Cluster) emit(j *job, kind EventKind) {
	ev := Event{
		Time: c.epoch.Add(c.now), Kind: kind, JobID: j.id, Partition: j.part.cfg.Name,
		User: j.req.User, State: j.state, ExitCode: j.exit, Tag: j.req.Tag,
	}
	if j.req.User {
		c.out = append(c.out, ev)
	}
	if c.cfg.Observer != nil {
		c.cfg.Observer(ev)
	}
}

func (c *Cluster) handle(e *event) {
	switch e.kind {
	case evArrival:
		c.arrive(e.part)
	case evJobEnd:
		if e.j.state == Running && e.gen == e.j.gen {
			reason := ReasonNone
			exit := 0
			switch e.j.endWhat {
			case Timeout:
				reason = "TimeLimit"
				exit = 0
			case NodeFail:
				reason = "NodeFail"
			}
			c.finish(e.j, e.j.endWhat, exit, reason)
		}
	case evNodeDown:
		c.nodeDown(e)
	case evNodeUp:
		for _, i := range e.nodes {
			n := &e.part.nodes[i]
			*n = node{cores: e.part.cfg.CoresPerNode, gpus: e.part.cfg.GPUsPerNode, mem: e.part.cfg.MemGBPerNode}
		}
		e.part.dirty = true
	case evOutageEnd:
		for _, p := range c.parts {
			p.dirty = true
		}
	}
}

// finish ends a running job and frees its nodes.
func (c *Cluster) finish(j *job, st State, exit int, reason string) {
	p := j.part
	give(p.nodes, j, j.alloc)
	p.removeRunning(j)
	j.state, j.exit, j.reason, j.end = st, exit, reason, c.now
	j.gen++
	p.dirty = true
	c.stats.Ended++
	switch st {
	case Timeout:
		c.stats.Timeouts++
	case NodeFail:
		c.stats.NodeFails++
	}
	c.emit(j, JobEnded)
	if !j.req.User {
		delete(c.jobs, j.id)
	}
}

// arrive submits the next background job of p and plans the one after.
func (c *Cluster) arrive(p *partition) {
	req := p.load.job()
	if p.pendBG >= c.cfg.MaxPendingBackground {
		c.stats.Dropped++
	} else {
		c.enqueue(p, req)
	}
	c.push(&event{at: c.now + p.load.next(), kind: evArrival, part: p})
}

// enqueue adds a validated request to p's queue.
func (c *Cluster) enqueue(p *partition, req JobRequest) *job {
	j := &job{id: c.nextID, req: req, part: p, state: Pending, reason: ReasonPriority, submit: c.now}
	c.nextID++
	j.dc, j.dg, j.dm = req.CoresPerNode, req.GPUsPerNode, req.MemGBPerNode
	if p.cfg.Exclusive {
		j.dc, j.dg, j.dm = p.cfg.CoresPerNode, p.cfg.GPUsPerNode, p.cfg.MemGBPerNode
	}
	c.jobs[j.id] = j
	p.queue = append(p.queue, j)
	if !req.User {
		p.pendBG++
	}
	p.dirty = true
	c.stats.Submitted++
	return j
}

// nodeDown takes nodes of a partition down; jobs on them end NODE_FAIL.
func (c *Cluster) nodeDown(e *event) {
	nf := c.cfg.NodeFailures[e.nf]
	p := e.part
	var up []int
	for i := range p.nodes {
		if !p.nodes[i].down {
			up = append(up, i)
		}
	}
	c.faults.Shuffle(len(up), func(a, b int) { up[a], up[b] = up[b], up[a] })
	victims := up[:min(nf.Nodes, len(up))]
	slices.Sort(victims)
	hit := map[int]bool{}
	for _, i := range victims {
		hit[i] = true
	}
	for _, j := range slices.Clone(p.running) {
		for _, i := range j.alloc {
			if hit[i] {
				c.finish(j, NodeFail, 0, "NodeFail")
				break
			}
		}
	}
	for _, i := range victims {
		p.nodes[i] = node{down: true, upAt: c.now + nf.Duration}
	}
	p.dirty = true
	c.push(&event{at: c.now + nf.Duration, kind: evNodeUp, part: p, nodes: victims})
}
