package mcp

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	v1 "github.com/mosaic-hpc/mosaic/api/v1"
	"github.com/mosaic-hpc/mosaic/internal/core"
	"github.com/mosaic-hpc/mosaic/internal/model"
)

// DraftEnvelopeIn describes a job to size.
type DraftEnvelopeIn struct {
	Name        string `json:"name,omitempty" jsonschema:"short task name"`
	Description string `json:"description" jsonschema:"what the job does: model size, training or inference, data, expected duration"`
}

// Bounds of draft_envelope's arguments (those of POST /api/envelope/generate).
const (
	maxDraftName        = 128
	maxDraftDescription = 20000
)

// DraftEnvelopeOut is a drafted envelope.
type DraftEnvelopeOut struct {
	Envelope       v1.Envelope `json:"envelope" jsonschema:"[min viable, max useful] ranges plus constraints; pass it to submit_task as envelope, edited if needed"`
	Drafter        string      `json:"drafter" jsonschema:"heuristic, or the LLM that drafted it"`
	FallbackReason string      `json:"fallback_reason,omitempty" jsonschema:"why an LLM draft was not used"`
}

// SubmitTaskIn is a task to place and run.
type SubmitTaskIn struct {
	Name         string          `json:"name" jsonschema:"short task name"`
	Command      string          `json:"command,omitempty" jsonschema:"shell command line the job runs (or give script)"`
	Script       string          `json:"script,omitempty" jsonschema:"full batch script body, instead of command"`
	Description  string          `json:"description,omitempty" jsonschema:"what the task does; with auto_envelope Mosaic drafts the envelope from it"`
	Envelope     *model.Envelope `json:"envelope,omitempty" jsonschema:"resource envelope, e.g. from draft_envelope; omit with auto_envelope"`
	AutoEnvelope bool            `json:"auto_envelope,omitempty" jsonschema:"draft the envelope from the description"`
	Target       string          `json:"target,omitempty" jsonschema:"pin: SYSTEM or SYSTEM:PARTITION (e.g. delta:gpuA100x4); omit for auto placement. The rules still apply to a pin"`
	Objective    model.Objective `json:"objective,omitempty" jsonschema:"earliest_start (default), fastest_finish, max_throughput or min_cost"`
	Policy       *model.Policy   `json:"policy,omitempty" jsonschema:"continuation policy (retries, resize, migration); defaults are sensible"`
	DryRun       bool            `json:"dry_run,omitempty" jsonschema:"only place: return the decision without storing or submitting"`
	FullTrace    bool            `json:"full_trace,omitempty" jsonschema:"include every rule verdict and every infeasible candidate in the trace"`
}

// SubmitTaskOut is the result of a submission.
type SubmitTaskOut struct {
	DryRun bool      `json:"dry_run"`
	Task   *TaskView `json:"task,omitempty" jsonschema:"the stored task (absent on dry run)"`
	Trace  *Trace    `json:"trace" jsonschema:"the placement decision"`
}

// TaskIn names a task.
type TaskIn struct {
	ID        string `json:"id" jsonschema:"task id, as submit_task returned it"`
	FullTrace bool   `json:"full_trace,omitempty" jsonschema:"include every rule verdict and every infeasible candidate"`
}

// ListTasksIn filters list_tasks.
type ListTasksIn struct {
	State  []model.TaskState `json:"state,omitempty" jsonschema:"only tasks in these states (pending, placed, submitted, queued, running, succeeded, failed, cancelled)"`
	States []model.TaskState `json:"states,omitempty" jsonschema:"deprecated alias of state (still accepted)"`
	Limit  int               `json:"limit,omitempty" jsonschema:"at most this many, newest first (default 20, at most 500)"`
}

// ListTasksOut lists tasks, newest first.
type ListTasksOut struct {
	Count int              `json:"count"`
	Tasks []v1.TaskSummary `json:"tasks" jsonschema:"newest first: id, name, state, where the latest attempt runs, its job id and state"`
}

// taskStates are the valid task states.
var taskStates = []model.TaskState{model.TaskPending, model.TaskPlaced, model.TaskSubmitted, model.TaskQueued,
	model.TaskRunning, model.TaskSucceeded, model.TaskFailed, model.TaskCancelled}

// ReplanTaskIn asks for a new placement.
type ReplanTaskIn struct {
	ID          string `json:"id"`
	ClearTarget bool   `json:"clear_target,omitempty" jsonschema:"drop the pin and let the meta-scheduler choose anywhere"`
}

// TaskLogsIn selects log tails.
type TaskLogsIn struct {
	ID        string `json:"id"`
	Attempt   int    `json:"attempt,omitempty" jsonschema:"attempt number; 0 or omitted = the latest submitted"`
	Tail      int    `json:"tail,omitempty" jsonschema:"bytes from the end of each stream (default 16384, at most 1048576)"`
	TailBytes int    `json:"tail_bytes,omitempty" jsonschema:"deprecated alias of tail (still accepted)"`
}

func (t *tools) registerTasks(s *mcp.Server) {
	addTool(s, "draft_envelope", "Draft a resource envelope",
		"Drafts a resource envelope ([min viable, max useful] GPUs, cores, memory, walltime, constraints) from a "+
			"description, with an LLM when the core has one configured, heuristics otherwise. Review it, then pass it to submit_task.",
		readOnly, t.draftEnvelope)
	addTool(s, "submit_task", "Submit a task",
		"Places a task with the rule chain and ranker and submits it: auto placement (no target) or pinned "+
			"(target SYSTEM[:PARTITION]). dry_run returns only the decision. An infeasible request is refused with "+
			"each system's failing rule. Returns the task with its decision trace; follow it with wait_task.",
		mutating, t.submitTask)
	addTool(s, "get_task", "Get a task",
		"One task: state, every attempt (system, partition, job id, job state, exit code), the decision trace "+
			"(candidates, rule verdicts, scores, ranks, rationale) and a hint for the next step.",
		readOnly, t.getTask)
	addTool(s, "list_tasks", "List tasks",
		"The user's tasks, newest first, optionally only those in some states: a one-line summary each. "+
			"Use it to find a task id again; get_task has the details.",
		readOnly, t.listTasks)
	addTool(s, "cancel_task", "Cancel a task",
		"Cancels the task's jobs at their sites. Cancelling a final task is refused.",
		stopping, t.cancelTask)
	addTool(s, "replan_task", "Replan a task",
		"Places a task anew from the current snapshot (clear_target drops its pin); a job still pending at a site "+
			"is replaced by one on the new choice. Use it when the queue wait is too long.",
		mutating, t.replanTask)
	addTool(s, "task_logs", "Read a task's output",
		"Tails of the stdout and stderr files of a task's job (latest attempt unless attempt is given), read "+
			"from where the job's output was recorded (also after a restart of the core). A job that has not "+
			"started has empty tails and a note; files that are gone or a site that is down are errors saying so.",
		readOnly, t.taskLogs)
}

func (t *tools) draftEnvelope(ctx context.Context, _ *mcp.CallToolRequest, in DraftEnvelopeIn) (*DraftEnvelopeOut, error) {
	if strings.TrimSpace(in.Description) == "" {
		return nil, invalid("description is empty; describe the job (model size, training or inference, expected duration)")
	}
	// The bounds of the HTTP API's generate-envelope operation, for both backends.
	if utf8.RuneCountInString(in.Name) > maxDraftName || utf8.RuneCountInString(in.Description) > maxDraftDescription {
		return nil, invalid("name is at most %d characters and description at most %d; shorten them", maxDraftName, maxDraftDescription)
	}
	b, err := t.backend(ctx)
	if err != nil {
		return nil, err
	}
	r, err := b.DraftEnvelope(ctx, in.Name, in.Description)
	if err != nil {
		return nil, err
	}
	return &DraftEnvelopeOut{Envelope: r.Envelope, Drafter: r.Drafter, FallbackReason: r.FallbackReason}, nil
}

func (t *tools) submitTask(ctx context.Context, _ *mcp.CallToolRequest, in SubmitTaskIn) (*SubmitTaskOut, error) {
	if strings.TrimSpace(in.Name) == "" {
		return nil, invalid("name is empty; give the task a short name")
	}
	if strings.TrimSpace(in.Command) == "" && strings.TrimSpace(in.Script) == "" {
		return nil, invalid("give command (a shell command line) or script (a batch script body)")
	}
	if in.Envelope == nil && !in.AutoEnvelope && strings.TrimSpace(in.Description) == "" {
		return nil, invalid("no envelope: pass envelope (e.g. from draft_envelope) or auto_envelope=true with a description")
	}
	if in.Objective != "" && !slices.Contains(model.Objectives, in.Objective) {
		return nil, invalid("objective %q: want one of %v", in.Objective, model.Objectives)
	}
	b, err := t.backend(ctx)
	if err != nil {
		return nil, err
	}
	// The arguments are read with the core's own types (every duration form a user
	// types), then travel as the API's wire request.
	res, err := b.Submit(ctx, core.V1SubmitRequest(core.SubmitRequest{Name: in.Name, Command: in.Command, Script: in.Script,
		Description: in.Description, Envelope: in.Envelope, AutoEnvelope: in.AutoEnvelope, Target: in.Target,
		Objective: in.Objective, Policy: in.Policy, DryRun: in.DryRun}))
	if err != nil {
		return nil, err
	}
	out := &SubmitTaskOut{DryRun: res.DryRun, Trace: traceOf(res.Decision, in.FullTrace)}
	if res.Task != nil {
		if out.Task, err = viewOf(res.Task, in.FullTrace); err != nil {
			return nil, err
		}
		out.Task.Trace = nil // the same decision is in out.Trace
	}
	if out.Trace == nil {
		out.Trace = &Trace{Rules: []string{}, Candidates: []TraceCandidate{}}
	}
	return out, nil
}

func (t *tools) listTasks(ctx context.Context, _ *mcp.CallToolRequest, in ListTasksIn) (*ListTasksOut, error) {
	if in.Limit < 0 || in.Limit > 500 {
		return nil, invalid("limit %d: want 1 to 500 (omit for 20)", in.Limit)
	}
	want, err := pickList(in.State, in.States, "state", "states")
	if err != nil {
		return nil, err
	}
	states := make([]string, 0, len(want))
	for _, st := range want {
		if !slices.Contains(taskStates, st) {
			return nil, invalid("state %q: want one of %v", st, taskStates)
		}
		states = append(states, string(st))
	}
	limit := in.Limit
	if limit == 0 {
		limit = 20
	}
	b, err := t.backend(ctx)
	if err != nil {
		return nil, err
	}
	ts, err := b.Tasks(ctx, states, limit)
	if err != nil {
		return nil, err
	}
	if ts == nil {
		ts = []v1.TaskSummary{}
	}
	return &ListTasksOut{Count: len(ts), Tasks: ts}, nil
}

func checkID(id string) error {
	if strings.TrimSpace(id) == "" {
		return invalid("id is empty; pass the task id submit_task returned (list_tasks shows recent ones)")
	}
	if len(id) > 64 {
		return invalid("id is %d characters; task ids are short (8 characters)", len(id))
	}
	return nil
}

func (t *tools) taskCall(ctx context.Context, id string, full bool, call func(Backend) (*v1.TaskDetail, error)) (*TaskView, error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	b, err := t.backend(ctx)
	if err != nil {
		return nil, err
	}
	td, err := call(b)
	if err != nil {
		return nil, fmt.Errorf("task %s: %w", id, err)
	}
	return viewOf(td, full)
}

func (t *tools) getTask(ctx context.Context, _ *mcp.CallToolRequest, in TaskIn) (*TaskView, error) {
	return t.taskCall(ctx, in.ID, in.FullTrace, func(b Backend) (*v1.TaskDetail, error) { return b.Task(ctx, in.ID) })
}

func (t *tools) cancelTask(ctx context.Context, _ *mcp.CallToolRequest, in TaskIn) (*TaskView, error) {
	return t.taskCall(ctx, in.ID, in.FullTrace, func(b Backend) (*v1.TaskDetail, error) { return b.Cancel(ctx, in.ID) })
}

func (t *tools) replanTask(ctx context.Context, _ *mcp.CallToolRequest, in ReplanTaskIn) (*TaskView, error) {
	return t.taskCall(ctx, in.ID, false, func(b Backend) (*v1.TaskDetail, error) { return b.Replan(ctx, in.ID, in.ClearTarget) })
}

func (t *tools) taskLogs(ctx context.Context, _ *mcp.CallToolRequest, in TaskLogsIn) (*v1.Logs, error) {
	if err := checkID(in.ID); err != nil {
		return nil, err
	}
	if in.Attempt < 0 {
		return nil, invalid("attempt %d: attempts are numbered from 1; omit it for the latest", in.Attempt)
	}
	tail, err := pickInt(in.Tail, in.TailBytes, "tail", "tail_bytes")
	if err != nil {
		return nil, err
	}
	if tail < 0 || tail > 1<<20 {
		return nil, invalid("tail %d: want 1 to 1048576 (omit for 16384)", tail)
	}
	if tail == 0 {
		tail = 16 << 10
	}
	b, err := t.backend(ctx)
	if err != nil {
		return nil, err
	}
	l, err := b.TaskLogs(ctx, in.ID, in.Attempt, tail)
	if err != nil {
		return nil, fmt.Errorf("task %s: %w", in.ID, err)
	}
	return l, nil
}
