package replay

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/sim"
)

// Options of a comparison (what `mosaic sim replay` takes).
type Options struct {
	Federation *Federation
	// Trace is the SWF log the federated jobs come from; TraceName labels reports.
	Trace     *sim.Trace
	TraceName string
	Policies  []Policy
	Seed      int64  // 0 = the federation's sim.seed
	Jobs      int    // federated jobs (0 = 1000)
	Home      string // default: the first system
	// Load, SizeScale: see JobOptions (defaults 0.3 and 0.25).
	Load      float64
	SizeScale float64
	Rigid     bool
	Tick      time.Duration
	// Parallel runs up to this many policies at once (0 = GOMAXPROCS).
	Parallel int
	// Optimum adds the exhaustive optimum over all static assignments as a row named
	// "optimum" (small instances only: systems^jobs ≤ MaxAssignments).
	Optimum bool
	// NoLearnedWaits: see Config.NoLearnedWaits.
	NoLearnedWaits bool
}

// DefaultJobs is the default number of federated jobs.
const DefaultJobs = 1000

// Compare derives the federated jobs and replays them through every policy, with the
// same federation, jobs and seed for each.
func Compare(ctx context.Context, o Options) (*Report, error) {
	if o.Federation == nil || o.Trace == nil {
		return nil, fmt.Errorf("replay: a federation and a trace are required")
	}
	if len(o.Policies) == 0 {
		return nil, fmt.Errorf("replay: no policy given")
	}
	cfg := Config{Federation: o.Federation, Home: o.Home, Seed: o.Seed, Tick: o.Tick, NoLearnedWaits: o.NoLearnedWaits}
	if err := cfg.defaultsNoJobs(); err != nil {
		return nil, err
	}
	home, _ := o.Federation.System(cfg.Home)
	// The jobs are the home user's: sized against the home system's largest CPU
	// partition and with requested times its longest walltime cap allows.
	ref, maxWall := 0, time.Duration(0)
	unlimited := false
	for _, p := range home.Partitions {
		if !partitionUsable(p) {
			continue
		}
		pc, err := partConfig(*home, p)
		if err != nil {
			return nil, err
		}
		c := pc.Partitions[0]
		ref = max(ref, c.Nodes*c.CoresPerNode)
		if c.MaxWalltime == 0 {
			unlimited = true
		}
		maxWall = max(maxWall, c.MaxWalltime)
	}
	if ref == 0 {
		return nil, fmt.Errorf("replay: home system %s has no CPU partition for the trace's jobs; pick another with --home", home.Name)
	}
	if unlimited {
		maxWall = 0
	}
	n := o.Jobs
	if n <= 0 {
		n = DefaultJobs
	}
	jobs, err := DeriveJobs(o.Trace, JobOptions{N: n, Seed: cfg.Seed, RefCores: ref, SizeScale: o.SizeScale, Load: o.Load,
		MaxWalltime: maxWall, Rigid: o.Rigid})
	if err != nil {
		return nil, err
	}
	cfg.Jobs = jobs
	rep := &Report{Federation: o.Federation.Path, Trace: o.TraceName, Home: cfg.Home, Seed: cfg.Seed, Jobs: len(jobs),
		TickS: cfg.Tick.Seconds(), Systems: o.Federation.SystemNames(), Results: make([]*Result, len(o.Policies))}
	for _, j := range jobs {
		if j.Moldable() {
			rep.Moldable++
		}
	}
	par := o.Parallel
	if par <= 0 {
		par = runtime.GOMAXPROCS(0)
	}
	sem := make(chan struct{}, par)
	errs := make([]error, len(o.Policies))
	var wg sync.WaitGroup
	for i, p := range o.Policies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			rep.Results[i], errs[i] = Run(ctx, cfg, p)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("policy %s: %w", o.Policies[i].Name(), err)
		}
	}
	b, err := ComputeBound(ctx, cfg)
	if err != nil {
		return nil, err
	}
	rep.Bound = b.Result
	rep.BoundViolations = map[string]int{}
	for _, res := range rep.Results {
		rep.BoundViolations[res.Policy] = b.Violations(res)
	}
	if o.Optimum {
		opt, err := ExhaustiveOptimum(ctx, cfg)
		if err != nil {
			return nil, err
		}
		rep.Results = append(rep.Results, opt.Result)
		rep.BoundViolations[opt.Result.Policy] = b.Violations(opt.Result)
	}
	rep.ComputeGoal()
	return rep, nil
}

// defaultsNoJobs is defaults without the jobs check (used before jobs are derived).
func (c *Config) defaultsNoJobs() error {
	saved := c.Jobs
	c.Jobs = []Job{{}}
	err := c.defaults()
	c.Jobs = saved
	return err
}
