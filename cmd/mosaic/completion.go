package main

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mosaic-hpc/mosaic/internal/campaign"
	"github.com/mosaic-hpc/mosaic/internal/core"
	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/site"
)

// Dynamic shell completion (cobra's __complete, used by the scripts of `mosaic
// completion bash|zsh|fish`): task ids, systems, partitions and GPU models come from
// the running core when one answers within completeTimeout, else (systems,
// partitions, GPU models) from the site catalog serve would load; completion never
// prints an error, it just offers nothing.

// completeTimeout bounds each call a completion makes to the core.
const completeTimeout = 2 * time.Second

const noFiles = cobra.ShellCompDirectiveNoFileComp

// partitionRef is one partition known to completion.
type partitionRef struct{ system, partition, gpuModel string }

// knownPartitions asks the running core for the federation's partitions, and falls
// back to the site catalog (--sites is not known here: MOSAIC_SITES, the config
// directory's sites.yaml, else the embedded simulated federation).
func knownPartitions(ctx context.Context) []partitionRef {
	var out []partitionRef
	if c, err := newClient(); err == nil {
		cctx, cancel := context.WithTimeout(ctx, completeTimeout)
		snap, err := c.Federation(cctx)
		cancel()
		if err == nil {
			for _, r := range snap.Records {
				out = append(out, partitionRef{r.System, r.Partition, r.GPUModel})
			}
			return out
		}
	}
	cfg, _, err := loadConfig()
	if err != nil {
		return nil
	}
	if _, err := cfg.FindSites(""); err != nil {
		return nil
	}
	cat, err := core.LoadCatalog(cfg.SitesFile)
	if err != nil {
		return nil
	}
	for _, s := range cat.Systems {
		for _, p := range s.Partitions {
			out = append(out, partitionRef{s.Name, p.Name, p.GPUModel})
		}
	}
	return out
}

func ctxOf(cmd *cobra.Command) context.Context {
	if ctx := cmd.Context(); ctx != nil {
		return ctx
	}
	return context.Background()
}

// withPrefix keeps the distinct items starting with prefix (case-insensitive), in order.
func withPrefix(items []string, prefix string) []string {
	var out []string
	for _, it := range items {
		if strings.HasPrefix(strings.ToLower(it), strings.ToLower(prefix)) && !slices.Contains(out, it) {
			out = append(out, it)
		}
	}
	return out
}

// completeList completes the last item of a comma-separated list from items.
func completeList(items []string, toComplete string) []string {
	done, last := "", toComplete
	if i := strings.LastIndex(toComplete, ","); i >= 0 {
		done, last = toComplete[:i+1], toComplete[i+1:]
	}
	var out []string
	for _, it := range withPrefix(items, last) {
		out = append(out, done+it)
	}
	return out
}

func systemNames(cmd *cobra.Command) []string {
	var out []string
	for _, p := range knownPartitions(ctxOf(cmd)) {
		out = append(out, p.system)
	}
	return out
}

// completeSystems completes a system name (the first argument, or a flag's value).
func completeSystems(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	return withPrefix(systemNames(cmd), toComplete), noFiles
}

// completeSystemArg completes the first argument with a system, then files (put-file's
// LOCAL_FILE) or nothing.
func completeSystemArg(files bool) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) == 0 {
			return completeSystems(cmd, args, toComplete)
		}
		if files {
			return nil, cobra.ShellCompDirectiveDefault
		}
		return nil, noFiles
	}
}

// completeSystemList completes a comma-separated list of systems (--avoid).
func completeSystemList(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	return completeList(systemNames(cmd), toComplete), noFiles | cobra.ShellCompDirectiveNoSpace
}

// completeTarget completes SYSTEM or SYSTEM:PARTITION (submit --target).
func completeTarget(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	var items []string
	for _, p := range knownPartitions(ctxOf(cmd)) {
		items = append(items, p.system, p.system+":"+p.partition)
	}
	return withPrefix(items, toComplete), noFiles
}

// completePartitionOf completes a partition of the system given as the first
// argument (smoke SYSTEM --partition P).
func completePartitionOf(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	var items []string
	for _, p := range knownPartitions(ctxOf(cmd)) {
		if len(args) == 0 || p.system == args[0] {
			items = append(items, p.partition)
		}
	}
	return withPrefix(items, toComplete), noFiles
}

// completeGPUModels completes a comma-separated list of GPU models: the models the
// federation has first, then every model Mosaic knows.
func completeGPUModels(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	var items []string
	for _, p := range knownPartitions(ctxOf(cmd)) {
		if p.gpuModel != "" {
			items = append(items, p.gpuModel)
		}
	}
	items = append(items, model.KnownGPUModels...)
	return completeList(items, toComplete), noFiles | cobra.ShellCompDirectiveNoSpace
}

func completeObjectives(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	var items []string
	for _, o := range model.Objectives {
		items = append(items, string(o))
	}
	return withPrefix(items, toComplete), noFiles
}

var taskStates = []string{string(model.TaskPending), string(model.TaskPlaced), string(model.TaskSubmitted), string(model.TaskQueued),
	string(model.TaskRunning), string(model.TaskSucceeded), string(model.TaskFailed), string(model.TaskCancelled)}

func completeTaskStates(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	return completeList(taskStates, toComplete), noFiles | cobra.ShellCompDirectiveNoSpace
}

var archs = []string{"x86_64", "aarch64"}

func completeArchList(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	return completeList(archs, toComplete), noFiles | cobra.ShellCompDirectiveNoSpace
}

// taskIDs asks the running core for the newest tasks: "ID\tNAME (STATE)" (cobra
// shows the part after a tab as the description).
func taskIDs(cmd *cobra.Command, toComplete string) []string {
	c, err := newClient()
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctxOf(cmd), completeTimeout)
	defer cancel()
	ts, err := c.Tasks(ctx, nil, 200)
	if err != nil {
		return nil
	}
	var out []string
	for _, t := range ts {
		if strings.HasPrefix(t.ID, toComplete) {
			out = append(out, t.ID+"\t"+oneLine(t.Name, 40)+" ("+string(t.State)+")")
		}
	}
	return out
}

// completeTaskArg completes the first (only) argument with a task id.
func completeTaskArg(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, noFiles
	}
	return taskIDs(cmd, toComplete), noFiles
}

// completeTaskFlag completes a flag's value with a task id (events --task).
func completeTaskFlag(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	return taskIDs(cmd, toComplete), noFiles
}

// completeRunArg completes a launched campaign run's id from the campaigns directory.
func completeRunArg(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, noFiles
	}
	cfg, _, err := loadConfig()
	if err != nil {
		return nil, noFiles
	}
	runs, err := campaign.ListRuns(campaign.CampaignsRoot(cfg.StateDir))
	if err != nil {
		return nil, noFiles
	}
	var out []string
	for _, r := range runs {
		if strings.HasPrefix(r.RunID, toComplete) {
			out = append(out, r.RunID+"\t"+r.CampaignName+" ("+r.State+")")
		}
	}
	return out, noFiles
}

// completeCampaignFile completes the campaign file argument (JSONC or JSON files).
func completeCampaignFile(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, noFiles
	}
	return []string{"jsonc", "json"}, cobra.ShellCompDirectiveFilterFileExt
}

// completeNothing says a command takes no (further) arguments: no file names offered.
func completeNothing(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return nil, noFiles
}

// fileExt completes file names with these extensions (a flag naming a file).
func fileExt(exts ...string) cobra.CompletionFunc {
	return func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return exts, cobra.ShellCompDirectiveFilterFileExt
	}
}

// completeMachines completes init-sites' MACHINE[=[USER@]HOST] arguments with the
// known machines' names.
func completeMachines(_ *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	var items []string
	for _, m := range site.KnownMachines() {
		if !slices.Contains(args, m.Machine) {
			items = append(items, m.Machine)
		}
	}
	return withPrefix(items, toComplete), noFiles
}
