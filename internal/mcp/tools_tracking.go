package mcp

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	v1 "github.com/mosaic-hpc/mosaic/api/v1"
	"github.com/mosaic-hpc/mosaic/internal/model"
)

// Bounds of wait_task. MCP clients time requests out (often after 60 s unless progress
// resets the timer), so the default stays well below that. With a backend that streams
// events, wait_task looks at the task when one of its events arrives (and once more
// shortly after: a task's state may change in the transaction after its event), and
// polls only every safetyPoll in case the stream broke unnoticed.
const (
	defaultWait = 30 * time.Second
	maxWait     = 10 * time.Minute
	safetyPoll  = 30 * time.Second
	recheck     = time.Second
)

// WaitTaskIn says what to wait for.
type WaitTaskIn struct {
	ID             string `json:"id"`
	TimeoutSeconds int    `json:"timeout_seconds,omitempty" jsonschema:"give up after this long (default 30, at most 600); call again to keep waiting"`
	Until          string `json:"until,omitempty" jsonschema:"final (default: succeeded, failed or cancelled) or running (running or final)"`
}

// WaitTaskOut is the task when the wait ended.
type WaitTaskOut struct {
	Task     *TaskView `json:"task"`
	Reached  bool      `json:"reached" jsonschema:"true if the task reached the awaited state; false if the wait timed out"`
	Waited   string    `json:"waited"`
	Progress []string  `json:"progress" jsonschema:"the state changes seen while waiting"`
}

// RecentEventsIn filters the activity log.
type RecentEventsIn struct {
	Task     string   `json:"task,omitempty" jsonschema:"only this task's events"`
	Since    string   `json:"since,omitempty" jsonschema:"RFC 3339 time or a duration back from now (1h, 30m)"`
	AfterID  int64    `json:"after_id,omitempty" jsonschema:"only events with a larger id (pass last_id of the previous call to page forward)"`
	Before   int64    `json:"before,omitempty" jsonschema:"only events with a smaller id (pass older_before of the previous call to page back)"`
	BeforeID int64    `json:"before_id,omitempty" jsonschema:"deprecated alias of before (still accepted)"`
	Kind     []string `json:"kind,omitempty" jsonschema:"only these kinds: decision, dispatch, transition, continuation, failure, finished, cancelled, replan, recovery, draft"`
	Kinds    []string `json:"kinds,omitempty" jsonschema:"deprecated alias of kind (still accepted)"`
	Limit    int      `json:"limit,omitempty" jsonschema:"at most this many (default 50, at most 1000)"`
}

// RecentEventsOut is a page of the activity log.
type RecentEventsOut struct {
	Count       int        `json:"count"`
	LastID      int64      `json:"last_id" jsonschema:"the largest id returned; pass it as after_id to get only newer events"`
	OlderBefore int64      `json:"older_before,omitempty" jsonschema:"set when older events exist: pass it as before to read them"`
	Events      []v1.Event `json:"events" jsonschema:"oldest first; actor says who acted (rules, ai, user, system) and rationale why"`
}

// eventKinds are the kinds the core writes.
var eventKinds = []string{"decision", "dispatch", "transition", "continuation", "failure", "finished", "cancelled", "replan", "recovery", "draft"}

func (t *tools) registerTracking(s *mcp.Server) {
	addTool(s, "wait_task", "Wait for a task",
		"Blocks until the task is final (or running, with until=running) or timeout_seconds passes, sending "+
			"progress notifications on each state change when the request carries a progress token. A timeout is "+
			"not an error: reached=false, call again to keep waiting.",
		readOnly, t.waitTask)
	addTool(s, "recent_events", "Read the activity log",
		"Decisions, dispatches, job state transitions, continuations (retry, resize, migrate) and failures, each "+
			"with who acted and why: the newest ones (oldest first). Filter by task, time, kind; page forward with "+
			"after_id, back with before.",
		readOnly, t.recentEvents)
}

func (t *tools) waitTask(ctx context.Context, req *mcp.CallToolRequest, in WaitTaskIn) (*WaitTaskOut, error) {
	if err := checkID(in.ID); err != nil {
		return nil, err
	}
	if in.TimeoutSeconds < 0 || time.Duration(in.TimeoutSeconds)*time.Second > maxWait {
		return nil, invalid("timeout_seconds %d: want 1 to %d (omit for %d)", in.TimeoutSeconds, int(maxWait.Seconds()), int(defaultWait.Seconds()))
	}
	until := strings.ToLower(strings.TrimSpace(in.Until))
	if until == "" {
		until = "final"
	}
	if until != "final" && until != "running" {
		return nil, invalid("until %q: want final or running", in.Until)
	}
	timeout := defaultWait
	if in.TimeoutSeconds > 0 {
		timeout = time.Duration(in.TimeoutSeconds) * time.Second
	}
	b, err := t.backend(ctx)
	if err != nil {
		return nil, err
	}
	var token any
	if req != nil && req.Params != nil {
		token = req.Params.GetProgressToken()
	}
	start := time.Now()
	deadline := start.Add(timeout)
	reached := func(s string) bool {
		return v1.FinalTaskState(s) || (until == "running" && s == string(model.TaskRunning))
	}
	out := &WaitTaskOut{Progress: []string{}}
	var last string
	poll := t.poll
	wake := make(chan struct{}, 1)
	// Take the stream's position before the first look at the task, so an event
	// between the two is not missed; then look again on each of its events.
	if page, err := b.EventsPage(ctx, v1.EventQuery{Task: in.ID, Limit: 1}); err == nil {
		fctx, cancel := context.WithCancel(ctx)
		defer cancel()
		go b.FollowTask(fctx, in.ID, page.LastID, timeout, func(v1.Event) error {
			select {
			case wake <- struct{}{}:
			default:
			}
			return nil
		})
		poll = max(poll, safetyPoll)
	}
	tick := time.NewTicker(poll)
	defer tick.Stop()
	again := time.NewTimer(time.Hour)
	again.Stop()
	for step := 1; ; step++ {
		td, err := b.Task(ctx, in.ID)
		if err != nil {
			return nil, fmt.Errorf("task %s: %w", in.ID, err)
		}
		done := reached(td.State)
		if td.State != last {
			msg := describeState(td)
			out.Progress = append(out.Progress, time.Now().UTC().Format(time.RFC3339)+" "+msg)
			// The state that ends the wait travels in the result: a notification sent
			// just before the response may reach the client after it, when the client
			// has already dropped the progress handler.
			if token != nil && req.Session != nil && !done {
				// Progress must increase; the total is unknown (a queue wait is open-ended).
				if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token,
					Progress: float64(len(out.Progress)), Message: msg}); err != nil {
					t.log.Debug("progress notification", "task", in.ID, "err", err)
				}
			}
			last = td.State
		}
		if done || !time.Now().Before(deadline) {
			if out.Task, err = viewOf(td, false); err != nil {
				return nil, err
			}
			out.Reached = done
			out.Waited = time.Since(start).Round(time.Millisecond).String()
			if !done {
				out.Task.Next = fmt.Sprintf("still %s after %s; call wait_task again to keep waiting. ", td.State, out.Waited) + out.Task.Next
			}
			return out, nil
		}
		timeLeft := time.NewTimer(time.Until(deadline))
		select {
		case <-ctx.Done():
			timeLeft.Stop()
			return nil, fmt.Errorf("wait_task %s was cancelled after %s: %w", in.ID, time.Since(start).Round(time.Second), ctx.Err())
		case <-wake:
			again.Reset(recheck)
		case <-again.C:
		case <-tick.C:
		case <-timeLeft.C:
		}
		timeLeft.Stop()
	}
}

// describeState is one line about a task's state and its latest attempt.
func describeState(td *v1.TaskDetail) string {
	msg := "task " + td.ID + " " + string(td.State)
	if n := len(td.Attempts); n > 0 {
		a := td.Attempts[n-1]
		msg += fmt.Sprintf(" (attempt %d on %s/%s", a.N, a.System, a.Partition)
		if a.JobID != "" {
			msg += ", job " + a.JobID
		}
		msg += ", job state " + string(a.State) + ")"
	}
	if td.Reason != "" {
		msg += ": " + td.Reason
	}
	return msg
}

func (t *tools) recentEvents(ctx context.Context, _ *mcp.CallToolRequest, in RecentEventsIn) (*RecentEventsOut, error) {
	if in.Limit < 0 || in.Limit > 1000 {
		return nil, invalid("limit %d: want 1 to 1000 (omit for 50)", in.Limit)
	}
	if in.AfterID < 0 {
		return nil, invalid("after_id must not be negative")
	}
	kinds, err := pickList(in.Kind, in.Kinds, "kind", "kinds")
	if err != nil {
		return nil, err
	}
	for _, k := range kinds {
		if !slices.Contains(eventKinds, k) {
			return nil, invalid("kind %q: want one of %s", k, strings.Join(eventKinds, ", "))
		}
	}
	if in.Since != "" {
		if _, err := time.Parse(time.RFC3339, in.Since); err != nil {
			if d, err := time.ParseDuration(in.Since); err != nil || d <= 0 {
				return nil, invalid("since %q: want an RFC 3339 time (2026-01-02T15:04:05Z) or a positive duration (1h, 30m)", in.Since)
			}
		}
	}
	limit := in.Limit
	if limit == 0 {
		limit = 50
	}
	b, err := t.backend(ctx)
	if err != nil {
		return nil, err
	}
	before, err := pickInt(in.Before, in.BeforeID, "before", "before_id")
	if err != nil {
		return nil, err
	}
	if before < 0 {
		return nil, invalid("before must not be negative")
	}
	f := v1.EventQuery{Task: in.Task, Since: in.Since, AfterID: in.AfterID, BeforeID: before, Kinds: kinds, Limit: limit}
	if in.AfterID == 0 {
		f.Order = "newest" // the newest page, below before_id if given
	}
	page, err := b.EventsPage(ctx, f)
	if err != nil {
		return nil, err
	}
	evs, older := page.Events, page.NextBefore
	if f.Order == "newest" {
		slices.Reverse(evs) // oldest first, as documented
	}
	out := &RecentEventsOut{Events: evs, Count: len(evs), OlderBefore: older}
	if out.Events == nil {
		out.Events = []v1.Event{}
	}
	for _, e := range evs {
		out.LastID = max(out.LastID, e.ID)
	}
	return out, nil
}
