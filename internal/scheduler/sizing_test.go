package scheduler

import (
	"testing"
	"time"

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
	if s.Walltime != hours(12) {
		t.Errorf("earliest_start walltime %s, want walltime.max 12h (sizing never shortens; the ranker may, see WalltimeProbes)", s.Walltime)
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
	// The minimum size, but walltime.max: a job cut short costs a new attempt, and
	// Slurm charges the time used, not the time asked.
	if s.GPUs != 2 || s.Nodes != 1 || s.CPUsPerTask != 8 || s.MemoryGB != 64 || s.Walltime != hours(12) {
		t.Errorf("min_cost: got %+v, want the minimum size (2 GPUs, 1 node, 8 cpus, 64 GB) and walltime.max 12h", s)
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

// TestSizingGPUShareDefaults: a GPU job that does not ask for cores or memory gets the
// node's share per GPU (cores/GPUs × its GPUs on the node, memory likewise; the whole
// node on exclusive partitions), whatever the objective; what the envelope asks is kept.
// Before, such a job got 1 core per node and the site's default memory.
func TestSizingGPUShareDefaults(t *testing.T) {
	a100x4 := gpuRec("Delta@NCSA", "gpuA100x4", "A", "x86_64", "A100", 4, 40, 64, 256, 100, 400, 0, 48, false, 1)
	anvil := gpuRec("Anvil@RCAC", "gpu", "A", "x86_64", "A100", 4, 40, 128, 512, 16, 64, 0, 48, false, 1)
	mi100 := gpuRec("Delta@NCSA", "gpuMI100x8", "A", "x86_64", "MI100", 8, 32, 128, 2048, 1, 8, 0, 48, false, 0.25)
	vista := gpuRec("Vista@TACC", "gh", "A", "aarch64", "H100", 1, 96, 72, 116, 600, 600, 0, 48, true, 1)
	ls6 := gpuRec("Lonestar6@TACC", "gpu-a100", "A", "x86_64", "A100", 3, 40, 128, 256, 84, 252, 0, 48, true, 4)
	noMem := a100x4
	noMem.MemoryPerNodeGB = 0
	noCores := a100x4
	noCores.CPUCoresPerNode = 0
	env := func(gpus, cpus, mem, nodes int, obj model.Objective) model.Envelope {
		return model.Envelope{GPUs: model.IntRange{Min: gpus}, CPUCores: model.IntRange{Min: cpus}, MemoryGB: model.IntRange{Min: mem},
			Nodes: model.IntRange{Min: nodes}, Walltime: model.DurationRange{Min: hours(1)}, Objective: obj}
	}
	for _, tc := range []struct {
		name             string
		rec              model.ResourceRecord
		env              model.Envelope
		nodes, cpn, memN int
	}{
		{"1 of 4xA100, 64 cores: 16 cores/GPU", a100x4, env(1, 0, 0, 0, ""), 1, 16, 64},
		{"2 of 4xA100", a100x4, env(2, 0, 0, 0, ""), 1, 32, 128},
		{"4 of 4xA100: the whole node", a100x4, env(4, 0, 0, 0, ""), 1, 64, 256},
		{"8 GPUs on 2 nodes of 4xA100", a100x4, env(8, 0, 0, 2, ""), 2, 64, 256},
		{"1 of 4xA100, 128 cores, 512 GB", anvil, env(1, 0, 0, 0, ""), 1, 32, 128},
		{"2 of 8xMI100, 128 cores, 2 TB", mi100, env(2, 0, 0, 0, ""), 1, 32, 512},
		{"min_cost too", a100x4, env(1, 0, 0, 0, model.ObjMinCost), 1, 16, 64},
		{"max_throughput too", a100x4, env(1, 0, 0, 0, model.ObjMaxThroughput), 1, 16, 64},
		{"exclusive 1xH100 node", vista, env(1, 0, 0, 0, ""), 1, 72, 116},
		{"exclusive 3xA100 node, 1 GPU: charged the node, gets the node", ls6, env(1, 0, 0, 0, ""), 1, 128, 256},
		{"node memory unknown: site default", noMem, env(1, 0, 0, 0, ""), 1, 16, 0},
		{"node cores unknown: 1 core", noCores, env(1, 0, 0, 0, ""), 1, 1, 64},
		{"--cpus 8 asked: 8", a100x4, env(1, 8, 0, 0, ""), 1, 8, 64},
		{"--mem 32 asked: 32", a100x4, env(1, 0, 32, 0, ""), 1, 16, 32},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := sizeFor(t, tc.env, tc.rec)
			if s.Nodes != tc.nodes || s.CPUsPerTask != tc.cpn || s.MemoryGB != tc.memN {
				t.Errorf("got %d node(s) x %d cores, %d GB/node; want %d x %d cores, %d GB/node", s.Nodes, s.CPUsPerTask, s.MemoryGB, tc.nodes, tc.cpn, tc.memN)
			}
		})
	}
}

// TestSizingCPUJobWithoutCPUs: a CPU job keeps what the envelope asks (one core when it
// says nothing) and the site's default memory; the GPU share applies to GPU jobs only.
func TestSizingCPUJobWithoutCPUs(t *testing.T) {
	rec := cpuRec("Anvil@RCAC", "shared", "A", 128, 256, 1000, 100, 0, 96, false, 1)
	s := sizeFor(t, model.Envelope{Walltime: model.DurationRange{Min: hours(1)}}, rec)
	if s.CPUsPerTask != 1 || s.MemoryGB != 0 || s.GPUs != 0 {
		t.Errorf("got %d cores, %d GB, %d GPUs; want 1 core, site default memory, no GPU", s.CPUsPerTask, s.MemoryGB, s.GPUs)
	}
}

// TestSizingWalltimeDefaultsToMax: whatever the objective, sizing asks for the
// envelope's maximum walltime (capped by the partition). Before, earliest_start and
// min_cost took the minimum, so an 8-minute job with --walltime 2m..30m took four
// attempts (2m, 4m, 8m, 16m).
func TestSizingWalltimeDefaultsToMax(t *testing.T) {
	rec := cpuRec("Anvil@RCAC", "shared", "A", 128, 256, 1000, 100, 0, 96, false, 1)
	for _, obj := range []model.Objective{model.ObjEarliestStart, model.ObjMinCost, model.ObjMaxThroughput, model.ObjFastestFinish} {
		env := model.Envelope{CPUCores: model.IntRange{Min: 4}, Walltime: model.DurationRange{Min: model.Duration(2 * time.Minute), Max: model.Duration(30 * time.Minute)}, Objective: obj}
		if s := sizeFor(t, env, rec); s.Walltime != model.Duration(30*time.Minute) {
			t.Errorf("%s: walltime %s, want the envelope's max 30m", obj, s.Walltime)
		}
		capped := rec
		capped.WalltimeCap = model.Duration(20 * time.Minute)
		if s := sizeFor(t, env, capped); s.Walltime != model.Duration(20*time.Minute) {
			t.Errorf("%s: walltime %s, want the partition's 20m cap", obj, s.Walltime)
		}
	}
}
