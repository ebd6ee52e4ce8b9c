package draft

import (
	"strings"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

func TestHeuristic(t *testing.T) {
	h := func(x float64) model.Duration { return model.Duration(time.Duration(x * float64(time.Hour))) }
	cases := []struct {
		desc       string
		gpus       [2]int // min, max; {-1,-1} = don't check
		minGPUMem  int
		nodes      [2]int
		wall       [2]model.Duration
		gpuModels  string
		objective  model.Objective
		rationale  string
		confidence float64 // at least
	}{
		{desc: "Fine-tune a 7B model with full training for about 6 hours",
			gpus: [2]int{4, 8}, minGPUMem: 40, nodes: [2]int{1, 2}, wall: [2]model.Duration{h(6), h(9)}, rationale: "7B parameters", confidence: 0.5},
		{desc: "Inference with a 7B model, serving a batch of prompts, 2 hours",
			gpus: [2]int{1, 1}, minGPUMem: 24, nodes: [2]int{1, 1}, wall: [2]model.Duration{h(2), h(3)}, rationale: "inference", confidence: 0.5},
		{desc: "Pretrain a 70B params model, multi-node, 2 days",
			gpus: [2]int{18, 36}, minGPUMem: 80, nodes: [2]int{2, 8}, wall: [2]model.Duration{h(48), h(72)}, rationale: "multi-node"},
		{desc: "Run an MPI CFD simulation on 4 nodes for 6-8 hours",
			gpus: [2]int{0, 0}, nodes: [2]int{4, 4}, wall: [2]model.Duration{h(6), h(8)}, rationale: "intent cpu"},
		{desc: "LoRA finetune of a 13 billion parameter model on 1-4 A100 GPUs, cheap please, 90 minutes",
			gpus: [2]int{1, 4}, minGPUMem: 40, nodes: [2]int{1, 1}, wall: [2]model.Duration{h(1.5), h(2.25)}, gpuModels: "A100", objective: model.ObjMinCost},
		{desc: "something with GPUs",
			gpus: [2]int{1, 1}, nodes: [2]int{1, 1}, wall: [2]model.Duration{h(1), h(8)}, rationale: "default walltime"},
		{desc: "train resnet on 2x H100 with apptainer docker://nvcr.io/nvidia/pytorch:24.01-py3 for 12h on grace",
			gpus: [2]int{2, 2}, nodes: [2]int{1, 1}, wall: [2]model.Duration{h(12), h(18)}, gpuModels: "H100", rationale: "container"},
	}
	for _, tc := range cases {
		t.Run(tc.desc, func(t *testing.T) {
			e := Heuristic(tc.desc)
			if err := e.Validate(); err != nil {
				t.Fatalf("invalid draft: %v", err)
			}
			if e.Source != model.SourceHeuristic || e.Confidence <= 0 || e.Confidence > 1 {
				t.Errorf("provenance %s %v", e.Source, e.Confidence)
			}
			if e.Confidence < tc.confidence {
				t.Errorf("confidence %v < %v", e.Confidence, tc.confidence)
			}
			if tc.gpus[0] >= 0 && (e.GPUs.Min != tc.gpus[0] || e.GPUs.Max != tc.gpus[1]) {
				t.Errorf("gpus %v, want %v (%s)", e.GPUs, tc.gpus, e.Rationale)
			}
			if e.Constraints.MinGPUMemoryGB != tc.minGPUMem {
				t.Errorf("min gpu memory %d, want %d (%s)", e.Constraints.MinGPUMemoryGB, tc.minGPUMem, e.Rationale)
			}
			if e.Nodes.Min != tc.nodes[0] || e.Nodes.Max != tc.nodes[1] {
				t.Errorf("nodes %v, want %v", e.Nodes, tc.nodes)
			}
			if e.Walltime.Min != tc.wall[0] || e.Walltime.Max != tc.wall[1] {
				t.Errorf("walltime %s-%s, want %s-%s", e.Walltime.Min, e.Walltime.Max, tc.wall[0], tc.wall[1])
			}
			if got := strings.Join(e.Constraints.GPUModels, ","); got != tc.gpuModels {
				t.Errorf("gpu models %q, want %q", got, tc.gpuModels)
			}
			obj := tc.objective
			if obj == "" {
				obj = model.ObjEarliestStart
			}
			if e.Objective != obj {
				t.Errorf("objective %s, want %s", e.Objective, obj)
			}
			if !strings.Contains(e.Rationale, tc.rationale) {
				t.Errorf("rationale %q lacks %q", e.Rationale, tc.rationale)
			}
		})
	}
}

// FuzzHeuristic: any description yields a valid envelope without panicking.
func FuzzHeuristic(f *testing.F) {
	f.Add("train a 7B model for about 6 hours on 4 A100 GPUs")
	f.Add("MPI on 1000000 nodes for 99999 days with 0 gpus")
	f.Add("70b params multi-node 3-2 hours 5 gpus 1-0 nodes")
	for _, ex := range Examples {
		f.Add(ex.Description)
	}
	f.Add("99999 gpus per node on 100000 nodes, 9999999 cores per node, 99999 tb, a100-80 gh200 grace hopper 2h99")
	f.Add("no gpu 4x a100 80gb 24 gb of vram 1:99 between 9 and 2 hours up to 0 hours")
	f.Fuzz(func(t *testing.T, desc string) {
		e := Heuristic(desc)
		if err := e.Validate(); err != nil {
			t.Fatalf("Heuristic(%q) is invalid: %v", desc, err)
		}
		if strings.HasPrefix(e.Rationale, "heuristic draft fell back") {
			t.Fatalf("Heuristic(%q) needed the fallback: %s", desc, e.Rationale)
		}
	})
}

// TestHeuristicExamples: every description of the shared table (Examples, ≥ 60,
// written as users write) drafts an envelope inside the example's bounds, and valid.
func TestHeuristicExamples(t *testing.T) {
	if len(Examples) < 60 {
		t.Fatalf("only %d examples; the table must keep at least 60", len(Examples))
	}
	few := 0
	for _, ex := range Examples {
		if ex.FewShot {
			few++
		}
		t.Run(ex.Description, func(t *testing.T) {
			e := Heuristic(ex.Description)
			if err := e.Validate(); err != nil {
				t.Fatalf("invalid draft: %v", err)
			}
			span := func(name string, s Span, r model.IntRange) {
				if s.Set && (r.Min < s.MinLo || r.Min > s.MinHi || r.Max < s.MaxLo || r.Max > s.MaxHi) {
					t.Errorf("%s %d..%d, want min in [%d,%d], max in [%d,%d]\n  %s", name, r.Min, r.Max, s.MinLo, s.MinHi, s.MaxLo, s.MaxHi, e.Rationale)
				}
			}
			span("gpus", ex.GPUs, e.GPUs)
			span("cpu_cores", ex.Cores, e.CPUCores)
			span("nodes", ex.Nodes, e.Nodes)
			span("memory_gb", ex.MemoryGB, e.MemoryGB)
			span("min_gpu_memory_gb", ex.MinGPUMemGB, model.IntRange{Min: e.Constraints.MinGPUMemoryGB, Max: e.Constraints.MinGPUMemoryGB})
			if w, r := ex.Walltime, e.Walltime; w.Set {
				lo, hi := time.Duration(r.Min), time.Duration(r.Max)
				if lo < w.MinLo || lo > w.MinHi || hi < w.MaxLo || hi > w.MaxHi {
					t.Errorf("walltime %s..%s, want min in [%s,%s], max in [%s,%s]\n  %s", lo, hi, w.MinLo, w.MinHi, w.MaxLo, w.MaxHi, e.Rationale)
				}
			}
			if ex.GPUModels != nil && strings.Join(e.Constraints.GPUModels, ",") != strings.Join(ex.GPUModels, ",") {
				t.Errorf("gpu_models %v, want %v", e.Constraints.GPUModels, ex.GPUModels)
			}
			switch {
			case ex.Arch == "-" && len(e.Constraints.Arch) > 0:
				t.Errorf("arch %v, want none", e.Constraints.Arch)
			case ex.Arch != "" && ex.Arch != "-" && (len(e.Constraints.Arch) != 1 || e.Constraints.Arch[0] != ex.Arch):
				t.Errorf("arch %v, want %s", e.Constraints.Arch, ex.Arch)
			}
			if ex.Objective != "" && e.Objective != ex.Objective {
				t.Errorf("objective %s, want %s", e.Objective, ex.Objective)
			}
		})
	}
	if few < 5 {
		t.Errorf("%d few-shot examples; the LLM prompt needs at least 5", few)
	}
}
