package draft

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/scheduler/llm"
	"github.com/mosaic-hpc/mosaic/internal/scheduler/llm/llmtest"
)

const desc = "Fine-tune a 7B model for about 6 hours"

func TestDraftWithoutLLMIsHeuristic(t *testing.T) {
	d := New(nil)
	if d.Active() != "heuristic" {
		t.Errorf("Active %q", d.Active())
	}
	r, err := d.Draft(context.Background(), desc)
	if err != nil {
		t.Fatal(err)
	}
	if r.Envelope.Source != model.SourceHeuristic || r.FallbackReason != "" {
		t.Errorf("got %+v", r)
	}
	if _, err := d.Draft(context.Background(), "  "); err == nil {
		t.Error("empty description accepted")
	}
}

func TestDraftLLM(t *testing.T) {
	good := "```json\n" + `{"gpus":{"min":2,"max":4},"cpu_cores":{"min":16,"max":64},"walltime":{"min":"6h","max":"8h"},
"constraints":{"gpu_models":["A100","H100"],"min_gpu_memory_gb":40},"objective":"earliest_start","confidence":0.8,
"rationale":"7B full fine-tune needs ~140 GB of GPU memory"}` + "\n```"
	cases := []struct {
		name     string
		answer   string
		delay    time.Duration
		source   string
		fallback string
	}{
		{name: "good", answer: good, source: model.SourceLLM},
		{name: "invalid envelope", answer: `{"gpus":{"min":4,"max":2},"walltime":{"min":"6h"}}`, source: model.SourceHeuristic, fallback: "envelope field gpus"},
		{name: "unknown gpu", answer: `{"gpus":{"min":1},"walltime":{"min":"6h"},"constraints":{"gpu_models":["TPUv5"]}}`, source: model.SourceHeuristic, fallback: "unknown GPU model"},
		{name: "unknown field", answer: `{"gpu_count":4,"walltime":{"min":"6h"}}`, source: model.SourceHeuristic, fallback: "unknown field"},
		{name: "malformed", answer: `I think 4 GPUs {"gpus":`, source: model.SourceHeuristic, fallback: "malformed"},
		{name: "timeout", answer: good, delay: 3 * time.Second, source: model.SourceHeuristic, fallback: "llm drafter"},
	}
	for _, p := range []string{llm.ProviderAnthropic, llm.ProviderOpenAI} {
		for _, tc := range cases {
			t.Run(p+"/"+tc.name, func(t *testing.T) {
				reply := llmtest.Reply{Text: tc.answer, Delay: tc.delay, MustContain: "Fine-tune a 7B model"}
				cfg := llm.Config{Provider: p, APIKey: llmtest.Key, Model: "test-model", Timeout: 300 * time.Millisecond}
				if p == llm.ProviderAnthropic {
					cfg.BaseURL = llmtest.Anthropic(t, reply).URL
				} else {
					cfg.BaseURL = llmtest.OpenAI(t, reply).URL + "/v1"
				}
				c, err := llm.New(cfg)
				if err != nil {
					t.Fatal(err)
				}
				d := New(c)
				if !strings.HasPrefix(d.Active(), "llm:"+p) {
					t.Errorf("Active %q", d.Active())
				}
				r, err := d.Draft(context.Background(), desc)
				if err != nil {
					t.Fatal(err)
				}
				if err := r.Envelope.Validate(); err != nil {
					t.Fatalf("draft is invalid: %v", err)
				}
				if r.Envelope.Source != tc.source {
					t.Errorf("source %s, want %s (fallback %q)", r.Envelope.Source, tc.source, r.FallbackReason)
				}
				if tc.fallback == "" {
					if r.FallbackReason != "" {
						t.Errorf("unexpected fallback %q", r.FallbackReason)
					}
					e := r.Envelope
					if e.GPUs != (model.IntRange{Min: 2, Max: 4}) || e.Confidence != 0.8 || !strings.Contains(e.Rationale, "140 GB") {
						t.Errorf("llm envelope not used: %+v", e)
					}
					return
				}
				if !strings.Contains(r.FallbackReason, tc.fallback) {
					t.Errorf("fallback %q lacks %q", r.FallbackReason, tc.fallback)
				}
				if r.Envelope.Walltime.Min != model.Duration(6*time.Hour) {
					t.Errorf("fallback is not the heuristic draft: %+v", r.Envelope)
				}
				if strings.Contains(r.FallbackReason, llmtest.Key) {
					t.Error("API key leaked into the fallback reason")
				}
			})
		}
	}
}

// TestLLMPromptCarriesTheExamples: the LLM drafter's system prompt holds every
// few-shot example of the shared table with the heuristic's envelope for it, and the
// catalogue's GPU models, and the prompt reaches the wire.
func TestLLMPromptCarriesTheExamples(t *testing.T) {
	p := systemPrompt()
	n := 0
	for _, ex := range Examples {
		if !ex.FewShot {
			continue
		}
		n++
		if !strings.Contains(p, "- "+ex.Description+"\n") {
			t.Errorf("prompt lacks example %q", ex.Description)
		}
		e := Heuristic(ex.Description)
		if !strings.Contains(p, fmt.Sprintf(`"walltime":{"min":"%s","max":"%s"}`, e.Walltime.Min, e.Walltime.Max)) {
			t.Errorf("prompt lacks the envelope of %q", ex.Description)
		}
	}
	if n == 0 {
		t.Fatal("no few-shot examples")
	}
	for _, m := range []string{"GH200", "A100", "MI300A", "B200", "A100-80GB"} {
		if !strings.Contains(p, m) {
			t.Errorf("prompt lacks %s", m)
		}
	}
	reply := llmtest.Reply{Text: `{"gpus":{"min":0},"walltime":{"min":"5m","max":"10m"}}`, MustContain: "quick test, 5 minutes, no GPU"}
	c, err := llm.New(llm.Config{Provider: llm.ProviderAnthropic, APIKey: llmtest.Key, Model: "test-model", Timeout: 5 * time.Second,
		BaseURL: llmtest.Anthropic(t, reply).URL})
	if err != nil {
		t.Fatal(err)
	}
	r, err := New(c).Draft(context.Background(), "a short cpu job")
	if err != nil || r.FallbackReason != "" || r.Envelope.Source != model.SourceLLM {
		t.Fatalf("the prompt with the examples did not reach the server: %+v, %v", r, err)
	}
}
