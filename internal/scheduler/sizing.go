package scheduler

import (
	"fmt"

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
	if b <= 0 {
		return a
	}
	return (a + b - 1) / b
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

// Size chooses a concrete request inside the envelope for one candidate, driven by the
// objective:
//
//   - earliest_start: the largest size that fits what is idle now (free GPUs on GPU
//     partitions, free cores otherwise), never below the minimum; walltime.min, since
//     short requests backfill sooner.
//   - max_throughput, fastest_finish: the maximum useful size the partition allows, and
//     the longest walltime up to the partition cap.
//   - min_cost: the minimum size and walltime.min.
//
// Work is spread evenly over the nodes (Slurm's --gpus-per-node is uniform); on
// exclusive partitions, where whole nodes are charged anyway, each node gets as many
// GPUs and cores as the envelope's maximum allows. ok is false when no size inside the
// envelope fits (the capacity rule normally catches that first).
func Size(r *Request, rec *model.ResourceRecord) (spec model.JobSpec, note string, ok bool) {
	ok = sizeInto(r, rec, &spec, &note)
	return spec, note, ok
}

// sizeInto is Size writing into caller-owned memory (the placement hot path). out must
// be zero; it is written only when sizing succeeds.
func sizeInto(r *Request, rec *model.ResourceRecord, out *model.JobSpec, notep *string) bool {
	var note string
	env := &r.Envelope
	capn := nodeCap(env, rec)
	minN, _ := minNodes(env, rec)
	if minN > capn {
		*notep = "the minimum does not fit"
		return false
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
			note = "max useful GPUs the partition allows"
		case obj == model.ObjMinCost:
			target = env.GPUs.Min
			note = "minimum GPUs (min_cost)"
		default:
			target = clamp(rec.FreeGPUs, env.GPUs.Min, most)
			note = "largest size fitting the idle GPUs"
			if rec.FreeGPUs < env.GPUs.Min {
				note = "fewer GPUs idle than the minimum: minimum size"
			}
		}
		nodes = max(minN, ceilDiv(target, rec.GPUsPerNode))
		if nodes > capn {
			nodes = capn
		}
		gpn = target / nodes // round down to an even spread...
		if gpn*nodes < env.GPUs.Min {
			gpn = ceilDiv(env.GPUs.Min, nodes) // ...unless that drops below the minimum
		}
		if rec.Exclusive {
			gpn = max(gpn, min(rec.GPUsPerNode, env.GPUs.Max/nodes))
		}
		if gpn > rec.GPUsPerNode || gpn*nodes > env.GPUs.Max || gpn < 1 {
			*notep = fmt.Sprintf("no even spread of %d..%d GPUs over %d nodes of %d", env.GPUs.Min, env.GPUs.Max, nodes, rec.GPUsPerNode)
			return false
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
			note = "max useful cores the partition allows"
		case obj == model.ObjMinCost:
			target = env.CPUCores.Min
			note = "minimum cores (min_cost)"
		default:
			target = clamp(rec.FreeCores, env.CPUCores.Min, most)
			note = "largest size fitting the idle cores"
			if rec.FreeCores < env.CPUCores.Min {
				note = "fewer cores idle than the minimum: minimum size"
			}
		}
		nodes = clamp(max(minN, ceilDiv(target, cpn)), minN, capn)
	}

	// Cores per node: GPU jobs take a share of the node in proportion to their GPUs
	// (whole node when exclusive) within the envelope; CPU jobs spread the target.
	cpn := rec.CPUCoresPerNode
	var cores int
	switch {
	case obj == model.ObjMinCost:
		cores = ceilDiv(env.CPUCores.Min, nodes)
	case rec.IsGPU() && gpn > 0 && !big && !rec.Exclusive && cpn > 0:
		share := cpn * gpn / rec.GPUsPerNode
		cores = clamp(share, ceilDiv(env.CPUCores.Min, nodes), max(1, env.CPUCores.Max/nodes))
	case rec.IsGPU() && gpn > 0:
		cores = max(ceilDiv(env.CPUCores.Min, nodes), env.CPUCores.Max/nodes)
	default:
		tgt := env.CPUCores.Max
		if !big {
			tgt = clamp(rec.FreeCores, env.CPUCores.Min, env.CPUCores.Max)
		}
		cores = max(ceilDiv(env.CPUCores.Min, nodes), tgt/nodes)
	}
	if rec.Exclusive && obj != model.ObjMinCost && cpn > 0 {
		cores = max(cores, min(cpn, env.CPUCores.Max/nodes))
	}
	if cpn > 0 && cores > cpn {
		cores = cpn
	}
	cores = max(cores, 1)

	mem := 0 // 0 = site default
	if env.MemoryGB.Max > 0 {
		total := env.MemoryGB.Max
		if obj == model.ObjMinCost {
			total = env.MemoryGB.Min
		}
		mem = max(ceilDiv(total, nodes), ceilDiv(env.MemoryGB.Min, nodes))
		if m := rec.MemoryPerNodeGB; m > 0 && mem > m {
			mem = m
		}
	}

	wall := env.Walltime.Min
	if big {
		wall = env.Walltime.Max
	}
	if c := rec.WalltimeCap; c > 0 && wall > c {
		wall = c
	}

	// Field by field rather than `*out = model.JobSpec{...}`: out is freshly zeroed
	// slab memory in Place, and copying the whole struct (Tag, Env, WorkDir, ...) costs
	// a bulk write barrier over every pointer field whenever the GC is marking.
	out.Name, out.Command, out.Script = r.Task.Name, r.Task.Command, r.Task.Script
	out.System, out.Partition, out.Account = rec.System, rec.Partition, rec.Account
	out.Nodes, out.NTasks, out.CPUsPerTask = nodes, nodes, cores
	out.GPUs, out.GPUsPerNode, out.MemoryGB, out.Walltime = gpn*nodes, gpn, mem, wall
	out.Container = r.Envelope.Constraints.Container
	if gpn > 0 {
		out.GPUModel = rec.GPUModel
	}
	*notep = note
	return true
}
