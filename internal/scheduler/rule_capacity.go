package scheduler

import (
	"strconv"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

// CapacityRule checks that the envelope's minimum fits the partition's node shape and
// per-job node limit: some node count in [nodes.min, nodes.max] (capped by the
// partition's max nodes per job and its size) holds the minimum GPUs, cores and memory.
type CapacityRule struct{}

var _ builtin = CapacityRule{}

// Name implements Rule.
func (CapacityRule) Name() string { return "capacity" }

// Check implements Rule.
func (x CapacityRule) Check(r *Request, c *Candidate) Verdict { return verdict(x, r, c) }

const (
	capacityFits      = iota
	capacityPerJob    // nodes.min over the partition's max nodes per job
	capacityPartition // nodes.min over the partition's size
	capacityNodeCap   // the minimum needs more nodes than allowed
	capacityGPUSpread // the minimum needs more nodes than gpus.max can give a GPU each
)

func (CapacityRule) test(r *Request, rec *model.ResourceRecord, _ model.Health) outcome {
	env := &r.Envelope
	if m := rec.MaxNodesPerJob; m > 0 && env.Nodes.Min > m {
		return fail(capacityPerJob)
	}
	if t := rec.Nodes.Total; t > 0 && env.Nodes.Min > t {
		return fail(capacityPartition)
	}
	need, _ := minNodes(env, rec)
	if need > nodeCap(env, rec) {
		return fail(capacityNodeCap)
	}
	if rec.IsGPU() && env.GPUs.Min > 0 && need > env.GPUs.Max {
		return fail(capacityGPUSpread)
	}
	return pass(capacityFits)
}

func (CapacityRule) reason(w *words, r *Request, rec *model.ResourceRecord, _ model.Health, o outcome) string {
	env := &r.Envelope
	need, which := minNodes(env, rec)
	switch o.why() {
	case capacityPerJob:
		return w.join("partition allows ", strconv.Itoa(rec.MaxNodesPerJob), " nodes per job; nodes.min is ", strconv.Itoa(env.Nodes.Min))
	case capacityPartition:
		return w.join("partition has ", strconv.Itoa(rec.Nodes.Total), " nodes; nodes.min is ", strconv.Itoa(env.Nodes.Min))
	case capacityNodeCap:
		return w.join(minWhy(which, env), " needs ", strconv.Itoa(need), " nodes here; at most ", strconv.Itoa(nodeCap(env, rec)), " allowed", capWhy(env, rec))
	case capacityGPUSpread:
		return w.join(minWhy(which, env), " needs ", strconv.Itoa(need), " nodes but gpus.max ", strconv.Itoa(env.GPUs.Max), " cannot give each a GPU")
	}
	return w.join("minimum fits on ", strconv.Itoa(need), " node(s)")
}

// Which resource decides the minimum node count.
const (
	byNodes = iota
	byGPUs
	byCores
	byMemory
)

// minNodes is the fewest nodes holding the envelope's minimum, and which resource decides it.
func minNodes(env *model.Envelope, rec *model.ResourceRecord) (n, which int) {
	n, which = env.Nodes.Min, byNodes
	if rec.GPUsPerNode > 0 && env.GPUs.Min > 0 {
		if k := ceilDiv(env.GPUs.Min, rec.GPUsPerNode); k > n {
			n, which = k, byGPUs
		}
	}
	if rec.CPUCoresPerNode > 0 {
		if k := ceilDiv(env.CPUCores.Min, rec.CPUCoresPerNode); k > n {
			n, which = k, byCores
		}
	}
	if rec.MemoryPerNodeGB > 0 && env.MemoryGB.Min > 0 {
		if k := ceilDiv(env.MemoryGB.Min, rec.MemoryPerNodeGB); k > n {
			n, which = k, byMemory
		}
	}
	return n, which
}

func minWhy(which int, env *model.Envelope) string {
	switch which {
	case byGPUs:
		return "gpus.min " + strconv.Itoa(env.GPUs.Min)
	case byCores:
		return "cpu_cores.min " + strconv.Itoa(env.CPUCores.Min)
	case byMemory:
		return "memory_gb.min " + strconv.Itoa(env.MemoryGB.Min)
	}
	return "nodes.min " + strconv.Itoa(env.Nodes.Min)
}

func capWhy(env *model.Envelope, rec *model.ResourceRecord) string {
	capn := nodeCap(env, rec)
	switch {
	case capn == env.Nodes.Max:
		return " (nodes.max)"
	case capn == rec.MaxNodesPerJob:
		return " (partition max nodes per job)"
	default:
		return " (partition size)"
	}
}
