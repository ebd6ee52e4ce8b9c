package draft

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

// Intents the heuristic drafter recognises.
const (
	IntentTraining  = "training"
	IntentFineTune  = "fine-tuning (LoRA)"
	IntentInference = "inference"
	IntentCPU       = "cpu"
	IntentGPU       = "gpu" // GPU work of unknown kind
)

var (
	reParams    = regexp.MustCompile(`(\d+(?:\.\d+)?)\s*(b|bn|billion|m|million)\b(?:[\s-]*param(?:eter)?s?)?`)
	reGPURange  = regexp.MustCompile(`(\d+)\s*(?:-|–|to)\s*(\d+)\s*(?:x\s*)?(?:[a-z]+\d+\w*\s+)?gpus?\b`)
	reGPUCount  = regexp.MustCompile(`(\d+)\s*(?:x|×)?\s*(?:[a-z]+\d+\w*\s+)?gpus?\b`)
	reModelMult = regexp.MustCompile(`(\d+)\s*(?:x|×)\s*([a-z]+\d+[a-z]*)\b`)
	reNodes     = regexp.MustCompile(`(\d+)\s*(?:-|–|to)?\s*(\d+)?\s*nodes?\b`)
	reCores     = regexp.MustCompile(`(\d+)\s*(?:cpu\s*)?(?:cores|cpus|mpi ranks|ranks|processes)\b`)
	reMem       = regexp.MustCompile(`(\d+)\s*(gb|g|tb)\s*(?:of\s*)?(?:ram|memory|mem)\b`)
	reDurRange  = regexp.MustCompile(`(\d+(?:\.\d+)?)\s*(?:-|–|to)\s*(\d+(?:\.\d+)?)\s*(hours?|hrs?|h|minutes?|mins?|m|days?|d)\b`)
	reDur       = regexp.MustCompile(`(\d+(?:\.\d+)?)\s*(hours?|hrs?|h|minutes?|mins?|days?|d)\b`)
	reImage     = regexp.MustCompile(`((?:docker|oras|library|shub)://[^\s,;]+|[^\s,;]+\.sif)\b`)
)

// gpuTiers are per-GPU memory sizes (GB) common on the federation, smallest first.
var gpuTiers = []int{16, 24, 32, 40, 48, 80, 96}

// Heuristic drafts an envelope from a free-text description, deterministically. It
// reads the intent (training, fine-tuning, inference, CPU/MPI), model size ("7B",
// "70B params"), GPU counts and models, nodes, cores, memory, durations ("about 6
// hours"), containers, architecture and objective words. The result is normalized and
// valid; Source is heuristic and Confidence grows with the number of signals found.
func Heuristic(description string) model.Envelope {
	t := strings.ToLower(description)
	var why []string
	signals := 0
	env := model.Envelope{Source: model.SourceHeuristic}

	intent := detectIntent(t)
	if intent != IntentGPU || mentionsGPU(t) {
		why = append(why, "intent "+intent)
		signals++
	}

	// GPU model mentions, e.g. "A100", "4x H100".
	for _, w := range strings.FieldsFunc(t, func(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9') }) {
		if len(w) < 2 || w[0] < 'a' || w[0] > 'z' || !strings.ContainsAny(w, "0123456789") {
			continue
		}
		if g, ok := model.CanonicalGPU(w); ok && !containsStr(env.Constraints.GPUModels, g) {
			env.Constraints.GPUModels = append(env.Constraints.GPUModels, g)
		}
	}
	if len(env.Constraints.GPUModels) > 0 {
		why = append(why, "GPU model "+strings.Join(env.Constraints.GPUModels, ","))
		signals++
		if intent == IntentCPU {
			intent = IntentGPU
		}
	}

	gpuJob := intent != IntentCPU
	var gMin, gMax, memPerGPU int
	if gpuJob {
		gMin, gMax = 1, 1
		if p, ok := paramsBillions(t); ok {
			need := memNeedGB(intent, p)
			tier := 0
			for _, g := range gpuTiers {
				if float64(g) >= need {
					tier = g
					break
				}
			}
			switch {
			case tier > 0:
				memPerGPU, gMin, gMax = tier, 1, 1
				if intent == IntentTraining || intent == IntentFineTune {
					gMax = 4
				}
			case need <= 8*40:
				memPerGPU, gMin = 40, int(math.Ceil(need/40))
				gMax = min(2*gMin, 16)
			default:
				memPerGPU, gMin = 80, int(math.Ceil(need/80))
				gMax = 2 * gMin
			}
			why = append(why, fmt.Sprintf("%.3gB parameters ≈ %.0f GB of GPU memory for %s", p, need, intent))
			signals++
		}
		if m := reGPURange.FindStringSubmatch(t); m != nil {
			gMin, gMax = atoi(m[1]), atoi(m[2])
			why = append(why, fmt.Sprintf("%d-%d GPUs as stated", gMin, gMax))
			signals++
		} else if m := reGPUCount.FindStringSubmatch(t); m != nil && atoi(m[1]) > 0 {
			gMin = max(gMin, atoi(m[1]))
			gMax = max(gMax, gMin)
			why = append(why, fmt.Sprintf("%d GPUs as stated", atoi(m[1])))
			signals++
		} else if m := reModelMult.FindStringSubmatch(t); m != nil {
			if _, ok := model.CanonicalGPU(m[2]); ok && atoi(m[1]) > 0 {
				gMin = max(gMin, atoi(m[1]))
				gMax = max(gMax, gMin)
				why = append(why, fmt.Sprintf("%d GPUs as stated", atoi(m[1])))
			}
		}
		env.GPUs = model.IntRange{Min: gMin, Max: gMax}
		env.Constraints.MinGPUMemoryGB = memPerGPU
		env.CPUCores = model.IntRange{Min: 4 * gMin, Max: 16 * gMax}
	} else {
		env.CPUCores = model.IntRange{Min: 1, Max: 64}
		if strings.Contains(t, "mpi") {
			env.CPUCores = model.IntRange{Min: 64, Max: 512}
		}
	}

	if m := reCores.FindStringSubmatch(t); m != nil && atoi(m[1]) > 0 {
		n := atoi(m[1])
		env.CPUCores = model.IntRange{Min: n, Max: n}
		why = append(why, fmt.Sprintf("%d cores as stated", n))
		signals++
	}
	if m := reMem.FindStringSubmatch(t); m != nil && atoi(m[1]) > 0 {
		g := atoi(m[1])
		if m[2] == "tb" {
			g *= 1024
		}
		env.MemoryGB = model.IntRange{Min: g, Max: g}
		why = append(why, fmt.Sprintf("%d GB memory as stated", g))
		signals++
	}

	// Nodes: explicit counts win; "multi-node" spreads the GPUs (or cores) out.
	env.Nodes = model.IntRange{Min: 1, Max: 1}
	if m := reNodes.FindStringSubmatch(t); m != nil && atoi(m[1]) > 0 {
		lo, hi := atoi(m[1]), atoi(m[1])
		if m[2] != "" {
			hi = atoi(m[2])
		}
		env.Nodes = model.IntRange{Min: lo, Max: max(lo, hi)}
		if hi > lo {
			why = append(why, fmt.Sprintf("%d-%d nodes as stated", lo, hi))
		} else {
			why = append(why, fmt.Sprintf("%d nodes as stated", lo))
		}
		signals++
	} else if strings.Contains(t, "multi-node") || strings.Contains(t, "multinode") || strings.Contains(t, "multi node") ||
		strings.Contains(t, "multiple nodes") || strings.Contains(t, "several nodes") {
		env.Nodes = model.IntRange{Min: 2, Max: 8}
		why = append(why, "multi-node")
		signals++
	} else if gpuJob && gMin > 4 {
		env.Nodes = model.IntRange{Min: int(math.Ceil(float64(gMin) / 8)), Max: int(math.Ceil(float64(gMax) / 2))}
		why = append(why, "too many GPUs for one node")
	} else if gpuJob && gMax > 4 {
		env.Nodes = model.IntRange{Min: 1, Max: int(math.Ceil(float64(gMax) / 4))}
	}
	if gpuJob {
		// Every node needs at least one GPU.
		env.GPUs.Max = max(env.GPUs.Max, env.Nodes.Min)
		env.CPUCores.Max = max(env.CPUCores.Max, env.CPUCores.Min)
	} else if strings.Contains(t, "mpi") || env.Nodes.Min > 1 {
		env.CPUCores.Min = max(env.CPUCores.Min, env.Nodes.Min)
		env.CPUCores.Max = max(env.CPUCores.Max, env.CPUCores.Min)
	}

	wmin, wmax, ok := durations(t)
	if ok {
		why = append(why, fmt.Sprintf("walltime %s-%s from the text", wmin, wmax))
		signals++
	} else {
		switch intent {
		case IntentTraining:
			wmin, wmax = model.Duration(4*time.Hour), model.Duration(24*time.Hour)
		case IntentFineTune:
			wmin, wmax = model.Duration(2*time.Hour), model.Duration(12*time.Hour)
		case IntentInference:
			wmin, wmax = model.Duration(30*time.Minute), model.Duration(4*time.Hour)
		default:
			wmin, wmax = model.Duration(time.Hour), model.Duration(8*time.Hour)
		}
		why = append(why, fmt.Sprintf("default walltime %s-%s for %s", wmin, wmax, intent))
	}
	env.Walltime = model.DurationRange{Min: wmin, Max: wmax}

	if m := reImage.FindStringSubmatch(description); m != nil {
		rt := model.RunnableRuntimeNamedIn(t)
		env.Constraints.Container = &model.Container{Image: m[1], Runtime: rt}
		why = append(why, "container "+m[1])
		signals++
	}
	switch {
	case strings.Contains(t, "aarch64") || strings.Contains(t, "arm64") || strings.Contains(t, "grace"):
		env.Constraints.Arch = []string{"aarch64"}
		why = append(why, "arch aarch64")
	case strings.Contains(t, "x86"):
		env.Constraints.Arch = []string{"x86_64"}
		why = append(why, "arch x86_64")
	}
	switch {
	case strings.Contains(t, "cheap") || strings.Contains(t, "cost") || strings.Contains(t, "save allocation") || strings.Contains(t, "few sus"):
		env.Objective = model.ObjMinCost
	case strings.Contains(t, "throughput"):
		env.Objective = model.ObjMaxThroughput
	case strings.Contains(t, "finish fast") || strings.Contains(t, "finish quickly") || strings.Contains(t, "fastest") || strings.Contains(t, "deadline"):
		env.Objective = model.ObjFastestFinish
	default:
		env.Objective = model.ObjEarliestStart
	}
	if env.Objective != model.ObjEarliestStart {
		why = append(why, "objective "+string(env.Objective))
	}

	env.Confidence = math.Round(math.Min(0.9, 0.2+0.12*float64(signals))*100) / 100
	env.Rationale = "heuristic draft: " + strings.Join(why, "; ")
	env.Normalize()
	if err := env.Validate(); err != nil {
		// The rules above keep every range ordered; this guards against a regression by
		// returning a small envelope that is always valid.
		return fallbackEnvelope(intent, err)
	}
	return env
}

func fallbackEnvelope(intent string, err error) model.Envelope {
	env := model.Envelope{
		CPUCores: model.IntRange{Min: 1, Max: 8}, Nodes: model.IntRange{Min: 1, Max: 1},
		Walltime: model.DurationRange{Min: model.Duration(time.Hour), Max: model.Duration(4 * time.Hour)},
		Source:   model.SourceHeuristic, Confidence: 0.1,
		Rationale: "heuristic draft fell back to a small default: " + err.Error(),
	}
	if intent != IntentCPU {
		env.GPUs = model.IntRange{Min: 1, Max: 1}
	}
	env.Normalize()
	return env
}

func detectIntent(t string) string {
	has := func(ws ...string) bool {
		for _, w := range ws {
			if strings.Contains(t, w) {
				return true
			}
		}
		return false
	}
	switch {
	case has("lora", "qlora", "peft", "adapter"):
		return IntentFineTune
	case has("train", "fine-tune", "finetune", "fine tune", "pretrain", "pre-train"):
		return IntentTraining
	case has("inference", "serve", "serving", "generate", "generation", "evaluate", "evaluation", "eval ", "benchmark the model", "predict"):
		return IntentInference
	case has("mpi", "cpu-only", "cpu only", "openmp", "no gpu", "without gpu") && !mentionsGPU(t):
		return IntentCPU
	case mentionsGPU(t):
		return IntentGPU
	case has("simulation", "cfd", "md run", "molecular dynamics", "monte carlo", "genome", "alignment"):
		return IntentCPU
	}
	return IntentGPU
}

func mentionsGPU(t string) bool {
	for _, w := range []string{"gpu", "cuda", "a100", "h100", "a40", "mi100", "gh200", "rtx", "h200"} {
		if strings.Contains(t, w) {
			return true
		}
	}
	return false
}

// paramsBillions finds a model size like "7B", "70B params", "1.3 billion", "350M".
func paramsBillions(t string) (float64, bool) {
	for _, m := range reParams.FindAllStringSubmatch(t, -1) {
		v, err := strconv.ParseFloat(m[1], 64)
		if err != nil || v <= 0 {
			continue
		}
		switch m[2] {
		case "b", "bn", "billion":
		default:
			// "m" alone is ambiguous with minutes; require "million" or "params".
			if m[2] == "m" && !strings.Contains(m[0], "param") {
				continue
			}
			v /= 1000
		}
		if v > 0 && v < 100000 {
			return v, true
		}
	}
	return 0, false
}

// memNeedGB estimates GPU memory: bf16 weights are 2 bytes per parameter; full
// training adds bf16 gradients and fp32 Adam states and master weights (16 bytes per
// parameter in all) plus ~25% for activations; LoRA fine-tuning keeps frozen bf16
// weights plus ~30%; inference keeps weights plus ~20% for the KV cache and buffers.
func memNeedGB(intent string, billions float64) float64 {
	switch intent {
	case IntentTraining:
		return billions * 16 * 1.25
	case IntentFineTune:
		return billions * 2 * 1.3
	default:
		return billions * 2 * 1.2
	}
}

// durations reads "about 6 hours", "6-8 hours", "90 minutes", "2 days", "6h".
func durations(t string) (lo, hi model.Duration, ok bool) {
	if m := reDurRange.FindStringSubmatch(t); m != nil {
		a, b := unitDur(m[1], m[3]), unitDur(m[2], m[3])
		if a > 0 && b >= a {
			return a, b, true
		}
	}
	if m := reDur.FindStringSubmatch(t); m != nil {
		d := unitDur(m[1], m[2])
		if d > 0 {
			// A single figure is an estimate: ask for it, allow 50% more.
			return d, model.Duration(time.Duration(float64(d) * 1.5).Round(time.Minute)), true
		}
	}
	return 0, 0, false
}

func unitDur(num, unit string) model.Duration {
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v <= 0 || v > 1e5 {
		return 0
	}
	var u time.Duration
	switch unit[0] {
	case 'h':
		u = time.Hour
	case 'm':
		u = time.Minute
	case 'd':
		u = 24 * time.Hour
	default:
		return 0
	}
	return model.Duration(time.Duration(v * float64(u)).Round(time.Minute))
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil || n > 1_000_000 {
		return 0
	}
	return n
}

func containsStr(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
