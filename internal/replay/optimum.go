package replay

import (
	"context"
	"fmt"
	"math"
)

// MaxAssignments bounds the exhaustive search (systems^jobs replays).
const MaxAssignments = 50000

// Optimum is the best static assignment found by exhaustive search.
type Optimum struct {
	// Assignment is the system of each job, in arrival order.
	Assignment []string `json:"assignment"`
	Result     *Result  `json:"result"`
	Tried      int      `json:"tried"`
}

// ExhaustiveOptimum replays every assignment of cfg.Jobs to the federation's systems
// (each job submitted at its decision tick, sized and given a partition by the
// scheduler pinned to its system, at full size) and returns the one with the lowest
// mean wait among those where every job finishes. It is a lower bound on the mean wait
// of every policy that submits each job once, at full size, when it arrives; it is
// meant for small instances (at most MaxAssignments replays).
func ExhaustiveOptimum(ctx context.Context, cfg Config) (*Optimum, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	sys := cfg.Federation.SystemNames()
	n := len(cfg.Jobs)
	total := math.Pow(float64(len(sys)), float64(n))
	if total > MaxAssignments {
		return nil, fmt.Errorf("exhaustive optimum: %d systems ^ %d jobs = %.0f assignments, more than %d; use fewer jobs",
			len(sys), n, total, MaxAssignments)
	}
	digits := make([]int, n)
	var best *Optimum
	for tried := 1; ; tried++ {
		fixed := make([]string, n)
		for i, d := range digits {
			fixed[i] = sys[d]
		}
		res, err := run(ctx, cfg, homePolicy{}, fixed)
		if err != nil {
			return nil, err
		}
		if res.Finished == n && (best == nil || res.MeanWait < best.Result.MeanWait) {
			res.Policy = "optimum"
			best = &Optimum{Assignment: fixed, Result: res}
		}
		// Next assignment (odometer).
		k := 0
		for ; k < n; k++ {
			digits[k]++
			if digits[k] < len(sys) {
				break
			}
			digits[k] = 0
		}
		if k == n {
			if best == nil {
				return nil, fmt.Errorf("exhaustive optimum: no assignment of the %d jobs lets all of them finish", n)
			}
			best.Tried = tried
			return best, nil
		}
	}
}
