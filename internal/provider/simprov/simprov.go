// Package simprov is the Provider of a simulated system: a sim.Cluster (batch-queue
// model with background load and faults) whose clock runs Speed times faster than the
// wall clock, and whose user jobs really run as local processes when the model starts
// them.
//
// Times: the model's clock is start + (real elapsed × speed). By default every time
// the provider reports (record timestamps, job submit/start/end, start estimates) is
// mapped back to the wall clock, so it can be compared with time.Now; set
// Options.SimTimestamps to report simulated times instead. Durations that come from
// the catalog or the spec (walltime caps, a job's walltime, Elapsed) are simulated:
// a 1h walltime at speed 60 is killed after one real minute.
//
// Use:
//
//	p, err := simprov.New(sys, catalog.Sim, simprov.Options{Logger: log})
//	p.Start()       // advance the model every 200 ms so jobs start and end promptly
//	defer p.Close() // stops the goroutine and kills job processes
//
// Each started job runs `/bin/sh <workdir>/<system>/<jobid>/job.sh` (a script with
// its own #! line other than /bin/sh is executed directly), under a small /bin/sh
// wrapper that records its pid and the job's exit status, in its own process group,
// with stdout and stderr in files next to it, in a clean environment: PATH, HOME,
// USER, LOGNAME, LANG, LC_ALL, TZ and TMPDIR from the core's (none of its keys),
// MOSAIC_JOB_ID, MOSAIC_SYSTEM, MOSAIC_PARTITION, MOSAIC_NODES, MOSAIC_GPUS,
// MOSAIC_CPUS_PER_NODE, MOSAIC_JOB_NAME, MOSAIC_WORKDIR and CUDA_VISIBLE_DEVICES,
// then the spec's Env. Its exit code
// decides COMPLETED (0) or FAILED; the model's walltime, node failures, injected
// failures and cancels kill the whole group (TIMEOUT, NODE_FAIL, CANCELLED).
//
// Restarts: every job has a record in its directory (mosaic-job.json), written before
// its id is returned and right after its process starts. A core killed with SIGKILL
// leaves its jobs running; the next provider on the same work directory re-adopts
// them (follows them to the end, enforces their walltime), queues never-started ones
// again under the same ids, and reports those that ended meanwhile, so nothing runs
// twice and nothing looks running unwatched. See state.go. One provider owns a
// system's work directory at a time (flock on .mosaic-sim.lock); another one started
// on it leaves the earlier jobs alone.
package simprov

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/provider"
	"github.com/mosaic-hpc/mosaic/internal/sim"
	"github.com/mosaic-hpc/mosaic/internal/site"
)

// Defaults.
const (
	DefaultSpeed   = 60.0
	DefaultTick    = 200 * time.Millisecond
	DefaultLogTail = 16 << 10
	maxLogTail     = 1 << 20
)

// Options tune a simulated provider.
type Options struct {
	// Clock is the wall clock; default time.Now. Tests inject a fake one.
	Clock func() time.Time
	// Speed is simulated seconds per real second; 0 = the catalog's sim.speed, else 60.
	Speed float64
	// WorkDir is the base directory of job work directories
	// (<WorkDir>/<system>/<jobid>/); "" = the catalog's sim.workdir, else
	// $XDG_STATE_HOME/mosaic/sim (~/.local/state/mosaic/sim).
	WorkDir string
	// Logger; default slog.Default().
	Logger *slog.Logger
	// Tick is how often the background goroutine (Start) advances the model; default 200ms.
	Tick time.Duration
	// SimTimestamps reports simulated times instead of wall-clock times.
	SimTimestamps bool
	// Configure, when set, may adjust the model's configuration before it is built
	// (tests use it to remove background load).
	Configure func(*sim.Config)
	// Standby leaves the work directory (and the jobs in it) alone at start: a
	// team-mode follower's provider, which TakeOver makes the owner when its replica
	// becomes the leader. Without it, a follower started while no leader holds the
	// directory would adopt the jobs itself and hide them from the leader.
	Standby bool
}

// Provider is one simulated system. It is safe for concurrent use.
type Provider struct {
	sys       site.System
	parts     map[string]site.Partition
	speed     float64
	clock     func() time.Time
	realStart time.Time
	simStart  time.Time
	workdir   string
	log       *slog.Logger
	tick      time.Duration
	simTimes  bool

	mu     sync.Mutex
	c      *sim.Cluster
	specs  map[int64]*model.JobSpec // by model id
	procs  map[int64]*proc          // by model id
	closed bool
	// recs are the durable job records (state.go), by the id callers know; adopted
	// the jobs of an earlier run still running, followed without the model.
	recs    map[int64]*jobRecord
	adopted map[int64]*jobRecord
	// alias maps the id of a job queued again after a restart to its id in this
	// run's model, extOf the reverse; ids that are not there are the same in both.
	alias map[int64]int64
	extOf map[int64]int64
	lock  *os.File // the work directory's lock; nil if another provider holds it
	// configure and seed rebuild the model when a replica takes over (TakeOver).
	configure func(*sim.Config)
	seed      int64

	startOnce sync.Once
	stop      chan struct{}
	loopDone  chan struct{}
	waiters   sync.WaitGroup
}

var (
	_ provider.Provider  = (*Provider)(nil)
	_ provider.TagFinder = (*Provider)(nil)
	_ provider.Closer    = (*Provider)(nil)
)

// New builds the simulated system sys (kind sim) from the catalog. The model starts
// at the current clock reading with its background load already warmed up. Call
// Start to advance it in the background and Close to stop it and kill its processes.
func New(sys site.System, g site.SimGlobal, opts Options) (*Provider, error) {
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	speed := opts.Speed
	if speed <= 0 {
		speed = g.Speed
	}
	if speed <= 0 {
		speed = DefaultSpeed
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Tick <= 0 {
		opts.Tick = DefaultTick
	}
	wd := opts.WorkDir
	if wd == "" {
		wd = g.WorkDir
	}
	if wd == "" {
		base := os.Getenv("XDG_STATE_HOME")
		if base == "" {
			home, err := os.UserHomeDir()
			if err != nil {
				return nil, fmt.Errorf("sim %s: no work directory: set sim.workdir in the catalog (%w)", sys.Name, err)
			}
			base = filepath.Join(home, ".local", "state")
		}
		wd = filepath.Join(base, "mosaic", "sim")
	}
	if abs, err := filepath.Abs(wd); err == nil {
		wd = abs // the job's directory is matched in its command line after a restart
	}
	now := opts.Clock()
	cfg, err := sim.ConfigFromSite(sys, now)
	if err != nil {
		return nil, err
	}
	p := &Provider{
		sys: sys, parts: map[string]site.Partition{}, speed: speed, clock: opts.Clock,
		realStart: now, simStart: now, workdir: filepath.Join(wd, safeName(sys.Name)),
		log: opts.Logger.With("system", sys.Name), tick: opts.Tick, simTimes: opts.SimTimestamps,
		specs: map[int64]*model.JobSpec{}, procs: map[int64]*proc{},
		recs: map[int64]*jobRecord{}, adopted: map[int64]*jobRecord{}, alias: map[int64]int64{}, extOf: map[int64]int64{},
		stop: make(chan struct{}), loopDone: make(chan struct{}),
	}
	for _, pt := range sys.Partitions {
		p.parts[pt.Name] = pt
	}
	// The jobs of an earlier run are this provider's once it holds the work
	// directory's lock; without it (another provider runs on the directory) they are
	// left alone.
	if err := os.MkdirAll(p.workdir, 0o755); err != nil {
		p.log.Warn("sim work directory cannot be created; jobs will fail to start", "dir", p.workdir, "err", err)
	} else if opts.Standby {
		p.log.Debug("sim work directory left to the leader until this replica takes over", "dir", p.workdir)
	} else if f, ok, err := lockWorkDir(filepath.Join(p.workdir, lockFile)); err != nil {
		p.log.Warn("sim work directory cannot be locked; jobs of an earlier run are not recovered", "dir", p.workdir, "err", err)
	} else if !ok {
		p.log.Warn("another simulated provider uses this work directory; its jobs are left alone (give each core its own state directory)", "dir", p.workdir)
	} else {
		p.lock = f
	}
	recs, maxID, damaged := p.scanRecords()
	cfg.FirstJobID = max(firstJobID(now), maxID+1) // never reissue an id found on disk
	if opts.Configure != nil {
		opts.Configure(&cfg)
	}
	seed := g.Seed
	if seed == 0 {
		seed = 1
	}
	c, err := sim.New(cfg, seed)
	if err != nil {
		if p.lock != nil {
			p.lock.Close()
		}
		return nil, err
	}
	p.c = c
	p.configure, p.seed = opts.Configure, seed
	if p.lock != nil {
		p.recover(recs, damaged)
	}
	return p, nil
}

// TakeOver makes this provider the owner of its work directory when it runs without
// it: a team-mode replica (docs/TEAM.md) builds its providers as a follower, while the
// leader's provider owns the directory and runs the jobs; when the leader dies, its
// flock goes with it and the replica that takes over calls TakeOver. It takes the
// lock, rebuilds the model with job ids above every id on disk (the follower's model
// ran only background load, whose ids could meet the old leader's), and re-adopts the
// old leader's jobs exactly as after a restart (state.go). A no-op when the provider
// already owns the directory; an error when another live provider still does.
func (p *Provider) TakeOver() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return fmt.Errorf("sim %s: provider closed", p.sys.Name)
	}
	if p.lock != nil {
		return nil
	}
	f, ok, err := lockWorkDir(filepath.Join(p.workdir, lockFile))
	if err != nil {
		return fmt.Errorf("sim %s: lock the work directory %s: %w", p.sys.Name, p.workdir, err)
	}
	if !ok {
		return fmt.Errorf("sim %s: another simulated provider still uses the work directory %s (the previous leader may still be running); its jobs are left alone", p.sys.Name, p.workdir)
	}
	now := p.clock()
	recs, maxID, damaged := p.scanRecords()
	cfg, err := sim.ConfigFromSite(p.sys, now)
	if err != nil {
		f.Close()
		return err
	}
	cfg.FirstJobID = max(firstJobID(now), maxID+1, p.c.NextID())
	if p.configure != nil {
		p.configure(&cfg)
	}
	c, err := sim.New(cfg, p.seed)
	if err != nil {
		f.Close()
		return err
	}
	p.lock, p.c = f, c
	p.realStart, p.simStart = now, now
	p.specs, p.procs = map[int64]*model.JobSpec{}, map[int64]*proc{}
	p.recs, p.adopted, p.alias, p.extOf = map[int64]*jobRecord{}, map[int64]*jobRecord{}, map[int64]int64{}, map[int64]int64{}
	p.recover(recs, damaged)
	p.log.Info("took over the sim work directory", "dir", p.workdir, "jobs_on_disk", len(recs))
	return nil
}

// idEpoch is the origin of job-id bases (2026-01-01 UTC).
var idEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// firstJobID grows with the wall clock (1000 ids per second since 2026) so a
// simulator rebuilt after a restart never reissues an id an earlier run gave out.
func firstJobID(now time.Time) int64 {
	return 1000 + max(int64(now.Sub(idEpoch)/time.Second), 0)*1000
}

// safeName keeps a system name usable as a directory name.
func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-', r == '_', r == '@':
			return r
		}
		return '_'
	}, s)
}

// System is the catalog name.
func (p *Provider) System() string { return p.sys.Name }

// Kind is "sim".
func (p *Provider) Kind() string { return site.KindSim }

// Endpoint is sim://<name>.
func (p *Provider) Endpoint() string { return "sim://" + p.sys.Name }

// Speed is simulated seconds per real second.
func (p *Provider) Speed() float64 { return p.speed }

// WorkDir is the directory holding this system's job directories.
func (p *Provider) WorkDir() string { return p.workdir }

// SimNow is the model's clock now.
func (p *Provider) SimNow() time.Time { return p.toSim(p.clock()) }

// toSim maps a wall-clock time to simulated time.
func (p *Provider) toSim(real time.Time) time.Time {
	d := real.Sub(p.realStart)
	return p.simStart.Add(time.Duration(float64(d) * p.speed))
}

// toReal maps a simulated time to the wall clock.
func (p *Provider) toReal(st time.Time) time.Time {
	d := st.Sub(p.simStart)
	return p.realStart.Add(time.Duration(float64(d) / p.speed))
}

// out renders a model time the way the provider reports times.
func (p *Provider) out(st time.Time) time.Time {
	if st.IsZero() || p.simTimes {
		return st
	}
	return p.toReal(st)
}

// Start advances the model in the background every Tick so user jobs start, time
// out and fail promptly even when nobody calls the provider. Idempotent.
func (p *Provider) Start() {
	p.startOnce.Do(func() {
		go func() {
			defer close(p.loopDone)
			t := time.NewTicker(p.tick)
			defer t.Stop()
			for {
				select {
				case <-p.stop:
					return
				case <-t.C:
					p.mu.Lock()
					if !p.closed {
						p.advanceLocked()
					}
					p.mu.Unlock()
				}
			}
		}()
	})
}

// Close stops the background goroutine and kills every job process still running;
// their records say NODE_FAIL ("Mosaic stopped"), so the next run reports them ended.
// A job that ended on its own before it was killed keeps its result. A core killed
// without Close leaves its jobs running: the next provider on the work directory
// re-adopts them (state.go).
func (p *Provider) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	stopped := p.stopLocked()
	p.mu.Unlock()
	return p.finishClose(stopped)
}

// stopLocked marks the provider closed and kills its jobs (caller holds p.mu).
// Adopted jobs (an earlier run's) stop with this one too, except those that already
// ended, were lost or ran out of time: followAdopted settles them first. The killed
// ones are returned, to be recorded once their processes are gone.
func (p *Provider) stopLocked() []*jobRecord {
	p.closed = true
	close(p.stop)
	for _, pr := range p.procs {
		pr.kill()
	}
	p.followAdopted()
	stopped := make([]*jobRecord, 0, len(p.adopted))
	for id, r := range p.adopted {
		killGroup(r.PID)
		stopped = append(stopped, r)
		delete(p.adopted, id)
	}
	return stopped
}

// finishClose waits for the background goroutine and the job processes stopLocked
// killed, records the adopted jobs it killed and releases the work directory.
func (p *Provider) finishClose(stopped []*jobRecord) error {
	p.startOnce.Do(func() { close(p.loopDone) }) // never started: nothing to wait for
	<-p.loopDone
	done := make(chan struct{})
	go func() { p.waiters.Wait(); close(done) }()
	var err error
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		err = fmt.Errorf("sim %s: job processes did not exit within 5s of being killed", p.sys.Name)
	}
	// An adopted job's wrapper is not this process's child to wait for: give the
	// killed ones a moment to be gone, so an exit status written just before the
	// kill is seen below.
	deadline := time.Now().Add(time.Second)
	for _, r := range stopped {
		for ours(r.PID, r.ProcStart, p.jobDir(r.ID)) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
	}
	p.mu.Lock()
	now := p.clock().UTC()
	for _, r := range stopped {
		if code, ok := readSmallInt(filepath.Join(p.jobDir(r.ID), exitFile)); ok {
			r.exited(code, now) // it ended as it was killed
		} else {
			r.stoppedByClose(0, now)
		}
		if err := p.saveLocked(r); err != nil {
			p.log.Warn("sim job record", "job", r.ID, "err", err)
		}
	}
	if p.lock != nil {
		p.lock.Close() // after the records of the killed jobs are written
		p.lock = nil
	}
	p.mu.Unlock()
	return err
}

// advanceLocked moves the model to now and acts on user jobs that started or ended.
func (p *Provider) advanceLocked() time.Time {
	now := p.toSim(p.clock())
	for _, ev := range p.c.AdvanceTo(now) {
		switch ev.Kind {
		case sim.JobStarted:
			p.launch(ev)
		case sim.JobEnded:
			if pr := p.procs[ev.JobID]; pr != nil {
				pr.reason = ev.State
				pr.kill()
			}
			p.recordEnd(ev.JobID)
		}
	}
	p.followAdopted()
	return now
}

// ext is the id callers know for a model job; modelID the reverse.
func (p *Provider) ext(modelID int64) int64 {
	if e, ok := p.extOf[modelID]; ok {
		return e
	}
	return modelID
}

func (p *Provider) modelID(ext int64) int64 {
	if m, ok := p.alias[ext]; ok {
		return m
	}
	return ext
}

// recordEnd persists the final state of a model job that just ended.
func (p *Provider) recordEnd(modelID int64) {
	r := p.recs[p.ext(modelID)]
	j, ok := p.c.Job(modelID)
	if r == nil || !ok {
		return
	}
	r.State, r.ExitCode, r.Reason, r.Ended = j.State, j.ExitCode, j.Reason, p.toReal(j.End)
	if r.Reason == sim.ReasonNone {
		r.Reason = ""
	}
	if !j.Start.IsZero() && r.Started.IsZero() {
		r.Started = p.toReal(j.Start)
	}
	if err := p.saveLocked(r); err != nil {
		p.log.Warn("sim job record", "job", r.ID, "err", err)
	}
}

// lookup is the status of a job by the id callers know (caller holds p.mu).
func (p *Provider) lookup(ext int64) (model.JobStatus, bool) {
	if r, ok := p.adopted[ext]; ok {
		return r.status(p.clock()), true
	}
	if m, ok := p.alias[ext]; ok {
		if j, ok := p.c.Job(m); ok {
			st := p.status(j)
			st.JobID = strconv.FormatInt(ext, 10)
			return st, true
		}
	}
	if j, ok := p.c.Job(ext); ok {
		return p.status(j), true
	}
	if r, ok := p.recs[ext]; ok && r.final() {
		return r.status(p.clock()), true // a job of an earlier run, like sacct's history
	}
	return model.JobStatus{}, false
}

// begin checks the context and the provider and advances the model; the caller holds p.mu.
func (p *Provider) begin(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if p.closed {
		return fmt.Errorf("sim %s: provider is closed", p.sys.Name)
	}
	p.advanceLocked()
	return nil
}

// reachable fails with provider.ErrSiteDown during an outage window; the caller holds p.mu.
func (p *Provider) reachable(what string) error {
	if p.c.Down(p.c.Now()) {
		return fmt.Errorf("sim %s: %w: simulated outage; %s cannot reach the controller, retry later", p.sys.Name, provider.ErrSiteDown, what)
	}
	return nil
}

// Probe reports one record per (partition, account). During an outage window it
// fails with an error wrapping provider.ErrSiteDown.
func (p *Provider) Probe(ctx context.Context) ([]model.ResourceRecord, error) {
	t0 := p.clock()
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.begin(ctx); err != nil {
		return nil, err
	}
	now := p.c.Now()
	if err := p.reachable("the probe"); err != nil {
		return nil, err
	}
	var recs []model.ResourceRecord
	for _, pt := range p.sys.Partitions {
		st, ok := p.c.PartitionState(pt.Name)
		if !ok {
			continue
		}
		accounts := pt.Accounts
		if len(accounts) == 0 {
			accounts = p.sys.Accounts
		}
		if len(accounts) == 0 {
			accounts = []string{""}
		}
		arch := cmp.Or(pt.Arch, p.sys.Arch, "x86_64")
		health, lastErr := model.HealthOK, ""
		switch {
		case st.Down == st.Total:
			health, lastErr = model.HealthDown, fmt.Sprintf("all %d nodes down", st.Total)
		case st.Down > 0:
			health, lastErr = model.HealthDegraded, fmt.Sprintf("%d of %d nodes down", st.Down, st.Total)
		}
		features := slices.Concat(p.sys.Features, pt.Features)
		for _, acct := range accounts {
			recs = append(recs, model.ResourceRecord{
				Timestamp: p.out(now), Provider: site.KindSim, Endpoint: p.Endpoint(), System: p.sys.Name,
				Partition: pt.Name, Account: acct, Arch: arch,
				CPUCoresPerNode: pt.CPUCores, MemoryPerNodeGB: pt.MemoryGB, GPUModel: pt.GPUModel,
				GPUsPerNode: pt.GPUs, GPUMemoryGB: pt.GPUMemoryGB,
				Nodes:     model.NodeCounts{Idle: st.Idle, Mixed: st.Mixed, Allocated: st.Allocated, Down: st.Down, Total: st.Total},
				TotalGPUs: st.TotalGPUs, FreeGPUs: st.FreeGPUs, TotalCores: st.TotalCores, FreeCores: st.FreeCores,
				RunningJobs: st.Running, PendingJobs: st.Pending, MyRunningJobs: st.UserRunning, MyPendingJobs: st.UserPending,
				WalltimeCap: model.Duration(st.MaxWalltime), MaxNodesPerJob: st.MaxNodesPerJob,
				MaxRunningPerUser: pt.MaxRunningPerUser, MaxSubmitPerUser: pt.MaxSubmitPerUser,
				Exclusive: st.Exclusive, ChargeFactor: pt.ChargeFactor,
				ContainerRuntimes: slices.Clone(p.sys.ContainerRuntimes), Features: features,
				Health: health, LastError: lastErr,
				ProbeLatencyMS: p.clock().Sub(t0).Milliseconds(),
			})
		}
	}
	return recs, nil
}

// request translates a job spec into a model request, checking what the model does
// not know about (accounts, GPU model, container runtime).
func (p *Provider) request(spec model.JobSpec) (sim.JobRequest, error) {
	if err := spec.Validate(); err != nil {
		return sim.JobRequest{}, fmt.Errorf("sim %s: %w", p.sys.Name, err)
	}
	pt, ok := p.parts[spec.Partition]
	if !ok {
		names := make([]string, 0, len(p.sys.Partitions))
		for _, x := range p.sys.Partitions {
			names = append(names, x.Name)
		}
		return sim.JobRequest{}, fmt.Errorf("%s: sbatch refused the job: \"invalid partition specified: %s\" (partitions: %s). Pick one of those",
			p.sys.Name, spec.Partition, strings.Join(names, ", "))
	}
	accounts := pt.Accounts
	if len(accounts) == 0 {
		accounts = p.sys.Accounts
	}
	if spec.Account != "" && len(accounts) > 0 && !slices.Contains(accounts, spec.Account) {
		return sim.JobRequest{}, fmt.Errorf("%s: sbatch refused the job: \"Invalid account or account/partition combination specified\" (account %s; partition %s accepts %s)",
			p.sys.Name, spec.Account, pt.Name, strings.Join(accounts, ", "))
	}
	if spec.GPUModel != "" && pt.GPUModel != "" && !strings.EqualFold(spec.GPUModel, pt.GPUModel) {
		return sim.JobRequest{}, fmt.Errorf("%s: sbatch refused the job: \"Invalid generic resource (gres) specification\" (partition %s has %s GPUs, asked %s)",
			p.sys.Name, pt.Name, pt.GPUModel, spec.GPUModel)
	}
	if spec.Container != nil && spec.Container.Runtime != "" && !slices.Contains(p.sys.ContainerRuntimes, spec.Container.Runtime) {
		return sim.JobRequest{}, fmt.Errorf("%s: container runtime %q is not available (has: %s); pick another runtime or system",
			p.sys.Name, spec.Container.Runtime, strings.Join(p.sys.ContainerRuntimes, ", "))
	}
	gpn := spec.GPUsPerNode
	if gpn <= 0 && spec.GPUs > 0 {
		gpn = (spec.GPUs + spec.Nodes - 1) / spec.Nodes
	}
	cpn := (spec.TotalCores() + spec.Nodes - 1) / spec.Nodes
	return sim.JobRequest{
		Partition: spec.Partition, Nodes: spec.Nodes, CoresPerNode: cpn, GPUsPerNode: gpn,
		MemGBPerNode: spec.MemoryGB, Walltime: spec.Walltime.D(), External: true, User: true, Tag: spec.Tag,
	}, nil
}

// refusal turns a model error into what a user reads.
func (p *Provider) refusal(err error) error {
	var le *sim.LimitError
	switch {
	case errors.Is(err, sim.ErrDown):
		return fmt.Errorf("%s: %w: %v", p.sys.Name, provider.ErrSiteDown, err)
	case errors.As(err, &le):
		return fmt.Errorf("%s: sbatch refused the job: %w. Lower the %s or pick another partition", p.sys.Name, err, le.Limit)
	}
	return fmt.Errorf("%s: %w", p.sys.Name, err)
}

// Submit queues the job in the model as the user's own; it runs as a local process
// when the model starts it. The id is the model's job number ("1234").
func (p *Provider) Submit(ctx context.Context, spec model.JobSpec) (string, error) {
	req, err := p.request(spec)
	if err != nil {
		return "", err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.begin(ctx); err != nil {
		return "", err
	}
	id, err := p.c.Submit(req)
	if err != nil {
		return "", p.refusal(err)
	}
	// Persist before the id is handed out: a restarted provider finds the job by it.
	r := &jobRecord{ID: id, System: p.sys.Name, Spec: spec, Speed: p.speed, Submitted: p.clock().UTC(), State: sim.Pending}
	dir := p.jobDir(id)
	err = os.MkdirAll(dir, 0o755)
	if err == nil {
		err = saveRecord(dir, r)
	}
	if err != nil {
		_ = p.c.Cancel(id)
		p.advanceLocked()
		return "", fmt.Errorf("sim %s: cannot record the job in %s: %w; free disk space or set sim.workdir to a writable directory", p.sys.Name, dir, err)
	}
	p.recs[id] = r
	s := spec
	p.specs[id] = &s
	p.advanceLocked() // it may start right away
	return strconv.FormatInt(id, 10), nil
}

// Status reports many jobs; ids the model does not know are absent.
func (p *Provider) Status(ctx context.Context, jobIDs []string) (map[string]model.JobStatus, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.begin(ctx); err != nil {
		return nil, err
	}
	if err := p.reachable("squeue"); err != nil {
		return nil, err
	}
	out := make(map[string]model.JobStatus, len(jobIDs))
	for _, s := range jobIDs {
		id, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil {
			continue
		}
		if st, ok := p.lookup(id); ok {
			out[s] = st
		}
	}
	return out, nil
}

func (p *Provider) status(j sim.Job) model.JobStatus {
	st := model.JobStatus{
		JobID: strconv.FormatInt(j.ID, 10), Name: j.Tag, State: j.State.Model(), RawState: string(j.State),
		ExitCode: j.ExitCode, Submit: p.out(j.Submit), Start: p.out(j.Start), End: p.out(j.End),
	}
	if j.State == sim.Pending || j.State.Final() && j.Reason != sim.ReasonNone {
		st.Reason = j.Reason
	}
	switch {
	case !j.End.IsZero() && !j.Start.IsZero():
		st.Elapsed = model.Duration(j.End.Sub(j.Start))
	case !j.Start.IsZero():
		st.Elapsed = model.Duration(p.c.Now().Sub(j.Start))
	}
	if len(j.NodeList) > 0 {
		names := make([]string, len(j.NodeList))
		for i, n := range j.NodeList {
			names[i] = fmt.Sprintf("%s-%03d", j.Partition, n+1)
		}
		st.NodeList = strings.Join(names, ",")
	}
	return st
}

// Cancel cancels jobs; unknown and finished ids are ignored. Running processes are killed.
func (p *Provider) Cancel(ctx context.Context, jobIDs []string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.begin(ctx); err != nil {
		return err
	}
	if err := p.reachable("scancel"); err != nil {
		return err
	}
	for _, s := range jobIDs {
		id, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil {
			continue
		}
		if p.cancelAdopted(id) {
			continue
		}
		if err := p.c.Cancel(p.modelID(id)); err != nil && !errors.Is(err, sim.ErrUnknownJob) {
			return fmt.Errorf("sim %s: cancel %s: %w", p.sys.Name, s, err)
		}
	}
	p.advanceLocked() // kill what was cancelled now
	return nil
}

// QueuedStart is the model's plan for a queued job in its own place in line (like
// squeue --start); the zero time for a job it cannot plan (ended, unknown, adopted).
func (p *Provider) QueuedStart(ctx context.Context, jobID string) (time.Time, error) {
	id, err := strconv.ParseInt(strings.TrimSpace(jobID), 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("sim %s: job id %q is not a number", p.sys.Name, jobID)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.begin(ctx); err != nil {
		return time.Time{}, err
	}
	if err := p.reachable("squeue --start"); err != nil {
		return time.Time{}, err
	}
	t, err := p.c.PlannedStart(p.modelID(id))
	if errors.Is(err, sim.ErrUnknownJob) || errors.Is(err, sim.ErrNoEstimate) {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, err
	}
	return p.out(t), nil
}

// CancelPending cancels the jobs still queued and leaves running ones alone, in one
// step under the model's lock (like scancel --state=PENDING).
func (p *Provider) CancelPending(ctx context.Context, jobIDs []string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.begin(ctx); err != nil {
		return err
	}
	if err := p.reachable("scancel"); err != nil {
		return err
	}
	for _, s := range jobIDs {
		id, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil {
			continue
		}
		mid := p.modelID(id)
		if j, ok := p.c.Job(mid); !ok || j.State != sim.Pending {
			continue // started, ended, adopted from an earlier run (running) or unknown
		}
		if err := p.c.Cancel(mid); err != nil && !errors.Is(err, sim.ErrUnknownJob) {
			return fmt.Errorf("sim %s: cancel %s: %w", p.sys.Name, s, err)
		}
	}
	p.advanceLocked()
	return nil
}

// EstimateStart plans when a job like spec would start (like sbatch --test-only).
func (p *Provider) EstimateStart(ctx context.Context, spec model.JobSpec) (time.Time, error) {
	req, err := p.request(spec)
	if err != nil {
		return time.Time{}, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.begin(ctx); err != nil {
		return time.Time{}, err
	}
	if err := p.reachable("sbatch --test-only"); err != nil {
		return time.Time{}, err
	}
	t, err := p.c.EstimateStart(req)
	if err != nil {
		return time.Time{}, p.refusal(err)
	}
	return p.out(t), nil
}

// EstimateStarts implements provider.BatchEstimator: every spec planned on the model
// as it is now, under one lock (what one remote command of sbatch --test-only per spec
// is on a real site). An invalid or refused spec has its own error; an outage fails the
// batch.
func (p *Provider) EstimateStarts(ctx context.Context, specs []model.JobSpec) ([]provider.Estimate, error) {
	out := make([]provider.Estimate, len(specs))
	reqs := make([]sim.JobRequest, len(specs))
	for i := range specs {
		reqs[i], out[i].Err = p.request(specs[i])
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.begin(ctx); err != nil {
		return nil, err
	}
	if err := p.reachable("sbatch --test-only"); err != nil {
		return nil, err
	}
	for i := range reqs {
		if out[i].Err != nil {
			continue
		}
		t, err := p.c.EstimateStart(reqs[i])
		if err != nil {
			out[i].Err = p.refusal(err)
			continue
		}
		out[i].Start = p.out(t)
	}
	return out, nil
}

// FindByTag finds the user's jobs by tag (job name). The map is keyed by tag; when a
// tag was submitted more than once the newest job wins.
func (p *Provider) FindByTag(ctx context.Context, tags []string) (map[string]model.JobStatus, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.begin(ctx); err != nil {
		return nil, err
	}
	if err := p.reachable("squeue"); err != nil {
		return nil, err
	}
	want := map[string]bool{}
	for _, t := range tags {
		want[t] = true
	}
	// This run's jobs and those of earlier runs (records), by the ids callers know;
	// ascending ids, so later ones overwrite.
	ids := make([]int64, 0, len(p.recs))
	seen := map[int64]bool{}
	for _, j := range p.c.Jobs() {
		if want[j.Tag] {
			ids = append(ids, p.ext(j.ID))
			seen[p.ext(j.ID)] = true
		}
	}
	for id, r := range p.recs {
		if want[r.Spec.Tag] && !seen[id] {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	out := map[string]model.JobStatus{}
	for _, id := range ids {
		if st, ok := p.lookup(id); ok && want[st.Name] {
			out[st.Name] = st
		}
	}
	return out, nil
}

// jobDir is the work directory of one job.
func (p *Provider) jobDir(id int64) string {
	return filepath.Join(p.workdir, strconv.FormatInt(id, 10))
}

// Logs returns the last tail bytes (default 16 KiB, at most 1 MiB) of the job's
// stdout and stderr files. A job of an earlier run of the provider (before a restart
// of the core) is found by its work directory: job ids never repeat across runs.
func (p *Provider) Logs(ctx context.Context, jobID string, tail int) (model.Logs, error) {
	id, err := strconv.ParseInt(strings.TrimSpace(jobID), 10, 64)
	if err != nil {
		return model.Logs{}, fmt.Errorf("sim %s: job id %q is not a number", p.sys.Name, jobID)
	}
	p.mu.Lock()
	_, known := p.specs[id]
	if _, ok := p.recs[id]; ok {
		known = true // also a job of an earlier run: its files are still there
	}
	down := p.reachable("reading job output")
	p.mu.Unlock()
	if down != nil {
		return model.Logs{}, down
	}
	if _, err := os.Stat(p.jobDir(id)); !known && err != nil {
		return model.Logs{}, fmt.Errorf("sim %s: job %s: %w (only jobs submitted through this provider have logs)", p.sys.Name, jobID, sim.ErrUnknownJob)
	}
	if err := ctx.Err(); err != nil {
		return model.Logs{}, err
	}
	if tail <= 0 {
		tail = DefaultLogTail
	}
	tail = min(tail, maxLogTail)
	dir := p.jobDir(id)
	l := model.Logs{JobID: jobID, StdoutPath: filepath.Join(dir, "stdout"), StderrPath: filepath.Join(dir, "stderr")}
	var t1, t2 bool
	if l.Stdout, t1, err = readTail(l.StdoutPath, tail); err != nil {
		return l, fmt.Errorf("sim %s: job %s stdout: %w", p.sys.Name, jobID, err)
	}
	if l.Stderr, t2, err = readTail(l.StderrPath, tail); err != nil {
		return l, fmt.Errorf("sim %s: job %s stderr: %w", p.sys.Name, jobID, err)
	}
	l.Truncated = t1 || t2
	return l, nil
}

// readTail reads the last n bytes of a file; a missing file (job not started) is empty.
func readTail(path string, n int) (string, bool, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", false, err
	}
	size := fi.Size()
	off := max(size-int64(n), 0)
	buf := make([]byte, size-off)
	if _, err := f.ReadAt(buf, off); err != nil {
		return "", false, err
	}
	return string(buf), off > 0, nil
}
