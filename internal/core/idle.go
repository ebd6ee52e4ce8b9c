package core

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

// Idle returns partitions that have the requested free capacity right now, most free
// gating units first.
func (c *Core) Idle(f IdleFilter) ([]model.ResourceRecord, error) {
	recs, _, err := c.IdleExplained(f)
	return recs, err
}

// IdleExplained is Idle with, when nothing matches, a sentence naming the filter that
// removed the last partitions: "no partition in the federation has B200 GPUs (models
// here: A100, H100)" or "all 3 H100 partitions are busy: 0 idle GPUs". The GPU model
// is read through the catalogue (model.ParseGPUModel): an unknown model is ErrInvalid
// with the known names, and GH200 matches H100-class partitions on aarch64 only.
func (c *Core) IdleExplained(f IdleFilter) ([]model.ResourceRecord, string, error) {
	if f.GPUModel != "" {
		if _, err := model.ParseGPUModel(f.GPUModel); err != nil {
			return nil, "", fmt.Errorf("%w: %w", ErrInvalid, err)
		}
	}
	snap, err := c.Federation()
	if err != nil {
		return nil, "", err
	}
	recs, why := c.idleFilter(f, snap.Records)
	sort.SliceStable(recs, func(i, j int) bool {
		if recs[i].FreeGPUs != recs[j].FreeGPUs {
			return recs[i].FreeGPUs > recs[j].FreeGPUs
		}
		return recs[i].FreeCores > recs[j].FreeCores
	})
	return recs, why, nil
}

// idleFilter applies f stage by stage; when a stage leaves nothing it returns the
// sentence that names it.
func (c *Core) idleFilter(f IdleFilter, all []model.ResourceRecord) ([]model.ResourceRecord, string) {
	recs := slices.Clone(all)
	keep := func(ok func(r *model.ResourceRecord) bool) []model.ResourceRecord {
		out := recs[:0:0]
		for i := range recs {
			if ok(&recs[i]) {
				out = append(out, recs[i])
			}
		}
		return out
	}
	if len(recs) == 0 {
		return recs, "the federation has no partitions yet; add a system (mosaic add-resource) or wait for the first probe"
	}
	if f.System != "" {
		sys, ok := c.cat.System(f.System)
		if recs = keep(func(r *model.ResourceRecord) bool { return ok && sys.Name == r.System }); len(recs) == 0 {
			return recs, fmt.Sprintf("no system %q in the federation (mosaic resources lists them)", f.System)
		}
	}
	if f.Provider != "" {
		if recs = keep(func(r *model.ResourceRecord) bool { return r.Provider == f.Provider }); len(recs) == 0 {
			return recs, fmt.Sprintf("no partition is reached through provider %q", f.Provider)
		}
	}
	what := "partitions"
	if f.GPUModel != "" {
		before := recs
		if recs = keep(func(r *model.ResourceRecord) bool {
			return r.IsGPU() && model.GPUMatches(f.GPUModel, r.GPUModel, r.GPUMemoryGB, r.Arch)
		}); len(recs) == 0 {
			spec, _ := model.ParseGPUModel(f.GPUModel)
			return recs, fmt.Sprintf("no partition in the federation has %s GPUs (models here: %s)", spec, modelsOf(before))
		}
		what = f.GPUModel + " partitions"
	}
	if f.Arch != "" {
		arch, _ := model.CanonicalArch(f.Arch)
		before := recs
		if recs = keep(func(r *model.ResourceRecord) bool { return strings.EqualFold(r.Arch, arch) }); len(recs) == 0 {
			return recs, fmt.Sprintf("none of the %s is %s (archs here: %s)", countOf(len(before), what), arch, archsOf(before))
		}
	}
	if f.GPUMemGB > 0 {
		before := recs
		if recs = keep(func(r *model.ResourceRecord) bool { return r.GPUsPerNode > 0 && r.GPUMemoryGB >= f.GPUMemGB }); len(recs) == 0 {
			most := 0
			for _, r := range before {
				most = max(most, r.GPUMemoryGB)
			}
			return recs, fmt.Sprintf("no GPU in the %s has %d GB; the most is %d GB per GPU", countOf(len(before), what), f.GPUMemGB, most)
		}
	}
	before := recs
	if recs = keep(func(r *model.ResourceRecord) bool { return r.Health.Usable() }); len(recs) == 0 {
		return recs, fmt.Sprintf("%s on systems that are down or unreachable now (mosaic status shows why)", allOf(len(before), what))
	}
	if f.MaxQueue >= 0 {
		before := recs
		if recs = keep(func(r *model.ResourceRecord) bool { return r.PendingJobs <= f.MaxQueue }); len(recs) == 0 {
			least := -1
			for _, r := range before {
				if least < 0 || r.PendingJobs < least {
					least = r.PendingJobs
				}
			}
			return recs, fmt.Sprintf("every one of the %s has more than %d pending jobs (the shortest queue has %d); raise --max-queue or drop it",
				countOf(len(before), what), f.MaxQueue, least)
		}
	}
	before = recs
	mostGPUs, mostCores := 0, 0
	for _, r := range before {
		mostGPUs, mostCores = max(mostGPUs, r.FreeGPUs), max(mostCores, r.FreeCores)
	}
	recs = keep(func(r *model.ResourceRecord) bool {
		if f.GPUs > 0 && r.FreeGPUs < f.GPUs {
			return false
		}
		if f.Cores > 0 && r.FreeCores < f.Cores {
			return false
		}
		if f.GPUs == 0 && f.Cores == 0 {
			if free, _ := r.FreeUnits(); free == 0 {
				return false
			}
		}
		return true
	})
	if len(recs) > 0 {
		return recs, ""
	}
	switch {
	case f.GPUs > 0 && mostGPUs == 0:
		return recs, fmt.Sprintf("%s busy: 0 idle GPUs; launch with Auto to queue, or try later", allOf(len(before), what))
	case f.GPUs > 0 && mostGPUs < f.GPUs:
		return recs, fmt.Sprintf("the %s %s at most %d idle GPUs in one partition; you asked for %d (try fewer GPUs, or launch with Auto to queue)",
			countOf(len(before), what), plural(len(before), "has", "have"), mostGPUs, f.GPUs)
	case f.Cores > 0 && mostCores < f.Cores:
		return recs, fmt.Sprintf("the %s %s at most %d idle cores in one partition; you asked for %d (try fewer cores, or launch with Auto to queue)",
			countOf(len(before), what), plural(len(before), "has", "have"), mostCores, f.Cores)
	}
	return recs, fmt.Sprintf("%s busy: nothing idle right now; launch with Auto to queue, or try later", allOf(len(before), what))
}

// allOf says "all 3 H100 partitions are" or "the 1 H100 partition is".
func allOf(n int, what string) string {
	if n == 1 {
		return "the " + countOf(n, what) + " is"
	}
	return "all " + countOf(n, what) + " are"
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// countOf says "3 H100 partitions" or "1 H100 partition" for what ("H100 partitions").
func countOf(n int, what string) string {
	if n == 1 {
		what = strings.TrimSuffix(what, "s")
	}
	return strconv.Itoa(n) + " " + what
}

func modelsOf(recs []model.ResourceRecord) string {
	var out []string
	for _, r := range recs {
		if r.GPUModel != "" && !slices.Contains(out, r.GPUModel) {
			out = append(out, r.GPUModel)
		}
	}
	if len(out) == 0 {
		return "none, CPU partitions only"
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}

func archsOf(recs []model.ResourceRecord) string {
	var out []string
	for _, r := range recs {
		a := r.Arch
		if a == "" {
			a = "unknown"
		}
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}
