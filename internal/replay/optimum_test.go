package replay

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// TestOptimumNeverWorse is the property test: on small random instances (two sites,
// five rigid jobs, random background jobs), the exhaustive optimum's mean wait is
// never above any policy's whose jobs all finished.
func TestOptimumNeverWorse(t *testing.T) {
	instances := 12
	if testing.Short() {
		instances = 4
	}
	pols, err := ParsePolicies("all")
	if err != nil {
		t.Fatal(err)
	}
	strictly := 0
	for k := range instances {
		rng := rand.New(rand.NewPCG(uint64(k), 42))
		cfg := Config{Federation: twoSites(4, 4), Home: "Alpha", Seed: int64(k + 1)}
		for i := range 5 {
			run := time.Duration(10+rng.IntN(300)) * time.Minute
			cfg.Jobs = append(cfg.Jobs, rigidJob(fmt.Sprintf("j%d", i), time.Duration(rng.IntN(120))*time.Minute,
				1+rng.IntN(12), run, run+time.Duration(rng.IntN(120))*time.Minute))
		}
		for range 1 + rng.IntN(4) {
			sys := []string{"Alpha", "Beta"}[rng.IntN(2)]
			run := time.Duration(30+rng.IntN(400)) * time.Minute
			cfg.Preload = append(cfg.Preload, Preload{At: time.Duration(rng.IntN(60)) * time.Minute, System: sys, Partition: "p",
				Nodes: 1 + rng.IntN(4), CoresPerNode: 4, Runtime: run, Walltime: run + time.Duration(rng.IntN(200))*time.Minute})
		}
		opt, err := ExhaustiveOptimum(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if opt.Tried != 32 {
			t.Fatalf("instance %d: tried %d assignments, want 2^5 = 32", k, opt.Tried)
		}
		for _, p := range pols {
			res, err := Run(context.Background(), cfg, p)
			if err != nil {
				t.Fatal(err)
			}
			if res.Finished != len(cfg.Jobs) {
				continue
			}
			if res.MeanWait > opt.Result.MeanWait+1e-9 {
				strictly++
			}
			if res.MeanWait < opt.Result.MeanWait-1e-9 {
				t.Errorf("instance %d: %s mean wait %.0fs beats the exhaustive optimum %.0fs (assignment %v; policy %v)",
					k, p.Name(), res.MeanWait, opt.Result.MeanWait, opt.Assignment, outcomes(res))
			}
		}
	}
	if strictly == 0 {
		t.Error("no policy was ever worse than the optimum: the instances do not discriminate")
	}
	t.Logf("%d policy runs strictly worse than the optimum", strictly)
}

func outcomes(r *Result) []string {
	var out []string
	for _, o := range r.Outcomes {
		out = append(out, fmt.Sprintf("%s→%s(%s, %d migr)", o.ID, o.System, o.Wait, o.Migrations))
	}
	return out
}

// TestOptimumTooLarge refuses instances beyond MaxAssignments.
func TestOptimumTooLarge(t *testing.T) {
	cfg := Config{Federation: twoSites(2, 2)}
	for i := range 20 {
		cfg.Jobs = append(cfg.Jobs, rigidJob(fmt.Sprint(i), 0, 1, time.Minute, time.Minute))
	}
	if _, err := ExhaustiveOptimum(context.Background(), cfg); err == nil {
		t.Fatal("2^20 assignments accepted")
	}
}
