package scheduler

import (
	"fmt"
	"math"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

// nodeCap is the most nodes a job may use on rec: nodes.max, the partition's max nodes
// per job and its node count, whichever is smallest (unknown limits are ignored).
func nodeCap(env *model.Envelope, rec *model.ResourceRecord) int {
	n := env.Nodes.Max
	if m := rec.MaxNodesPerJob; m > 0 && m < n {
		n = m
	}
	if t := rec.Nodes.Total; t > 0 && t < n {
		n = t
	}
	return n
}

func ceilDiv(a, b int) int {
	if b <= 1 { // also the common one node or one GPU per node, saving a slow division
		return a
	}
	return (a + b - 1) / b
}

// divNodes is a/nodes (nodes ≥ 1) without the division in the common one-node case.
func divNodes(a, nodes int) int {
	if nodes == 1 {
		return a
	}
	return a / nodes
}

func clamp(v, lo, hi int) int {
	if v < lo {
		return lo
	}
	if v > hi {
		return hi
	}
	return v
}

// Size is size (the one sizing function, below) with the job spec built, for callers
// that want a model.JobSpec rather than the placement's compact sizing.
func Size(r *Request, rec *model.ResourceRecord) (spec model.JobSpec, note string, ok bool) {
	var z sizing
	code, fail, ok := size(r, rec, &z)
	if !ok {
		return spec, fail, false
	}
	z.specInto(r, rec, &spec)
	return spec, sizingNotes[code], true
}

// sizing is a concrete request as Size chooses it, without the task's strings. The
// placement hot path keeps one per feasible candidate (pointer-free, so the garbage
// collector never scans it) and builds the model.JobSpec only when it is asked for.
// The counts fit 32 bits: a valid envelope's maxima do (model.MaxEnvelope*), and
// sizing never exceeds them.
type sizing struct {
	nodes, cores, gpn, mem int32 // cores, GPUs and memory (GB) per node
	wall                   model.Duration
}

// gpus is the total GPU count (spread evenly over the nodes).
func (z *sizing) gpus() int { return int(z.gpn) * int(z.nodes) }

// sizingOf is the sizing of a job spec (counts beyond 32 bits are clamped).
func sizingOf(s *model.JobSpec) sizing {
	c := func(v int) int32 { return int32(min(max(v, math.MinInt32), math.MaxInt32)) }
	return sizing{nodes: c(s.Nodes), cores: c(s.CPUsPerTask), gpn: c(s.GPUsPerNode), mem: c(s.MemoryGB), wall: s.Walltime}
}

// specInto writes the job spec of z on rec for r's task into out, field by field:
// out is usually freshly zeroed slab memory, and copying a whole struct (Tag, Env,
// WorkDir, ...) costs a bulk write barrier over every pointer field while the GC marks.
func (z *sizing) specInto(r *Request, rec *model.ResourceRecord, out *model.JobSpec) {
	out.Name, out.Command, out.Script, out.Owner = r.Task.Name, r.Task.Command, r.Task.Script, r.Task.Owner
	out.System, out.Partition, out.Account = rec.System, rec.Partition, rec.Account
	out.Nodes, out.NTasks, out.CPUsPerTask = int(z.nodes), int(z.nodes), int(z.cores)
	out.GPUs, out.GPUsPerNode, out.MemoryGB, out.Walltime = z.gpus(), int(z.gpn), int(z.mem), z.wall
	out.Container = r.Envelope.Constraints.Container
	if z.gpn > 0 {
		out.GPUModel = rec.GPUModel
	}
}

// Why a sizing was chosen, by code (a candidate row keeps the byte, not the string).
const (
	noteNone uint8 = iota
	noteMaxGPUs
	noteMinGPUs
	noteIdleGPUs
	noteFewGPUs
	noteMaxCores
	noteMinCores
	noteIdleCores
	noteFewCores
)

var sizingNotes = [...]string{
	noteNone:      "",
	noteMaxGPUs:   "max useful GPUs the partition allows",
	noteMinGPUs:   "minimum GPUs (min_cost)",
	noteIdleGPUs:  "largest size fitting the idle GPUs",
	noteFewGPUs:   "fewer GPUs idle than the minimum: minimum size",
	noteMaxCores:  "max useful cores the partition allows",
	noteMinCores:  "minimum cores (min_cost)",
	noteIdleCores: "largest size fitting the idle cores",
	noteFewCores:  "fewer cores idle than the minimum: minimum size",
}

// size chooses a concrete request inside the envelope for one candidate, driven by the
// objective:
//
//   - earliest_start: the largest size that fits what is idle now (free GPUs on GPU
//     partitions, free cores otherwise), never below the minimum.
//   - max_throughput, fastest_finish: the maximum useful size the partition allows.
//   - min_cost: the minimum size.
//
// Cores and memory per node: a GPU job that does not say how many cores it wants (no
// cpu_cores, which Normalize makes [1,1]) gets the node's share per GPU, cores/GPUs ×
// its GPUs on the node (16 cores per GPU on a 64-core node with 4 A100; the whole node
// on exclusive partitions, where it is charged anyway); without memory_gb it gets the
// node's memory per GPU likewise (site default when the node's memory is unknown). Otherwise the envelope's request:
// a GPU job's cores are its GPU share clamped to cpu_cores, a CPU job's follow the
// objective, memory is memory_gb.max (min for min_cost) spread over the nodes.
//
// Walltime is the envelope's maximum (capped by the partition) whatever the objective:
// a job cut short costs a whole new attempt. The ranker may then choose walltime.min
// for a candidate whose site estimate says it starts materially sooner (see
// WalltimeProbes); size itself never does.
//
// Work is spread evenly over the nodes (Slurm's --gpus-per-node is uniform); on
// exclusive partitions, where whole nodes are charged anyway, each node gets as many
// GPUs and cores as the envelope's maximum allows.
//
// It writes the sizing into out (pointer-free: the placement keeps one per feasible
// candidate) and returns why (a sizingNotes code), or ok false and why no size inside
// the envelope fits (the capacity rule normally catches that first). r's envelope must be valid (see sizing).
func size(r *Request, rec *model.ResourceRecord, out *sizing) (note uint8, fail string, ok bool) {
	env := &r.Envelope
	capn := nodeCap(env, rec)
	minN, _ := minNodes(env, rec)
	if minN > capn {
		return 0, "the minimum does not fit", false
	}
	obj := env.Objective
	big := obj == model.ObjMaxThroughput || obj == model.ObjFastestFinish

	var nodes, gpn int
	if rec.IsGPU() && env.GPUs.Max > 0 {
		most := min(env.GPUs.Max, rec.GPUsPerNode*capn)
		var target int
		switch {
		case big:
			target = most
			note = noteMaxGPUs
		case obj == model.ObjMinCost:
			target = env.GPUs.Min
			note = noteMinGPUs
		default:
			target = clamp(rec.FreeGPUs, env.GPUs.Min, most)
			note = noteIdleGPUs
			if rec.FreeGPUs < env.GPUs.Min {
				note = noteFewGPUs
			}
		}
		nodes = max(minN, ceilDiv(target, rec.GPUsPerNode))
		if nodes > capn {
			nodes = capn
		}
		gpn = divNodes(target, nodes) // round down to an even spread...
		if gpn*nodes < env.GPUs.Min {
			gpn = ceilDiv(env.GPUs.Min, nodes) // ...unless that drops below the minimum
		}
		if rec.Exclusive {
			gpn = max(gpn, min(rec.GPUsPerNode, divNodes(env.GPUs.Max, nodes)))
		}
		if gpn > rec.GPUsPerNode || gpn*nodes > env.GPUs.Max || gpn < 1 {
			return 0, fmt.Sprintf("no even spread of %d..%d GPUs over %d nodes of %d", env.GPUs.Min, env.GPUs.Max, nodes, rec.GPUsPerNode), false
		}
	} else {
		cpn := rec.CPUCoresPerNode
		most := env.CPUCores.Max
		if cpn > 0 {
			most = min(most, cpn*capn)
		}
		var target int
		switch {
		case big:
			target = most
			note = noteMaxCores
		case obj == model.ObjMinCost:
			target = env.CPUCores.Min
			note = noteMinCores
		default:
			target = clamp(rec.FreeCores, env.CPUCores.Min, most)
			note = noteIdleCores
			if rec.FreeCores < env.CPUCores.Min {
				note = noteFewCores
			}
		}
		nodes = clamp(max(minN, ceilDiv(target, cpn)), minN, capn)
	}

	// Cores per node: GPU jobs take a share of the node in proportion to their GPUs
	// (whole node when exclusive) within the envelope, or exactly that share when the
	// envelope does not ask for cores; CPU jobs spread the target.
	cpn := rec.CPUCoresPerNode
	gpuJob := rec.IsGPU() && gpn > 0
	var cores int
	switch {
	case gpuJob && env.CPUCores.Max <= 1 && cpn > 0: // no cpu_cores asked: the GPUs' share of the node
		cores = cpn
		if !rec.Exclusive {
			cores = cpn * gpn / rec.GPUsPerNode
		}
	case obj == model.ObjMinCost:
		cores = ceilDiv(env.CPUCores.Min, nodes)
	case gpuJob && !big && !rec.Exclusive && cpn > 0:
		share := cpn * gpn / rec.GPUsPerNode
		cores = clamp(share, ceilDiv(env.CPUCores.Min, nodes), max(1, divNodes(env.CPUCores.Max, nodes)))
	case gpuJob:
		cores = max(ceilDiv(env.CPUCores.Min, nodes), divNodes(env.CPUCores.Max, nodes))
	default:
		tgt := env.CPUCores.Max
		if !big {
			tgt = clamp(rec.FreeCores, env.CPUCores.Min, env.CPUCores.Max)
		}
		cores = max(ceilDiv(env.CPUCores.Min, nodes), divNodes(tgt, nodes))
	}
	if rec.Exclusive && obj != model.ObjMinCost && cpn > 0 {
		cores = max(cores, min(cpn, divNodes(env.CPUCores.Max, nodes)))
	}
	if cpn > 0 && cores > cpn {
		cores = cpn
	}
	cores = max(cores, 1)

	mem := 0 // 0 = site default
	switch m := rec.MemoryPerNodeGB; {
	case env.MemoryGB.Max > 0:
		total := env.MemoryGB.Max
		if obj == model.ObjMinCost {
			total = env.MemoryGB.Min
		}
		mem = max(ceilDiv(total, nodes), ceilDiv(env.MemoryGB.Min, nodes))
		if m > 0 && mem > m {
			mem = m
		}
	case gpuJob && m > 0: // no memory_gb asked: the GPUs' share of the node
		mem = m
		if !rec.Exclusive {
			mem = m * gpn / rec.GPUsPerNode
		}
	}

	wall := env.Walltime.Max
	if c := rec.WalltimeCap; c > 0 && wall > c {
		wall = c
	}

	*out = sizing{nodes: int32(nodes), cores: int32(cores), gpn: int32(gpn), mem: int32(mem), wall: wall}
	return note, "", true
}
