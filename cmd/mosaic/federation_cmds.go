package main

import (
	"fmt"
	"io"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/mosaic-hpc/mosaic/client"
	"github.com/mosaic-hpc/mosaic/internal/model"
)

func newResourcesCmd() *cobra.Command {
	var j jsonFlag
	var system string
	cmd := &cobra.Command{
		Use:   "resources [SYSTEM]",
		Short: "List every partition of the federation (or of one system)",
		Example: `  mosaic resources
  mosaic resources delta
  mosaic resources --jq '.records[] | select(.free_gpus > 0) | "\(.system):\(.partition)"'`,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: completeSystemArg(false),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				system = args[0]
			}
			c, err := newClient()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			if system != "" {
				d, err := c.Resource(ctx, system)
				if err != nil {
					return err
				}
				if j.set {
					return j.print(cmd.OutOrStdout(), d)
				}
				printRecords(cmd.OutOrStdout(), d.Partitions)
				return nil
			}
			snap, err := c.Federation(ctx)
			if err != nil {
				return err
			}
			if j.set {
				return j.print(cmd.OutOrStdout(), snap)
			}
			printRecords(cmd.OutOrStdout(), snap.Records)
			return nil
		},
	}
	addJSONFlag(cmd, &j, client.ResourceDetail{}, client.ResourceSnapshot{})
	return cmd
}

func printRecords(w io.Writer, recs []client.ResourceRecord) {
	col := color(w)
	tw := table(w)
	fmt.Fprintln(tw, "SYSTEM\tPARTITION\tACCOUNT\tARCH\tGPU\tFREE_GPU\tFREE_CPU\tNODES(I/M/A/D)\tRUN\tPEND\tMINE\tWALL\tHEALTH")
	for _, r := range recs {
		gpu, freeG := "-", "-"
		if r.GPUsPerNode > 0 {
			gpu = fmt.Sprintf("%dx%s:%dG", r.GPUsPerNode, r.GPUModel, r.GPUMemoryGB)
			freeG = fmt.Sprintf("%d/%d", r.FreeGPUs, r.TotalGPUs)
		}
		wall := "unlimited"
		if r.WalltimeCap > 0 {
			wall = model.Duration(r.WalltimeCap).Slurm()
		}
		h := string(r.Health)
		switch h {
		case "ok":
			h = paint(col, "32", h)
		case "degraded":
			h = paint(col, "33", h)
		default:
			h = paint(col, "31", h)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d/%d\t%d/%d/%d/%d\t%d\t%d\t%d/%d\t%s\t%s\n",
			r.System, r.Partition, dash(r.Account), r.Arch, gpu, freeG, r.FreeCores, r.TotalCores,
			r.Nodes.Idle, r.Nodes.Mixed, r.Nodes.Allocated, r.Nodes.Down,
			r.RunningJobs, r.PendingJobs, r.MyRunningJobs, r.MyPendingJobs, wall, h)
	}
	tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func newIdleCmd() *cobra.Command {
	var j jsonFlag
	var q client.IdleQuery
	maxQueue := -1
	cmd := &cobra.Command{
		Use:   "idle",
		Short: "Find partitions with free capacity right now",
		Example: `  mosaic idle --gpus 2 --gpu-mem 40
  mosaic idle --gpus 1 --arch aarch64 --max-queue 5 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := newClient()
			if err != nil {
				return err
			}
			if maxQueue >= 0 {
				q.MaxQueue = &maxQueue
			}
			res, err := c.IdleExplained(cmd.Context(), q)
			if err != nil {
				return err
			}
			if j.set {
				return j.print(cmd.OutOrStdout(), res)
			}
			if len(res.Partitions) == 0 {
				why := res.Explanation
				if why == "" {
					why = "no partition has that much free right now"
				}
				fmt.Fprintln(cmd.ErrOrStderr(), why)
				return nil
			}
			printRecords(cmd.OutOrStdout(), res.Partitions)
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&q.GPUs, "gpus", 0, "at least this many free GPUs")
	f.IntVar(&q.GPUMemGB, "gpu-mem", 0, "at least this much memory per GPU (GB)")
	f.IntVar(&q.Cores, "cores", 0, "at least this many free CPU cores")
	f.StringVar(&q.Arch, "arch", "", "x86_64 or aarch64")
	f.StringVar(&q.GPUModel, "gpu-model", "", "GPU model, e.g. A100 or H100")
	f.IntVar(&maxQueue, "max-queue", -1, "at most this many pending jobs (-1 = any)")
	f.StringVar(&q.Provider, "provider", "", "only this provider kind (sim, ssh, local, globus)")
	f.StringVar(&q.System, "system", "", "only this system")
	addJSONFlag(cmd, &j, client.IdleResult{})
	_ = cmd.RegisterFlagCompletionFunc("system", completeSystems)
	_ = cmd.RegisterFlagCompletionFunc("gpu-model", completeGPUModels)
	_ = cmd.RegisterFlagCompletionFunc("arch", cobra.FixedCompletions(archs, noFiles))
	_ = cmd.RegisterFlagCompletionFunc("provider", cobra.FixedCompletions([]string{"sim", "ssh", "local", "globus"}, noFiles))
	return cmd
}

func newStatusCmd() *cobra.Command {
	var j jsonFlag
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Queue status per partition, as a Markdown table per system",
		Example: `  mosaic status
  mosaic status --json
  mosaic status --jq '.systems[] | select(.health != "ok") | .system'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := newClient()
			if err != nil {
				return err
			}
			if j.set {
				st, err := c.Status(cmd.Context())
				if err != nil {
					return err
				}
				return j.print(cmd.OutOrStdout(), st)
			}
			md, err := c.StatusMarkdown(cmd.Context())
			if err != nil {
				return err
			}
			_, err = io.WriteString(cmd.OutOrStdout(), md)
			return err
		},
	}
	addJSONFlag(cmd, &j, client.Status{})
	return cmd
}

func newAboutCmd() *cobra.Command {
	var j jsonFlag
	cmd := &cobra.Command{
		Use:   "about",
		Short: "Show the running core's version and configuration",
		Example: `  mosaic about
  mosaic about --jq .version`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := newClient()
			if err != nil {
				return err
			}
			a, err := c.About(cmd.Context())
			if err != nil {
				return err
			}
			if j.set {
				return j.print(cmd.OutOrStdout(), a)
			}
			tw := table(cmd.OutOrStdout())
			clock := "real time (no simulated system)"
			if a.Sim != nil {
				clock = a.Sim.Summary
			}
			for _, kv := range [][2]string{{"url", c.URL()}, {"version", a.Version}, {"commit", dash(a.Commit)},
				{"catalog", a.Catalog}, {"systems", strconv.Itoa(a.Systems)}, {"clock", clock}, {"tick", a.Tick}, {"store", a.Store},
				{"ranker", a.Ranker}, {"started", a.Started.Format("2006-01-02 15:04:05 MST")}} {
				fmt.Fprintf(tw, "%s\t%s\n", kv[0], kv[1])
			}
			return tw.Flush()
		},
	}
	addJSONFlag(cmd, &j, client.About{})
	return cmd
}
