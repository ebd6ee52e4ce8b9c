package core

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/config"
	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/provider"
	"github.com/mosaic-hpc/mosaic/internal/provider/hpc"
	"github.com/mosaic-hpc/mosaic/internal/provider/simprov"
	"github.com/mosaic-hpc/mosaic/internal/site"
	"github.com/mosaic-hpc/mosaic/internal/store"
	"github.com/mosaic-hpc/mosaic/internal/transport/connect"
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
	// ListenAddr is the API's address, recorded in the store's lease so that a second
	// core on the same store can say who owns it ("" when there is no API).
	ListenAddr string
	// Globus is the core's Globus Compute client, resolver and breakers; nil builds
	// them with NewGlobus(Getenv). `mosaic serve` builds them itself so that its web
	// sign-in shares the resolver.
	Globus *Globus
	// MonitorEvery is the execution monitor's interval; 0 = the probe tick. A campaign
	// launcher follows its jobs every few seconds without probing every site as often.
	MonitorEvery time.Duration
	// Replica joins the store's replica set (team mode, docs/TEAM.md) instead of
	// taking the store exclusively: the core competes for the leader lease and acts
	// only while it holds it. Advertise is the URL followers forward to while this
	// replica leads (default http://ListenAddr).
	Replica   bool
	Advertise string
}

// Open loads the catalog (the sites file, or the embedded simulated federation), takes
// the store's lease, opens the store, builds one provider per system and returns a
// core ready to Run. A store owned by another live core is refused with an error
// wrapping store.ErrLeaseHeld that names the owner; Close releases the lease.
func Open(ctx context.Context, o OpenOptions) (*Core, error) {
	cfg := o.Config
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	// The lease comes first: the simulated providers adopt or kill the job processes a
	// previous core left behind, and the store's --fresh may move the file aside;
	// neither may happen under a core that is still running.
	var lease store.Lease
	var shared *store.SharedLease
	var err error
	if !o.Replica { // replicas share the store; the leader lease decides who acts
		lease, err = acquireLease(ctx, cfg.DBPath, o.ListenAddr)
		if err != nil {
			if errors.Is(err, store.ErrLeaseHeld) {
				if rerr := replicasRun(ctx, cfg.DBPath); rerr != nil {
					return nil, rerr
				}
				return nil, fmt.Errorf("%w (or team-mode replicas run on this store: start this core with --replica to join them, docs/TEAM.md)", err)
			}
			return nil, err
		}
	} else {
		// A replica never runs beside a core that owns the store alone: replicas hold
		// the owner lock shared for their lifetime, such a core needs it exclusively,
		// so whichever starts second is refused (no window where both act).
		shared, err = acquireShared(ctx, cfg.DBPath, o.ListenAddr)
		if err != nil {
			return nil, fmt.Errorf("%w; a replica (--replica) cannot join a store that a single core owns: stop that core, then start every core on this store with --replica", err)
		}
	}
	ok := false
	defer func() {
		if !ok && lease != nil {
			_ = lease.Release()
		}
		if !ok {
			_ = shared.Release()
		}
	}()
	// The store opens (and is checked) before any provider starts: simulated providers
	// re-adopt the previous run's jobs when they start, and a store that is then
	// refused must not have them killed on the way out.
	var sopts []store.Option
	pg := store.IsPostgres(cfg.DBPath)
	switch {
	case o.FreshStore && pg:
		log.Warn("--fresh does not apply to a PostgreSQL store: it moves a damaged SQLite file aside, and a PostgreSQL database is never moved or emptied (restore it from a backup instead)",
			"store", store.RedactDSN(cfg.DBPath))
	case o.FreshStore:
		sopts = append(sopts, store.Fresh())
	}
	st, err := store.Open(ctx, cfg.DBPath, sopts...)
	if err != nil {
		if pg {
			return nil, err // its error says what to check in MOSAIC_DB
		}
		return nil, fmt.Errorf("%w (set MOSAIC_DB to use another file)", err)
	}
	defer func() {
		if !ok {
			st.Close()
		}
	}()
	if !o.Replica {
		if err := replicasLead(ctx, st, cfg.DBPath); err != nil {
			return nil, err
		}
	}
	// The laptop token's implicit admin is a user like the others (it owns the tasks
	// stored before users existed, and shows in `mosaic users list`).
	if err := st.EnsureUser(ctx, model.LocalUser, true); err != nil {
		return nil, err
	}
	if m := st.MovedAside(); m != "" {
		log.Warn("the store failed its integrity check; it was moved aside and an empty store started", "path", cfg.DBPath, "kept_as", m)
	}
	var cat *site.Catalog
	var simTmp string // a temporary sim work directory Close removes
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
		dir, tmp, err := simWorkDir(cfg)
		if err != nil {
			return nil, err
		}
		cat.Sim.WorkDir = dir
		if tmp {
			simTmp = dir
			defer func() {
				if !ok {
					os.RemoveAll(dir)
				}
			}()
		}
	}
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	g := o.Globus
	if g == nil {
		g = NewGlobus(getenv)
	}
	provs, err := buildProvidersWith(cat, log, ownPaths(cfg, cat), g, st, o.Replica)
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
	tick := cfg.Tick
	if tick == 0 {
		tick = DefaultLiveTick
		if allSim(cat) {
			tick = DefaultSimTick
		}
	}
	c, err := New(Options{Catalog: cat, Store: st, Providers: provs, Tick: tick, MonitorEvery: o.MonitorEvery, Logger: log, Getenv: getenv,
		NoLearnedWaits: cfg.NoLearnedWaits})
	if err != nil {
		closeAll()
		return nil, err
	}
	c.ownsStore = true
	c.lease, c.shared = lease, shared
	if o.Replica {
		adv := o.Advertise
		if adv == "" && o.ListenAddr != "" {
			adv = "http://" + o.ListenAddr
		}
		if err := c.enableReplica(adv); err != nil {
			closeAll()
			return nil, err
		}
	}
	c.simTmp = simTmp
	if lease != nil {
		lock := store.LockPath(cfg.DBPath)
		if pg {
			lock = "PostgreSQL advisory lock"
		}
		log.Debug("store lease taken", "lock", lock, "generation", lease.Owner().Generation)
		every := leaseCheckEvery
		if pg {
			// A PostgreSQL session ends on a server restart or a network cut, and the
			// lock with it: check it often (one cheap query), so another core that
			// takes the store meanwhile meets this one stopped within seconds.
			every = pgLeaseCheckEvery
		}
		c.leaseLost = make(chan struct{})
		go watchLease(ctx, lease, log, every, func() { close(c.leaseLost) })
	}
	ok = true
	return c, nil
}

// simWorkDir is where simulated jobs run: beside the store, so two cores on two stores
// (the lease's advice to a second core) never share simulated jobs. The default store
// keeps the historical <state>/sim; a PostgreSQL store's is <state>/sim-pg-<hash of
// host:port/database>. An in-memory store gets a private temporary
// directory (tmp is true; Close removes it), never a ":memory:.sim" in the working
// directory.
func simWorkDir(cfg *config.Config) (dir string, tmp bool, err error) {
	if store.IsPostgres(cfg.DBPath) {
		// A database on a server has no directory beside it: one in the state directory
		// (this machine's) named by a hash of the server and database — never <state>/sim,
		// which the default SQLite store's core uses, and never a path made of the URL,
		// which may hold a password.
		where, err := store.PostgresWhere(cfg.DBPath)
		if err != nil {
			return "", false, err
		}
		sum := sha256.Sum256([]byte(where))
		return filepath.Join(cfg.StateDir, "sim-pg-"+hex.EncodeToString(sum[:6])), false, nil
	}
	if cfg.DBPath == "" || cfg.DBPath == ":memory:" {
		d, err := os.MkdirTemp("", "mosaic-sim-")
		if err != nil {
			return "", false, fmt.Errorf("simulated sites need a work directory: %w", err)
		}
		return d, true, nil
	}
	if filepath.Clean(cfg.DBPath) == filepath.Join(cfg.StateDir, "mosaic.db") {
		return filepath.Join(cfg.StateDir, "sim"), false, nil
	}
	return filepath.Clean(cfg.DBPath) + ".sim", false, nil
}

// leaseCheckEvery is how often a running core confirms it still owns its store
// (a lock file); pgLeaseCheckEvery for a PostgreSQL advisory lock.
var (
	leaseCheckEvery   = 30 * time.Second
	pgLeaseCheckEvery = 5 * time.Second
)

// watchLease renews the lease until ctx ends or the lease is released. When it was
// lost (the lock file removed or replaced under a running core, the PostgreSQL session
// holding the lock ended), it says so loudly and calls lost: the core is then Deposed,
// and `mosaic serve` exits rather than act on a store another core may own.
func watchLease(ctx context.Context, l store.Lease, log *slog.Logger, every time.Duration, lost func()) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := l.Renew(ctx); err != nil {
				if ctx.Err() == nil && !errors.Is(err, store.ErrLeaseReleased) {
					log.Error("this core no longer owns its store; it stops, so that two cores never act on one store: start it again", "err", err)
					lost()
				}
				return
			}
		}
	}
}

// acquireLease takes the lease of the store at dbPath (none for ":memory:"): a lock
// file for SQLite, an advisory lock for PostgreSQL (store.NewLeaser).
func acquireLease(ctx context.Context, dbPath, addr string) (store.Lease, error) {
	me, err := leaseOwner(dbPath, addr)
	if me == nil || err != nil {
		return nil, err
	}
	return store.NewLeaser(dbPath).Acquire(ctx, *me)
}

// replicasLead refuses a single core on a store whose leader lease is live.
func replicasLead(ctx context.Context, st *store.Store, db string) error {
	if ls, err := st.Leader(ctx, store.LeaderName); err == nil && ls.Holder != "" && time.Now().Before(ls.ExpiresAt) {
		return fmt.Errorf("store %s is run by team-mode replicas (leader %s, lease token %d): a core that owned it alone would run their jobs a second time; "+
			"start this one with --replica to join them (docs/TEAM.md), or give it another store with MOSAIC_DB: %w", store.RedactDSN(db), ls.Addr, ls.Token, store.ErrLeaseHeld)
	}
	return nil
}

// replicasRun is replicasLead for a single core refused the owner lock: it names the
// replicas' leader when that is why.
func replicasRun(ctx context.Context, db string) error {
	st, err := store.Open(ctx, db)
	if err != nil {
		return nil
	}
	defer st.Close()
	return replicasLead(ctx, st, db)
}

// acquireShared is acquireLease for a team-mode replica: the owner lock, shared.
func acquireShared(ctx context.Context, dbPath, addr string) (*store.SharedLease, error) {
	me, err := leaseOwner(dbPath, addr)
	if me == nil || err != nil {
		return nil, err
	}
	return store.AcquireShared(ctx, dbPath, *me)
}

// leaseOwner is this process as the holder of store dbPath's owner lock, after
// making the SQLite file's directory; nil for a memory store (no lock).
func leaseOwner(dbPath, addr string) (*store.Owner, error) {
	if dbPath == "" || dbPath == ":memory:" {
		return nil, nil
	}
	if !store.IsPostgres(dbPath) {
		if err := os.MkdirAll(filepath.Dir(dbPath), 0o700); err != nil {
			return nil, fmt.Errorf("store %s: create its directory: %w (set MOSAIC_DB to use another file)", dbPath, err)
		}
	}
	host, _ := os.Hostname()
	return &store.Owner{PID: os.Getpid(), Addr: addr, Host: host, Started: time.Now().UTC()}, nil
}

func allSim(cat *site.Catalog) bool {
	for _, s := range cat.Systems {
		if s.Kind != site.KindSim {
			return false
		}
	}
	return true
}

// ownPaths are the core's own files and directories, from its resolved configuration
// (not the process environment, which need not hold settings loaded from env files):
// config and state directories, token, store (with its journals), the env files read,
// the sites file, and every system's ssh identity and config files. Local sites'
// look-around never reads them. Relative names are made absolute (they are relative
// to the core's working directory, not the workdir the command runs in); each is also
// given with its symlinks resolved, since the site-side check compares resolved paths.
func ownPaths(cfg *config.Config, cat *site.Catalog) []string {
	home, _ := os.UserHomeDir()
	var names []string
	names = append(names, cfg.ConfigDir, cfg.StateDir, cfg.TokenPath, cfg.SitesFile)
	if cfg.DBPath != "" && cfg.DBPath != ":memory:" && !store.IsPostgres(cfg.DBPath) {
		names = append(names, cfg.DBPath, cfg.DBPath+"-wal", cfg.DBPath+"-shm", cfg.DBPath+"-journal")
	}
	names = append(names, cfg.EnvFiles...)
	for _, s := range cat.Systems {
		if s.SSH != nil {
			names = append(names, s.SSH.IdentityFile, s.SSH.ConfigFile)
		}
		for _, u := range s.Users {
			names = append(names, u.Identity) // per-user ssh keys (team mode)
		}
	}
	var out []string
	for _, n := range names {
		switch {
		case n == "" || n == "none":
			continue
		case n == "~" || strings.HasPrefix(n, "~/"):
			if home == "" {
				continue
			}
			n = filepath.Join(home, n[1:])
		}
		abs, err := filepath.Abs(n)
		if err != nil {
			continue
		}
		out = append(out, abs)
		if r, err := filepath.EvalSymlinks(abs); err == nil && r != abs {
			out = append(out, r)
		}
	}
	return out
}

// buildProviders builds providers for a one-off check without a core (preflight,
// smoke): Globus settings from the process environment.
func buildProviders(cat *site.Catalog, log *slog.Logger, protected []string) ([]provider.Provider, error) {
	return buildProvidersWith(cat, log, protected, NewGlobus(nil), nil, false)
}

// buildProvidersWith builds one provider per system; kind globus ones share g. With
// owners, a system's job calls run under their owners' site identities (its users:).
// A standby (team-mode) core's simulated sites leave their work directories to the
// leader until it takes over (simprov.Options.Standby).
func buildProvidersWith(cat *site.Catalog, log *slog.Logger, protected []string, g *Globus, owners hpc.OwnerLookup, standby bool) ([]provider.Provider, error) {
	var out []provider.Provider
	var errs []error
	for _, sys := range cat.Systems {
		switch {
		case sys.Kind == site.KindSim:
			p, err := simprov.New(sys, cat.Sim, simprov.Options{Logger: log, Standby: standby})
			if err != nil {
				errs = append(errs, fmt.Errorf("system %s: %w", sys.Name, err))
				continue
			}
			p.Start() // advance simulated time in the background so jobs start promptly
			out = append(out, p)
		case connect.Supports(sys.Kind): // a batch system behind a transport
			opts := []hpc.Option{hpc.WithLogger(log), hpc.WithProtected(protected...),
				hpc.WithGlobusClient(g.Client), hpc.WithGlobusBreakers(g.Breakers)}
			if owners != nil {
				opts = append(opts, hpc.WithOwners(owners))
			}
			p, err := hpc.New(sys, opts...)
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
