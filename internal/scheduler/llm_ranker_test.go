package scheduler

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/scheduler/llm"
	"github.com/mosaic-hpc/mosaic/internal/scheduler/llm/llmtest"
)

type stubClient struct {
	name   string
	answer string
}

func (s stubClient) Name() string { return s.name }
func (s stubClient) Complete(context.Context, string, string) (string, error) {
	return s.answer, nil
}

const (
	keyAnvil = "Anvil@RCAC/gpu/x-cis230001-gpu"
	keyLS6   = "Lonestar6@TACC/gpu-a100/CCR24001"
	keyDelta = "Delta@NCSA/gpuA100x4/bbka-delta-gpu"
	keyVista = "Vista@TACC/gh/CCR24001"
)

func orderJSON(ids ...string) string {
	var parts []string
	for _, id := range ids {
		parts = append(parts, fmt.Sprintf(`{"id":%q,"reason":"because %s"}`, id, strings.Split(id, "/")[0]))
	}
	return `{"order":[` + strings.Join(parts, ",") + `]}`
}

func llmClient(t *testing.T, provider string, srv *httptest.Server) llm.Client {
	t.Helper()
	cfg := llm.Config{Provider: provider, APIKey: llmtest.Key, Model: "test-model", Timeout: 5 * time.Second}
	if provider == llm.ProviderAnthropic {
		cfg.BaseURL = srv.URL
	} else {
		cfg.BaseURL = srv.URL + "/v1"
	}
	c, err := llm.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestLLMRanker(t *testing.T) {
	heuristicOrder := []string{keyAnvil, keyLS6, keyDelta}
	cases := []struct {
		name     string
		answer   string
		delay    time.Duration
		want     []string // final order
		llmUsed  bool
		fallback string // substring of the fallback reason
	}{
		{name: "good answer", answer: orderJSON(keyAnvil, keyLS6, keyDelta), want: heuristicOrder, llmUsed: true},
		{name: "reordering in a fence", answer: "Here you go:\n```json\n" + orderJSON(keyDelta, keyAnvil, keyLS6) + "\n```",
			want: []string{keyDelta, keyAnvil, keyLS6}, llmUsed: true},
		{name: "infeasible candidate", answer: orderJSON(keyVista, keyAnvil, keyLS6), want: heuristicOrder, fallback: "not a feasible candidate"},
		{name: "missing candidate", answer: orderJSON(keyDelta, keyAnvil), want: heuristicOrder, fallback: "left out 1"},
		{name: "duplicate candidate", answer: orderJSON(keyDelta, keyDelta, keyAnvil), want: heuristicOrder, fallback: "twice"},
		{name: "malformed JSON", answer: `{"order":[{"id":` + "\"" + keyDelta + "\",}", want: heuristicOrder, fallback: "malformed"},
		{name: "prose only", answer: "I would pick Delta.", want: heuristicOrder, fallback: "no JSON object"},
		{name: "timeout", answer: orderJSON(keyDelta, keyAnvil, keyLS6), delay: 3 * time.Second, want: heuristicOrder, fallback: "timed out"},
	}
	for _, provider := range []string{llm.ProviderAnthropic, llm.ProviderOpenAI} {
		for _, tc := range cases {
			t.Run(provider+"/"+tc.name, func(t *testing.T) {
				var srv *httptest.Server
				reply := llmtest.Reply{Text: tc.answer, Delay: tc.delay, MustContain: "Candidates"}
				if provider == llm.ProviderAnthropic {
					srv = llmtest.Anthropic(t, reply)
				} else {
					srv = llmtest.OpenAI(t, reply)
				}
				s := newTestScheduler(Options{LLM: NewLLMRanker(llmClient(t, provider, srv)), LLMTimeout: 300 * time.Millisecond})
				d, err := s.Place(context.Background(), a100Task(), sixMachines(), PlaceOptions{})
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for _, c := range d.Feasible() {
					got = append(got, c.Key())
				}
				if strings.Join(got, " ") != strings.Join(tc.want, " ") {
					t.Errorf("order %v, want %v (fallback %q)", got, tc.want, d.FallbackReason)
				}
				if tc.llmUsed {
					if !strings.HasPrefix(d.Ranker, "llm:"+provider) || d.FallbackReason != "" {
						t.Errorf("ranker %q fallback %q, want the LLM's order", d.Ranker, d.FallbackReason)
					}
					c := d.ChosenCandidate()
					if c.AIRank != 1 || !strings.Contains(c.AIReason, "because") || !strings.Contains(d.Rationale, "AI:") {
						t.Errorf("chosen lacks AI rank/reason: %+v / %s", c, d.Rationale)
					}
				} else {
					if d.Ranker != "heuristic" || !strings.Contains(d.FallbackReason, tc.fallback) {
						t.Errorf("ranker %q fallback %q, want heuristic with %q", d.Ranker, d.FallbackReason, tc.fallback)
					}
					for _, c := range d.Candidates {
						if c.AIRank != 0 || c.AIReason != "" {
							t.Errorf("%s keeps AI rank %d after fallback", c.Key(), c.AIRank)
						}
					}
				}
				if strings.Contains(d.FallbackReason, llmtest.Key) {
					t.Error("the API key leaked into the trace")
				}
			})
		}
	}
}

func TestLLMRankerNoKeyMeansHeuristics(t *testing.T) {
	c, err := llm.FromEnv(func(string) string { return "" })
	if err == nil || c != nil {
		t.Fatalf("empty environment must not configure an LLM: %v", err)
	}
	s := New(Options{LLM: NewLLMRanker(c)})
	if s.ActiveRanker() != "heuristic" {
		t.Errorf("ActiveRanker %q", s.ActiveRanker())
	}
}
