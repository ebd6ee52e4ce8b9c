package replay

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/scheduler"
	"github.com/mosaic-hpc/mosaic/internal/sim"
)

// Defaults of a replay.
const (
	DefaultTick    = 60 * time.Second
	DefaultSample  = 15 * time.Minute
	DefaultHorizon = 60 * 24 * time.Hour
)

// Config is one replay: the same Config replayed with every policy gives the
// comparison (same federation, same jobs, same seed).
type Config struct {
	Federation *Federation
	Jobs       []Job
	// Home is the user's home system (the home policy's only choice). Default: the
	// first system of the federation.
	Home string
	// Seed of the models' background load and of the random policy; 0 = the
	// federation's sim.seed.
	Seed int64
	// Tick is the decision interval: arrivals wait for the next tick, where every
	// site is probed; default 60 s.
	Tick time.Duration
	// Sample is the utilisation sampling interval; default 15 min.
	Sample time.Duration
	// Horizon: the replay gives up on jobs not finished this long after the last
	// arrival (they count as unfinished); default 60 days.
	Horizon time.Duration
	// MaxEstimates bounds site estimates per system and placement for the ranker (the
	// replay's estimator batches; scheduler.DefaultSiteBatch when 0).
	MaxEstimates int
	// Preload are other users' jobs submitted at fixed times (hand-made scenarios;
	// trace-driven background load comes from the federation file).
	Preload []Preload
	// Replan holds the thresholds of the mosaic policy's replanning of waiting jobs
	// (scheduler.Replan; zero = scheduler.DefaultReplanConfig).
	Replan scheduler.ReplanConfig
	// ReplanEvery is how often each waiting job is weighed again (default 10 min; a
	// job expected to start sooner more often, scheduler.ReplanConfig.CheckEvery);
	// ReplanPerRound bounds the jobs weighed per decision tick (default 8).
	ReplanEvery    time.Duration
	ReplanPerRound int
	// NoLearnedWaits turns off the mosaic policy's learned correction of site
	// estimates (internal/waits), for comparisons.
	NoLearnedWaits bool
}

// Defaults of the replay's replanning (measured: docs/PLACEMENT.md, "Replanning").
const (
	DefaultReplanEvery    = 10 * time.Minute
	DefaultReplanPerRound = 8
)

// Preload is another user's job submitted at At (after Epoch) to System/Partition.
type Preload struct {
	At           time.Duration
	System       string
	Partition    string
	Nodes        int
	CoresPerNode int
	Runtime      time.Duration
	Walltime     time.Duration
}

func (c *Config) defaults() error {
	if c.Federation == nil || len(c.Federation.Systems) == 0 {
		return fmt.Errorf("replay: no federation")
	}
	if len(c.Jobs) == 0 {
		return fmt.Errorf("replay: no jobs")
	}
	if c.Home == "" {
		c.Home = c.Federation.Systems[0].Name
	}
	s, ok := c.Federation.System(c.Home)
	if !ok {
		names := make([]string, len(c.Federation.Systems))
		for i, x := range c.Federation.Systems {
			names[i] = x.Name
		}
		return fmt.Errorf("replay: home system %q is not in the federation (systems: %v)", c.Home, names)
	}
	c.Home = s.Name
	if c.Seed == 0 {
		c.Seed = c.Federation.Seed
	}
	if c.Tick <= 0 {
		c.Tick = DefaultTick
	}
	if c.Sample <= 0 {
		c.Sample = DefaultSample
	}
	if c.Horizon <= 0 {
		c.Horizon = DefaultHorizon
	}
	c.Replan = c.Replan.WithDefaults()
	if c.ReplanEvery <= 0 {
		c.ReplanEvery = DefaultReplanEvery
	}
	if c.ReplanPerRound <= 0 {
		c.ReplanPerRound = DefaultReplanPerRound
	}
	return nil
}

// jobState is a federated job during a replay.
type jobState struct {
	Job
	idx        int
	task       model.Task
	unit       *unit // current attempt's partition
	simID      int64
	submitAt   time.Time
	est        time.Time   // the placement's estimated start (zero = unknown)
	pred       *prediction // the placement's site-estimated wait, for the learner
	nextCheck  time.Time   // when replanning weighs the waiting job again
	streak     int         // replanning's hysteresis: consecutive checks streakTo was better
	streakTo   string
	attempts   int
	migrations int
	left       []string // systems a migration moved it away from
	cores      int
	run        time.Duration
	wall       time.Duration // the current attempt's requested walltime
	start, end time.Time
	started    bool
	done       bool
	endState   sim.State
	checked    bool // everFeasible was asked
	rejected   bool // no site the policy may use can ever run it
}

// placement is a policy's answer: where, at what size, and the estimated start.
type placement struct {
	unit *unit
	spec model.JobSpec
	est  time.Time
	pred *prediction
}

// runner holds one replay's state.
type runner struct {
	cfg     *Config
	w       *world
	sched   *scheduler.Scheduler
	policy  Policy
	rng     *rand.Rand
	rr      int
	jobs    []*jobState
	ndone   int
	nextS   time.Time
	fixed   []string // exhaustive search: the system of each job
	errs    int
	ctx     context.Context
	queued  map[*jobState]bool
	samples int
}

// Run replays cfg.Jobs through policy p and returns its metrics.
func Run(ctx context.Context, cfg Config, p Policy) (*Result, error) {
	return run(ctx, cfg, p, nil)
}

func run(ctx context.Context, cfg Config, p Policy, fixed []string) (*Result, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	w, err := newWorld(cfg.Federation, cfg.Seed)
	if err != nil {
		return nil, err
	}
	r := &runner{cfg: &cfg, w: w, policy: p, rng: rand.New(rand.NewPCG(uint64(cfg.Seed), 0x7a9d0)),
		fixed: fixed, ctx: ctx, queued: map[*jobState]bool{}, nextS: Epoch}
	r.sched = scheduler.New(scheduler.Options{Estimator: estimator{w}, MaxEstimates: cfg.MaxEstimates,
		Waits: w.useLearnedWaits(p, &cfg), Now: func() time.Time { return w.now }})
	jobs := slices.Clone(cfg.Jobs)
	slices.SortStableFunc(jobs, func(a, b Job) int { return int(a.Arrival - b.Arrival) })
	for i, j := range jobs {
		if j.MinCores < 1 || j.MaxCores < j.MinCores || j.Walltime <= 0 || j.Runtime <= 0 || j.Arrival < 0 {
			return nil, fmt.Errorf("replay: job %s is malformed (cores %d..%d, walltime %s, runtime %s, arrival %s)",
				j.ID, j.MinCores, j.MaxCores, j.Walltime, j.Runtime, j.Arrival)
		}
		r.jobs = append(r.jobs, &jobState{Job: j, idx: i, task: model.Task{ID: j.ID, Name: j.ID, Command: "replay " + j.ID,
			Envelope: j.Envelope(!p.Moldable())}})
	}
	if err := r.loop(); err != nil {
		return nil, err
	}
	return r.result(), nil
}

// tickCeil rounds t up to the next decision tick.
func (r *runner) tickCeil(t time.Time) time.Time {
	d := t.Sub(Epoch)
	k := (d + r.cfg.Tick - 1) / r.cfg.Tick
	return Epoch.Add(k * r.cfg.Tick)
}

func (r *runner) loop() error {
	n := len(r.jobs)
	next := 0
	var held []*jobState
	last := Epoch.Add(r.jobs[n-1].Arrival)
	giveUp := last.Add(r.cfg.Horizon)
	pre := slices.Clone(r.cfg.Preload)
	slices.SortStableFunc(pre, func(a, b Preload) int { return int(a.At - b.At) })
	first := true
	for r.ndone < n {
		if err := r.ctx.Err(); err != nil {
			return err
		}
		t := time.Time{}
		pick := func(c time.Time) {
			if t.IsZero() || c.Before(t) {
				t = c
			}
		}
		if next < n {
			pick(r.tickCeil(Epoch.Add(r.jobs[next].Arrival)))
		}
		if len(held) > 0 {
			pick(r.tickCeil(r.w.now.Add(time.Nanosecond)))
		}
		if len(pre) > 0 {
			pick(Epoch.Add(pre[0].At))
		}
		if r.policy.Continuation() {
			for js := range r.queued {
				if c, ok := r.overrunAt(js); ok {
					pick(r.tickCeil(c))
				}
			}
		}
		if t.IsZero() { // nothing to decide: let the queues drain
			t = r.w.now.Add(time.Hour)
		}
		if t.Before(r.w.now) || (t.Equal(r.w.now) && !first) {
			t = r.tickCeil(r.w.now.Add(time.Nanosecond))
		}
		first = false
		if t.After(giveUp) {
			break
		}
		r.advance(t)
		for len(pre) > 0 && !Epoch.Add(pre[0].At).After(t) {
			if err := r.preload(pre[0]); err != nil {
				return err
			}
			pre = pre[1:]
		}
		if !t.Equal(r.tickCeil(t)) {
			r.collect(t)
			continue // not a decision tick
		}
		for next < n && !Epoch.Add(r.jobs[next].Arrival).After(t) {
			held = append(held, r.jobs[next])
			next++
		}
		overrun := r.overrunJobs()
		if len(held) == 0 && len(overrun) == 0 {
			continue
		}
		snap := r.w.probe()
		kept := held[:0]
		for _, js := range held {
			ok, err := r.place(js, snap)
			if err != nil {
				return err
			}
			if !ok {
				kept = append(kept, js)
			}
		}
		held = kept
		for _, js := range overrun {
			if err := r.migrate(js, snap); err != nil {
				return err
			}
		}
		r.collect(t)
	}
	return nil
}

// preload submits another user's job now.
func (r *runner) preload(p Preload) error {
	u, ok := r.w.unitFor(p.System, p.Partition)
	if !ok {
		return fmt.Errorf("preload: no CPU partition %s/%s in the federation", p.System, p.Partition)
	}
	_, err := u.submit(sim.JobRequest{Partition: p.Partition, Nodes: p.Nodes, CoresPerNode: p.CoresPerNode,
		Walltime: p.Walltime, Runtime: p.Runtime, Tag: "preload"})
	if err != nil {
		return fmt.Errorf("preload on %s/%s: %w", p.System, p.Partition, err)
	}
	return nil
}

// advance moves every model to t, sampling utilisation on the way.
func (r *runner) advance(t time.Time) {
	for !r.nextS.After(t) {
		r.collect(r.nextS)
		for _, u := range r.w.units {
			st, _ := u.c.PartitionState(u.part.Name)
			if st.TotalCores > 0 {
				u.busy += 1 - float64(st.FreeCores)/float64(st.TotalCores)
			}
			u.sample++
		}
		r.samples++
		r.nextS = r.nextS.Add(r.cfg.Sample)
	}
	r.collect(t)
}

// collect advances every model to t and applies the user-job events.
func (r *runner) collect(t time.Time) {
	if t.After(r.w.now) {
		r.w.now = t
	}
	for _, u := range r.w.units {
		for _, ev := range u.c.AdvanceTo(t) {
			js := u.owner[ev.JobID]
			if js == nil {
				continue
			}
			switch ev.Kind {
			case sim.JobStarted:
				if !js.started {
					js.started, js.start = true, ev.Time
					r.w.observeStart(js.unit, js.pred, ev.Time.Sub(js.submitAt))
				}
				delete(r.queued, js)
			case sim.JobEnded:
				js.done, js.end, js.endState = true, ev.Time, ev.State
				delete(u.owner, ev.JobID)
				delete(r.queued, js)
				r.ndone++
			}
		}
	}
}

// place asks the policy and submits; false means the job waits for the next tick.
func (r *runner) place(js *jobState, snap *model.ResourceSnapshot) (bool, error) {
	r.w.placing = js
	pl, err := r.policy.choose(r, js, snap)
	r.w.placing = nil
	if err != nil {
		return false, fmt.Errorf("policy %s, job %s: %w", r.policy.Name(), js.ID, err)
	}
	if pl == nil {
		if !js.checked {
			js.checked = true
			if !r.everFeasible(js) {
				js.done, js.rejected = true, true
				r.ndone++
				return true, nil
			}
		}
		return false, nil
	}
	return r.submit(js, pl), nil
}

// everFeasible reports whether the job could be placed where the policy may put it
// on an empty federation (all nodes up and idle, no queue): if not (for example a
// walltime over every cap), waiting cannot help and the job is rejected.
func (r *runner) everFeasible(js *jobState) bool {
	snap := &model.ResourceSnapshot{TakenAt: r.w.now}
	for _, u := range r.w.units {
		rec := u.rec
		nodes, cores := u.cfg.Partitions[0].Nodes, u.cfg.Partitions[0].CoresPerNode
		rec.Timestamp, rec.Health = r.w.now, model.HealthOK
		rec.Nodes = model.NodeCounts{Idle: nodes, Total: nodes}
		rec.TotalCores, rec.FreeCores = nodes*cores, nodes*cores
		rec.MaxNodesPerJob = u.cfg.Partitions[0].MaxNodesPerJob
		if rec.MaxNodesPerJob == 0 {
			rec.MaxNodesPerJob = nodes
		}
		rec.Exclusive = u.cfg.Partitions[0].Exclusive
		snap.Records = append(snap.Records, rec)
	}
	model.SortRecords(snap.Records)
	opts := scheduler.PlaceOptions{NoLLM: true}
	if _, ok := r.policy.(homePolicy); ok {
		sys := r.cfg.Home
		if r.fixed != nil {
			sys = r.fixed[js.idx]
		}
		opts.Target = &model.Target{System: sys}
	}
	_, err := r.sched.Place(r.ctx, &js.task, snap, opts)
	return err == nil
}

// submit sends the placement to its model; a refusal (limit, outage) keeps the job
// waiting, as a user would resubmit.
func (r *runner) submit(js *jobState, pl *placement) bool {
	js.attempts++
	spec, cores, run := shape(js, pl)
	spec.Tag = model.JobTag(js.ID, js.attempts)
	id, err := pl.unit.submit(request(&spec, run))
	if err != nil {
		r.errs++
		js.attempts--
		return false
	}
	js.unit, js.simID, js.submitAt, js.est, js.pred = pl.unit, id, r.w.now, pl.est, pl.pred
	js.cores, js.run = cores, run
	js.wall = spec.Walltime.D()
	js.nextCheck, js.streak, js.streakTo = r.w.now.Add(r.checkEvery(js, pl.est)), 0, ""
	pl.unit.owner[id] = js
	r.queued[js] = true
	return true
}

// checkEvery is how long replanning leaves the queued job js before weighing it again,
// expected to start at start (zero: unknown): ReplanEvery, shorter for a job expected
// to start soon (scheduler.ReplanConfig.CheckEvery, as the live engine).
func (r *runner) checkEvery(js *jobState, start time.Time) time.Duration {
	wait := time.Duration(-1)
	if !start.IsZero() {
		wait = max(start.Sub(r.w.now), 0)
	}
	return r.cfg.Replan.CheckEvery(r.cfg.ReplanEvery, wait)
}

// overrunAt is when replanning next weighs a queued job (every checkEvery while it
// waits), or false when the job has started or its move budget is used up.
func (r *runner) overrunAt(js *jobState) (time.Time, bool) {
	pol := model.DefaultPolicy()
	if js.started || js.migrations >= r.cfg.Replan.MaxMoves || js.attempts >= pol.MaxAttempts {
		return time.Time{}, false
	}
	return js.nextCheck, true
}

// overrunJobs are the queued jobs due for replanning now: the longest unchecked first,
// at most ReplanPerRound per tick (each weighing asks sites for estimates).
func (r *runner) overrunJobs() []*jobState {
	if !r.policy.Continuation() {
		return nil
	}
	var out []*jobState
	for js := range r.queued {
		if at, ok := r.overrunAt(js); ok && !at.After(r.w.now) {
			out = append(out, js)
		}
	}
	slices.SortFunc(out, func(a, b *jobState) int {
		if c := a.nextCheck.Compare(b.nextCheck); c != 0 {
			return c
		}
		return a.idx - b.idx
	})
	return out[:min(len(out), r.cfg.ReplanPerRound)]
}

// replanInput gathers scheduler.Replan's inputs the way the live engine does: the
// current site's refreshed estimate of the queued job's start (in its place in line,
// squeue --start), and for the best-ranked feasible candidate of every other system
// (rule chain and ranker, as at placement) that site's own estimate for a new job.
func (r *runner) replanInput(js *jobState, snap *model.ResourceSnapshot) (scheduler.ReplanInput, map[string]*scheduler.Candidate) {
	now := r.w.now
	cur := scheduler.ReplanOption{System: js.unit.sys.Name, Partition: js.unit.part.Name, Source: js.unit.sys.Name + "'s own estimate"}
	if t, err := js.unit.c.PlannedStart(js.simID); err == nil {
		cur.Start, cur.At = t, now
	}
	in := scheduler.ReplanInput{Now: now, Current: cur, Moves: js.migrations, Left: js.left, Streak: js.streak, StreakTo: js.streakTo, Walltime: js.wall}
	d, err := r.sched.Place(r.ctx, &js.task, snap, scheduler.PlaceOptions{Exclude: []string{cur.System}, NoLLM: true})
	if err != nil {
		return in, nil
	}
	cands := map[string]*scheduler.Candidate{}
	est := estimator{r.w}
	for _, c := range bySystem(d.Feasible()) {
		o := scheduler.ReplanOption{System: c.System, Partition: c.Partition, Source: c.System + "'s own estimate"}
		if t, err := est.EstimateStart(r.ctx, c.System, *c.Sizing); err == nil {
			o.Start, o.At = t, now
		}
		in.Alternatives = append(in.Alternatives, o)
		cands[o.Key()] = c
	}
	return in, cands
}

// migrate weighs a waiting job with scheduler.Replan (the live engine's decision) and
// carries out a move as the engine does: submit the new job first, cancel the old one
// only once it is accepted. (In the replay nothing happens between the two calls, so
// the old job cannot start meanwhile.)
func (r *runner) migrate(js *jobState, snap *model.ResourceSnapshot) error {
	r.w.placing = js
	in, cands := r.replanInput(js, snap)
	r.w.placing = nil
	dec := scheduler.Replan(in, r.cfg.Replan)
	js.nextCheck = r.w.now.Add(r.checkEvery(js, in.Current.Start))
	js.streak, js.streakTo = dec.Streak, ""
	if dec.To != nil {
		js.streakTo = dec.To.Key()
	}
	if !dec.Move {
		return nil
	}
	pl, err := r.fromCandidate(js, cands[dec.To.Key()])
	if err != nil {
		return err
	}
	pl.est = dec.To.Start
	oldUnit, oldID, oldSys := js.unit, js.simID, js.unit.sys.Name
	migrations, left := js.migrations, js.left
	if !r.submit(js, pl) {
		return nil // refused: the old job keeps its place
	}
	delete(oldUnit.owner, oldID)
	if err := oldUnit.cancel(oldID); err != nil {
		return fmt.Errorf("migrate %s: cancel job %d on %s: %w", js.ID, oldID, oldSys, err)
	}
	js.migrations = migrations + 1
	js.left = append(left, oldSys)
	return nil
}

// fromCandidate turns a scheduler candidate into a placement; its estimated start is
// the decision time plus the candidate's estimated wait, as the core records it.
func (r *runner) fromCandidate(js *jobState, c *scheduler.Candidate) (*placement, error) {
	if c == nil || c.Sizing == nil {
		return nil, fmt.Errorf("job %s: the scheduler chose no sized candidate", js.ID)
	}
	u, ok := r.w.unitFor(c.System, c.Partition)
	if !ok {
		return nil, fmt.Errorf("job %s: the scheduler chose %s/%s, which the replay does not model", js.ID, c.System, c.Partition)
	}
	pl := &placement{unit: u, spec: *c.Sizing, pred: predictionOf(c)}
	if c.WaitSource != "" {
		pl.est = r.w.now.Add(c.EstWait.D())
		if c.SiteWait != nil { // the site's own estimate, as the live core records it
			pl.est = r.w.now.Add(c.SiteWait.D())
		}
	}
	return pl, nil
}

// shape is what is really submitted for a placement: a job given fewer cores than its
// maximum runs, and asks for, proportionally longer (its work is conserved), the
// walltime capped by the partition.
func shape(js *jobState, pl *placement) (model.JobSpec, int, time.Duration) {
	spec := pl.spec
	cores, run, wall := stretched(js, &spec, pl.unit)
	spec.Walltime = model.Duration(wall)
	return spec, cores, run
}

// stretched is what job js runs and asks for at spec's size on u: its cores (at most
// its maximum), and its runtime and spec's walltime stretched by maximum/cores (its
// work is conserved), the walltime capped by the partition. A job at its maximum size
// is unchanged.
func stretched(js *jobState, spec *model.JobSpec, u *unit) (cores int, run, wall time.Duration) {
	cores = min(max(spec.TotalCores(), 1), js.MaxCores)
	stretch := float64(js.MaxCores) / float64(cores)
	run = time.Duration(math.Ceil(float64(js.Runtime)*stretch/float64(time.Second))) * time.Second
	wall = time.Duration(math.Ceil(float64(spec.Walltime.D())*stretch/float64(time.Second))) * time.Second
	if c := u.cfg.Partitions[0].MaxWalltime; c > 0 && wall > c {
		wall = c
	}
	return cores, run, wall
}
