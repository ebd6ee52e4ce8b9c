package core

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/config"
	"github.com/mosaic-hpc/mosaic/internal/provider"
	"github.com/mosaic-hpc/mosaic/internal/provider/hpc"
	"github.com/mosaic-hpc/mosaic/internal/provider/simprov"
	"github.com/mosaic-hpc/mosaic/internal/site"
	"github.com/mosaic-hpc/mosaic/internal/store"
)

// Default probe intervals: the simulator is cheap to ask; real login nodes are not.
const (
	DefaultSimTick  = 5 * time.Second
	DefaultLiveTick = 60 * time.Second
)

// OpenOptions say how to assemble a core from configuration.
type OpenOptions struct {
	Config *config.Config
	Logger *slog.Logger
	// Getenv reads LLM settings; nil = os.Getenv.
	Getenv func(string) string
	// FreshStore moves a database file that fails the integrity check aside
	// (<path>.bad-<time>) and starts an empty store (mosaic serve --fresh).
	FreshStore bool
}

// Open loads the catalog (the sites file, or the embedded simulated federation), opens
// the store, builds one provider per system and returns a core ready to Run.
func Open(ctx context.Context, o OpenOptions) (*Core, error) {
	cfg := o.Config
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var cat *site.Catalog
	var err error
	if cfg.SitesFile != "" {
		cat, err = site.Load(cfg.SitesFile)
		if err != nil {
			return nil, err
		}
	} else {
		cat = site.Default()
	}
	if cfg.SimSpeed > 0 {
		cat.Sim.Speed = cfg.SimSpeed
	}
	if cat.Sim.WorkDir == "" {
		cat.Sim.WorkDir = filepath.Join(cfg.StateDir, "sim")
	}
	provs, err := buildProviders(cat, log)
	if err != nil {
		return nil, err
	}
	closeAll := func() {
		for _, p := range provs {
			if c, ok := p.(provider.Closer); ok {
				c.Close()
			}
		}
	}
	var sopts []store.Option
	if o.FreshStore {
		sopts = append(sopts, store.Fresh())
	}
	st, err := store.Open(ctx, cfg.DBPath, sopts...)
	if err != nil {
		closeAll()
		return nil, fmt.Errorf("%w (set MOSAIC_DB to use another file)", err)
	}
	if m := st.MovedAside(); m != "" {
		log.Warn("the store failed its integrity check; it was moved aside and an empty store started", "path", cfg.DBPath, "kept_as", m)
	}
	tick := cfg.Tick
	if tick == 0 {
		tick = DefaultLiveTick
		if allSim(cat) {
			tick = DefaultSimTick
		}
	}
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	c, err := New(Options{Catalog: cat, Store: st, Providers: provs, Tick: tick, Logger: log, Getenv: getenv})
	if err != nil {
		closeAll()
		st.Close()
		return nil, err
	}
	c.ownsStore = true
	return c, nil
}

func allSim(cat *site.Catalog) bool {
	for _, s := range cat.Systems {
		if s.Kind != site.KindSim {
			return false
		}
	}
	return true
}

func buildProviders(cat *site.Catalog, log *slog.Logger) ([]provider.Provider, error) {
	var out []provider.Provider
	var errs []error
	for _, sys := range cat.Systems {
		switch sys.Kind {
		case site.KindSim:
			p, err := simprov.New(sys, cat.Sim, simprov.Options{Logger: log.With("system", sys.Name)})
			if err != nil {
				errs = append(errs, fmt.Errorf("system %s: %w", sys.Name, err))
				continue
			}
			p.Start() // advance simulated time in the background so jobs start promptly
			out = append(out, p)
		case site.KindSSH, site.KindLocal, site.KindGlobus:
			p, err := hpc.New(sys, hpc.WithLogger(log.With("system", sys.Name)))
			if err != nil {
				errs = append(errs, err)
				continue
			}
			out = append(out, p)
		default:
			errs = append(errs, fmt.Errorf("system %s: provider kind %q is not available in this build yet", sys.Name, sys.Kind))
		}
	}
	if len(errs) > 0 {
		for _, p := range out {
			if c, ok := p.(provider.Closer); ok {
				c.Close()
			}
		}
		return nil, errors.Join(errs...)
	}
	return out, nil
}
