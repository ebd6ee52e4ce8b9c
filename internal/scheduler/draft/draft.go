// Package draft turns a free-text task description into a resource envelope: a
// deterministic heuristic drafter, and an LLM drafter whose answer is parsed and
// validated and replaced by the heuristic draft (with the reason recorded) when invalid.
package draft

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/scheduler/llm"
)

// Result is a drafted envelope and how it was made.
type Result struct {
	Envelope model.Envelope `json:"envelope"` // Source and Confidence say who drafted it
	// FallbackReason is set when the LLM was asked but its answer was not used.
	FallbackReason string `json:"fallback_reason,omitempty"`
}

// Drafter drafts envelopes. The zero value (or a nil LLM) drafts heuristically.
type Drafter struct {
	LLM llm.Client
}

// New returns a drafter using c when it is non-nil.
func New(c llm.Client) *Drafter { return &Drafter{LLM: c} }

// Active names the drafter in use: "heuristic" or "llm:<provider/model>".
func (d *Drafter) Active() string {
	if d == nil || d.LLM == nil {
		return model.SourceHeuristic
	}
	return "llm:" + d.LLM.Name()
}

const draftSystem = `You turn an HPC batch job description into a resource envelope for a meta-scheduler.
Answer with one JSON object only, no prose, with exactly these fields (omit optional ones you cannot infer):
{"gpus":{"min":int,"max":int},"cpu_cores":{"min":int,"max":int},"memory_gb":{"min":int,"max":int},
 "walltime":{"min":"6h","max":"9h"},"nodes":{"min":int,"max":int},
 "constraints":{"arch":["x86_64"|"aarch64"],"gpu_models":["A100",...],"avoid_gpu_models":[],"min_gpu_memory_gb":int,
   "container":{"image":"...","runtime":"apptainer"},"features":[],"avoid_systems":[]},
 "objective":"earliest_start"|"fastest_finish"|"max_throughput"|"min_cost",
 "confidence":0..1,"rationale":"one sentence"}
Ranges are [minimum viable, maximum useful]; gpus, cpu_cores and memory_gb are totals for the job.
Estimate GPU memory from model size: bf16 weights take 2 bytes per parameter; full training with Adam needs about 16-20 bytes per parameter.
"no GPU", "CPU only" mean gpus 0 and no gpu_models. A stated run longer than 96h gets walltime 48h-96h (the job must checkpoint).
A GPU model may carry a memory size: "A100-80GB" only matches 80 GB A100s, "A100" any A100. GH200 (Grace Hopper) implies an aarch64 host.
Known GPU models: `

// systemPrompt is the LLM drafter's system prompt: the rules above, the catalogue's
// GPU models, and the few-shot examples of the shared table (Examples).
var systemPrompt = sync.OnceValue(func() string {
	return draftSystem + strings.Join(model.KnownGPUModels, ", ") + "\n" + fewShotPrompt()
})

// Draft drafts an envelope for description. Without an LLM, or when its answer is
// unusable, it returns the heuristic draft (FallbackReason says why the LLM's was not
// used). It never fails for lack of an LLM; it fails only on an empty description.
func (d *Drafter) Draft(ctx context.Context, description string) (Result, error) {
	if strings.TrimSpace(description) == "" {
		return Result{}, fmt.Errorf("draft: the description is empty; describe the job (model size, training or inference, duration)")
	}
	h := Heuristic(description)
	if d == nil || d.LLM == nil {
		return Result{Envelope: h}, nil
	}
	env, err := d.llmDraft(ctx, description)
	if err != nil {
		return Result{Envelope: h, FallbackReason: err.Error()}, nil
	}
	return Result{Envelope: env}, nil
}

func (d *Drafter) llmDraft(ctx context.Context, description string) (model.Envelope, error) {
	answer, err := d.LLM.Complete(ctx, systemPrompt(), "Job description:\n"+description)
	if err != nil {
		return model.Envelope{}, fmt.Errorf("llm drafter: %w", err)
	}
	js, err := llm.ExtractJSON(answer)
	if err != nil {
		return model.Envelope{}, fmt.Errorf("llm drafter answer is malformed: %w", err)
	}
	env, err := model.DecodeEnvelopeJSON([]byte(js))
	if err != nil {
		return model.Envelope{}, fmt.Errorf("llm drafter answer is not a valid envelope: %w", err)
	}
	if env.Source != model.SourceLLM {
		// The model may echo "user" (the default) or nothing; provenance is ours to set.
		if env.Source == model.SourceUser && env.Confidence == 1 {
			env.Confidence = 0
		}
		env.Source = model.SourceLLM
	}
	if env.Confidence <= 0 || env.Confidence > 1 {
		env.Confidence = 0.6
	}
	if env.Rationale == "" {
		env.Rationale = "llm draft"
	}
	return env, nil
}
