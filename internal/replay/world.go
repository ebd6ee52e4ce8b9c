package replay

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/scheduler"
	"github.com/mosaic-hpc/mosaic/internal/sim"
	"github.com/mosaic-hpc/mosaic/internal/site"
	"github.com/mosaic-hpc/mosaic/internal/waits"
)

// defaultAccount stands in when the catalog names no account, so the authorization
// rule (which wants one) passes as it would for a user with an allocation.
const defaultAccount = "replay"

// unit is one partition of one system with its own model.
type unit struct {
	idx    int
	sys    *site.System
	part   site.Partition
	cfg    sim.Config
	seed   int64
	c      *sim.Cluster
	rec    model.ResourceRecord // static fields of the probe record
	owner  map[int64]*jobState  // sim id → federated job
	busy   float64              // Σ busy-core fraction samples
	sample int
}

// world is the federation during one replay.
type world struct {
	units []*unit
	now   time.Time
	seq   uint64
	// learner corrects the mosaic policy's site estimates from the replay's own
	// history of them, as the live core's does from the store (nil: no correction);
	// calib is the calibration of every site-estimated placement that started.
	learner *waits.Learner
	calib   *waits.Calibration
	// placing is the federated job being placed or weighed again (nil between
	// decisions): the estimator asks the sites about the job the replay would submit
	// for a candidate's size (see estimator).
	placing *jobState
}

// partitionUsable reports whether federated CPU jobs can ever use p (GPU partitions
// refuse CPU jobs in the rule chain, so their models are not built).
func partitionUsable(p site.Partition) bool { return p.GPUs == 0 && p.CPUCores > 0 && p.Nodes > 0 }

func newWorld(f *Federation, seed int64) (*world, error) {
	w := &world{now: Epoch}
	for i := range f.Systems {
		sys := &f.Systems[i]
		for _, p := range sys.Partitions {
			if !partitionUsable(p) {
				continue
			}
			cfg, err := partConfig(*sys, p)
			if err != nil {
				return nil, err
			}
			if f.Configure != nil {
				f.Configure(sys.Name, &cfg)
			}
			c, err := sim.New(cfg, seed)
			if err != nil {
				return nil, fmt.Errorf("system %s partition %s: %w", sys.Name, p.Name, err)
			}
			u := &unit{idx: len(w.units), sys: sys, part: p, cfg: cfg, seed: seed, c: c, owner: map[int64]*jobState{}}
			u.rec = staticRecord(sys, p, cfg.Partitions[0])
			w.units = append(w.units, u)
		}
	}
	if len(w.units) == 0 {
		return nil, fmt.Errorf("the federation has no CPU partition a trace job could use")
	}
	return w, nil
}

// staticRecord fills the probe record fields that never change, as simprov.Probe does.
func staticRecord(sys *site.System, p site.Partition, pc sim.PartitionConfig) model.ResourceRecord {
	accounts := p.Accounts
	if len(accounts) == 0 {
		accounts = sys.Accounts
	}
	acct := defaultAccount
	if len(accounts) > 0 {
		acct = accounts[0]
	}
	return model.ResourceRecord{
		Provider: site.KindSim, Endpoint: "sim://" + sys.Name, System: sys.Name, Partition: p.Name, Account: acct,
		Arch: cmp.Or(p.Arch, sys.Arch, "x86_64"), CPUCoresPerNode: p.CPUCores, MemoryPerNodeGB: p.MemoryGB,
		GPUModel: p.GPUModel, GPUsPerNode: p.GPUs, GPUMemoryGB: p.GPUMemoryGB,
		WalltimeCap: model.Duration(pc.MaxWalltime), MaxRunningPerUser: p.MaxRunningPerUser,
		MaxSubmitPerUser: p.MaxSubmitPerUser, ChargeFactor: p.ChargeFactor,
		ContainerRuntimes: slices.Clone(sys.ContainerRuntimes), Features: slices.Concat(sys.Features, p.Features),
	}
}

// probe is what the live sim provider's Probe and the collector would publish now:
// one record per partition, system health from outages and down nodes.
func (w *world) probe() *model.ResourceSnapshot {
	w.seq++
	// Sized up front: one record per unit at most (records are large, and growing
	// the slices by appending was a third of the replay's allocations).
	snap := &model.ResourceSnapshot{TakenAt: w.now, Seq: w.seq,
		Systems: make([]model.SystemHealth, 0, len(w.units)), Records: make([]model.ResourceRecord, 0, len(w.units))}
	seen := make(map[string]int, len(w.units))
	for _, u := range w.units {
		down := u.c.Down(w.now)
		name := u.sys.Name
		if _, ok := seen[name]; !ok {
			h := model.HealthOK
			if down {
				h = model.HealthDown
			}
			seen[name] = len(snap.Systems)
			snap.Systems = append(snap.Systems, model.SystemHealth{System: name, Provider: site.KindSim,
				Endpoint: "sim://" + name, Health: h, LastProbe: w.now})
		}
		if down {
			continue // a failed probe contributes no records
		}
		st, _ := u.c.PartitionState(u.part.Name)
		r := u.rec
		r.Timestamp = w.now
		r.Nodes = model.NodeCounts{Idle: st.Idle, Mixed: st.Mixed, Allocated: st.Allocated, Down: st.Down, Total: st.Total}
		r.TotalGPUs, r.FreeGPUs, r.TotalCores, r.FreeCores = st.TotalGPUs, st.FreeGPUs, st.TotalCores, st.FreeCores
		r.RunningJobs, r.PendingJobs, r.MyRunningJobs, r.MyPendingJobs = st.Running, st.Pending, st.UserRunning, st.UserPending
		r.MaxNodesPerJob, r.Exclusive = st.MaxNodesPerJob, st.Exclusive
		r.Health = model.HealthOK
		switch {
		case st.Down == st.Total:
			r.Health, r.LastError = model.HealthDown, fmt.Sprintf("all %d nodes down", st.Total)
		case st.Down > 0:
			r.Health, r.LastError = model.HealthDegraded, fmt.Sprintf("%d of %d nodes down", st.Down, st.Total)
		}
		snap.Records = append(snap.Records, r)
	}
	model.SortRecords(snap.Records)
	return snap
}

// unitFor finds the unit of a system/partition.
func (w *world) unitFor(system, partition string) (*unit, bool) {
	for _, u := range w.units {
		if u.sys.Name == system && u.part.Name == partition {
			return u, true
		}
	}
	return nil, false
}

// request turns a sized spec into a model request the way simprov does (cores spread
// evenly over the nodes), with the job's real runtime so the model ends it.
func request(spec *model.JobSpec, run time.Duration) sim.JobRequest {
	nodes := max(spec.Nodes, 1)
	gpn := spec.GPUsPerNode
	if gpn <= 0 && spec.GPUs > 0 {
		gpn = (spec.GPUs + nodes - 1) / nodes
	}
	return sim.JobRequest{
		Partition: spec.Partition, Nodes: nodes, CoresPerNode: (spec.TotalCores() + nodes - 1) / nodes,
		GPUsPerNode: gpn, MemGBPerNode: spec.MemoryGB, Walltime: spec.Walltime.D(), Runtime: run,
		User: true, Tag: spec.Tag,
	}
}

// estimator answers the scheduler's site start estimates from the models, like
// simprov.EstimateStart (sbatch --test-only), at the world's current time, for the job
// the replay would submit: while a job is being placed or weighed (world.placing), a
// candidate below the job's maximum size is asked about at the walltime the replay
// would really request there (stretched, see shape), not the envelope's. Asked at the
// envelope's walltime, a shrunk candidate's estimate was the start of a shorter job
// than the one submitted, which fits backfill holes the real one does not: on the grid
// a job told "in 15 minutes" then waited 41 hours, and replanning chased such
// estimates from site to site. (Live there is no gap: the walltime sized is the
// walltime submitted.)
type estimator struct{ w *world }

// EstimateStart implements scheduler.Estimator.
func (e estimator) EstimateStart(_ context.Context, system string, spec model.JobSpec) (time.Time, error) {
	u, ok := e.w.unitFor(system, spec.Partition)
	if !ok {
		return time.Time{}, fmt.Errorf("replay: no model of %s/%s", system, spec.Partition)
	}
	if js := e.w.placing; js != nil {
		_, _, wall := stretched(js, &spec, u)
		spec.Walltime = model.Duration(wall)
	}
	req := request(&spec, 0)
	req.External = true
	return u.c.EstimateStart(req)
}

// EstimateStarts implements scheduler.BatchEstimator: the replay's sites answer
// every feasible candidate, as simprov does (one call per system and placement).
func (e estimator) EstimateStarts(ctx context.Context, system string, specs []model.JobSpec) ([]scheduler.EstimateResult, error) {
	out := make([]scheduler.EstimateResult, len(specs))
	for i := range specs {
		out[i].Start, out[i].Err = e.EstimateStart(ctx, system, specs[i])
	}
	return out, nil
}

// prediction is what a placement expected of its wait: the site's own estimate and
// the (learned) estimate the ranker scored, both from the placement's time.
type prediction struct{ site, used time.Duration }

// predictionOf is a candidate's prediction, or nil when its wait is not the site's.
func predictionOf(c *scheduler.Candidate) *prediction {
	if c == nil || c.WaitSource != "site" {
		return nil
	}
	p := &prediction{site: c.EstWait.D(), used: c.EstWait.D()}
	if c.SiteWait != nil {
		p.site = c.SiteWait.D()
	}
	return p
}

// useLearnedWaits gives the world a learner of site-estimate errors (the mosaic
// policy's, unless cfg.NoLearnedWaits) and a calibration collector; the scheduler's
// WaitModel (nil when there is no learner).
func (w *world) useLearnedWaits(p Policy, cfg *Config) scheduler.WaitModel {
	w.calib = waits.NewCalibration(waits.DefaultSlack)
	if p.Name() != PolicyMosaic || cfg.NoLearnedWaits {
		return nil
	}
	w.learner = waits.New(waits.Options{})
	return w.learner
}

// observeStart feeds a started job's real wait in u to the learner and the
// calibration: what the live core does with every attempt that starts.
func (w *world) observeStart(u *unit, p *prediction, waited time.Duration) {
	if p == nil || u == nil {
		return
	}
	if w.learner != nil {
		w.learner.Observe(u.sys.Name, u.part.Name, p.site, waited)
	}
	w.calib.Add(u.sys.Name, u.part.Name, p.site, p.used, waited)
}

// submit queues req on u.
func (u *unit) submit(req sim.JobRequest) (int64, error) {
	return u.c.Submit(req)
}

// cancel cancels job id on u.
func (u *unit) cancel(id int64) error {
	return u.c.Cancel(id)
}

// fork is a copy of u's model as it is at now (sim.Cluster.Clone: the exact state,
// random streams included, so the copy evolves as the model would). It used to
// re-execute the recorded calls on a fresh model, which cost the whole history per
// question and was most of a 1,000-job replay's time; TestReplayGolden pins that the
// numbers did not change.
func (u *unit) fork(now time.Time) (*sim.Cluster, error) {
	c := u.c.Clone()
	if now.After(c.Now()) {
		c.AdvanceTo(now)
	}
	return c, nil
}

// whatIf reports when req would really start on u if submitted now, simulating a fork
// forward with the exact runtimes of every job there; ok is false when it has not
// started by limit.
func (u *unit) whatIf(now time.Time, req sim.JobRequest, limit time.Time) (time.Time, bool, error) {
	c, err := u.fork(now)
	if err != nil {
		return time.Time{}, false, err
	}
	req.Tag = "clairvoyant-probe"
	id, err := c.Submit(req)
	if err != nil {
		return time.Time{}, false, err
	}
	step := time.Minute
	t := now
	for range 64 {
		for _, ev := range c.AdvanceTo(t) {
			if ev.JobID == id && ev.Kind == sim.JobStarted {
				return ev.Time, true, nil
			}
		}
		if !t.Before(limit) {
			return time.Time{}, false, nil
		}
		t = t.Add(step)
		if t.After(limit) {
			t = limit
		}
		step *= 2
	}
	return time.Time{}, false, nil
}
