package scheduler

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

// feasibleParts places task on the six-machine snapshot (plus extra records) and
// returns the feasible system/partition names, sorted.
func feasibleParts(t *testing.T, env model.Envelope, extra ...model.ResourceRecord) ([]string, *Decision) {
	t.Helper()
	snap := sixMachines()
	snap.Records = append(snap.Records, extra...)
	model.SortRecords(snap.Records)
	task := &model.Task{ID: "t-gpu", Name: "gpu", Command: "true", Envelope: env}
	d, err := newTestScheduler(Options{}).Place(context.Background(), task, snap, PlaceOptions{})
	if err != nil && d == nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range d.Feasible() {
		out = append(out, c.System+"/"+c.Partition)
	}
	slices.Sort(out)
	return slices.Compact(out), d
}

func gpuModelEnv(models ...string) model.Envelope {
	return model.Envelope{
		GPUs: model.IntRange{Min: 1, Max: 1}, CPUCores: model.IntRange{Min: 1, Max: 8},
		Walltime:    model.DurationRange{Min: hours(1), Max: hours(2)},
		Constraints: model.Constraints{GPUModels: models},
	}
}

// TestGH200OnlyMatchesAarch64H100Class: a Grace-Hopper request places only on
// partitions whose GPUs are GH200, or H100-class on an aarch64 host (DeltaAI ghx4,
// Vista gh), never on the x86 H100 partitions (Anvil ai, Lonestar6 gpu-h100).
func TestGH200OnlyMatchesAarch64H100Class(t *testing.T) {
	gh := gpuRec("Site@X", "gh200", "acct", "aarch64", "GH200", 4, 96, 288, 480, 10, 8, 0, 48, false, 1)
	for _, spelled := range []string{"GH200", "gh200", "Grace Hopper", "NVIDIA GH200"} {
		env := gpuModelEnv(spelled)
		env.Normalize()
		got, d := feasibleParts(t, env, gh)
		want := []string{"DeltaAI@NCSA/ghx4", "Site@X/gh200", "Vista@TACC/gh"}
		if !slices.Equal(got, want) {
			t.Fatalf("%s: feasible %v, want %v\n%s", spelled, got, want, tableText(d))
		}
		for _, c := range d.Candidates {
			if c.Partition == "ai" && c.System == "Anvil@RCAC" && !strings.Contains(reasons(c), "GH200 = H100-class GPU on an aarch64 host") {
				t.Errorf("x86 H100 rejection does not explain the GH200: %q", reasons(c))
			}
		}
	}
	// H100 takes every H100-class partition, Grace Hopper included.
	env := gpuModelEnv("H100")
	env.Normalize()
	got, _ := feasibleParts(t, env, gh)
	for _, p := range []string{"Anvil@RCAC/ai", "DeltaAI@NCSA/ghx4", "Site@X/gh200", "Vista@TACC/gh"} {
		if !slices.Contains(got, p) {
			t.Errorf("H100 request: %s not feasible (%v)", p, got)
		}
	}
	// H100 on x86_64 excludes the Grace Hoppers.
	env.Constraints.Arch = []string{"x86_64"}
	got, _ = feasibleParts(t, env, gh)
	if slices.Contains(got, "Vista@TACC/gh") || slices.Contains(got, "Site@X/gh200") || !slices.Contains(got, "Anvil@RCAC/ai") {
		t.Errorf("H100 on x86_64: %v", got)
	}
}

// TestA100MemoryVariants: "A100-80GB" takes only 80 GB A100 partitions; "A100" both.
func TestA100MemoryVariants(t *testing.T) {
	a80 := gpuRec("Site@X", "a100-80", "acct", "x86_64", "A100", 4, 80, 64, 512, 10, 8, 0, 48, false, 1)
	env := gpuModelEnv("a100 80gb")
	env.Normalize()
	got, d := feasibleParts(t, env, a80)
	if !slices.Equal(got, []string{"Site@X/a100-80"}) {
		t.Fatalf("A100-80GB: feasible %v\n%s", got, tableText(d))
	}
	for _, c := range d.Candidates {
		if c.System == "Delta@NCSA" && c.Partition == "gpuA100x4" && !strings.Contains(reasons(c), "A100 40 GB on x86_64 is not in constraints.gpu_models (A100-80GB)") {
			t.Errorf("40 GB rejection reason: %q", reasons(c))
		}
	}
	env = gpuModelEnv("A100")
	env.Normalize()
	got, _ = feasibleParts(t, env, a80)
	if !slices.Contains(got, "Site@X/a100-80") || !slices.Contains(got, "Delta@NCSA/gpuA100x4") {
		t.Errorf("A100: feasible %v", got)
	}
	// Avoiding the 40 GB variant keeps the 80 GB one.
	env = gpuModelEnv()
	env.Constraints.AvoidGPUModels = []string{"A100-40"}
	env.Normalize()
	got, _ = feasibleParts(t, env, a80)
	if slices.Contains(got, "Delta@NCSA/gpuA100x4") || !slices.Contains(got, "Site@X/a100-80") {
		t.Errorf("avoid A100-40GB: feasible %v", got)
	}
}

// TestArchRuleImpliedByGPUModel: with no constraints.arch, a GH200 request fails the
// arch rule on x86 partitions, saying why; a CPU-optional request is not forced.
func TestArchRuleImpliedByGPUModel(t *testing.T) {
	runRuleCases(t, ArchRule{}, []ruleCase{
		{name: "gh200 on x86", env: func(e *model.Envelope) { e.Constraints.GPUModels = []string{"GH200"} }, pass: false,
			reason: "x86_64 host; GH200 needs an aarch64 host"},
		{name: "gh200 on aarch64", env: func(e *model.Envelope) { e.Constraints.GPUModels = []string{"GH200"} },
			rec: func(r *model.ResourceRecord) { r.Arch = "aarch64" }, pass: true, reason: "aarch64"},
		{name: "gpus optional", env: func(e *model.Envelope) { e.GPUs.Min = 0; e.Constraints.GPUModels = []string{"GH200"} }, pass: true, reason: "any arch"},
		{name: "mixed models", env: func(e *model.Envelope) { e.Constraints.GPUModels = []string{"GH200", "A100"} }, pass: true, reason: "any arch"},
	})
}

func tableText(d *Decision) string {
	var b strings.Builder
	d.Table(&b)
	return b.String()
}

func reasons(c *Candidate) string {
	var out []string
	for _, v := range c.Failures() {
		out = append(out, v.Rule+": "+v.Reason)
	}
	return strings.Join(out, "; ")
}
