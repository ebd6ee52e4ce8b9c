package main

import (
	"bytes"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/mosaic-hpc/mosaic/internal/replay"
	"github.com/mosaic-hpc/mosaic/internal/sim"
)

// newSimCmd is `mosaic sim`: offline experiments on the simulator.
func newSimCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "sim",
		Short:   "Offline experiments on simulated federations (no running core needed)",
		Example: `  mosaic sim replay --federation examples/federations/demo.yaml --trace ../shared/traces/lublin_256.swf.gz`,
	}
	cmd.AddCommand(newSimReplayCmd())
	return cmd
}

func newSimReplayCmd() *cobra.Command {
	var (
		fedPath, tracePath, policies, home, plot, seeds string
		seed                                            int64
		jobs                                            int
		load, sizeScale                                 float64
		tick                                            time.Duration
		rigid, optimum, calibration, noLearned          bool
		js                                              jsonFlag
	)
	cmd := &cobra.Command{
		Use:   "replay --federation FILE --trace FILE.swf[.gz]",
		Short: "Replay trace jobs through placement policies and compare their waits",
		Long: `Replay a stream of federated user jobs, taken from a Standard Workload Format trace,
through placement policies over a federation of simulated sites (a sites.yaml of kind sim
systems, each with its own background load), and compare mean and p95 wait, bounded
slowdown, makespan, utilisation and migrations. Every policy sees the same federation,
jobs and seed; placement goes through the same scheduler as the live core.

Policies: home, random, round-robin, least-queued, earliest-start, mosaic,
clairvoyant-greedy (or all; "oracle" is accepted as clairvoyant-greedy's old name). Every
report adds a "(bound)" row: a lower bound on each job's wait that no policy can beat.
--seeds 1..5 (or 1,3,5) repeats the comparison per seed and reports each policy's mean
over seeds with a 95% interval (Student's t) and mosaic's ratio to earliest-start per seed.
Relative trace paths in the federation file are resolved against the file's directory;
a trace that is missing is looked up by name in $MOSAIC_TRACES. See docs/PLACEMENT.md.`,
		Example: `  mosaic sim replay --federation examples/federations/demo.yaml \
    --trace ../shared/traces/lublin_256.swf.gz --policies all --seed 1 --plot waits.svg
  mosaic sim replay --federation examples/federations/grid.yaml \
    --trace ../shared/traces/lublin_256.swf.gz --policies all --seeds 1..5`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if fedPath == "" || tracePath == "" {
				return usagef("--federation and --trace are required (see mosaic sim replay --help)")
			}
			var seedList []int64
			if cmd.Flags().Changed("seeds") {
				if cmd.Flags().Changed("seed") {
					return usagef("--seed and --seeds both given; use one (--seeds 1..5 or --seeds 1,3,5)")
				}
				if plot != "" || optimum {
					return usagef("--plot and --optimum are per seed; run them with --seed N, not --seeds")
				}
				var err error
				if seedList, err = replay.ParseSeeds(seeds); err != nil {
					return usage(err)
				}
			}
			fed, err := replay.LoadFederation(fedPath)
			if err != nil {
				return err
			}
			tp, err := replay.ResolveTrace(tracePath)
			if err != nil {
				return err
			}
			tr, err := sim.ReadSWF(tp)
			if err != nil {
				return err
			}
			pols, err := replay.ParsePolicies(policies)
			if err != nil {
				return usage(err)
			}
			ctx, cancel := signalContext()
			defer cancel()
			opts := replay.Options{Federation: fed, Trace: tr, TraceName: tracePath, Policies: pols,
				Seed: seed, Jobs: jobs, Home: home, Load: load, SizeScale: sizeScale, Rigid: rigid, Tick: tick, Optimum: optimum,
				NoLearnedWaits: noLearned}
			out := cmd.OutOrStdout()
			if seedList != nil {
				sr, err := replay.CompareSeeds(ctx, opts, seedList)
				if err != nil {
					return err
				}
				if js.set {
					return js.print(out, sr)
				}
				return sr.WriteTable(out)
			}
			rep, err := replay.Compare(ctx, opts)
			if err != nil {
				return err
			}
			if plot != "" {
				var b bytes.Buffer
				if err := rep.WriteSVG(&b); err != nil {
					return err
				}
				if err := os.WriteFile(plot, b.Bytes(), 0o644); err != nil {
					return fmt.Errorf("write plot: %w", err)
				}
			}
			if js.set {
				return js.print(out, rep)
			}
			fmt.Fprintf(out, "federation %s (home %s), trace %s: %d jobs (%d moldable), seed %d, tick %s\n\n",
				rep.Federation, rep.Home, rep.Trace, rep.Jobs, rep.Moldable, rep.Seed, time.Duration(rep.TickS*float64(time.Second)))
			if err := rep.WriteTable(out); err != nil {
				return err
			}
			if calibration {
				fmt.Fprintln(out)
				return rep.WriteCalibration(out)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&fedPath, "federation", "", "federation file (sites.yaml format, kind sim systems)")
	f.StringVar(&tracePath, "trace", "", "SWF trace (.swf or .swf.gz) the federated jobs come from")
	f.StringVar(&policies, "policies", "all", "comma-separated policies: home,random,round-robin,least-queued,earliest-start,mosaic,clairvoyant-greedy or all")
	f.Int64Var(&seed, "seed", 0, "seed of the background load, the job slice and the random policy (0 = the federation's sim.seed)")
	f.StringVar(&seeds, "seeds", "", "run every seed of a list (1..5, 1,3,5) and report means over seeds with 95% intervals")
	f.IntVar(&jobs, "jobs", replay.DefaultJobs, "number of federated jobs")
	f.StringVar(&home, "home", "", "the user's home system (default: the first system of the federation)")
	f.Float64Var(&load, "load", 0.3, "offered load of the federated jobs as a share of the home system's CPU cores")
	f.Float64Var(&sizeScale, "size-scale", 0.25, "the trace machine maps onto this share of the home system's cores")
	f.BoolVar(&rigid, "rigid", false, "no moldable jobs: every job asks for exactly its trace size")
	f.BoolVar(&optimum, "optimum", false, "also search every assignment of jobs to systems for the lowest mean wait (small --jobs only)")
	f.DurationVar(&tick, "tick", replay.DefaultTick, "decision tick (simulated): jobs are placed at the next tick after they arrive")
	f.BoolVar(&calibration, "calibration", false, "also print how observed waits compare with the site estimates and their learned correction, per partition (JSON: results[].calibration)")
	f.BoolVar(&noLearned, "no-learned-waits", false, "mosaic ranks by the sites' own estimates, without the learned per-partition correction")
	f.StringVar(&plot, "plot", "", "write the wait-time CDF of every policy as SVG to this file")
	addJSONFlag(cmd, &js, replay.Report{}, replay.SeedReport{})
	return cmd
}
