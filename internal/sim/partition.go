package sim

import (
	"slices"
	"time"
)

// node is one node's free resources.
type node struct {
	cores, gpus, mem int // free
	down             bool
	upAt             time.Duration // when a down node returns
	jobs             int           // jobs holding a share of the node
}

// partition is one partition's nodes, running jobs and FCFS queue.
type partition struct {
	cfg     PartitionConfig
	nodes   []node
	running []*job // in start order
	queue   []*job // pending, FCFS order
	dirty   bool   // something changed since the last scheduling pass
	load    generator
	pendBG  int // background jobs in queue
	scratch []int

	// Scratch buffers reused by scheduling passes (see schedule and reservation).
	spareQueue, startedBuf []*job
	avoidBuf               []bool
	freeBuf                []node
	relBuf                 []release
}

func newPartition(cfg PartitionConfig) *partition {
	p := &partition{cfg: cfg, nodes: make([]node, cfg.Nodes)}
	for i := range p.nodes {
		p.nodes[i] = node{cores: cfg.CoresPerNode, gpus: cfg.GPUsPerNode, mem: cfg.MemGBPerNode}
	}
	return p
}

// fits reports whether job j's per-node demand fits on node n.
func fits(n *node, j *job) bool {
	return !n.down && n.cores >= j.dc && n.gpus >= j.dg && n.mem >= j.dm
}

// countFit counts nodes of ns that can host one share of j.
func countFit(ns []node, j *job) int {
	k := 0
	for i := range ns {
		if fits(&ns[i], j) {
			k++
		}
	}
	return k
}

// choose picks j.req.Nodes nodes of ns for j: nodes where avoid[i] is false first,
// then the tightest fit (fewest free cores, then GPUs), then lowest index. It returns
// nil when j does not fit.
func (p *partition) choose(ns []node, j *job, avoid []bool) []int {
	alloc, _ := p.chooseCount(ns, j, avoid)
	return alloc
}

// chooseCount is choose that also returns how many nodes could host j.
//
// Most jobs want a few nodes, so the best j.req.Nodes candidates are kept sorted by
// insertion while scanning (O(nodes × wanted), no sort of every candidate); larger
// requests sort all candidates. The order is total (index breaks ties), so both
// ways pick the same nodes in the same order.
func (p *partition) chooseCount(ns []node, j *job, avoid []bool) ([]int, int) {
	less := func(a, b int) bool {
		if avoid != nil && avoid[a] != avoid[b] {
			return !avoid[a]
		}
		if ns[a].cores != ns[b].cores {
			return ns[a].cores < ns[b].cores
		}
		if ns[a].gpus != ns[b].gpus {
			return ns[a].gpus < ns[b].gpus
		}
		return a < b
	}
	want := j.req.Nodes
	if want <= smallRequest {
		best := p.scratch[:0]
		count := 0
		for i := range ns {
			if !fits(&ns[i], j) {
				continue
			}
			count++
			if len(best) == want && !less(i, best[want-1]) {
				continue
			}
			if len(best) < want {
				best = append(best, i)
			} else {
				best[want-1] = i
			}
			for k := len(best) - 1; k > 0 && less(best[k], best[k-1]); k-- {
				best[k], best[k-1] = best[k-1], best[k]
			}
		}
		p.scratch = best
		if count < want {
			return nil, count
		}
		return append([]int(nil), best...), count
	}
	cand := p.scratch[:0]
	for i := range ns {
		if fits(&ns[i], j) {
			cand = append(cand, i)
		}
	}
	p.scratch = cand
	if len(cand) < want {
		return nil, len(cand)
	}
	slices.SortFunc(cand, func(a, b int) int {
		switch {
		case less(a, b):
			return -1
		case less(b, a):
			return 1
		}
		return 0
	})
	return append([]int(nil), cand[:want]...), len(cand)
}

// smallRequest is the largest node count chooseCount selects by insertion.
const smallRequest = 8

// fitCache remembers, within one scheduling pass, an upper bound on how many nodes
// can host a given per-node demand. Free resources only shrink during a pass, so a
// job needing more nodes than the bound cannot fit and needs no scan.
type fitCache struct {
	keys [8][3]int
	vals [8]int
	n    int
}

func (f *fitCache) bound(j *job) (int, bool) {
	for i := range min(f.n, len(f.keys)) {
		if f.keys[i] == [3]int{j.dc, j.dg, j.dm} {
			return f.vals[i], true
		}
	}
	return 0, false
}

func (f *fitCache) set(j *job, k int) {
	key := [3]int{j.dc, j.dg, j.dm}
	for i := range min(f.n, len(f.keys)) {
		if f.keys[i] == key {
			f.vals[i] = k
			return
		}
	}
	i := f.n % len(f.keys)
	f.keys[i], f.vals[i] = key, k
	f.n++
}

func take(ns []node, j *job, alloc []int) {
	for _, i := range alloc {
		ns[i].cores -= j.dc
		ns[i].gpus -= j.dg
		ns[i].mem -= j.dm
		ns[i].jobs++
	}
}

func give(ns []node, j *job, alloc []int) {
	for _, i := range alloc {
		ns[i].cores += j.dc
		ns[i].gpus += j.dg
		ns[i].mem += j.dm
		ns[i].jobs--
	}
}

// removeRunning drops j from the running list.
func (p *partition) removeRunning(j *job) {
	if i := slices.Index(p.running, j); i >= 0 {
		p.running = slices.Delete(p.running, i, i+1)
	}
}

// removeQueued drops j from the queue.
func (p *partition) removeQueued(j *job) {
	if i := slices.Index(p.queue, j); i >= 0 {
		p.queue = slices.Delete(p.queue, i, i+1)
		if !j.req.User {
			p.pendBG--
		}
	}
}

// PartitionState is what squeue/sinfo would say about one partition. A node is
// Allocated when it has no free cores or (on GPU partitions) no free GPUs, or is
// held by a job on an exclusive partition; Mixed when partly used; Idle when unused.
type PartitionState struct {
	Name                             string
	Idle, Mixed, Allocated, Down     int // node counts
	Total                            int
	TotalCores, FreeCores            int // free on up nodes
	TotalGPUs, FreeGPUs              int
	Running, Pending                 int // all jobs
	UserRunning, UserPending         int // the Mosaic user's jobs
	CoresPerNode, GPUsPerNode, MemGB int
	MaxWalltime                      time.Duration
	MaxNodesPerJob                   int
	Exclusive                        bool
}

func (p *partition) state() PartitionState {
	s := PartitionState{
		Name: p.cfg.Name, Total: len(p.nodes),
		TotalCores: len(p.nodes) * p.cfg.CoresPerNode, TotalGPUs: len(p.nodes) * p.cfg.GPUsPerNode,
		Running: len(p.running), Pending: len(p.queue),
		CoresPerNode: p.cfg.CoresPerNode, GPUsPerNode: p.cfg.GPUsPerNode, MemGB: p.cfg.MemGBPerNode,
		MaxWalltime: p.cfg.MaxWalltime, MaxNodesPerJob: p.cfg.MaxNodesPerJob, Exclusive: p.cfg.Exclusive,
	}
	for i := range p.nodes {
		n := &p.nodes[i]
		switch {
		case n.down:
			s.Down++
			continue
		case n.jobs == 0:
			s.Idle++
		case n.cores == 0 || (p.cfg.GPUsPerNode > 0 && n.gpus == 0) || p.cfg.Exclusive:
			s.Allocated++
		default:
			s.Mixed++
		}
		s.FreeCores += n.cores
		s.FreeGPUs += n.gpus
	}
	for _, j := range p.running {
		if j.req.User {
			s.UserRunning++
		}
	}
	for _, j := range p.queue {
		if j.req.User {
			s.UserPending++
		}
	}
	return s
}
