package scheduler

import (
	"testing"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

func sizeFor(t *testing.T, env model.Envelope, rec model.ResourceRecord) model.JobSpec {
	t.Helper()
	env.Normalize()
	if err := env.Validate(); err != nil {
		t.Fatalf("envelope: %v", err)
	}
	r := &Request{Task: &model.Task{ID: "t", Name: "job", Command: "run"}, Envelope: env, Now: fixedNow}
	spec, note, ok := Size(r, &rec)
	if !ok {
		t.Fatalf("Size refused: %s", note)
	}
	if note == "" {
		t.Error("Size gave no note")
	}
	// Whatever the objective, the request stays inside the envelope and the partition.
	if spec.GPUs < env.GPUs.Min || spec.GPUs > env.GPUs.Max {
		t.Errorf("gpus %d outside [%d,%d]", spec.GPUs, env.GPUs.Min, env.GPUs.Max)
	}
	if spec.Nodes < env.Nodes.Min || spec.Nodes > env.Nodes.Max {
		t.Errorf("nodes %d outside [%d,%d]", spec.Nodes, env.Nodes.Min, env.Nodes.Max)
	}
	if rec.GPUsPerNode > 0 && spec.GPUsPerNode > rec.GPUsPerNode {
		t.Errorf("gpus per node %d > node's %d", spec.GPUsPerNode, rec.GPUsPerNode)
	}
	if spec.GPUs != spec.GPUsPerNode*spec.Nodes {
		t.Errorf("uneven spread: %d GPUs, %d per node on %d nodes", spec.GPUs, spec.GPUsPerNode, spec.Nodes)
	}
	if spec.Walltime < env.Walltime.Min || spec.Walltime > env.Walltime.Max {
		t.Errorf("walltime %s outside [%s,%s]", spec.Walltime, env.Walltime.Min, env.Walltime.Max)
	}
	if rec.CPUCoresPerNode > 0 && spec.CPUsPerTask > rec.CPUCoresPerNode {
		t.Errorf("cpus per node %d > node's %d", spec.CPUsPerTask, rec.CPUCoresPerNode)
	}
	if spec.CPUsPerTask*spec.Nodes < env.CPUCores.Min {
		t.Errorf("cores %d below min %d", spec.CPUsPerTask*spec.Nodes, env.CPUCores.Min)
	}
	return spec
}

func gpuEnv(obj model.Objective) model.Envelope {
	return model.Envelope{
		GPUs: model.IntRange{Min: 2, Max: 8}, CPUCores: model.IntRange{Min: 8, Max: 64}, Nodes: model.IntRange{Min: 1, Max: 2},
		MemoryGB: model.IntRange{Min: 64, Max: 256}, Walltime: model.DurationRange{Min: hours(2), Max: hours(12)}, Objective: obj,
	}
}

func TestSizingEarliestStartUsesIdle(t *testing.T) {
	rec := baseRec() // 4 A100 per node, shared
	rec.FreeGPUs = 3
	s := sizeFor(t, gpuEnv(model.ObjEarliestStart), rec)
	if s.GPUs != 3 || s.Nodes != 1 {
		t.Errorf("earliest_start with 3 idle GPUs: got %d GPUs on %d nodes, want 3 on 1", s.GPUs, s.Nodes)
	}
	if s.Walltime != hours(2) {
		t.Errorf("earliest_start walltime %s, want walltime.min 2h", s.Walltime)
	}
	rec.FreeGPUs = 0
	if s := sizeFor(t, gpuEnv(model.ObjEarliestStart), rec); s.GPUs != 2 {
		t.Errorf("nothing idle: got %d GPUs, want the minimum 2", s.GPUs)
	}
	rec.FreeGPUs = 100
	if s := sizeFor(t, gpuEnv(model.ObjEarliestStart), rec); s.GPUs != 8 || s.Nodes != 2 || s.GPUsPerNode != 4 {
		t.Errorf("plenty idle: got %d GPUs (%d/node on %d nodes), want max 8 = 4x2", s.GPUs, s.GPUsPerNode, s.Nodes)
	}
}

func TestSizingMaxThroughputAndFastestFinish(t *testing.T) {
	for _, obj := range []model.Objective{model.ObjMaxThroughput, model.ObjFastestFinish} {
		rec := baseRec()
		rec.FreeGPUs = 0
		s := sizeFor(t, gpuEnv(obj), rec)
		if s.GPUs != 8 || s.Nodes != 2 {
			t.Errorf("%s: got %d GPUs on %d nodes, want max useful 8 on 2", obj, s.GPUs, s.Nodes)
		}
		if s.Walltime != hours(12) {
			t.Errorf("%s: walltime %s, want max 12h", obj, s.Walltime)
		}
		rec.MaxNodesPerJob = 1 // the partition caps it
		if s := sizeFor(t, gpuEnv(obj), rec); s.GPUs != 4 || s.Nodes != 1 {
			t.Errorf("%s capped at 1 node: got %d GPUs on %d nodes, want 4 on 1", obj, s.GPUs, s.Nodes)
		}
		rec.WalltimeCap = hours(6)
		if s := sizeFor(t, gpuEnv(obj), rec); s.Walltime != hours(6) {
			t.Errorf("%s: walltime %s, want the 6h cap", obj, s.Walltime)
		}
	}
}

func TestSizingMinCost(t *testing.T) {
	rec := baseRec()
	rec.FreeGPUs = 100
	s := sizeFor(t, gpuEnv(model.ObjMinCost), rec)
	if s.GPUs != 2 || s.Nodes != 1 || s.CPUsPerTask != 8 || s.MemoryGB != 64 || s.Walltime != hours(2) {
		t.Errorf("min_cost: got %+v, want the minimum (2 GPUs, 1 node, 8 cpus, 64 GB, 2h)", s)
	}
}

func TestSizingExclusiveFillsNodes(t *testing.T) {
	rec := gpuRec("Lonestar6@TACC", "gpu-a100", "A", "x86_64", "A100", 3, 40, 128, 256, 84, 0, 0, 48, true, 4)
	env := gpuEnv(model.ObjMinCost)
	env.GPUs = model.IntRange{Min: 1, Max: 4}
	s := sizeFor(t, env, rec)
	if s.GPUs != 3 || s.Nodes != 1 {
		t.Errorf("exclusive node: got %d GPUs on %d nodes, want the whole node's 3", s.GPUs, s.Nodes)
	}
}

func TestSizingCPUJob(t *testing.T) {
	rec := cpuRec("Anvil@RCAC", "wholenode", "A", 128, 256, 1000, 10, 0, 96, true, 1)
	env := model.Envelope{CPUCores: model.IntRange{Min: 128, Max: 512}, Nodes: model.IntRange{Min: 1, Max: 8}, Walltime: model.DurationRange{Min: hours(1)}}
	env.Objective = model.ObjMaxThroughput
	if s := sizeFor(t, env, rec); s.Nodes != 4 || s.CPUsPerTask != 128 || s.GPUs != 0 {
		t.Errorf("max_throughput CPU job: got %d nodes x %d cpus, want 4 x 128", s.Nodes, s.CPUsPerTask)
	}
	env.Objective = model.ObjMinCost
	if s := sizeFor(t, env, rec); s.Nodes != 1 || s.CPUsPerTask != 128 {
		t.Errorf("min_cost CPU job: got %d nodes x %d cpus, want 1 x 128", s.Nodes, s.CPUsPerTask)
	}
	env.Objective = model.ObjEarliestStart
	rec.FreeCores = 256
	if s := sizeFor(t, env, rec); s.Nodes != 2 {
		t.Errorf("earliest_start with 256 idle cores: got %d nodes x %d cpus, want 2 nodes", s.Nodes, s.CPUsPerTask)
	}
}
