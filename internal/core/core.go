// Package core is the one facade every surface (HTTP API, web UI, MCP, CLI through the
// API) calls. It owns the catalog, the providers, the federation collector and the store;
// surfaces never reach into those directly.
package core

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/execution"
	"github.com/mosaic-hpc/mosaic/internal/federation"
	"github.com/mosaic-hpc/mosaic/internal/metrics"
	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/provider"
	"github.com/mosaic-hpc/mosaic/internal/scheduler"
	"github.com/mosaic-hpc/mosaic/internal/scheduler/draft"
	"github.com/mosaic-hpc/mosaic/internal/scheduler/llm"
	"github.com/mosaic-hpc/mosaic/internal/site"
	"github.com/mosaic-hpc/mosaic/internal/store"
	"github.com/mosaic-hpc/mosaic/internal/waits"
)

// ErrNotFound marks lookups of unknown systems, tasks or runs.
var ErrNotFound = errors.New("not found")

// ErrInvalid marks requests the caller must change (bad envelope, infeasible pin, …).
var ErrInvalid = errors.New("invalid request")

// ErrNotReady is returned before the first probe round has finished.
var ErrNotReady = errors.New("federation not probed yet")

// ErrSiteFailed marks a failure of a site that was reached but failed the request
// (a command it could not run, a file it could not write, a permission it refused):
// the surfaces answer 502 Bad Gateway, naming the site. A site that cannot be reached
// is errs.ErrSiteDown (503) instead.
var ErrSiteFailed = errors.New("the site failed the request")

// ErrBusy: the task is busy with another operation (a slow site); try again.
var ErrBusy = execution.ErrBusy

// Options configure a Core.
type Options struct {
	Catalog   *site.Catalog
	Store     *store.Store
	Providers []provider.Provider // one per catalog system, same order
	Tick      time.Duration
	Logger    *slog.Logger
	Clock     func() time.Time
	// Getenv reads LLM settings (ANTHROPIC_API_KEY, MOSAIC_LLM_*); nil = no LLM.
	Getenv func(string) string
	// MonitorEvery is the execution monitor's interval; default = Tick.
	MonitorEvery time.Duration
	// NoReplan turns off the replanning of waiting jobs (the overrun, drift and outage
	// triggers remain): tests of those triggers use it so that a replan cannot move
	// the job first.
	NoReplan bool
	// NoLearnedWaits ranks and replans on the sites' own start estimates: no
	// correction is learned from the store's history or applied (MOSAIC_LEARNED_WAITS=off).
	NoLearnedWaits bool
}

// Core is Mosaic's service.
type Core struct {
	cat       *site.Catalog
	store     *store.Store
	collector *federation.Collector
	log       *slog.Logger
	clock     func() time.Time
	started   time.Time

	sched   *scheduler.Scheduler
	waits   *waits.Learner // per-partition correction of site start estimates (waits.go)
	drafter *draft.Drafter
	engine  *execution.Engine
	monitor time.Duration

	runOnce   sync.Once
	running   sync.WaitGroup // Run and the goroutines it started
	stopMu    sync.Mutex
	stopRun   context.CancelFunc // cancels Run's context (Close)
	ownsStore bool
	lease     store.Lease        // the store's owner lease (Open takes it, Close releases it); nil if none
	shared    *store.SharedLease // a replica's shared hold of that lease (see store.AcquireShared)
	leaseLost chan struct{}      // closed when the owner lease was lost under a running core (Deposed)
	simTmp    string             // temporary sim work directory of an in-memory store (Close removes it)
	camp      *campaignState     // this core's exchange and campaigns directory (campaigns.go)
	replica   *replica           // team-mode state (leader.go); nil in laptop mode

	metrics *metrics.Metrics // instruments fed by the hooks New wires (metrics.go)
}

// New assembles a core; call Run to start probing.
func New(opts Options) (*Core, error) {
	if opts.Catalog == nil {
		return nil, fmt.Errorf("core: no catalog")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	var sink federation.HistorySink
	if opts.Store != nil {
		sink = opts.Store
	}
	m := metrics.New()
	col, err := federation.New(opts.Providers, federation.Options{
		Tick: opts.Tick, Sink: sink, Clock: opts.Clock, Logger: opts.Logger, OnProbe: m.ObserveProbe,
	})
	if err != nil {
		return nil, err
	}
	c := &Core{cat: opts.Catalog, store: opts.Store, collector: col, log: opts.Logger, clock: opts.Clock, started: opts.Clock(), camp: &campaignState{}, metrics: m}
	var llmClient llm.Client
	if opts.Getenv != nil {
		cl, err := llm.FromEnv(opts.Getenv)
		switch {
		case err == nil:
			llmClient = cl
		case !errors.Is(err, llm.ErrNotConfigured):
			return nil, fmt.Errorf("LLM configuration: %w", err)
		}
	}
	so := scheduler.Options{Estimator: estimator{c}, Logger: opts.Logger, Now: opts.Clock, OnPlace: m.ObservePlacement}
	if !opts.NoLearnedWaits {
		c.waits = newWaitLearner()
		c.loadWaitHistory(context.Background())
		so.Waits = c.waits
	}
	if llmClient != nil {
		so.LLM = scheduler.NewLLMRanker(llmClient)
	}
	c.sched = scheduler.New(so)
	c.drafter = draft.New(llmClient)
	c.monitor = opts.MonitorEvery
	if c.monitor <= 0 {
		c.monitor = col.Tick()
	}
	if opts.Store != nil {
		c.engine = execution.New(execution.Options{Store: opts.Store, Providers: col, Placer: placer{c},
			Snapshot: col.Snapshot, Clock: opts.Clock, Logger: opts.Logger, OnStart: c.observeStart, NoReplan: opts.NoReplan,
			OnTaskEnded: func(s model.TaskState) { m.TaskEnded(string(s)) }, OnContinuation: m.Continuation})
	}
	return c, nil
}

// estimator asks a system's own scheduler when a job would start (sbatch --test-only,
// the simulator's what-if), for the heuristic ranker.
type estimator struct{ c *Core }

// EstimateStart asks the site. A simulated site reports wall-clock times, but a wait is
// a duration in the site's own time (like its walltimes and the queue model's waits):
// the answer is returned as now plus the wait in site time, so the scheduler compares
// waits in one unit.
func (e estimator) EstimateStart(ctx context.Context, system string, spec model.JobSpec) (time.Time, error) {
	p, ok := e.c.collector.Provider(system)
	if !ok {
		return time.Time{}, fmt.Errorf("unknown system %s", system)
	}
	t, err := p.EstimateStart(ctx, spec)
	if err != nil {
		return t, err
	}
	return siteTime(p, e.c.clock(), t), nil
}

// Run probes every tick and, once the first snapshot exists, recovers what a previous
// run left behind and monitors jobs, until ctx ends.
func (c *Core) Run(ctx context.Context) {
	c.runOnce.Do(func() {
		// Close waits for everything started here, so no round, recovery or probe
		// writes to the store (or the lease passes on) after it is closed.
		c.running.Add(1)
		defer c.running.Done()
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		c.stopMu.Lock()
		c.stopRun = cancel
		c.stopMu.Unlock()
		if c.replica != nil {
			c.runReplica(ctx) // the leader's work only while this replica leads
			return
		}
		c.lead(ctx)
	})
}

// lead is the work of the core that owns the store: probing, then recovery and the
// execution monitor, until ctx ends.
func (c *Core) lead(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Add(1)
	go func() { defer wg.Done(); c.collector.Run(ctx) }()
	if c.engine == nil {
		<-ctx.Done()
		return
	}
	if err := c.WaitReady(ctx); err != nil {
		return
	}
	// Recovery runs beside the monitor, so a site that does not answer at start
	// delays neither the monitor nor the other sites (both work task by task under
	// the task's lock and re-read what they act on).
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := c.engine.Recover(ctx); err != nil && ctx.Err() == nil {
			c.log.Warn("recovery after restart (will retry on the next ticks)", "err", err)
		}
	}()
	c.engine.Run(ctx, c.monitor)
}

// MonitorOnce runs one execution-monitor round now (tests, tools).
func (c *Core) MonitorOnce(ctx context.Context) error { return c.engine.Tick(ctx) }

// Recover runs crash recovery now.
func (c *Core) Recover(ctx context.Context) error { return c.engine.Recover(ctx) }

// Refresh forces one probe round now and returns its snapshot.
func (c *Core) Refresh(ctx context.Context) *model.ResourceSnapshot { return c.collector.Refresh(ctx) }

// WaitReady blocks until the first snapshot exists or ctx ends.
func (c *Core) WaitReady(ctx context.Context) error {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for c.collector.Snapshot() == nil {
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the first probe round: %w", ctx.Err())
		case <-t.C:
		}
	}
	return nil
}

// Federation returns the latest merged snapshot.
func (c *Core) Federation() (*model.ResourceSnapshot, error) {
	s := c.collector.Snapshot()
	if s == nil {
		return nil, ErrNotReady
	}
	return s, nil
}

// Subscribe delivers each new snapshot until the returned stop function is called.
func (c *Core) Subscribe() (<-chan *model.ResourceSnapshot, func()) { return c.collector.Subscribe() }

// History returns downsampled partition history from the store.
func (c *Core) History(ctx context.Context, system string, since time.Time, limit int) ([]store.HistoryPoint, error) {
	if system != "" {
		sys, ok := c.cat.System(system)
		if !ok {
			return nil, c.unknownSystem(system)
		}
		system = sys.Name
	}
	if c.store == nil {
		return nil, nil
	}
	return c.store.History(ctx, system, since, limit)
}

// ResourceDetail is one system: its health, records and how it is reached.
type ResourceDetail struct {
	System     model.SystemHealth     `json:"system"`
	Kind       string                 `json:"kind"`
	Dialect    string                 `json:"dialect"`
	Host       string                 `json:"host,omitempty"`
	Endpoint   string                 `json:"endpoint,omitempty"`
	Accounts   []string               `json:"accounts"`
	WorkDir    string                 `json:"workdir,omitempty"`
	Machine    string                 `json:"machine,omitempty"`
	Partitions []model.ResourceRecord `json:"partitions"`
}

// Resource returns one system's detail. The name may be the catalog name or machine name.
func (c *Core) Resource(name string) (*ResourceDetail, error) {
	sys, ok := c.cat.System(name)
	if !ok {
		return nil, c.unknownSystem(name)
	}
	snap, err := c.Federation()
	if err != nil {
		return nil, err
	}
	h, _ := snap.System(sys.Name)
	d := &ResourceDetail{System: h, Kind: sys.Kind, Dialect: sys.Dialect, Host: sys.Host, Endpoint: h.Endpoint,
		Accounts: sys.Accounts, WorkDir: sys.WorkDir, Machine: sys.Machine, Partitions: snap.RecordsOf(sys.Name)}
	if d.Accounts == nil {
		d.Accounts = []string{}
	}
	if d.Partitions == nil {
		d.Partitions = []model.ResourceRecord{}
	}
	return d, nil
}

func (c *Core) unknownSystem(name string) error {
	names := make([]string, 0, len(c.cat.Systems))
	for _, s := range c.cat.Systems {
		names = append(names, s.Name)
	}
	return fmt.Errorf("system %q: %w; known systems: %s", name, ErrNotFound, strings.Join(names, ", "))
}

// IdleFilter selects partitions with free capacity.
type IdleFilter struct {
	GPUs     int    // at least this many free GPUs (0 = any)
	GPUMemGB int    // at least this much memory per GPU
	Cores    int    // at least this many free cores
	Arch     string // exact arch
	GPUModel string // case-insensitive model
	MaxQueue int    // at most this many pending jobs (-1 = any)
	Provider string // sim, ssh, local, globus
	System   string
}

// About describes this core.
type About struct {
	Version   string    `json:"version"`
	Commit    string    `json:"commit,omitempty"`
	GoVersion string    `json:"go_version"`
	Catalog   string    `json:"catalog"` // file path or "embedded simulated federation"
	Systems   int       `json:"systems"`
	Tick      string    `json:"tick"`
	Store     string    `json:"store"`
	Ranker    string    `json:"ranker"`  // heuristic, or llm:<provider/model> with heuristic fallback
	Drafter   string    `json:"drafter"` // envelope drafter: heuristic or llm:<provider/model>
	Rules     []string  `json:"rules"`   // the rule chain in order
	Started   time.Time `json:"started"`
	Sim       *SimClock `json:"sim,omitempty"` // the simulated systems' clock; nil when none is simulated
}

// Version is set at build time with -ldflags "-X github.com/mosaic-hpc/mosaic/internal/core.Version=…"
// (scripts/build.sh does, from `git describe`). Without it, init takes the module
// version Go stamps into the binary (`go install …@v1.2.3`, or a VCS pseudo-version
// with -buildvcs), and "dev" only when there is none.
var Version = "dev"

func init() { Version = resolveVersion(Version, debug.ReadBuildInfo) }

// resolveVersion is the version to report: the one set at link time, else the main
// module's version from the build info, else "dev".
func resolveVersion(linked string, info func() (*debug.BuildInfo, bool)) string {
	if linked != "" && linked != "dev" {
		return linked
	}
	if bi, ok := info(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// About reports version and configuration.
func (c *Core) About() About {
	a := About{Version: Version, Systems: len(c.cat.Systems), Tick: c.collector.Tick().String(), Ranker: c.sched.ActiveRanker(),
		Drafter: c.drafter.Active(), Rules: c.sched.Rules(), Started: c.started, Sim: c.SimClock()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		a.GoVersion = bi.GoVersion
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				a.Commit = s.Value
			}
		}
	}
	a.Catalog = c.cat.Path
	if a.Catalog == "" {
		a.Catalog = "embedded simulated federation"
	}
	if c.store != nil {
		a.Store = c.store.Path()
	}
	return a
}

// Catalog returns the site catalog (read-only).
func (c *Core) Catalog() *site.Catalog { return c.cat }

// Close releases providers that hold processes or connections.
// closeWait bounds how long Close waits for Run's goroutines.
const closeWait = 15 * time.Second

func (c *Core) Close() error {
	// Let Run's goroutines finish (their context is cancelled by now; every site call
	// honours it), but never hang a shutdown on a site that ignores it.
	c.stopMu.Lock()
	if c.stopRun != nil {
		c.stopRun()
	}
	c.stopMu.Unlock()
	done := make(chan struct{})
	go func() { c.running.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(closeWait):
		c.log.Warn("shutdown: monitor rounds still running after the grace period; closing anyway", "grace", closeWait)
	}
	var errs []error
	for _, p := range c.collector.Providers() {
		if cl, ok := p.(provider.Closer); ok {
			errs = append(errs, cl.Close())
		}
	}
	if c.ownsStore && c.store != nil {
		errs = append(errs, c.store.Close())
	}
	if c.lease != nil {
		errs = append(errs, c.lease.Release())
	}
	errs = append(errs, c.shared.Release())
	if c.simTmp != "" {
		errs = append(errs, os.RemoveAll(c.simTmp))
	}
	return errors.Join(errs...)
}
