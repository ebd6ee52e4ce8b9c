// Package execution turns placements into batch jobs and follows them to the end:
// the dispatcher (persist the attempt, then submit), the batched monitor (one status
// call per site per tick), the continuation policy (retry, resize, migrate — each with a
// rationale) and recovery after a crash (adopt or resubmit exactly once, by job tag).
package execution

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/provider"
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
	// SubmitTries bounds in-place retries of a transient submit error (default 3), with
	// exponential backoff starting at SubmitBackoff (default 1s).
	SubmitTries   int
	SubmitBackoff time.Duration
}

// Engine runs tasks. All task mutations are serialised by one mutex, so the monitor,
// API calls and recovery never interleave on the same task.
type Engine struct {
	o  Options
	mu sync.Mutex
	// missing records when an active job was first absent from its site's answer.
	missing map[string]time.Time
	// started is when this engine was made: tasks created later belong to this
	// process's own in-flight submits, not to a crash (Recover leaves them alone).
	started time.Time
}

// New makes an engine.
func New(o Options) *Engine {
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.SubmitTries <= 0 {
		o.SubmitTries = 3
	}
	if o.SubmitBackoff <= 0 {
		o.SubmitBackoff = time.Second
	}
	if o.Snapshot == nil {
		o.Snapshot = func() *model.ResourceSnapshot { return nil }
	}
	return &Engine{o: o, missing: map[string]time.Time{}, started: o.Clock().UTC()}
}

func (e *Engine) now() time.Time { return e.o.Clock().UTC() }

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
