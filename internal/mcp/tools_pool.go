package mcp

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	v1 "github.com/mosaic-hpc/mosaic/api/v1"
)

// ListResourcesIn filters list_resources.
type ListResourcesIn struct {
	System  string `json:"system,omitempty" jsonschema:"only this system (catalog name such as Delta@NCSA, or its short name such as delta)"`
	GPUOnly bool   `json:"gpu_only,omitempty" jsonschema:"only partitions with GPUs"`
}

// ListResourcesOut is the federation snapshot.
type ListResourcesOut struct {
	TakenAt time.Time           `json:"taken_at"`
	Systems []v1.SystemHealth   `json:"systems" jsonschema:"each system's probe health: ok and degraded are usable; down, needs-login and unknown are not"`
	Records []v1.ResourceRecord `json:"records" jsonschema:"one per (system, partition, account): shape, free GPUs/cores now, queue depth, limits"`
}

// FindIdleIn filters find_idle.
type FindIdleIn struct {
	GPUs      int    `json:"gpus,omitempty" jsonschema:"at least this many free GPUs in one partition"`
	GPUMem    int    `json:"gpu_mem,omitempty" jsonschema:"at least this much memory per GPU, GB (CLI --gpu-mem)"`
	GPUMemGB  int    `json:"gpu_mem_gb,omitempty" jsonschema:"deprecated alias of gpu_mem (still accepted)"`
	Cores     int    `json:"cores,omitempty" jsonschema:"at least this many free CPU cores"`
	Arch      string `json:"arch,omitempty" jsonschema:"x86_64 or aarch64"`
	GPUModel  string `json:"gpu_model,omitempty" jsonschema:"e.g. A100, H100, GH200"`
	MaxQueue  *int   `json:"max_queue,omitempty" jsonschema:"at most this many pending jobs in the partition (omit for any)"`
	Provider  string `json:"provider,omitempty" jsonschema:"sim, ssh, local or globus"`
	System    string `json:"system,omitempty"`
	Partition string `json:"partition,omitempty"`
}

// FindIdleOut lists partitions with free capacity now.
type FindIdleOut struct {
	Count      int                 `json:"count"`
	Partitions []v1.ResourceRecord `json:"partitions"`
}

// SystemEnvIn names a system.
type SystemEnvIn struct {
	System string `json:"system" jsonschema:"catalog name (Delta@NCSA) or short name (delta)"`
}

func (t *tools) registerPool(s *mcp.Server) {
	addTool(s, "list_resources", "List the federation's resources",
		"The merged snapshot of every system and partition: health, node counts, free GPUs and cores, queue depth, "+
			"the user's own jobs, walltime caps. Start here to see the pool.",
		readOnly, t.listResources)
	addTool(s, "find_idle", "Find idle capacity",
		"Partitions with free capacity now, filtered by GPUs, GPU memory, cores, architecture, GPU model and queue depth. "+
			"Free now does not guarantee an immediate start: submit_task with dry_run shows the estimated wait.",
		readOnly, t.findIdle)
	addTool(s, "system_env", "Probe a system's login node",
		"Host, user, workdir, Python/torch versions, modules, container runtimes and Slurm associations of a system "+
			"reached over ssh or locally (simulated systems have no login node).",
		readOnly, t.systemEnv)
}

func (t *tools) listResources(ctx context.Context, _ *mcp.CallToolRequest, in ListResourcesIn) (*ListResourcesOut, error) {
	b, err := t.backend(ctx)
	if err != nil {
		return nil, err
	}
	snap, err := b.Federation(ctx)
	if err != nil {
		return nil, err
	}
	out := &ListResourcesOut{TakenAt: snap.TakenAt, Systems: []v1.SystemHealth{}, Records: []v1.ResourceRecord{}}
	want := strings.TrimSpace(in.System)
	match := func(sys string) bool { return want == "" || systemMatches(sys, want) }
	for _, h := range snap.Systems {
		if match(h.System) {
			out.Systems = append(out.Systems, h)
		}
	}
	if len(out.Systems) == 0 && want != "" {
		return nil, invalid("system %q is not in the federation; known systems: %s", want, strings.Join(systemNames(snap), ", "))
	}
	for _, r := range snap.Records {
		if match(r.System) && (!in.GPUOnly || r.GPUsPerNode > 0) {
			out.Records = append(out.Records, r)
		}
	}
	return out, nil
}

// systemMatches compares a catalog name (Delta@NCSA) with a user's name for it.
func systemMatches(catalog, name string) bool {
	if strings.EqualFold(catalog, name) {
		return true
	}
	short, _, _ := strings.Cut(catalog, "@")
	return strings.EqualFold(short, name)
}

func systemNames(snap *v1.ResourceSnapshot) []string {
	var names []string
	for _, h := range snap.Systems {
		names = append(names, h.System)
	}
	sort.Strings(names)
	return names
}

func (t *tools) findIdle(ctx context.Context, _ *mcp.CallToolRequest, in FindIdleIn) (*FindIdleOut, error) {
	if in.GPUs < 0 || in.GPUMem < 0 || in.GPUMemGB < 0 || in.Cores < 0 {
		return nil, invalid("gpus, gpu_mem and cores must not be negative")
	}
	gpuMem, err := pickInt(in.GPUMem, in.GPUMemGB, "gpu_mem", "gpu_mem_gb")
	if err != nil {
		return nil, err
	}
	if in.MaxQueue != nil && *in.MaxQueue < 0 {
		return nil, invalid("max_queue must not be negative; omit it to accept any queue depth")
	}
	if a := in.Arch; a != "" && a != "x86_64" && a != "aarch64" {
		return nil, invalid("arch %q: want x86_64 or aarch64", a)
	}
	// The bounds the HTTP API's find-idle operation declares, checked here so both
	// backends refuse the same arguments.
	if p := in.Provider; p != "" && !slices.Contains([]string{"sim", "ssh", "local", "globus"}, p) {
		return nil, invalid("provider %q: want sim, ssh, local or globus", p)
	}
	b, err := t.backend(ctx)
	if err != nil {
		return nil, err
	}
	recs, err := b.Idle(ctx, v1.IdleQuery{GPUs: in.GPUs, GPUMemGB: gpuMem, Cores: in.Cores, Arch: in.Arch,
		GPUModel: in.GPUModel, MaxQueue: in.MaxQueue, Provider: in.Provider, System: in.System})
	if err != nil {
		return nil, err
	}
	out := &FindIdleOut{Partitions: []v1.ResourceRecord{}}
	for _, r := range recs {
		if in.Partition == "" || strings.EqualFold(r.Partition, in.Partition) {
			out.Partitions = append(out.Partitions, r)
		}
	}
	out.Count = len(out.Partitions)
	return out, nil
}

func (t *tools) systemEnv(ctx context.Context, _ *mcp.CallToolRequest, in SystemEnvIn) (*v1.SiteEnv, error) {
	if strings.TrimSpace(in.System) == "" {
		return nil, invalid("system is empty; name one from list_resources")
	}
	b, err := t.backend(ctx)
	if err != nil {
		return nil, err
	}
	env, err := b.SystemEnv(ctx, in.System)
	if err != nil {
		return nil, fmt.Errorf("system_env %s: %w", in.System, err)
	}
	return env, nil
}
