package replay

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/sim"
	"github.com/mosaic-hpc/mosaic/internal/site"
)

// sixSites is the benchmark federation: six systems of one 64-node × 64-core CPU
// partition each, with synthetic background load at 60% (mean run 4 h).
func sixSites() *Federation {
	f := &Federation{Path: "bench-six-sites", Seed: 1}
	for i := range 6 {
		f.Systems = append(f.Systems, site.System{Name: fmt.Sprintf("S%d", i+1), Kind: site.KindSim, Accounts: []string{"a"},
			Partitions: []site.Partition{{Name: "cpu", Nodes: 64, CPUCores: 64, MemoryGB: 256, MaxWalltime: model.Duration(48 * time.Hour)}},
			SimConfig:  &site.SimSystem{MaxNodes: 64}})
	}
	f.Configure = func(_ string, cfg *sim.Config) {
		for i := range cfg.Partitions {
			cfg.Partitions[i].Load.Utilization = 0.6
			cfg.Partitions[i].Load.MeanRuntime = 4 * time.Hour
		}
	}
	return f
}

// syntheticJobs draws n federated jobs: Poisson arrivals, log-normal run times
// (mean 20 min), 1–256 cores (log-uniform), half of them moldable, offered at load ×
// refCores.
func syntheticJobs(n int, seed int64, refCores int, load float64) []Job {
	rng := rand.New(rand.NewPCG(uint64(seed), 0xbe4c))
	jobs := make([]Job, n)
	var work float64
	for i := range jobs {
		run := time.Duration(math.Exp(math.Log(1200)-0.5+rng.NormFloat64())*float64(time.Second)).Round(time.Second) + time.Second
		run = min(run, 24*time.Hour)
		hi := int(math.Pow(2, rng.Float64()*8))
		lo := hi
		if i%2 == 0 && hi >= 2 {
			lo = (hi + 1) / 2
		}
		wall := ((run*2 + time.Minute - 1) / time.Minute) * time.Minute
		jobs[i] = Job{ID: fmt.Sprintf("s%d", i+1), Runtime: run, Walltime: min(wall, 48*time.Hour), MinCores: lo, MaxCores: hi}
		work += float64(hi) * run.Seconds()
	}
	meanGap := work / float64(n) / (load * float64(refCores))
	at := 0.0
	for i := range jobs {
		at += rng.ExpFloat64() * meanGap
		jobs[i].Arrival = time.Duration(at * float64(time.Second)).Round(time.Second)
	}
	return jobs
}

// BenchmarkReplay100k replays 100,000 federated jobs over six loaded sites, per
// policy, and reports federated jobs per second of replay.
func BenchmarkReplay100k(b *testing.B) {
	n := 100_000
	if s := os.Getenv("REPLAY_BENCH_JOBS"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	jobs := syntheticJobs(n, 1, 4096, 0.3)
	for _, name := range []string{PolicyMosaic, PolicyEarliestStart} {
		b.Run(name, func(b *testing.B) {
			p, _ := NewPolicy(name)
			cfg := Config{Federation: sixSites(), Jobs: jobs, Home: "S1"}
			var res *Result
			for b.Loop() {
				var err error
				res, err = Run(context.Background(), cfg, p)
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(jobs)*b.N)/b.Elapsed().Seconds(), "jobs/s")
			b.ReportMetric(res.MeanWait, "mean-wait-s")
			b.Logf("%s: %d finished, mean wait %s, %d migrations", name, res.Finished, FormatDuration(res.MeanWait), res.Migrations)
		})
	}
}

// BenchmarkCompareNasaLublin is the headline replay: 1,000 federated jobs from the
// Lublin log over the three trace-loaded nasa-lublin sites, every policy, seed 1 (what
// `mosaic sim replay --policies all --jobs 1000` runs). REPLAY_BENCH_JOBS changes the
// job count.
func BenchmarkCompareNasaLublin(b *testing.B) {
	dir := tracesDir(b)
	b.Setenv(TracesEnv, dir)
	tr, err := sim.ReadSWF(dir + "/lublin_256.swf.gz")
	if err != nil {
		b.Fatal(err)
	}
	f, err := LoadFederation("../../examples/federations/nasa-lublin.yaml")
	if err != nil {
		b.Fatal(err)
	}
	n := 1000
	if s := os.Getenv("REPLAY_BENCH_JOBS"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	pols, _ := ParsePolicies("all")
	var rep *Report
	for b.Loop() {
		rep, err = Compare(context.Background(), Options{Federation: f, Trace: tr, Policies: pols, Jobs: n, Seed: 1})
		if err != nil {
			b.Fatal(err)
		}
	}
	if m := rep.Result(PolicyMosaic); m != nil {
		b.ReportMetric(m.MeanWait, "mosaic-mean-wait-s")
	}
}
