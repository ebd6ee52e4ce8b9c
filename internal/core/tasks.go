package core

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/execution"
	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/provider"
	"github.com/mosaic-hpc/mosaic/internal/scheduler"
	"github.com/mosaic-hpc/mosaic/internal/scheduler/draft"
	"github.com/mosaic-hpc/mosaic/internal/store"
)

// SubmitRequest is a new task as a user or agent describes it.
type SubmitRequest struct {
	Name         string          `json:"name" doc:"Short task name"`
	Command      string          `json:"command,omitempty" doc:"Shell command line the job runs"`
	Script       string          `json:"script,omitempty" doc:"Full batch script body (instead of command)"`
	Description  string          `json:"description,omitempty" doc:"What the task does; used to draft an envelope"`
	Envelope     *model.Envelope `json:"envelope,omitempty" doc:"Resource envelope; omit with auto_envelope to draft one"`
	AutoEnvelope bool            `json:"auto_envelope,omitempty" doc:"Draft the envelope from the description"`
	Target       string          `json:"target,omitempty" doc:"Pin: SYSTEM or SYSTEM:PARTITION; the rules still apply"`
	Objective    model.Objective `json:"objective,omitempty" doc:"earliest_start (default), fastest_finish, max_throughput or min_cost"`
	Policy       *model.Policy   `json:"policy,omitempty" doc:"Continuation policy; defaults are sensible"`
	DryRun       bool            `json:"dry_run,omitempty" doc:"Place but do not store or submit; returns the decision"`
}

// TaskDetail is a task with everything known about it.
type TaskDetail struct {
	model.Task
	Policy   model.Policy     `json:"policy"`
	Attempts []*model.Attempt `json:"attempts"`
	Decision json.RawMessage  `json:"decision,omitempty"`
	// DraftFallback says why an LLM-drafted envelope was not used (heuristic instead).
	DraftFallback string `json:"draft_fallback,omitempty"`
}

// SubmitResult is the answer to a submission: the stored task (nil on dry run) and the
// placement decision.
type SubmitResult struct {
	Task     *TaskDetail         `json:"task,omitempty"`
	Decision *scheduler.Decision `json:"decision"`
	DryRun   bool                `json:"dry_run"`
	// Replayed: the request's idempotency key had created this task already.
	Replayed bool `json:"-"`
}

const idAlphabet = "abcdefghijkmnpqrstuvwxyz23456789"

func newTaskID() string {
	b := make([]byte, 8)
	rand.Read(b)
	for i := range b {
		b[i] = idAlphabet[int(b[i])%len(idAlphabet)]
	}
	return string(b)
}

// ParseTarget reads "SYSTEM" or "SYSTEM:PARTITION" and resolves the system name.
func (c *Core) ParseTarget(s string) (*model.Target, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	sysName, part, _ := strings.Cut(s, ":")
	sys, ok := c.cat.System(sysName)
	if !ok {
		return nil, fmt.Errorf("target %q: %w", s, c.unknownSystem(sysName))
	}
	t := &model.Target{System: sys.Name, Partition: part}
	if part != "" && len(sys.Partitions) > 0 {
		if _, ok := sys.PartitionByName(part); !ok {
			var names []string
			for _, p := range sys.Partitions {
				names = append(names, p.Name)
			}
			return nil, fmt.Errorf("target %q: %s has no partition %q; it has %s: %w", s, sys.Name, part, strings.Join(names, ", "), ErrInvalid)
		}
	}
	return t, nil
}

func checkName(n string) error {
	if err := model.CheckName(n); err != nil {
		return fmt.Errorf("%w: %w", err, ErrInvalid)
	}
	return nil
}

// checkRequestText refuses what must not reach a batch script or a terminal: lengths
// are counted in characters, NUL and control characters are refused (newline and tab
// are allowed in the command, script and description only).
func checkRequestText(req SubmitRequest) error {
	if err := checkName(req.Name); err != nil {
		return err
	}
	for _, f := range []struct {
		field, v string
		max      int
	}{{"command", req.Command, model.MaxCommandChars}, {"script", req.Script, model.MaxScriptChars},
		{"description", req.Description, model.MaxDescriptionChars}} {
		if err := model.CheckText(f.field, f.v, f.max); err != nil {
			return fmt.Errorf("%w: %w", err, ErrInvalid)
		}
	}
	if err := model.CheckLine("target", req.Target, model.MaxLineChars); err != nil {
		return fmt.Errorf("%w: %w", err, ErrInvalid)
	}
	if err := model.CheckLine("objective", string(req.Objective), model.MaxLineChars); err != nil {
		return fmt.Errorf("%w: %w", err, ErrInvalid)
	}
	return nil
}

// DraftEnvelope drafts an envelope from a description (LLM when configured, else heuristic).
func (c *Core) DraftEnvelope(ctx context.Context, name, description string) (draft.Result, error) {
	text := strings.TrimSpace(name + "\n" + description)
	if err := model.CheckLine("name", name, model.MaxNameChars); err != nil {
		return draft.Result{}, fmt.Errorf("%w: %w", err, ErrInvalid)
	}
	if err := model.CheckText("description", description, model.MaxDescriptionChars); err != nil {
		return draft.Result{}, fmt.Errorf("%w: %w", err, ErrInvalid)
	}
	if strings.TrimSpace(description) == "" {
		return draft.Result{}, fmt.Errorf("the description is empty; describe the job (model size, training or inference, duration): %w", ErrInvalid)
	}
	res, err := c.drafter.Draft(ctx, text)
	if err == nil {
		c.keepKnownAvoided(&res.Envelope)
	}
	return res, err
}

// keepKnownAvoided drops drafted avoid_systems names that are no system of the catalog:
// the drafter reads "avoid Frontera" without knowing the federation, so "avoid Friday"
// must not reach the envelope. A known name is written as the catalog spells it.
func (c *Core) keepKnownAvoided(env *model.Envelope) {
	if len(env.Constraints.AvoidSystems) == 0 {
		return
	}
	var keep, dropped []string
	for _, n := range env.Constraints.AvoidSystems {
		if sys, ok := c.cat.System(n); ok {
			keep = append(keep, sys.Name)
		} else {
			dropped = append(dropped, n)
		}
	}
	env.Constraints.AvoidSystems = keep
	if len(dropped) > 0 {
		env.Rationale += "; ignored avoid " + strings.Join(dropped, ",") + " (no such system)"
	}
}

// SubmitTask validates a request, places the task and (unless dry run) stores and
// dispatches it. An infeasible request is refused with every system's reasons.
func (c *Core) SubmitTask(ctx context.Context, req SubmitRequest) (*SubmitResult, error) {
	return c.SubmitTaskIdempotent(ctx, req, "")
}

// SubmitTaskIdempotent is SubmitTask with the client's Idempotency-Key (the API's
// header; "" = none): a second submission with the same key returns the task the
// first created (Replayed) instead of a new one.
func (c *Core) SubmitTaskIdempotent(ctx context.Context, req SubmitRequest, key string) (*SubmitResult, error) {
	if err := checkRequestText(req); err != nil {
		return nil, err
	}
	if strings.TrimSpace(req.Command) == "" && strings.TrimSpace(req.Script) == "" {
		return nil, fmt.Errorf("neither command nor script given; pass --command \"…\": %w", ErrInvalid)
	}
	var hash string
	if key != "" {
		// Keys are per user: another user's key is neither found nor blocked.
		owner := model.CallerOf(ctx).Name
		key = fmt.Sprintf("%d:%s:%s", len(owner), owner, key)
		hash = requestHash(req)
	}
	if key != "" && !req.DryRun {
		if res, err := c.replayed(ctx, key, hash); res != nil || err != nil {
			return res, err
		}
	}
	var env model.Envelope
	var fallback string
	switch {
	case req.Envelope != nil && req.AutoEnvelope:
		return nil, fmt.Errorf("give an envelope or auto_envelope, not both: %w", ErrInvalid)
	case req.Envelope != nil:
		env = *req.Envelope
		if env.Source == "" {
			env.Source = model.SourceUser
		}
	case req.AutoEnvelope || req.Description != "":
		d, err := c.DraftEnvelope(ctx, req.Name, req.Description)
		if err != nil {
			return nil, err
		}
		env, fallback = d.Envelope, d.FallbackReason
	default:
		return nil, fmt.Errorf("no envelope: give one, or auto_envelope with a description (--auto-envelope --description \"…\"): %w", ErrInvalid)
	}
	if req.Objective != "" {
		env.Objective = req.Objective
	}
	if err := env.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	env.Normalize()
	pol := model.Policy{}
	if req.Policy != nil {
		pol = *req.Policy
	}
	if err := pol.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	target, err := c.ParseTarget(req.Target)
	if err != nil {
		return nil, err
	}
	if target != nil && env.MaxQueueWait > 0 {
		return nil, fmt.Errorf("max_queue_wait %s cannot apply to a task pinned to %s: a pinned task is never moved, so the limit would be ignored; "+
			"drop the pin (--target) to let Mosaic move the job when it has queued %s, or drop --max-queue-wait (Mosaic still logs when a pinned task's wait overruns its estimate): %w",
			env.MaxQueueWait, target.System, env.MaxQueueWait, ErrInvalid)
	}
	now := c.clock().UTC()
	task := &model.Task{ID: newTaskID(), Name: req.Name, Command: req.Command, Script: req.Script, Description: req.Description,
		Envelope: env, Target: target, State: model.TaskPending, Owner: model.CallerOf(ctx).Name, CreatedAt: now, UpdatedAt: now}
	snap, err := c.Federation()
	if err != nil {
		return nil, err
	}
	d, err := c.sched.Place(ctx, task, snap, scheduler.PlaceOptions{Exclude: c.noIdentity(task.Owner)})
	if err != nil {
		var pe *scheduler.PlacementError
		if errors.As(err, &pe) || errors.Is(err, scheduler.ErrNoFeasible) {
			return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
		}
		return nil, err
	}
	if req.DryRun {
		d.Explain()
		return &SubmitResult{Decision: d, DryRun: true}, nil
	}
	// From here until the site has the job, placements made meanwhile count it.
	defer c.expectSubmit(d, model.JobTag(task.ID, 1))()
	// MarshalJSON directly: json.Marshal would re-scan the megabyte a 1,000-partition
	// trace is (encoding/json checks every Marshaler's output), which costs more than
	// writing it.
	trace, err := d.MarshalJSON()
	if err != nil {
		return nil, err
	}
	polJSON, _ := json.Marshal(pol)
	task.State = model.TaskPlaced
	actor := model.ActorRules
	if strings.HasPrefix(d.Ranker, "llm") {
		actor = model.ActorAI
	}
	row := &store.TaskRow{Task: *task, Decision: trace, Policy: polJSON, IdempotencyKey: key, IdempotencyHash: hash}
	evs := []model.Event{{TaskID: task.ID, Kind: "decision", Actor: actor, Time: now,
		Message:   fmt.Sprintf("placed %s on %s (%s, ranker %s)", task.Name, d.Chosen, d.Mode, d.Ranker),
		Rationale: d.Rationale}}
	if fallback != "" {
		evs = append(evs, model.Event{TaskID: task.ID, Kind: "draft", Actor: model.ActorRules, Time: now,
			Message: "envelope drafted heuristically", Rationale: "the LLM draft was not used: " + fallback})
	}
	if err := c.store.CreateTask(ctx, row, evs...); err != nil {
		if errors.Is(err, store.ErrDuplicateKey) { // a concurrent retry with the same key won
			if res, rerr := c.replayed(ctx, key, hash); res != nil || rerr != nil {
				return res, rerr
			}
		}
		if errors.Is(err, store.ErrFenced) {
			return nil, fmt.Errorf("%w: %w; retry (with the same Idempotency-Key) to reach the new leader", ErrUnavailable, err)
		}
		return nil, err
	}
	c.audit(ctx, "task.submit", task.ID, "on "+d.Chosen)
	pl := c.placementOf(d)
	// The task is stored: its first attempt must not depend on the caller staying
	// connected (a dropped request would leave it without an attempt until a restart).
	if err := c.engine.Dispatch(context.WithoutCancel(ctx), task.ID, pl, d.Rationale); err != nil {
		c.log.Error("dispatch", "task", task.ID, "err", err)
	}
	detail, err := c.Task(ctx, task.ID)
	if err != nil {
		return nil, err
	}
	detail.DraftFallback = fallback
	return &SubmitResult{Task: detail, Decision: d}, nil
}

// expectSubmit announces the decided job to its site's provider (its estimates count
// it until the site lists it: provider.SubmissionExpecter) and returns the release.
func (c *Core) expectSubmit(d *scheduler.Decision, tag string) (release func()) {
	ch := d.ChosenCandidate()
	if ch == nil || d.Spec == nil {
		return func() {}
	}
	p, _ := c.collector.Provider(ch.System)
	ex, ok := p.(provider.SubmissionExpecter)
	if !ok {
		return func() {}
	}
	spec := *d.Spec
	spec.Tag, spec.System, spec.Partition, spec.Account = tag, ch.System, ch.Partition, ch.Account
	return ex.ExpectSubmit(spec)
}

// placementOf turns a decision into a placement. The candidate's wait is in the site's
// time; the placement's estimated start is a wall-clock instant the monitor compares
// with its clock.
func (c *Core) placementOf(d *scheduler.Decision) *execution.Placement {
	ch := d.ChosenCandidate()
	pl := &execution.Placement{System: ch.System, Partition: ch.Partition, Account: ch.Account, Spec: *d.Spec, Rationale: d.Rationale}
	if b, err := d.MarshalJSON(); err == nil { // see Submit
		pl.Decision = b
	}
	if ch.WaitSource != "" {
		speed := 1.0
		if p, ok := c.collector.Provider(ch.System); ok {
			speed = speedOf(p)
		}
		wait := ch.EstWait.D()
		if ch.SiteWait != nil {
			// The site's own estimate, not its learned correction: the learner is fed
			// from what the site said (waits.go), and the monitor's overrun trigger
			// keeps its yardstick.
			wait = ch.SiteWait.D()
		}
		pl.EstimatedStart = c.clock().Add(time.Duration(float64(wait) / speed))
	}
	return pl
}

// placer adapts the scheduler to the execution engine.
type placer struct{ c *Core }

func (p placer) Place(ctx context.Context, task *model.Task, exclude []string) (*execution.Placement, error) {
	snap, err := p.c.Federation()
	if err != nil {
		return nil, err
	}
	d, err := p.c.sched.Place(ctx, task, snap, scheduler.PlaceOptions{Exclude: slices.Concat(exclude, p.c.noIdentity(task.Owner))})
	if err != nil {
		return nil, err
	}
	return p.c.placementOf(d), nil
}

// Task returns one task with its attempts and decision trace.
func (c *Core) Task(ctx context.Context, id string) (*TaskDetail, error) {
	row, err := c.store.Task(ctx, id)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			if !model.CallerOf(ctx).Admin {
				return nil, notYours(ctx, id) // as for another user's task: ids do not leak
			}
			return nil, fmt.Errorf("task %q: %w", id, ErrNotFound)
		}
		return nil, err
	}
	if err := checkOwner(ctx, id, row.Owner); err != nil {
		return nil, err
	}
	atts, err := c.store.Attempts(ctx, id)
	if err != nil {
		return nil, err
	}
	if atts == nil {
		atts = []*model.Attempt{}
	}
	var pol model.Policy
	_ = json.Unmarshal(row.Policy, &pol)
	return &TaskDetail{Task: row.Task, Policy: pol.WithDefaults(), Attempts: atts, Decision: row.Decision}, nil
}

// TaskSummary is one row of the task list.
type TaskSummary struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	State     model.TaskState `json:"state"`
	System    string          `json:"system,omitempty"`
	Partition string          `json:"partition,omitempty"`
	JobID     string          `json:"job_id,omitempty"`
	JobState  model.JobState  `json:"job_state,omitempty"`
	Attempts  int             `json:"attempts"`
	Sizing    string          `json:"sizing,omitempty"`
	Pinned    bool            `json:"pinned"`
	Reason    string          `json:"reason,omitempty"`
	Owner     string          `json:"owner,omitempty"`
	CreatedAt time.Time       `json:"created_at"`
	UpdatedAt time.Time       `json:"updated_at"`
}

// Tasks lists tasks, newest first, optionally in the given states.
func (c *Core) Tasks(ctx context.Context, states []model.TaskState, limit int) ([]TaskSummary, error) {
	for _, s := range states {
		switch s {
		case model.TaskPending, model.TaskPlaced, model.TaskSubmitted, model.TaskQueued, model.TaskRunning,
			model.TaskSucceeded, model.TaskFailed, model.TaskCancelled:
		default:
			return nil, fmt.Errorf("state %q: want pending, placed, submitted, queued, running, succeeded, failed or cancelled: %w", s, ErrInvalid)
		}
	}
	owner := "" // an admin lists everyone's tasks
	if caller := model.CallerOf(ctx); !caller.Admin {
		owner = caller.Name
	}
	rows, err := c.store.TasksOf(ctx, owner, states, limit)
	if err != nil {
		return nil, err
	}
	out := make([]TaskSummary, 0, len(rows))
	for _, r := range rows {
		s := TaskSummary{ID: r.ID, Name: r.Name, State: r.State, Pinned: r.Target != nil, Reason: r.Reason, Owner: r.Owner,
			CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
		atts, err := c.store.Attempts(ctx, r.ID)
		if err != nil {
			return nil, err
		}
		s.Attempts = len(atts)
		if n := len(atts); n > 0 {
			a := atts[n-1]
			s.System, s.Partition, s.JobID, s.JobState = a.System, a.Partition, a.JobID, a.State
			s.Sizing = a.Spec.Size()
		}
		out = append(out, s)
	}
	return out, nil
}

// CancelTask cancels a task's jobs.
func (c *Core) CancelTask(ctx context.Context, id string) (*TaskDetail, error) {
	if _, err := c.Task(ctx, id); err != nil {
		return nil, err
	}
	if err := c.engine.Cancel(ctx, id, "cancelled by the user"); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	c.audit(ctx, "task.cancel", id, "")
	return c.Task(ctx, id)
}

// ReplanTask places a task anew, optionally dropping its pin.
func (c *Core) ReplanTask(ctx context.Context, id string, clearTarget bool) (*TaskDetail, error) {
	if _, err := c.Task(ctx, id); err != nil {
		return nil, err
	}
	if err := c.engine.Replan(ctx, id, clearTarget); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	detail := ""
	if clearTarget {
		detail = "pin dropped"
	}
	c.audit(ctx, "task.replan", id, detail)
	return c.Task(ctx, id)
}
