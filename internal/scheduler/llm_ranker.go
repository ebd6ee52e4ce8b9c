package scheduler

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/mosaic-hpc/mosaic/internal/scheduler/llm"
)

// LLMRanker asks a language model to order the feasible candidates. Its answer must be a
// JSON object {"order":[{"id":"<system/partition/account>","reason":"..."}]} naming
// every feasible candidate exactly once; anything else is an error, and the scheduler
// then keeps the heuristic order and records the reason.
type LLMRanker struct {
	Client llm.Client
}

// NewLLMRanker wraps a client; it returns nil for a nil client so that
// Options{LLM: NewLLMRanker(c)} means "heuristics only" when none is configured.
func NewLLMRanker(c llm.Client) Ranker {
	if c == nil {
		return nil
	}
	return &LLMRanker{Client: c}
}

// Name implements Ranker.
func (l *LLMRanker) Name() string { return "llm:" + l.Client.Name() }

const rankSystem = `You rank placements of one batch job across HPC systems for a meta-scheduler.
Every candidate listed already satisfies all hard constraints. Order ALL of them, best first,
for the stated objective, using the queue estimates, sizes, costs and your knowledge of the sites.
Answer with JSON only: {"order":[{"id":"<candidate id exactly as given>","reason":"<one short sentence>"}]}.
Include every candidate id exactly once and no other ids.`

// Rank implements Ranker.
func (l *LLMRanker) Rank(ctx context.Context, r *Request, feasible []*Candidate) ([]*Candidate, error) {
	answer, err := l.Client.Complete(ctx, rankSystem, rankPrompt(r, feasible))
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("llm ranker timed out or was cancelled: %w", err)
		}
		return nil, fmt.Errorf("llm ranker: %w", err)
	}
	return parseRankAnswer(answer, feasible)
}

type rankAnswer struct {
	Order []struct {
		ID     string `json:"id"`
		Reason string `json:"reason"`
	} `json:"order"`
}

// parseRankAnswer checks the answer is a permutation of feasible and applies AI ranks
// and reasons only when it is.
func parseRankAnswer(answer string, feasible []*Candidate) ([]*Candidate, error) {
	js, err := llm.ExtractJSON(answer)
	if err != nil {
		return nil, fmt.Errorf("llm ranker answer is malformed: %w", err)
	}
	var a rankAnswer
	if err := json.Unmarshal([]byte(js), &a); err != nil {
		return nil, fmt.Errorf("llm ranker answer is malformed JSON: %w", err)
	}
	byKey := make(map[string]*Candidate, len(feasible))
	for _, c := range feasible {
		byKey[c.Key()] = c
	}
	seen := make(map[string]bool, len(a.Order))
	out := make([]*Candidate, 0, len(a.Order))
	for _, o := range a.Order {
		id := strings.TrimSpace(o.ID)
		c, ok := byKey[id]
		switch {
		case !ok:
			return nil, fmt.Errorf("llm ranker named %q, which is not a feasible candidate", id)
		case seen[id]:
			return nil, fmt.Errorf("llm ranker named %q twice", id)
		}
		seen[id] = true
		out = append(out, c)
	}
	if len(out) != len(feasible) {
		var missing []string
		for _, c := range feasible {
			if !seen[c.Key()] {
				missing = append(missing, c.Key())
			}
		}
		return nil, fmt.Errorf("llm ranker left out %d candidate(s): %s", len(missing), strings.Join(missing, ", "))
	}
	for i, o := range a.Order {
		out[i].AIRank = i + 1
		out[i].AIReason = oneLine(o.Reason)
	}
	return out, nil
}

func rankPrompt(r *Request, feasible []*Candidate) string {
	var b strings.Builder
	env := &r.Envelope
	fmt.Fprintf(&b, "Task %q objective=%s\n", r.Task.Name, env.Objective)
	if r.Task.Description != "" {
		fmt.Fprintf(&b, "Description: %s\n", oneLine(r.Task.Description))
	}
	fmt.Fprintf(&b, "Envelope: gpus %d-%d, cpu_cores %d-%d, memory_gb %d-%d, nodes %d-%d, walltime %s-%s",
		env.GPUs.Min, env.GPUs.Max, env.CPUCores.Min, env.CPUCores.Max, env.MemoryGB.Min, env.MemoryGB.Max,
		env.Nodes.Min, env.Nodes.Max, env.Walltime.Min, env.Walltime.Max)
	if env.MaxQueueWait > 0 {
		fmt.Fprintf(&b, ", max_queue_wait %s", env.MaxQueueWait)
	}
	b.WriteString("\n\nCandidates (heuristic order):\nid | arch | nodes | gpus | cpus/node | walltime | est_wait | free/total units | pending jobs | cost_su | heuristic_score\n")
	for _, c := range feasible {
		s, rec := c.Sizing, c.Record
		free, unit := rec.FreeUnits()
		total := rec.TotalCores
		if rec.IsGPU() {
			total = rec.TotalGPUs
		}
		gpus := strconv.Itoa(s.GPUs)
		if s.GPUs > 0 {
			gpus += "x" + s.GPUModel
		}
		fmt.Fprintf(&b, "%s | %s | %d | %s | %d | %s | %s | %d/%d %s | %d | %.1f | %.3f\n",
			c.Key(), rec.Arch, s.Nodes, gpus, s.CPUsPerTask, s.Walltime, c.EstWait, free, total, unit,
			rec.PendingJobs, c.CostSU, c.Scores.Total)
	}
	return b.String()
}
