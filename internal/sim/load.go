package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// generator produces a partition's background jobs: next is the gap before the next
// arrival, job the request arriving then.
type generator interface {
	next() time.Duration
	job() JobRequest
	// clone is an independent copy in the same state (Cluster.Clone).
	clone() generator
}

func newGenerator(pc PartitionConfig, src *rand.PCG) (generator, error) {
	rng := rand.New(src)
	if pc.Load.Trace != nil {
		return newTraceGen(pc, pc.Load.Trace, rng)
	}
	g := newSynthGen(pc, rng)
	g.src = src
	return g, nil
}

// wallCap is the partition's walltime cap, or a default for unlimited partitions.
func wallCap(pc PartitionConfig) time.Duration {
	if pc.MaxWalltime > 0 {
		return pc.MaxWalltime
	}
	return defaultSynthWallCap
}

// requestedWall pads a runtime the way users do (×1.1–3, whole minutes), capped.
func requestedWall(rng *rand.Rand, run, limit time.Duration) time.Duration {
	w := time.Duration(float64(run) * (1.1 + 1.9*rng.Float64()))
	w = (w + time.Minute - 1).Truncate(time.Minute)
	return min(max(w, time.Minute), limit)
}

// subNode returns the per-node share of a job using coreFrac (0,1] of one node.
func subNode(pc PartitionConfig, coreFrac float64) (cores, gpus, mem int) {
	cores = min(max(1, int(math.Ceil(coreFrac*float64(pc.CoresPerNode)))), pc.CoresPerNode)
	if pc.GPUsPerNode > 0 {
		gpus = min(max(1, int(math.Ceil(coreFrac*float64(pc.GPUsPerNode)))), pc.GPUsPerNode)
	}
	mem = int(math.Ceil(float64(pc.MemGBPerNode) * float64(cores) / float64(pc.CoresPerNode)))
	return cores, gpus, min(mem, pc.MemGBPerNode)
}

// nodeEquiv is the share of nodes a request occupies (its gating resource).
func nodeEquiv(pc PartitionConfig, r JobRequest) float64 {
	if pc.Exclusive {
		return float64(r.Nodes)
	}
	f := float64(r.CoresPerNode) / float64(pc.CoresPerNode)
	if pc.GPUsPerNode > 0 {
		f = max(f, float64(r.GPUsPerNode)/float64(pc.GPUsPerNode))
	}
	return float64(r.Nodes) * f
}

// ScaleSize maps a trace job of procs processors on a machine of machine processors
// to a request on partition pc: the same share of the partition, at least one node
// (or, on shared partitions, a share of one node), at most MaxNodesPerJob.
func ScaleSize(pc PartitionConfig, procs, machine int) (nodes, cores, gpus, mem int) {
	maxJ := pc.MaxNodesPerJob
	if maxJ <= 0 || maxJ > pc.Nodes {
		maxJ = pc.Nodes
	}
	frac := min(float64(procs)/float64(max(machine, 1)), 1)
	want := frac * float64(pc.Nodes) // nodes' worth
	if !pc.Exclusive && want < 1 {
		c, g, m := subNode(pc, want)
		return 1, c, g, m
	}
	nodes = min(max(1, int(math.Ceil(want-1e-9))), maxJ)
	return nodes, pc.CoresPerNode, pc.GPUsPerNode, pc.MemGBPerNode
}

// traceGen replays a trace scaled to a partition, looping from a seeded offset.
type traceGen struct {
	items []JobRequest
	gaps  []time.Duration // gaps[i] precedes items[i]; gaps[0] is the mean gap (wrap-around)
	i     int
}

func newTraceGen(pc PartitionConfig, t *Trace, rng *rand.Rand) (*traceGen, error) {
	machine := t.MachineSize()
	limit := wallCap(pc)
	g := &traceGen{}
	var submits []int64
	var work float64 // node-seconds offered
	for _, sj := range t.Jobs {
		size := sj.Size()
		if size <= 0 || sj.Run <= 0 || sj.Submit < 0 {
			continue
		}
		nodes, cores, gpus, mem := ScaleSize(pc, size, machine)
		run := time.Duration(sj.Run) * time.Second
		var wall time.Duration
		if sj.ReqTime > 0 {
			wall = min(time.Duration(sj.ReqTime)*time.Second, limit)
		} else {
			wall = requestedWall(rng, run, limit)
		}
		r := JobRequest{Partition: pc.Name, Nodes: nodes, CoresPerNode: cores, GPUsPerNode: gpus,
			MemGBPerNode: mem, Walltime: wall, Runtime: run, Tag: fmt.Sprintf("swf-%d", sj.ID)}
		g.items = append(g.items, r)
		submits = append(submits, sj.Submit)
		work += nodeEquiv(pc, r) * min(run, wall).Seconds()
	}
	if len(g.items) < 2 {
		return nil, fmt.Errorf("workload trace has %d usable jobs (need 2 with a size and a run time)", len(g.items))
	}
	span := float64(submits[len(submits)-1] - submits[0])
	if span <= 0 {
		return nil, fmt.Errorf("workload trace spans no time (all jobs submitted at once); cannot time-scale it")
	}
	load := work / (span * float64(pc.Nodes))
	factor := load / pc.Load.Utilization
	g.gaps = make([]time.Duration, len(g.items))
	g.gaps[0] = time.Duration(span / float64(len(g.items)-1) * factor * float64(time.Second))
	for i := 1; i < len(submits); i++ {
		d := max(submits[i]-submits[i-1], 0)
		g.gaps[i] = time.Duration(float64(d) * factor * float64(time.Second))
	}
	g.i = rng.IntN(len(g.items))
	return g, nil
}

func (g *traceGen) next() time.Duration { return g.gaps[g.i] }

// clone shares the (read-only) scaled trace and copies the position.
func (g *traceGen) clone() generator { c := *g; return &c }

func (g *traceGen) job() JobRequest {
	r := g.items[g.i]
	g.i = (g.i + 1) % len(g.items)
	return r
}

// synthGen draws Poisson arrivals with log-normal runtimes and mixed sizes.
type synthGen struct {
	pc      PartitionConfig
	rng     *rand.Rand
	src     *rand.PCG // rng's state (nil in the sampling estimator)
	mu      float64   // log-normal parameters of the runtime in seconds
	sigma   float64
	meanGap float64 // seconds
}

const synthSigma = 1.2

func newSynthGen(pc PartitionConfig, rng *rand.Rand) *synthGen {
	mean := pc.Load.MeanRuntime
	if mean <= 0 {
		mean = DefaultMeanRuntime
	}
	g := &synthGen{pc: pc, rng: rng, sigma: synthSigma}
	g.mu = math.Log(mean.Seconds()) - synthSigma*synthSigma/2
	// Estimate the mean node-seconds of a job by sampling, with a private stream so
	// the estimate does not shift the arrival sequence.
	est := &synthGen{pc: pc, rng: rand.New(rand.NewPCG(rng.Uint64(), 7)), mu: g.mu, sigma: g.sigma}
	const samples = 4096
	var sum float64
	for range samples {
		r := est.job()
		sum += nodeEquiv(pc, r) * r.Runtime.Seconds()
	}
	g.meanGap = sum / samples / (pc.Load.Utilization * float64(pc.Nodes))
	return g
}

// clone copies the generator with its random stream's state.
func (g *synthGen) clone() generator {
	c := *g
	src := *g.src
	c.src, c.rng = &src, rand.New(&src)
	return &c
}

func (g *synthGen) next() time.Duration {
	return time.Duration(g.rng.ExpFloat64() * g.meanGap * float64(time.Second))
}

func (g *synthGen) job() JobRequest {
	pc := g.pc
	limit := wallCap(pc)
	maxJ := max(1, min(pc.MaxNodesPerJob, pc.Nodes))
	r := JobRequest{Partition: pc.Name, Nodes: 1, CoresPerNode: pc.CoresPerNode, GPUsPerNode: pc.GPUsPerNode,
		MemGBPerNode: pc.MemGBPerNode, Tag: "bg"}
	u := g.rng.Float64()
	switch {
	case !pc.Exclusive && u < 0.45:
		frac := 1.0 / 32 * math.Pow(16, g.rng.Float64()) // 1/32 .. 1/2 of a node
		if pc.GPUsPerNode > 1 {
			frac = float64(1+g.rng.IntN(pc.GPUsPerNode-1)) / float64(pc.GPUsPerNode)
		}
		r.CoresPerNode, r.GPUsPerNode, r.MemGBPerNode = subNode(pc, frac)
	case u < 0.85:
		r.Nodes = 1 + g.rng.IntN(max(1, min(maxJ, pc.Nodes/8)))
	default:
		lo := max(1, pc.Nodes/8)
		hi := max(lo, min(maxJ, pc.Nodes/2))
		r.Nodes = min(lo+g.rng.IntN(hi-lo+1), maxJ)
	}
	run := time.Duration(math.Exp(g.mu+g.sigma*g.rng.NormFloat64()) * float64(time.Second))
	run = min(max(run, minBackgroundRuntime), limit).Round(time.Second)
	r.Runtime = run
	r.Walltime = max(requestedWall(g.rng, run, limit), run)
	return r
}
