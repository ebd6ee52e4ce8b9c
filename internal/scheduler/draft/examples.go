package draft

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

// Example is a job description as a user would write it and the envelope it should
// draft, as bounds: a range where a range is honest, not one exact answer. The table
// is the heuristic drafter's test (TestHeuristicExamples) and, for the examples marked
// FewShot, the LLM drafter's few-shot prompt (fewShotPrompt), so the two cannot drift.
type Example struct {
	Description string
	GPUs        Span     // gpus (zero Span: not checked; Exact(0): CPU only)
	Cores       Span     // cpu_cores
	Nodes       Span     // nodes
	MemoryGB    Span     // memory_gb
	Walltime    TimeSpan // walltime
	GPUModels   []string // exact, in order; nil: not checked, []string{}: none
	MinGPUMemGB Span     // constraints.min_gpu_memory_gb as Min..Min
	Arch        string   // constraints.arch[0]; "-" = none; "" = not checked
	Objective   model.Objective
	FewShot     bool // also shown to the LLM drafter
}

// Span bounds an integer range: Min in [MinLo, MinHi], Max in [MaxLo, MaxHi].
type Span struct {
	Set                        bool
	MinLo, MinHi, MaxLo, MaxHi int
}

// TimeSpan bounds a walltime range the same way.
type TimeSpan struct {
	Set                        bool
	MinLo, MinHi, MaxLo, MaxHi time.Duration
}

// Between bounds a range's min and max.
func Between(minLo, minHi, maxLo, maxHi int) Span { return Span{true, minLo, minHi, maxLo, maxHi} }

// Exact is the range n..n.
func Exact(n int) Span { return Between(n, n, n, n) }

// AtLeast bounds the min to [lo, hi] and leaves the max free (at least the min).
func AtLeast(lo, hi int) Span { return Between(lo, hi, lo, 1<<31-1) }

// Wall bounds a walltime range, in ParseDuration forms ("30m", "24h").
func Wall(minLo, minHi, maxLo, maxHi string) TimeSpan {
	p := func(s string) time.Duration { d, _ := time.ParseDuration(s); return d }
	return TimeSpan{true, p(minLo), p(minHi), p(maxLo), p(maxHi)}
}

var none = []string{}

// Examples are written as different users write: terse, chatty, with typos, units and
// ranges. The first three are the misreads issue 21 found.
var Examples = []Example{
	{Description: "quick test, 5 minutes, no GPU", GPUs: Exact(0), GPUModels: none, Walltime: Wall("5m", "5m", "5m", "10m"), Nodes: Exact(1), FewShot: true},
	{Description: "molecular dynamics with GROMACS, 256 cores, a day", GPUs: Exact(0), Cores: Exact(256), Walltime: Wall("24h", "24h", "24h", "48h"), FewShot: true},
	{Description: "inference of llama 70B on H100s, needs 4 nodes", GPUs: Between(3, 4, 4, 16), Nodes: Exact(4), GPUModels: []string{"H100"}, Walltime: Wall("15m", "1h", "1h", "8h"), FewShot: true},
	{Description: "Fine-tune a 7B model with full training for about 6 hours", GPUs: Between(4, 4, 8, 8), MinGPUMemGB: Exact(40), Walltime: Wall("6h", "6h", "6h", "9h")},
	{Description: "LoRA finetune of a 13 billion parameter model on 1-4 A100 GPUs, cheap please, 90 minutes", GPUs: Between(1, 1, 4, 4), GPUModels: []string{"A100"}, Walltime: Wall("90m", "90m", "90m", "3h"), Objective: model.ObjMinCost, FewShot: true},
	{Description: "gpu job 36 hours", GPUs: Exact(1), Walltime: Wall("36h", "36h", "36h", "54h")},
	{Description: "run my sim overnight", Walltime: Wall("6h", "10h", "10h", "14h")},
	{Description: "should take 2h30", Walltime: Wall("150m", "150m", "150m", "4h")},
	{Description: "needs half an hour on one GPU", GPUs: Exact(1), Walltime: Wall("30m", "30m", "30m", "1h")},
	{Description: "a week long climate run on 16 nodes, checkpointed", GPUs: Exact(0), Nodes: Exact(16), Walltime: Wall("24h", "48h", "48h", "96h"), FewShot: true},
	{Description: "CPU only, 64 cores, 2 hours", GPUs: Exact(0), GPUModels: none, Cores: Exact(64), Walltime: Wall("2h", "2h", "2h", "3h")},
	{Description: "postprocessing without GPUs for 3 hrs", GPUs: Exact(0), GPUModels: none, Walltime: Wall("3h", "3h", "3h", "5h")},
	{Description: "does not need a gpu. 10 min", GPUs: Exact(0), Walltime: Wall("10m", "10m", "10m", "15m")},
	{Description: "no gpus please, just 4 nodes of MPI for 12 hours", GPUs: Exact(0), Nodes: Exact(4), Cores: AtLeast(4, 512), Walltime: Wall("12h", "12h", "12h", "18h")},
	{Description: "256 cores", GPUs: Exact(0), Cores: Exact(256)},
	{Description: "4 nodes", Nodes: Exact(4)},
	{Description: "needs 512 GB RAM for the assembly, 8 hours, cpu only", GPUs: Exact(0), MemoryGB: Exact(512), Walltime: Wall("8h", "8h", "8h", "12h")},
	{Description: "genome assembly with 2 TB, 2 days", GPUs: Exact(0), MemoryGB: Exact(2048), Walltime: Wall("48h", "48h", "48h", "72h")},
	{Description: "copy 2 TB of data to scratch, cpu only, 1 hour", GPUs: Exact(0), MemoryGB: Exact(0), Walltime: Wall("1h", "1h", "1h", "2h")},
	{Description: "train resnet50 on 8 GPUs for 10 hours", GPUs: Between(8, 8, 8, 8), Nodes: Between(1, 1, 1, 4), Walltime: Wall("10h", "10h", "10h", "15h")},
	{Description: "4x A100, 3h", GPUs: Exact(4), GPUModels: []string{"A100"}, Walltime: Wall("3h", "3h", "3h", "5h")},
	{Description: "eval on A100 80GB", GPUModels: []string{"A100-80GB"}, GPUs: Exact(1), Walltime: Wall("15m", "1h", "1h", "6h"), FewShot: true},
	{Description: "needs an a100-80 for 4 hours", GPUModels: []string{"A100-80GB"}, GPUs: Exact(1)},
	{Description: "MI250X, 2 GPUs, 6 hours, rocm pytorch", GPUModels: []string{"MI250X"}, GPUs: Exact(2), Walltime: Wall("6h", "6h", "6h", "9h")},
	{Description: "Grace Hopper superchip for a CUDA kernel benchmark, 1 hour", GPUModels: []string{"GH200"}, GPUs: Exact(1), Arch: "-", Walltime: Wall("1h", "1h", "1h", "2h"), FewShot: true},
	{Description: "run on gh200, 20 minutes", GPUModels: []string{"GH200"}, Walltime: Wall("20m", "20m", "20m", "30m")},
	{Description: "multi-node training of a 70B params model, 2 days", Nodes: Between(2, 2, 8, 8), GPUs: AtLeast(9, 40), Walltime: Wall("48h", "48h", "48h", "96h")},
	{Description: "multi-node MPI run, 6-8 hours", GPUs: Exact(0), Nodes: Between(2, 2, 8, 8), Walltime: Wall("6h", "6h", "8h", "8h")},
	{Description: "serve llama 8B for evaluation, 2 hours", GPUs: Exact(1), MinGPUMemGB: Exact(24), Walltime: Wall("2h", "2h", "2h", "3h")},
	{Description: "pretrain a 1.3 billion parameter GPT on 4 H100 GPUs for 20 hours", GPUs: Exact(4), GPUModels: []string{"H100"}, Walltime: Wall("20h", "20h", "20h", "30h")},
	{Description: "hey! could you run my pytorch training on two GPUs? it usually takes around 5 hours", GPUs: Exact(2), Walltime: Wall("5h", "5h", "5h", "8h")},
	{Description: "Need to finetune mistral-7b w/ qlora, ~3h, one a40 is fine", GPUs: Exact(1), GPUModels: []string{"A40"}, Walltime: Wall("3h", "3h", "3h", "5h")},
	{Description: "traning on 2 a100s for 4 hourss", GPUs: Exact(2), GPUModels: []string{"A100"}},
	{Description: "5 minuts test on cpu only", GPUs: Exact(0), Walltime: Wall("5m", "5m", "5m", "10m")},
	{Description: "LAMMPS, 1024 mpi ranks, 8 nodes, 12h", GPUs: Exact(0), Cores: Exact(1024), Nodes: Exact(8), Walltime: Wall("12h", "12h", "12h", "18h"), FewShot: true},
	{Description: "64 cores per node on 4 nodes for an hour", GPUs: Exact(0), Cores: Exact(256), Nodes: Exact(4), Walltime: Wall("1h", "1h", "1h", "2h")},
	{Description: "4 GPUs per node, 2 nodes, DDP training, 8h", GPUs: Exact(8), Nodes: Exact(2), Walltime: Wall("8h", "8h", "8h", "12h")},
	{Description: "between 2 and 4 hours on a V100", GPUModels: []string{"V100"}, Walltime: Wall("2h", "2h", "4h", "4h")},
	{Description: "up to 3 hours, 1 gpu", GPUs: Exact(1), Walltime: Wall("30m", "1h30m", "3h", "3h")},
	{Description: "render frames on an RTX 5000 for 45 mins", GPUModels: []string{"RTX5000"}, Walltime: Wall("45m", "45m", "45m", "70m")},
	{Description: "inference with a 7B model, a single L40S, a day and a half", GPUModels: []string{"L40S"}, GPUs: Exact(1), Walltime: Wall("36h", "36h", "36h", "54h")},
	{Description: "cheap as possible: 1 gpu for 2 hours", GPUs: Exact(1), Objective: model.ObjMinCost},
	{Description: "I have a deadline, 8 GPUs for 6h, whatever finishes fastest", GPUs: Exact(8), Objective: model.ObjFastestFinish},
	{Description: "parameter sweep of 500 small cpu jobs, 10 minutes each", GPUs: Exact(0), Objective: model.ObjMaxThroughput},
	{Description: "aarch64 only, cpu only, 72 cores, 1h", GPUs: Exact(0), Cores: Exact(72), Arch: "aarch64"},
	{Description: "x86 cpu job, 16 cores, 30 minutes", GPUs: Exact(0), Cores: Exact(16), Arch: "x86_64", Walltime: Wall("30m", "30m", "30m", "45m")},
	{Description: "apptainer docker://nvcr.io/nvidia/pytorch:24.01-py3 train for 12h on 2x H100", GPUs: Exact(2), GPUModels: []string{"H100"}, Walltime: Wall("12h", "12h", "12h", "18h")},
	{Description: "needs GPUs with at least 40 GB, 4 hours", MinGPUMemGB: Exact(40), Walltime: Wall("4h", "4h", "4h", "6h")},
	{Description: "24GB of VRAM is enough, 1 hour", MinGPUMemGB: Exact(24), GPUs: Exact(1)},
	{Description: "train a 405B model", GPUs: AtLeast(64, 200)},
	{Description: "llama 70b inference", GPUs: Between(3, 5, 4, 16)},
	{Description: "tiny 350M params model training on 1 gpu, 2 h", GPUs: Exact(1), Walltime: Wall("2h", "2h", "2h", "3h")},
	{Description: "smoke test", Walltime: Wall("5m", "15m", "15m", "1h")},
	{Description: "a couple of hours of cfd on 128 cores", GPUs: Exact(0), Cores: Exact(128), Walltime: Wall("2h", "2h", "2h", "3h")},
	{Description: "a few hours on some gpus", Walltime: Wall("2h", "2h", "4h", "4h")},
	{Description: "90 min", Walltime: Wall("90m", "90m", "90m", "135m")},
	{Description: "1:30:00 walltime on one node", Nodes: Exact(1), Walltime: Wall("90m", "90m", "90m", "135m")},
	{Description: "over the weekend, 4 A100 GPUs, checkpointing every 30 minutes", GPUs: Exact(4), GPUModels: []string{"A100"}, Walltime: Wall("48h", "48h", "60h", "60h")},
	{Description: "single node, 8 H100, ~10 hours", GPUs: Exact(8), Nodes: Exact(1), GPUModels: []string{"H100"}, Walltime: Wall("10h", "10h", "10h", "15h")},
	{Description: "Hopper GPUs, 4 of them, 6h", GPUModels: []string{"H100"}},
	{Description: "b200 for 1 hour", GPUModels: []string{"B200"}, GPUs: Exact(1)},
	{Description: "MI300A APU job, 2 nodes, 3 hours", GPUModels: []string{"MI300A"}, Nodes: Exact(2), GPUs: AtLeast(2, 4)},
	{Description: "memory: 64GB, cpu only, 4h", GPUs: Exact(0), MemoryGB: Exact(64)},
	{Description: "BLAST alignment, 32 threads, 100 GB of memory, 5 hours", GPUs: Exact(0), Cores: Exact(32), MemoryGB: Exact(100), Walltime: Wall("5h", "5h", "5h", "8h")},
	{Description: "weather forecast WRF run 3-4 hours on 6 nodes", GPUs: Exact(0), Nodes: Exact(6), Walltime: Wall("3h", "3h", "4h", "4h")},
	{Description: "1 month of sampling", Walltime: Wall("48h", "48h", "96h", "96h")},
	{Description: "two days, 2 nodes, 8 gpus total, training", GPUs: Exact(8), Nodes: Exact(2), Walltime: Wall("48h", "48h", "48h", "72h")},
}

// fewShotPrompt renders the FewShot examples as description → envelope pairs for the
// LLM drafter's system prompt: each envelope is the heuristic drafter's own answer,
// which TestHeuristicExamples holds to the example's bounds.
func fewShotPrompt() string {
	var b strings.Builder
	b.WriteString("\nExamples (description, then the envelope):\n")
	for _, ex := range Examples {
		if !ex.FewShot {
			continue
		}
		e := Heuristic(ex.Description)
		out := struct {
			GPUs        model.IntRange      `json:"gpus"`
			CPUCores    model.IntRange      `json:"cpu_cores"`
			MemoryGB    *model.IntRange     `json:"memory_gb,omitempty"`
			Walltime    model.DurationRange `json:"walltime"`
			Nodes       model.IntRange      `json:"nodes"`
			Constraints model.Constraints   `json:"constraints"`
			Objective   model.Objective     `json:"objective"`
		}{e.GPUs, e.CPUCores, nil, e.Walltime, e.Nodes, e.Constraints, e.Objective}
		if e.MemoryGB.Min > 0 {
			out.MemoryGB = &e.MemoryGB
		}
		js, err := json.Marshal(out)
		if err != nil {
			continue
		}
		b.WriteString("- " + ex.Description + "\n  " + string(js) + "\n")
	}
	return b.String()
}
