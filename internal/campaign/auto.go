package campaign

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/site"
)

// DefaultAutoWalltime is the walltime an auto-placed slice asks for when none of its
// agents' envelopes names one.
const DefaultAutoWalltime = model.Duration(time.Hour)

// AutoPlacement is where the meta-scheduler put an auto;agents=… slice.
type AutoPlacement struct {
	System, Partition, Account string
	Walltime                   model.Duration
	Rationale                  string
}

// Placer places one slice's batch job; the CLI implements it with the running core's
// scheduler (a dry-run placement), so auto sites get the same rule chain and ranking as
// tasks.
type Placer func(ctx context.Context, name string, env model.Envelope) (AutoPlacement, error)

// SliceEnvelope is the envelope of one batch job that runs the given agents together
// on one node: CPU cores, GPUs and memory add up over the agents' own envelopes (an
// agent without one counts as 1 core), walltime is the longest asked for (default
// fallback), and the nodes are 1.
func SliceEnvelope(spec *Spec, agents []string, fallback model.Duration) model.Envelope {
	env := model.Envelope{Nodes: model.IntRange{Min: 1, Max: 1}, Objective: model.ObjEarliestStart, Source: model.SourceUser}
	wall := model.Duration(0)
	for _, n := range agents {
		a, ok := spec.Agent(n)
		if !ok || a.Envelope == nil {
			env.CPUCores.Min++
			env.CPUCores.Max++
			continue
		}
		e := *a.Envelope
		e.Normalize()
		env.CPUCores.Min += max(e.CPUCores.Min, 1)
		env.CPUCores.Max += max(e.CPUCores.Max, e.CPUCores.Min, 1)
		env.GPUs.Min += e.GPUs.Min
		env.GPUs.Max += max(e.GPUs.Max, e.GPUs.Min)
		env.MemoryGB.Min += e.MemoryGB.Min
		env.MemoryGB.Max += max(e.MemoryGB.Max, e.MemoryGB.Min)
		wall = max(wall, e.Walltime.Min)
		if len(e.Constraints.GPUModels) > 0 {
			env.Constraints.GPUModels = append(env.Constraints.GPUModels, e.Constraints.GPUModels...)
		}
		env.Constraints.MinGPUMemoryGB = max(env.Constraints.MinGPUMemoryGB, e.Constraints.MinGPUMemoryGB)
	}
	if wall == 0 {
		wall = fallback
	}
	env.Walltime = model.DurationRange{Min: wall, Max: wall}
	return env
}

// ResolveAuto turns every auto;agents=… site into a submit-mode site on the system
// the placer chose. A launch runs one slice per site, so systems named by other --site
// specs (and earlier auto slices) are avoided; the chosen system must be in the
// catalog, which is how the launcher reaches it.
func ResolveAuto(ctx context.Context, spec *Spec, sites []SiteSpec, cat *site.Catalog, place Placer, fallback model.Duration) ([]SiteSpec, []AutoPlacement, error) {
	var out []SiteSpec
	var placed []AutoPlacement
	var errs []error
	taken := []string{}
	for _, sp := range sites {
		if sp.Mode != ModeAuto && sp.Name != "" {
			taken = append(taken, sp.Name)
		}
	}
	for i, sp := range sites {
		if sp.Mode != ModeAuto {
			out = append(out, sp)
			continue
		}
		if place == nil {
			errs = append(errs, fmt.Errorf("--site %s: auto placement needs a running core (`mosaic serve --sites FILE`)", sp))
			continue
		}
		env := SliceEnvelope(spec, sp.Agents, fallback)
		env.Constraints.AvoidSystems = append(env.Constraints.AvoidSystems, taken...)
		p, err := place(ctx, fmt.Sprintf("%s-auto%d", spec.Name, i+1), env)
		if err != nil {
			errs = append(errs, fmt.Errorf("--site %s: the meta-scheduler found no place: %w", sp, err))
			continue
		}
		if cat != nil {
			if _, ok := cat.System(p.System); !ok {
				errs = append(errs, fmt.Errorf("--site %s: the core chose %s, which is not in this launch's sites catalog; use the same sites file for serve and launch", sp, p.System))
				continue
			}
		}
		sp.Mode, sp.Name, sp.Queue, sp.Walltime = ModeSubmit, p.System, p.Partition, p.Walltime
		if sp.Account == "" {
			sp.Account = p.Account
		}
		sp.Nodes = 1
		taken = append(taken, p.System)
		out = append(out, sp)
		placed = append(placed, p)
	}
	return out, placed, errors.Join(errs...)
}
