// Package execution turns placements into batch jobs and follows them to the end:
// the dispatcher (persist the attempt, then submit), the batched monitor (one status
// call per site per tick), the continuation policy (retry, resize, migrate — each with a
// rationale) and recovery after a crash (adopt or resubmit exactly once, by job tag).
package execution

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/provider"
	"github.com/mosaic-hpc/mosaic/internal/scheduler"
	"github.com/mosaic-hpc/mosaic/internal/store"
)

// Placement is where and how big one attempt runs.
type Placement struct {
	System    string
	Partition string
	Account   string
	// Spec holds the sizing (nodes, GPUs, cores, memory, walltime); the engine fills
	// tag, name, command and script.
	Spec           model.JobSpec
	Decision       json.RawMessage // the decision trace
	Rationale      string
	EstimatedStart time.Time // zero if unknown
	// Tag, when set, is the job tag (job name) of this attempt instead of
	// mosaic-<task>-<n>; it must be unique per attempt (a campaign slice's job keeps
	// its recognisable mosaic-c-<run>-<site>). Continuations never carry it over.
	Tag string
	// Env is exported in the job like Spec.Env but never stored (forwarded secrets
	// stay out of the store, the API and the events). A resubmission after a crash
	// runs without these values.
	Env map[string]string
}

// Placer chooses a placement for a task, never on an excluded system. The core
// implements it with the scheduler.
type Placer interface {
	Place(ctx context.Context, task *model.Task, exclude []string) (*Placement, error)
}

// Providers finds the provider of a system.
type Providers interface {
	Provider(system string) (provider.Provider, bool)
}

// Options configure an Engine.
type Options struct {
	Store     *store.Store
	Providers Providers
	Placer    Placer
	// Snapshot returns the latest federation snapshot (site health for the circuit
	// breaker, partition shapes for resizing); may return nil.
	Snapshot func() *model.ResourceSnapshot
	Clock    func() time.Time
	Logger   *slog.Logger
	// UserLockWait bounds how long Cancel and Replan wait for a busy task (default 30s).
	UserLockWait time.Duration
	// SubmitTries bounds in-place retries of a transient submit error (default 3), with
	// exponential backoff starting at SubmitBackoff (default 1s).
	SubmitTries   int
	SubmitBackoff time.Duration
	// CancelTimeout bounds one cancel call made on behalf of a user or a migration
	// (default 20s); an unconfirmed cancel is asked again by the monitor.
	CancelTimeout time.Duration
	// Replan holds the thresholds of the replanning of waiting jobs (zero =
	// scheduler.DefaultReplanConfig; the move budget is the task policy's
	// max_migrations). ReplanEvery (site time, default 10m) is how often each pending
	// job is weighed; ReplanPerRound (default 4) bounds the jobs weighed per site round.
	// NoReplan turns replanning off (the overrun, drift and outage triggers remain).
	Replan         scheduler.ReplanConfig
	ReplanEvery    time.Duration
	ReplanPerRound int
	NoReplan       bool
	// OnStart, optional, is told of every attempt the monitor sees starting (with
	// its start time), after the start is stored: the core's learner of site-estimate
	// errors is fed this way. It must not block.
	OnStart func(a *model.Attempt, started time.Time)
	// Leading, in team mode (replicas on one store, docs/TEAM.md), says whether this
	// replica still holds the leader lease; nil = laptop mode, always. A submit is not
	// tried (again) once it says false.
	Leading func() bool
	// ClaimGrace, in team mode, is how long after this engine took over (TakeOver) an
	// attempt claimed by another leader may still be reached by that leader's submit
	// in flight (the lease's TTL plus one submit call's timeout): a claimed attempt
	// whose job is not found by its tag is not submitted before then.
	ClaimGrace time.Duration
	// OnTaskEnded and OnContinuation, optional, are told (for metrics) of every task
	// stored in a terminal state and of every continuation action taken (retry,
	// resize, migrate, fail, cancel, replan). They must not block.
	OnTaskEnded    func(state model.TaskState)
	OnContinuation func(action string)
}

// Engine runs tasks. Mutations of one task are serialised by that task's own lock, so
// the monitor, API calls and recovery never interleave on the same task; nothing shared
// is held across a call to a site. The monitor runs one round per site (a slow or hung
// site delays only its own round) and applies results task by task.
type Engine struct {
	o Options
	// started is when this engine was made (or took over as leader): recovery resumes
	// only tasks created before it (a newer task without attempts is a submission
	// still being dispatched). Guarded by mu.
	started time.Time
	// token is the fencing token of this engine's leadership (0 in laptop mode); set
	// by TakeOver, guarded by mu.
	token int64

	tasks taskLocks

	// mu guards the small in-memory maps below; it is never held across I/O or the
	// store.
	mu sync.Mutex
	// missing records when an active job was first absent from its site's answer.
	missing map[string]time.Time
	// rounds marks the sites whose monitor round is still running.
	rounds map[string]bool
	// busy marks tasks with a follow-up (migration, continuation) in flight.
	busy map[string]bool
	// stays remembers the last logged stay decision per attempt tag (hysteresis).
	stays map[string]stayNote
	// estimated is when the site was last asked for a pending job's start (by tag), and
	// what it said.
	estimated map[string]reestimate
	// replans is replanning's memory per attempt tag (when weighed, hysteresis).
	replans map[string]replanNote
	// unroutable marks the attempt tags already reported as unmonitorable (their
	// owner has no site identity).
	unroutable map[string]bool
}

// New makes an engine.
func New(o Options) *Engine {
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.UserLockWait <= 0 {
		o.UserLockWait = 30 * time.Second
	}
	if o.SubmitTries <= 0 {
		o.SubmitTries = 3
	}
	if o.SubmitBackoff <= 0 {
		o.SubmitBackoff = time.Second
	}
	if o.CancelTimeout <= 0 {
		o.CancelTimeout = 20 * time.Second
	}
	if o.ReplanEvery <= 0 {
		o.ReplanEvery = DefaultReplanEvery
	}
	if o.ReplanPerRound <= 0 {
		o.ReplanPerRound = DefaultReplanPerRound
	}
	if o.Snapshot == nil {
		o.Snapshot = func() *model.ResourceSnapshot { return nil }
	}
	return &Engine{o: o, started: o.Clock().UTC(), tasks: taskLocks{m: map[string]*taskLock{}}, missing: map[string]time.Time{}, rounds: map[string]bool{},
		busy: map[string]bool{}, stays: map[string]stayNote{}, estimated: map[string]reestimate{}, replans: map[string]replanNote{}}
}

// taskLocks hands out one lock per task id; entries live only while someone holds or
// waits for them.
type taskLocks struct {
	mu sync.Mutex
	m  map[string]*taskLock
}

type taskLock struct {
	ch   chan struct{} // capacity 1: a token means locked
	refs int
}

// lock takes the task's lock, giving up when ctx ends (an API call never waits forever
// behind a task whose site hangs). The returned function releases it.
func (l *taskLocks) lock(ctx context.Context, id string) (func(), error) {
	l.mu.Lock()
	tl := l.m[id]
	if tl == nil {
		tl = &taskLock{ch: make(chan struct{}, 1)}
		l.m[id] = tl
	}
	tl.refs++
	l.mu.Unlock()
	release := func() {
		l.mu.Lock()
		tl.refs--
		if tl.refs == 0 {
			delete(l.m, id)
		}
		l.mu.Unlock()
	}
	select {
	case tl.ch <- struct{}{}:
		return func() { <-tl.ch; release() }, nil
	case <-ctx.Done():
		release()
		return nil, fmt.Errorf("task %s is busy with another operation (a site may be slow to answer); try again: %w: %w", id, ErrBusy, ctx.Err())
	}
}

// tryLock takes the task's lock only if it is free now.
func (l *taskLocks) tryLock(id string) (func(), bool) {
	l.mu.Lock()
	tl := l.m[id]
	if tl == nil {
		tl = &taskLock{ch: make(chan struct{}, 1)}
		l.m[id] = tl
	}
	select {
	case tl.ch <- struct{}{}:
		tl.refs++
		l.mu.Unlock()
		return func() {
			<-tl.ch
			l.mu.Lock()
			tl.refs--
			if tl.refs == 0 {
				delete(l.m, id)
			}
			l.mu.Unlock()
		}, true
	default:
		if tl.refs == 0 {
			delete(l.m, id)
		}
		l.mu.Unlock()
		return nil, false
	}
}

// withTask runs fn holding the task's lock.
func (e *Engine) withTask(ctx context.Context, id string, fn func() error) error {
	unlock, err := e.tasks.lock(ctx, id)
	if err != nil {
		return err
	}
	defer unlock()
	return fn()
}

// ErrBusy means a task's lock could not be had in time: another operation on it (a
// submit to a slow login node) is still running.
var ErrBusy = errors.New("task busy")

// withTaskForUser is withTask with the wait for the lock bounded by
// Options.UserLockWait: a person's cancel or replan of a task that is busy (a submit to
// a slow login node with its retries) gets an answer (ErrBusy), not a hang.
func (e *Engine) withTaskForUser(ctx context.Context, id string, fn func() error) error {
	lctx, cancel := context.WithTimeout(ctx, e.o.UserLockWait)
	unlock, err := e.tasks.lock(lctx, id)
	cancel()
	if err != nil {
		return err
	}
	defer unlock()
	return fn()
}

func (e *Engine) now() time.Time { return e.o.Clock().UTC() }

// TakeOver tells the engine that its replica just became the leader with fencing token
// token: recovery now resumes every task created before this moment (another leader
// created them), and attempts claimed under another token are settled by their tag
// with the ClaimGrace wait (recovery.go). Call it before Recover.
func (e *Engine) TakeOver(token int64) {
	e.mu.Lock()
	e.started, e.token = e.now(), token
	e.mu.Unlock()
}

// SetLeadership puts the engine in team mode (see Options.Leading and ClaimGrace);
// call it before Run.
func (e *Engine) SetLeadership(leading func() bool, claimGrace time.Duration) {
	e.o.Leading, e.o.ClaimGrace = leading, claimGrace
}

func (e *Engine) startedAt() (time.Time, int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.started, e.token
}

// leading reports whether this replica may act (always in laptop mode).
func (e *Engine) leading() bool { return e.o.Leading == nil || e.o.Leading() }

// mayAct is leading confirmed against the store's lease (the fencing token): checked
// before a call that changes something at a site, so a deposed leader that has not
// noticed yet changes nothing.
func (e *Engine) mayAct(ctx context.Context) error {
	if !e.leading() {
		return ErrNotLeader
	}
	if err := e.o.Store.CheckFence(ctx); err != nil {
		return fmt.Errorf("%w: %w", ErrNotLeader, err)
	}
	return nil
}

// ErrNotLeader is returned by a submit a replica no longer leading did not try.
var ErrNotLeader = errors.New("this replica is no longer the leader; the new leader settles the attempt by its tag")

func (e *Engine) provider(system string) (provider.Provider, error) {
	p, ok := e.o.Providers.Provider(system)
	if !ok {
		return nil, fmt.Errorf("system %q is not in the catalog any more; add it back to sites.yaml or cancel the task", system)
	}
	return p, nil
}

func policyOf(t *store.TaskRow) model.Policy {
	var p model.Policy
	if len(t.Policy) > 0 {
		_ = json.Unmarshal(t.Policy, &p)
	}
	return p.WithDefaults()
}

func ev(task string, attempt int, system, kind, msg, why string, actor model.Actor) model.Event {
	return model.Event{TaskID: task, Attempt: attempt, System: system, Kind: kind, Message: msg, Rationale: why, Actor: actor}
}

func ptr[T any](v T) *T { return &v }

// endTask stores a task's terminal state (u.State) with its events, then tells
// OnTaskEnded.
func (e *Engine) endTask(ctx context.Context, id string, u store.TaskUpdate, evs ...model.Event) error {
	if err := e.o.Store.UpdateTask(ctx, id, u, evs...); err != nil {
		return err
	}
	if e.o.OnTaskEnded != nil && u.State != nil {
		e.o.OnTaskEnded(*u.State)
	}
	return nil
}

// continued tells OnContinuation of an action taken.
func (e *Engine) continued(action string) {
	if e.o.OnContinuation != nil {
		e.o.OnContinuation(action)
	}
}
