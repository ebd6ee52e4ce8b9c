package draft

import (
	"fmt"
	"math"
	"regexp"
	"slices"
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

// MaxDraftWalltime is the longest walltime the heuristic drafts: the longest queue in
// the built-in machines (Anvil's 96 h). A longer stated run ("a week") is clamped to
// 48h–96h with a note: such a job must checkpoint, and continuation resubmits it.
const MaxDraftWalltime = model.Duration(96 * time.Hour)

// maxDescription bounds the text the heuristic reads (the API caps descriptions too).
const maxDescription = 4096

// Units, in the spellings (and common typos) people use.
const (
	unitWords = `hours?|hrs?|hr|h|minutes?|minuts?|mins?|min|mn|days?|d|weeks?|wks?|w|months?|seconds?|secs?`
	// A single figure may not use a bare m or s: "350m" is parameters, "5s" a plural.
	singleUnitWords = `hours?|hrs?|hr|h|minutes?|minuts?|mins?|min|days?|d|weeks?|wks?|months?|seconds?|secs?`
)

var (
	reParams = regexp.MustCompile(`(\d+(?:\.\d+)?)\s*(b|bn|billion|m|million)\b(?:[\s-]*param(?:eter)?s?)?`)
	// GPU counts: "2-4 GPUs", "4 GPUs", "4x A100", "8 H100s", "gpus=4".
	reGPURange  = regexp.MustCompile(`(\d+)\s*(?:-|–|to)\s*(\d+)\s*(?:x\s*)?(?:[a-z]+\d+\w*\s+)?gpus?\b`)
	reGPUCount  = regexp.MustCompile(`(\d+)\s*(?:x|×)?\s*(?:[a-z]+\d+[a-z]*(?:\s*\d+\s*gb)?\s+)?gpus?\b(\s*(?:per|each|a|/)\s*node)?`)
	reGPUKV     = regexp.MustCompile(`gpus?\s*[:=]\s*(\d+)`)
	reGPUUpTo   = regexp.MustCompile(`(?:up to|at most|max(?:imum)?(?: of)?)\s*(\d+)\s*(?:x\s*)?(?:[a-z]+\d+\w*\s+)?gpus?\b`)
	reModelMult = regexp.MustCompile(`(\d+)\s*(?:x|×)?\s*([a-z]+\d+[a-z]*)\b(\s*(?:per|each|a|/)\s*node)?`)
	reModelTok  = regexp.MustCompile(`\b([a-z]{1,4}\d{1,4}[a-z]*)(?:'?s)?\b(?:-(\d{2,3})\b|[\s-]*(\d{2,3})\s*(?:gb|g)\b)?`)
	reFamily    = regexp.MustCompile(`(grace[\s-]*)?\b(hopper|blackwell|volta)\b`)
	reRTX       = regexp.MustCompile(`\b(?:quadro\s*)?rtx\s*(a?\s*\d{4})(\s*ti)?\b`)
	reNodes     = regexp.MustCompile(`(\d+)(?:\s*(?:-|–|to)\s*(\d+))?\s*-?\s*(?:compute\s+|gpu\s+|cpu\s+)?nodes?\b`)
	reCores     = regexp.MustCompile(`(\d+)(?:\s*(?:-|–|to)\s*(\d+))?\s*-?\s*(?:cpu\s*|physical\s*)?(?:cores?|cpus|mpi\s*ranks|ranks|mpi\s*processes|processes|procs|threads)\b(\s*(?:per|each|a|/)\s*node)?`)
	reMem       = regexp.MustCompile(`(\d+(?:\.\d+)?)\s*(gb|g|gigs?|gigabytes?|tb|t|terabytes?)\s*(?:of\s*)?(?:ram|memory|mem)\b(\s*(?:per|on the|each)\s*gpu)?`)
	reMemKV     = regexp.MustCompile(`(?:ram|memory|mem)\s*(?:of|:|=)?\s*(\d+(?:\.\d+)?)\s*(gb|g|tb|t)\b`)
	reMemTB     = regexp.MustCompile(`(\d+(?:\.\d+)?)\s*(tb|terabytes?)\b(\s*(?:of\s*)?[a-z]+)?`)
	reGPUMem    = regexp.MustCompile(`(\d{1,3})\s*(?:gb|g)\s*(?:of\s*)?(?:gpu\s*(?:memory|mem|ram)|vram|hbm|gpus?\b)|gpus?\s*(?:with|having|of)\s*(?:at least\s*|>=?\s*|≥\s*)?(\d{1,3})\s*(?:gb|g)\b|(?:>=|≥|at least)\s*(\d{1,3})\s*(?:gb|g)\s*(?:of\s*)?(?:gpu|vram)`)
	reDurRange  = regexp.MustCompile(`(\d+(?:\.\d+)?)\s*(?:-|–|to|or)\s*(\d+(?:\.\d+)?)\s*(` + unitWords + `)\b`)
	reDurBetw   = regexp.MustCompile(`between\s+(\d+(?:\.\d+)?)\s+and\s+(\d+(?:\.\d+)?)\s*(` + unitWords + `)\b`)
	reDurUpTo   = regexp.MustCompile(`(?:up to|at most|no more than|less than|under|max(?:imum)?(?: of)?)\s+(\d+(?:\.\d+)?)\s*(` + unitWords + `)\b`)
	reDurComp   = regexp.MustCompile(`(\d+)\s*(?:h|hrs?|hours?)\s*(?:and\s*)?(\d{1,2})\s*(m|mins?|minutes?)?\b(\s*[a-z]+)?`)
	reDurClock  = regexp.MustCompile(`\b(\d{1,2}):([0-5]\d)(?::([0-5]\d))?\b`)
	reDur       = regexp.MustCompile(`(\d+(?:\.\d+)?)\s*-?\s*(` + singleUnitWords + `)\b`)
	reImage     = regexp.MustCompile(`((?:docker|oras|library|shub)://[^\s,;]+|[^\s,;]+\.sif)\b`)
	reNoGPU     = regexp.MustCompile(`\b(?:no|zero|0|without(?: any)?|without a|non|not on|doesn'?t need(?: a| any)?|does not need(?: a| any)?|don'?t need(?: a| any)?|no need for(?: a| any)?)[\s-]*(?:gpus?|cuda|accelerators?)\b|\bcpu[\s-]*only\b|\bcpus? only\b|\bonly cpus?\b|\bpure cpu\b`)
	reNumWord   = regexp.MustCompile(`\b(a single|a couple of|a couple|a pair of|a dozen|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|sixteen|twenty|thirty-two|sixty-four)\b`)
	reAUnit     = regexp.MustCompile(`\b(?:a|an)\s+(?:full\s+|whole\s+|single\s+)?(day|hour|week|minute|node|gpu)\b`)
)

// phrases maps duration words to figures the duration readers understand.
var phrases = []struct{ from, to string }{
	{"half an hour", "30 minutes"}, {"half hour", "30 minutes"}, {"half a day", "12 hours"},
	{"an hour and a half", "90 minutes"}, {"hour and a half", "90 minutes"}, {"a day and a half", "36 hours"},
	{"a few hours", "2-4 hours"}, {"few hours", "2-4 hours"}, {"several hours", "3-6 hours"},
	{"a few minutes", "10-20 minutes"}, {"few minutes", "10-20 minutes"}, {"a few days", "2-3 days"},
	{"overnight", "8-12 hours"}, {"over night", "8-12 hours"}, {"all day", "24 hours"}, {"full day", "24 hours"},
	{"over the weekend", "48-60 hours"}, {"a weekend", "48-60 hours"}, {"the weekend", "48-60 hours"},
	{"a fortnight", "14 days"}, {"a month", "30 days"}, {"single node", "1 node"}, {"one node", "1 node"},
}

var numWords = map[string]string{
	"a single": "1", "a couple of": "2", "a couple": "2", "a pair of": "2", "a dozen": "12", "one": "1", "two": "2",
	"three": "3", "four": "4", "five": "5", "six": "6", "seven": "7", "eight": "8", "nine": "9", "ten": "10",
	"eleven": "11", "twelve": "12", "sixteen": "16", "twenty": "20", "thirty-two": "32", "sixty-four": "64",
}

// normalizeText lower-cases t and writes duration phrases and number words as figures:
// "half an hour" → "30 minutes", "a day" → "1 day", "two A100s" → "2 a100s".
func normalizeText(s string) string {
	t := strings.ToLower(s)
	t = strings.NewReplacer("’", "'", "\u00a0", " ", "\t", " ", "\n", " ").Replace(t)
	for _, p := range phrases {
		t = strings.ReplaceAll(t, p.from, p.to)
	}
	t = reAUnit.ReplaceAllString(t, "1 $1")
	t = reNumWord.ReplaceAllStringFunc(t, func(w string) string { return numWords[w] })
	return t
}

// gpuTiers are per-GPU memory sizes (GB) common on the federation, smallest first.
var gpuTiers = []int{16, 24, 32, 40, 48, 80, 96}

// Heuristic drafts an envelope from a free-text description, deterministically. It
// reads the intent (training, fine-tuning, inference, CPU/MPI, or "no GPU"), model size
// ("7B", "llama 70B"), GPU counts and models ("4x A100", "H100s", "A100 80GB", "Grace
// Hopper"), nodes ("4 nodes", "multi-node"), cores, memory ("512 GB RAM", "2 TB"), GPU
// memory ("24 GB of VRAM"), durations ("about 6 hours", "a day", "overnight", "2h30",
// "half an hour"; beyond MaxDraftWalltime clamped with a note), containers,
// architecture and objective words. The result is normalized and valid; Source is
// heuristic and Confidence grows with the number of signals found. The table of
// examples it is tested on (Examples) is also the LLM drafter's few-shot prompt.
func Heuristic(description string) model.Envelope {
	if len(description) > maxDescription {
		description = description[:maxDescription]
	}
	// Invalid bytes and control characters would make the rationale or an image name
	// invalid; they carry no meaning for the draft.
	description = strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(description, " "))
	t := normalizeText(description)
	var why []string
	// Negations are read before number words turn "a GPU" into "1 gpu".
	noGPU := reNoGPU.MatchString(strings.ToLower(description)) || reNoGPU.MatchString(t)
	signals := 0
	env := model.Envelope{Source: model.SourceHeuristic}

	intent := detectIntent(t, noGPU)
	if intent != IntentGPU || mentionsGPU(t) {
		why = append(why, "intent "+intent)
		signals++
	}
	if noGPU {
		why = append(why, "no GPU as stated")
	}

	// GPU model mentions, e.g. "A100", "4x H100", "A100 80GB", "Grace Hopper".
	if !noGPU {
		env.Constraints.GPUModels = gpuModelsIn(t)
	}
	if len(env.Constraints.GPUModels) > 0 {
		why = append(why, "GPU model "+strings.Join(env.Constraints.GPUModels, ","))
		signals++
		if intent == IntentCPU {
			intent = IntentGPU
		}
	}

	// Nodes first: GPU and core counts "per node" multiply by them.
	env.Nodes = model.IntRange{Min: 1, Max: 1}
	nodesStated := false
	if m := reNodes.FindStringSubmatch(t); m != nil && atoi(m[1]) > 0 {
		lo, hi := atoi(m[1]), atoi(m[1])
		if m[2] != "" {
			hi = max(lo, atoi(m[2]))
		}
		env.Nodes = model.IntRange{Min: lo, Max: hi}
		nodesStated = true
		if hi > lo {
			why = append(why, fmt.Sprintf("%d-%d nodes as stated", lo, hi))
		} else {
			why = append(why, fmt.Sprintf("%d nodes as stated", lo))
		}
		signals++
	} else if hasAny(t, "multi-node", "multinode", "multi node", "multiple nodes", "several nodes", "across nodes", "many nodes") {
		env.Nodes = model.IntRange{Min: 2, Max: 8}
		nodesStated = true
		why = append(why, "multi-node")
		signals++
	}
	perNode := func(suffix string) int {
		if strings.TrimSpace(suffix) != "" {
			return env.Nodes.Min
		}
		return 1
	}

	gpuJob := intent != IntentCPU
	var gMin, gMax, memPerGPU int
	if gpuJob {
		gMin, gMax = 1, 1
		if p, ok := paramsBillions(t); ok {
			need := memNeedGB(intent, p)
			modelMem := smallestMemory(env.Constraints.GPUModels)
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
			case modelMem > 0:
				gMin = int(math.Ceil(need / float64(modelMem)))
				gMax = min(2*gMin, 64)
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
		if m := reGPURange.FindStringSubmatch(t); m != nil && atoi(m[1]) > 0 && atoi(m[2]) >= atoi(m[1]) {
			gMin, gMax = atoi(m[1]), atoi(m[2])
			why = append(why, fmt.Sprintf("%d-%d GPUs as stated", gMin, gMax))
			signals++
		} else if m := reGPUUpTo.FindStringSubmatch(t); m != nil && atoi(m[1]) > 0 {
			gMax = max(atoi(m[1]), 1)
			gMin = min(gMin, gMax)
			why = append(why, fmt.Sprintf("up to %d GPUs as stated", gMax))
			signals++
		} else if n, ok := statedGPUs(t, perNode); ok {
			// A stated count is the user's word, over the parameter estimate.
			gMin, gMax = n, n
			why = append(why, fmt.Sprintf("%d GPUs as stated", n))
			signals++
		}
		if n := gpuMemoryIn(t); n > 0 {
			memPerGPU = n
			why = append(why, fmt.Sprintf("%d GB per GPU as stated", n))
			signals++
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

	coresStated := false
	if m := reCores.FindStringSubmatch(t); m != nil && atoi(m[1]) > 0 {
		coresStated = true
		lo, hi := atoi(m[1]), atoi(m[1])
		if m[2] != "" && atoi(m[2]) >= lo {
			hi = atoi(m[2])
		}
		k := perNode(m[3])
		lo, hi = min(lo*k, model.MaxEnvelopeCPUCores), min(hi*k, model.MaxEnvelopeCPUCores)
		env.CPUCores = model.IntRange{Min: lo, Max: hi}
		why = append(why, fmt.Sprintf("%d cores as stated", lo))
		signals++
	}
	if g, ok := hostMemoryIn(t); ok {
		env.MemoryGB = model.IntRange{Min: g, Max: g}
		why = append(why, fmt.Sprintf("%d GB memory as stated", g))
		signals++
	}

	if !nodesStated {
		switch {
		case gpuJob && env.GPUs.Min > 4:
			env.Nodes = model.IntRange{Min: int(math.Ceil(float64(env.GPUs.Min) / 8)), Max: int(math.Ceil(float64(env.GPUs.Max) / 2))}
			why = append(why, "too many GPUs for one node")
		case gpuJob && env.GPUs.Max > 4:
			env.Nodes = model.IntRange{Min: 1, Max: int(math.Ceil(float64(env.GPUs.Max) / 4))}
		}
	}
	env.Nodes.Max = min(max(env.Nodes.Max, env.Nodes.Min), model.MaxEnvelopeNodes)
	env.Nodes.Min = min(env.Nodes.Min, env.Nodes.Max)
	if gpuJob {
		// Every node needs at least one GPU.
		env.GPUs.Min = max(env.GPUs.Min, env.Nodes.Min)
		env.GPUs.Max = max(env.GPUs.Max, env.GPUs.Min)
		env.CPUCores.Max = max(env.CPUCores.Max, env.CPUCores.Min)
	} else if strings.Contains(t, "mpi") || env.Nodes.Min > 1 {
		if !coresStated && env.Nodes.Min > 1 {
			// Several nodes for a CPU job: a share of each node at least, up to all of them.
			env.CPUCores = model.IntRange{Min: 16 * env.Nodes.Min, Max: min(max(env.CPUCores.Max, 128*env.Nodes.Max), model.MaxEnvelopeCPUCores)}
		}
		env.CPUCores.Min = max(env.CPUCores.Min, env.Nodes.Min)
		env.CPUCores.Max = max(env.CPUCores.Max, env.CPUCores.Min)
	}

	wmin, wmax, note, ok := durations(t)
	if ok {
		why = append(why, fmt.Sprintf("walltime %s-%s from the text", wmin, wmax))
		if note != "" {
			why = append(why, note)
		}
		signals++
	} else {
		switch {
		case hasAny(t, "quick test", "smoke test", "sanity check", "quick check", "hello world", "debug run", "debugging", "tiny test", "short test", "test run"):
			wmin, wmax = model.Duration(10*time.Minute), model.Duration(30*time.Minute)
			intent = "a quick test"
		case intent == IntentTraining:
			wmin, wmax = model.Duration(4*time.Hour), model.Duration(24*time.Hour)
		case intent == IntentFineTune:
			wmin, wmax = model.Duration(2*time.Hour), model.Duration(12*time.Hour)
		case intent == IntentInference:
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
	case model.ImpliedHostArch(env.Constraints.GPUModels) != "":
		// The GPU model says it (GH200 → aarch64); an arch would only repeat it.
	case hasAny(t, "aarch64", "arm64", "grace", "arm cpu", "arm node", "neoverse"):
		env.Constraints.Arch = []string{"aarch64"}
		why = append(why, "arch aarch64")
	case hasAny(t, "x86", "amd64", "intel cpu", "xeon", "epyc"):
		env.Constraints.Arch = []string{"x86_64"}
		why = append(why, "arch x86_64")
	}
	switch {
	case hasAny(t, "cheap", "cost", "save allocation", "few sus", "budget", "save sus", "low priority"):
		env.Objective = model.ObjMinCost
	case hasAny(t, "throughput", "many small jobs", "parameter sweep", "sweep"):
		env.Objective = model.ObjMaxThroughput
	case hasAny(t, "finish fast", "finish quickly", "fastest", "deadline", "done quickly", "done fast", "finish asap"):
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

func hasAny(t string, ws ...string) bool {
	for _, w := range ws {
		if strings.Contains(t, w) {
			return true
		}
	}
	return false
}

func detectIntent(t string, noGPU bool) string {
	switch {
	case noGPU:
		return IntentCPU
	case hasAny(t, "lora", "qlora", "peft", "adapter"):
		return IntentFineTune
	case hasAny(t, "train", "fine-tune", "finetune", "fine tune", "pretrain", "pre-train"):
		return IntentTraining
	case hasAny(t, "inference", "serve", "serving", "generate", "generation", "evaluate", "evaluation", "eval ", "benchmark the model", "predict"):
		return IntentInference
	case hasAny(t, "mpi", "openmp", "cpu job", "cpu task", "on cpu", "cpu node", "cpu partition") && !mentionsGPU(t):
		return IntentCPU
	case mentionsGPU(t):
		return IntentGPU
	case hasAny(t, "simulation", "cfd", "md run", "molecular dynamics", "gromacs", "lammps", "namd", "monte carlo", "genome",
		"alignment", "bwa", "blast", "compile", "build", "post-process", "postprocess", "preprocess", "cores", "serial",
		"r script", "matlab", "quick test", "smoke test", "sanity check", "hello world", "weather", "climate", "wrf", "fortran", "ranks"):
		return IntentCPU
	}
	return IntentGPU
}

func mentionsGPU(t string) bool {
	if hasAny(t, "gpu", "cuda", "grace hopper", "rtx", "vram", "accelerator", "rocm", "nvidia", "tensor core") {
		return true
	}
	return len(gpuModelsIn(t)) > 0
}

// gpuModelsIn finds GPU model names in t: catalogue names and aliases, plurals
// ("H100s"), memory variants ("A100 80GB" → A100-80GB), "RTX 5000", "Grace Hopper".
func gpuModelsIn(t string) []string {
	var out []string
	add := func(s string) {
		if g, ok := model.CanonicalGPU(s); ok && !slices.Contains(out, g) {
			out = append(out, g)
		}
	}
	if strings.Contains(t, "grace hopper") || strings.Contains(t, "grace-hopper") {
		add("GH200")
	}
	if strings.Contains(t, "grace blackwell") || strings.Contains(t, "grace-blackwell") {
		add("GB200")
	}
	for _, m := range reFamily.FindAllStringSubmatch(t, 4) {
		if m[1] != "" {
			continue // "grace hopper" is a GH200, above
		}
		add(map[string]string{"hopper": "H100", "blackwell": "B200", "volta": "V100"}[m[2]])
	}
	for _, m := range reRTX.FindAllStringSubmatch(t, 8) {
		add("RTX" + strings.ReplaceAll(m[1], " ", "") + strings.TrimSpace(m[2]))
	}
	for _, m := range reModelTok.FindAllStringSubmatch(t, 32) {
		tok := m[1]
		if strings.HasPrefix(tok, "rtx") || strings.HasPrefix(tok, "quadro") {
			continue
		}
		if mem := m[2] + m[3]; mem != "" {
			if g, err := model.ParseGPUModel(tok + "-" + mem + "GB"); err == nil {
				add(g.String())
				continue
			}
		}
		add(tok)
	}
	return out
}

// smallestMemory is the least per-GPU memory of the named models (0 when none or
// unknown): the figure a parameter count is divided by.
func smallestMemory(models []string) int {
	least := 0
	for _, m := range models {
		g, err := model.ParseGPUModel(m)
		if err != nil {
			continue
		}
		mem := g.MemoryGB
		if mem == 0 {
			info, _ := model.LookupGPUModel(g.Model)
			if len(info.MemoryGB) > 0 {
				mem = info.MemoryGB[0]
			}
		}
		if mem > 0 && (least == 0 || mem < least) {
			least = mem
		}
	}
	return least
}

// statedGPUs reads a GPU count: "4 GPUs", "4x A100", "8 H100s", "gpus=4", "2 GPUs per
// node" (times the nodes).
func statedGPUs(t string, perNode func(string) int) (int, bool) {
	if m := reGPUCount.FindStringSubmatch(t); m != nil && atoi(m[1]) > 0 {
		return min(atoi(m[1])*perNode(m[2]), model.MaxEnvelopeGPUs), true
	}
	for _, m := range reModelMult.FindAllStringSubmatch(t, 16) {
		if _, ok := model.CanonicalGPU(m[2]); ok && atoi(m[1]) > 0 && !reParamsOnly(m[0]) {
			return min(atoi(m[1])*perNode(m[3]), model.MaxEnvelopeGPUs), true
		}
	}
	if m := reGPUKV.FindStringSubmatch(t); m != nil && atoi(m[1]) > 0 {
		return min(atoi(m[1]), model.MaxEnvelopeGPUs), true
	}
	return 0, false
}

// reParamsOnly reports whether a count match is really a memory size ("80 gb").
func reParamsOnly(s string) bool { return strings.HasSuffix(s, "gb") }

// gpuMemoryIn reads a per-GPU memory minimum: "24 GB of VRAM", "GPUs with 48 GB",
// "at least 40 GB GPU".
func gpuMemoryIn(t string) int {
	m := reGPUMem.FindStringSubmatch(t)
	if m == nil {
		if mm := reMem.FindStringSubmatch(t); mm != nil && mm[3] != "" {
			return clampGPUMem(atoi(mm[1]))
		}
		return 0
	}
	for _, g := range m[1:] {
		if g != "" {
			return clampGPUMem(atoi(g))
		}
	}
	return 0
}

func clampGPUMem(n int) int {
	if n <= 0 || n > model.MaxEnvelopeGPUMemoryGB {
		return 0
	}
	return n
}

// hostMemoryIn reads the job's memory: "512 GB RAM", "64GB of memory", "mem=32G",
// "2 TB" (a bare terabyte figure, unless it is data: "2 TB of data").
func hostMemoryIn(t string) (int, bool) {
	toGB := func(num, unit string) int {
		v, err := strconv.ParseFloat(num, 64)
		if err != nil || v <= 0 || v > 1e8 {
			return 0
		}
		if unit[0] == 't' {
			v *= 1024
		}
		return min(int(math.Ceil(v)), model.MaxEnvelopeMemoryGB)
	}
	if m := reMem.FindStringSubmatch(t); m != nil && m[3] == "" {
		if g := toGB(m[1], m[2]); g > 0 {
			return g, true
		}
	}
	if m := reMemKV.FindStringSubmatch(t); m != nil {
		if g := toGB(m[1], m[2]); g > 0 {
			return g, true
		}
	}
	for _, m := range reMemTB.FindAllStringSubmatch(t, 4) {
		next := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(m[3]), "of "))
		switch next {
		case "data", "dataset", "datasets", "disk", "storage", "files", "scratch", "input", "output", "ssd", "nvme":
			continue
		}
		if g := toGB(m[1], m[2]); g > 0 {
			return g, true
		}
	}
	return 0, false
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

// durations reads "about 6 hours", "6-8 hours", "between 2 and 4 hours", "up to 3h",
// "2h30", "1:30:00", "90 minutes", "2 days", "a week" (after normalizeText: "a day",
// "overnight", "half an hour" are figures by then). Of several single figures the
// longest is the run's ("checkpoint every 30 minutes, runs 6 hours"). A run longer than
// MaxDraftWalltime is clamped, and note says so.
func durations(t string) (lo, hi model.Duration, note string, ok bool) {
	switch {
	case reDurBetw.MatchString(t):
		m := reDurBetw.FindStringSubmatch(t)
		lo, hi = unitDur(m[1], m[3]), unitDur(m[2], m[3])
	case reDurRange.MatchString(t):
		m := reDurRange.FindStringSubmatch(t)
		lo, hi = unitDur(m[1], m[3]), unitDur(m[2], m[3])
	}
	if lo <= 0 || hi < lo {
		lo, hi = 0, 0
		if m := reDurUpTo.FindStringSubmatch(t); m != nil {
			if d := unitDur(m[1], m[2]); d > 0 {
				lo, hi = min(d, model.Duration(time.Hour)), d
				if lo == hi {
					lo = model.Duration((time.Duration(d) / 2).Round(time.Minute))
				}
			}
		}
	}
	if lo <= 0 {
		var best model.Duration
		if m := reDurComp.FindStringSubmatch(t); m != nil && (m[3] != "" || m[4] == "") {
			best = unitDur(m[1], "h") + unitDur(m[2], "m")
		} else if m := reDurClock.FindStringSubmatch(t); m != nil {
			best = unitDur(m[1], "h") + unitDur(m[2], "m")
		}
		for _, m := range reDur.FindAllStringSubmatch(t, 16) {
			best = max(best, unitDur(m[1], m[2]))
		}
		if best > 0 {
			// A single figure is an estimate: ask for it, allow 50% more.
			lo, hi = best, model.Duration(time.Duration(float64(best)*1.5).Round(time.Minute))
		}
	}
	if lo <= 0 || hi < lo {
		return 0, 0, "", false
	}
	lo = max(lo, model.Duration(time.Minute))
	hi = max(hi, lo)
	if lo > MaxDraftWalltime {
		note = fmt.Sprintf("%s is longer than any queue here allows (at most %s): drafted 48h-%s; checkpoint so continuation can resubmit",
			lo, MaxDraftWalltime, MaxDraftWalltime)
		return model.Duration(48 * time.Hour), MaxDraftWalltime, note, true
	}
	return lo, min(hi, MaxDraftWalltime), "", true
}

func unitDur(num, unit string) model.Duration {
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v <= 0 || v > 1e5 || unit == "" {
		return 0
	}
	var u time.Duration
	switch {
	case strings.HasPrefix(unit, "mo"):
		u = 30 * 24 * time.Hour
	case strings.HasPrefix(unit, "s"):
		u = time.Second
	case unit[0] == 'h':
		u = time.Hour
	case unit[0] == 'm':
		u = time.Minute
	case unit[0] == 'd':
		u = 24 * time.Hour
	case unit[0] == 'w':
		u = 7 * 24 * time.Hour
	default:
		return 0
	}
	d := time.Duration(v * float64(u)).Round(time.Minute)
	if d <= 0 || d > time.Duration(model.MaxDuration) {
		return 0
	}
	return model.Duration(d)
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil || n > 1_000_000 {
		return 0
	}
	return n
}
