package replay

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/sim"
	"github.com/mosaic-hpc/mosaic/internal/site"
)

// randomInstance is a small random federation and job stream: 2 or 3 systems of one
// partition each (2–8 nodes of 4–16 cores, shared or exclusive, walltime caps),
// synthetic background load from idle to overloaded (long jobs so jobs run at t0), sometimes an
// outage or a node failure; `jobs` federated jobs, rigid or moldable, arriving over
// an hour; a few preloaded jobs.
func randomInstance(k, systems, jobs int) Config {
	rng := rand.New(rand.NewPCG(uint64(k), 0xb0d))
	f := &Federation{Path: fmt.Sprintf("random-%d", k), Seed: int64(k + 1)}
	type simCfg struct {
		util    float64
		mean    time.Duration
		outage  *sim.Window
		failure *sim.NodeFailure
	}
	cfgs := map[string]simCfg{}
	minCap := 0
	for s := range systems {
		name := fmt.Sprintf("S%d", s+1)
		nodes, cores := 2+rng.IntN(7), 4*(1+rng.IntN(4))
		f.Systems = append(f.Systems, site.System{Name: name, Kind: site.KindSim, Accounts: []string{"acct"},
			Partitions: []site.Partition{{Name: "p", Nodes: nodes, CPUCores: cores, MemoryGB: 4 * cores,
				MaxWalltime: model.Duration(time.Duration(12+rng.IntN(37)) * time.Hour), Exclusive: rng.IntN(3) == 0}},
			SimConfig: &site.SimSystem{MaxNodes: nodes}})
		sc := simCfg{mean: time.Duration(60+rng.IntN(300)) * time.Minute}
		if rng.IntN(5) > 0 {
			sc.util = 0.6 + 0.6*rng.Float64()
		}
		if rng.IntN(4) == 0 {
			sc.outage = &sim.Window{Start: time.Duration(rng.IntN(90)) * time.Minute, Duration: time.Duration(10+rng.IntN(120)) * time.Minute}
		}
		if rng.IntN(5) == 0 {
			sc.failure = &sim.NodeFailure{Partition: "p", Nodes: 1 + rng.IntN(nodes), At: time.Duration(rng.IntN(120)) * time.Minute,
				Duration: time.Duration(10+rng.IntN(60)) * time.Minute}
		}
		cfgs[name] = sc
		if c := nodes * cores; minCap == 0 || c < minCap {
			minCap = c
		}
	}
	f.Configure = func(system string, cfg *sim.Config) {
		sc := cfgs[system]
		for i := range cfg.Partitions {
			cfg.Partitions[i].Load.Utilization = sc.util
			cfg.Partitions[i].Load.MeanRuntime = sc.mean
		}
		if sc.outage != nil {
			cfg.Outages = []sim.Window{*sc.outage}
		}
		if sc.failure != nil {
			cfg.NodeFailures = []sim.NodeFailure{*sc.failure}
		}
	}
	cfg := Config{Federation: f, Home: "S1", Seed: int64(k + 1)}
	for i := range jobs {
		run := time.Duration(5+rng.IntN(240)) * time.Minute
		hi := 1 + rng.IntN(minCap)
		lo := hi
		if rng.IntN(2) == 0 {
			lo = (hi + 1) / 2
		}
		cfg.Jobs = append(cfg.Jobs, Job{ID: fmt.Sprintf("j%d", i), Arrival: time.Duration(rng.IntN(3600)) * time.Second,
			Runtime: run, Walltime: run + time.Duration(rng.IntN(120))*time.Minute, MinCores: lo, MaxCores: hi})
	}
	for range rng.IntN(4) {
		run := time.Duration(30+rng.IntN(400)) * time.Minute
		sys := f.Systems[rng.IntN(systems)]
		if cfgs[sys.Name].outage != nil {
			continue // a preload into an outage is refused, and the replay reports it
		}
		cfg.Preload = append(cfg.Preload, Preload{At: time.Duration(rng.IntN(60)) * time.Minute, System: sys.Name, Partition: "p",
			Nodes: 1 + rng.IntN(sys.Partitions[0].Nodes), CoresPerNode: sys.Partitions[0].CPUCores, Runtime: run, Walltime: run + time.Hour})
	}
	return cfg
}

// TestBoundNeverBeaten is the property test of Bound: on random small instances no
// policy (every one in PolicyNames, so policies added later are checked too) starts
// any job sooner than its bound, so no mean or p95 falls below the bound's; the bound
// is at most the exhaustive optimum; and the bound is not just the tick delay (on
// some jobs the jobs running at t0 or an outage push it later), so the test can tell
// a wrong bound from a trivial one.
func TestBoundNeverBeaten(t *testing.T) {
	instances := 24
	if testing.Short() {
		instances = 8
	}
	pols, err := ParsePolicies("all")
	if err != nil {
		t.Fatal(err)
	}
	if len(pols) != len(PolicyNames) {
		t.Fatalf("%d policies, PolicyNames has %d", len(pols), len(PolicyNames))
	}
	ctx := context.Background()
	aboveTick, beatenOpt, checked := 0, 0, 0
	for k := range instances {
		systems, jobs := 2, 5
		if k%3 == 2 {
			systems, jobs = 3, 4
		}
		cfg := randomInstance(k, systems, jobs)
		b, err := ComputeBound(ctx, cfg)
		if err != nil {
			t.Fatalf("instance %d: %v", k, err)
		}
		for i, w := range b.Waits {
			if w < 0 {
				continue
			}
			arr := Epoch.Add(cfg.Jobs[0].Arrival)
			for _, j := range cfg.Jobs {
				if j.ID == b.IDs[i] {
					arr = Epoch.Add(j.Arrival)
				}
			}
			tick := (&runner{cfg: &Config{Tick: DefaultTick}}).tickCeil(arr).Sub(arr)
			if w < tick {
				t.Errorf("instance %d job %s: bound %s below the tick delay %s", k, b.IDs[i], w, tick)
			}
			if w > tick {
				aboveTick++
			}
		}
		check := func(res *Result) {
			checked++
			if v := b.Violations(res); v > 0 {
				t.Errorf("instance %d: %s started %d jobs sooner than their bound (bound %v; %v)", k, res.Policy, v, b.Waits, outcomes(res))
			}
			if res.Started == b.Result.Started && res.MeanWait < b.Result.MeanWait-1e-9 {
				t.Errorf("instance %d: %s mean wait %.0fs below the bound's %.0fs", k, res.Policy, res.MeanWait, b.Result.MeanWait)
			}
			if res.Started == b.Result.Started && res.P95Wait < b.Result.P95Wait-1e-9 {
				t.Errorf("instance %d: %s p95 wait %.0fs below the bound's %.0fs", k, res.Policy, res.P95Wait, b.Result.P95Wait)
			}
		}
		for _, p := range pols {
			res, err := Run(ctx, cfg, p)
			if err != nil {
				t.Fatalf("instance %d, %s: %v", k, p.Name(), err)
			}
			check(res)
		}
		opt, err := ExhaustiveOptimum(ctx, cfg)
		if err != nil {
			continue // no assignment lets every job finish: nothing to compare
		}
		check(opt.Result)
		if opt.Result.MeanWait > b.Result.MeanWait+1e-9 {
			beatenOpt++
		}
	}
	t.Logf("%d results checked; %d job bounds above the tick delay; the optimum above the bound on %d instances", checked, aboveTick, beatenOpt)
	if aboveTick == 0 {
		t.Error("every job's bound is its tick delay: the instances do not exercise the bound")
	}
	if beatenOpt == 0 {
		t.Error("the bound equals the optimum everywhere: the instances do not discriminate")
	}
}

// TestBoundCases: on an idle federation a job's bound is its tick delay; an outage
// over the arrival pushes it to the outage's end; a job no partition admits is
// rejected (-1); the row is named "bound".
func TestBoundCases(t *testing.T) {
	cfg := Config{Federation: twoSites(4, 4), Home: "Alpha", Jobs: []Job{
		rigidJob("a", 30*time.Second, 4, time.Hour, time.Hour),
		rigidJob("b", 10*time.Minute, 16, time.Hour, time.Hour),
		rigidJob("huge", time.Minute, 64, time.Hour, time.Hour),
	}}
	b, err := ComputeBound(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	bound := func(b *Bound, id string) time.Duration {
		for i, x := range b.IDs {
			if x == id {
				return b.Waits[i]
			}
		}
		t.Fatalf("no job %s in %v", id, b.IDs)
		return 0
	}
	for id, w := range map[string]time.Duration{"a": 30 * time.Second, "b": 0, "huge": -1} {
		if got := bound(b, id); got != w {
			t.Errorf("job %s: bound %s, want %s", id, got, w)
		}
	}
	if b.Result.Policy != PolicyBound || b.Result.Rejected != 1 || b.Result.Started != 2 || b.Result.MeanWait != 15 {
		t.Errorf("row %+v", b.Result)
	}
	// Both sites down from 5 to 50 minutes: b (arriving at 10) cannot start before 50.
	f := twoSites(4, 4)
	quiet := f.Configure
	f.Configure = func(s string, c *sim.Config) {
		quiet(s, c)
		c.Outages = []sim.Window{{Start: 5 * time.Minute, Duration: 45 * time.Minute}}
	}
	cfg.Federation = f
	b, err = ComputeBound(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if bound(b, "b") != 40*time.Minute || bound(b, "a") != 30*time.Second {
		t.Errorf("with an outage: bounds %v %v, want b at 40m, a at 30s", b.IDs, b.Waits)
	}
}

// TestAloneIsNotABound is the counterexample in Bound's comment, replayed: on Alpha
// (4 nodes × 4 cores) a 10-hour job holds two nodes; a federated job K (one node, 10
// minutes) takes a third; a whole-half job H (two nodes, 10 hours) then cannot start
// and reserves K's end; a short federated job J (one node, 5 minutes) backfills into
// the free node at once. Without K, H starts on the two free nodes and J waits ten
// hours. So J's start "alone with the background load" is no lower bound on its start
// among the other federated jobs, and Bound does not use it.
func TestAloneIsNotABound(t *testing.T) {
	pre := []Preload{
		{At: 0, System: "Alpha", Partition: "p", Nodes: 2, CoresPerNode: 4, Runtime: 10 * time.Hour, Walltime: 10 * time.Hour},
		{At: time.Minute, System: "Alpha", Partition: "p", Nodes: 2, CoresPerNode: 4, Runtime: 10 * time.Hour, Walltime: 10 * time.Hour},
	}
	k := rigidJob("K", 0, 4, 10*time.Minute, 10*time.Minute)
	j := rigidJob("J", 2*time.Minute, 4, 5*time.Minute, 5*time.Minute)
	wait := func(jobs ...Job) time.Duration {
		cfg := Config{Federation: twoSites(4, 4), Home: "Alpha", Jobs: jobs, Preload: pre}
		fixed := make([]string, len(jobs))
		for i := range fixed {
			fixed[i] = "Alpha"
		}
		res, err := run(context.Background(), cfg, homePolicy{}, fixed)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range res.Outcomes {
			if o.ID == "J" {
				return o.Wait
			}
		}
		t.Fatal("J not replayed")
		return 0
	}
	with, alone := wait(k, j), wait(j)
	if with != 0 || alone < 9*time.Hour {
		t.Fatalf("J waits %s beside K and %s alone; the scenario wants 0 and about 10h", with, alone)
	}
	b, err := ComputeBound(context.Background(), Config{Federation: twoSites(4, 4), Home: "Alpha", Jobs: []Job{k, j}, Preload: pre})
	if err != nil {
		t.Fatal(err)
	}
	if b.Waits[1] > with {
		t.Errorf("Bound gives J %s, above its real %s", b.Waits[1], with)
	}
}
