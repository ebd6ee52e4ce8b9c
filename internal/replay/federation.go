package replay

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/sim"
	"github.com/mosaic-hpc/mosaic/internal/site"
)

// TracesEnv names a directory searched for trace files that are not found where the
// federation file (or the command line) says. CI sets nothing: the example
// federations point at ../../../shared/traces relative to themselves.
const TracesEnv = "MOSAIC_TRACES"

// Epoch is simulated time zero of every replay (any fixed instant would do; a fixed
// one keeps results independent of when the replay runs).
var Epoch = time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)

// Federation is a set of simulated systems read from a site catalog (kind sim only).
type Federation struct {
	Path    string
	Seed    int64 // the catalog's sim.seed (default 1); replays may override it
	Systems []site.System
	// Configure, when set, adjusts each partition's model configuration before it is
	// built (tests use it to remove the background load).
	Configure func(system string, cfg *sim.Config)
}

// LoadFederation reads a site catalog (the sites.yaml format; see internal/site) as a
// replay federation. Every system must be kind sim. Relative trace paths are resolved
// against the file's directory; a trace that is not there is looked up by file name
// in $MOSAIC_TRACES.
func LoadFederation(path string) (*Federation, error) {
	cat, err := site.Load(path)
	if err != nil {
		return nil, fmt.Errorf("federation %s: %w", path, err)
	}
	return FromCatalog(cat)
}

// FromCatalog turns a loaded catalog into a federation.
func FromCatalog(cat *site.Catalog) (*Federation, error) {
	f := &Federation{Path: cat.Path, Seed: cat.Sim.Seed}
	if f.Seed == 0 {
		f.Seed = 1
	}
	for _, s := range cat.Systems {
		if s.Kind != site.KindSim {
			return nil, fmt.Errorf("federation %s: system %s is kind %q; a replay federation needs kind: sim for every system",
				cat.Path, s.Name, s.Kind)
		}
		s = cloneSystem(s)
		if sc := s.SimConfig; sc != nil && sc.Load.Trace != "" {
			p, err := ResolveTrace(sc.Load.Trace)
			if err != nil {
				return nil, fmt.Errorf("federation %s: system %s: %w", cat.Path, s.Name, err)
			}
			sc.Load.Trace = p
		}
		f.Systems = append(f.Systems, s)
	}
	if len(f.Systems) == 0 {
		return nil, fmt.Errorf("federation %s: no systems", cat.Path)
	}
	return f, nil
}

func cloneSystem(s site.System) site.System {
	s.Partitions = append([]site.Partition(nil), s.Partitions...)
	if s.SimConfig != nil {
		sc := *s.SimConfig
		s.SimConfig = &sc
	}
	return s
}

// ResolveTrace returns path if it exists, else $MOSAIC_TRACES/<file name> if that
// exists, else an error saying where it looked.
func ResolveTrace(path string) (string, error) {
	if _, err := os.Stat(path); err == nil {
		return path, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("trace %s: %w", path, err)
	}
	if dir := os.Getenv(TracesEnv); dir != "" {
		alt := filepath.Join(dir, filepath.Base(path))
		if _, err := os.Stat(alt); err == nil {
			return alt, nil
		}
		return "", fmt.Errorf("trace %s not found, nor %s ($%s); download the SWF log or fix the path", path, alt, TracesEnv)
	}
	return "", fmt.Errorf("trace %s not found; fix the path or set $%s to the directory holding it", path, TracesEnv)
}

// System returns the named system (exact name or the part before '@', any case).
func (f *Federation) System(name string) (*site.System, bool) {
	for i := range f.Systems {
		if systemMatches(name, f.Systems[i].Name) {
			return &f.Systems[i], true
		}
	}
	return nil, false
}

// partConfig is the model configuration of one partition of sys: a one-partition
// sim.Config that keeps the system's name (so the partition draws the same background
// stream as inside a whole-system model), its outages and its node failures on this
// partition.
func partConfig(sys site.System, p site.Partition) (sim.Config, error) {
	one := sys
	one.Partitions = []site.Partition{p}
	if sys.SimConfig != nil {
		sc := *sys.SimConfig
		sc.Faults.NodeFailures = nil
		for _, nf := range sys.SimConfig.Faults.NodeFailures {
			if nf.Partition == p.Name {
				sc.Faults.NodeFailures = append(sc.Faults.NodeFailures, nf)
			}
		}
		one.SimConfig = &sc
	}
	cfg, err := sim.ConfigFromSite(one, Epoch)
	if err != nil {
		return sim.Config{}, err
	}
	return cfg, nil
}
