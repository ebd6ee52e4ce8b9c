package scheduler

import (
	"strconv"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

// CapacityRule checks that the envelope's minimum fits the partition's node shape and
// per-job node limit: some node count in [nodes.min, nodes.max] (capped by the
// partition's max nodes per job and its size) holds the minimum GPUs, cores and memory.
type CapacityRule struct{}

// Name implements Rule.
func (CapacityRule) Name() string { return "capacity" }

// Check implements Rule.
func (CapacityRule) Check(r *Request, c *Candidate) Verdict {
	env := &r.Envelope
	rec := c.Record
	if m := rec.MaxNodesPerJob; m > 0 && env.Nodes.Min > m {
		return Failf(r, func() string {
			return "partition allows " + strconv.Itoa(m) + " nodes per job; nodes.min is " + strconv.Itoa(env.Nodes.Min)
		})
	}
	if t := rec.Nodes.Total; t > 0 && env.Nodes.Min > t {
		return Failf(r, func() string {
			return "partition has " + strconv.Itoa(t) + " nodes; nodes.min is " + strconv.Itoa(env.Nodes.Min)
		})
	}
	need, which := minNodes(env, rec)
	capn := nodeCap(env, rec)
	if need > capn {
		return Failf(r, func() string {
			return minWhy(which, env) + " needs " + strconv.Itoa(need) + " nodes here; at most " + strconv.Itoa(capn) + " allowed" + capWhy(env, rec)
		})
	}
	if rec.IsGPU() && env.GPUs.Min > 0 && need > env.GPUs.Max {
		return Failf(r, func() string {
			return minWhy(which, env) + " needs " + strconv.Itoa(need) + " nodes but gpus.max " + strconv.Itoa(env.GPUs.Max) + " cannot give each a GPU"
		})
	}
	return Passf(r, func() string { return "minimum fits on " + strconv.Itoa(need) + " node(s)" })
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

// fails is Check's pass/fail without the reason (see quickRule).
func (CapacityRule) fails(r *Request, rec *model.ResourceRecord, _ model.Health) bool {
	env := &r.Envelope
	if m := rec.MaxNodesPerJob; m > 0 && env.Nodes.Min > m {
		return true
	}
	if t := rec.Nodes.Total; t > 0 && env.Nodes.Min > t {
		return true
	}
	need, _ := minNodes(env, rec)
	if need > nodeCap(env, rec) {
		return true
	}
	return rec.IsGPU() && env.GPUs.Min > 0 && need > env.GPUs.Max
}
