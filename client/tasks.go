package client

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	v1 "github.com/mosaic-hpc/mosaic/api/v1"
)

// Task types (aliases of the api/v1 wire types).
type (
	SubmitRequest = v1.SubmitRequest
	SubmitResult  = v1.SubmitResult
	TaskDetail    = v1.TaskDetail
	TaskSummary   = v1.TaskSummary
	Decision      = v1.Decision
	Envelope      = v1.Envelope
	Event         = v1.Event
	Logs          = v1.Logs
	EventPage     = v1.EventPage
	DraftResult   = v1.DraftResult
)

// Submit submits a task (or, with DryRun, only places it).
//
// Each call sends its own Idempotency-Key, so the retries of one call (across
// replicas during a leader change, see New) create at most one task.
func (c *Client) Submit(ctx context.Context, req SubmitRequest) (*SubmitResult, error) {
	return c.SubmitIdempotent(ctx, req, NewIdempotencyKey())
}

// SubmitIdempotent is Submit with the caller's idempotency key: a program that
// retries a submission itself (after an error, or after it restarted) passes the same
// key each time and gets the one task the first try that reached the core created.
func (c *Client) SubmitIdempotent(ctx context.Context, req SubmitRequest, key string) (*SubmitResult, error) {
	var r SubmitResult
	return &r, c.doWith(ctx, http.MethodPost, "/api/tasks", nil, req, &r, http.Header{"Idempotency-Key": {key}})
}

// NewIdempotencyKey returns a random key for one logical submission.
func NewIdempotencyKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Task returns one task with attempts and decision trace.
func (c *Client) Task(ctx context.Context, id string) (*TaskDetail, error) {
	var t TaskDetail
	return &t, c.do(ctx, http.MethodGet, "/api/tasks/"+url.PathEscape(id), nil, nil, &t)
}

// Tasks lists tasks, newest first, optionally only those in the given states.
func (c *Client) Tasks(ctx context.Context, states []string, limit int) ([]TaskSummary, error) {
	q := url.Values{}
	if len(states) > 0 {
		q.Set("state", strings.Join(states, ","))
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var out struct {
		Tasks []TaskSummary `json:"tasks"`
	}
	return out.Tasks, c.do(ctx, http.MethodGet, "/api/tasks", q, nil, &out)
}

// Cancel cancels a task.
func (c *Client) Cancel(ctx context.Context, id string) (*TaskDetail, error) {
	var t TaskDetail
	return &t, c.do(ctx, http.MethodPost, "/api/tasks/"+url.PathEscape(id)+"/cancel", nil, nil, &t)
}

// Replan places a task anew, optionally without its pin.
func (c *Client) Replan(ctx context.Context, id string, clearTarget bool) (*TaskDetail, error) {
	var t TaskDetail
	return &t, c.do(ctx, http.MethodPost, "/api/tasks/"+url.PathEscape(id)+"/replan", nil,
		map[string]bool{"clear_target": clearTarget}, &t)
}

// TaskLogs returns stdout/stderr tails of a task's job (attempt 0 = latest), read
// from where the job's output was recorded (also after a restart of the core).
func (c *Client) TaskLogs(ctx context.Context, id string, attempt, tail int) (*Logs, error) {
	q := url.Values{}
	if attempt > 0 {
		q.Set("attempt", strconv.Itoa(attempt))
	}
	if tail > 0 {
		q.Set("tail", strconv.Itoa(tail))
	}
	var l Logs
	return &l, c.do(ctx, http.MethodGet, "/api/tasks/"+url.PathEscape(id)+"/logs", q, nil, &l)
}

// EventFilter selects events.
type EventFilter = v1.EventQuery

func eventQuery(f EventFilter) url.Values {
	q := url.Values{}
	if f.Task != "" {
		q.Set("task", f.Task)
	}
	if f.Since != "" {
		q.Set("since", f.Since)
	}
	if f.AfterID > 0 {
		q.Set("after_id", strconv.FormatInt(f.AfterID, 10))
	}
	if f.BeforeID > 0 {
		q.Set("before", strconv.FormatInt(f.BeforeID, 10))
	}
	if len(f.Kinds) > 0 {
		q.Set("kind", strings.Join(f.Kinds, ","))
	}
	if f.Limit > 0 {
		q.Set("limit", strconv.Itoa(f.Limit))
	}
	if f.Order != "" {
		q.Set("order", f.Order)
	}
	return q
}

// Events returns activity-log entries: the newest first (at most Limit of them, default
// 200), or oldest first after AfterID.
func (c *Client) Events(ctx context.Context, f EventFilter) ([]Event, error) {
	p, err := c.EventsPage(ctx, f)
	if err != nil {
		return nil, err
	}
	return p.Events, nil
}

// EventsPage is Events with the cursors to continue: NextBefore for older events,
// NextAfter for newer ones, LastID to follow the stream from.
func (c *Client) EventsPage(ctx context.Context, f EventFilter) (*EventPage, error) {
	var out EventPage
	if err := c.do(ctx, http.MethodGet, "/api/events", eventQuery(f), nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// DraftEnvelope drafts an envelope from a description; the result names its drafter.
func (c *Client) DraftEnvelope(ctx context.Context, name, description string) (*DraftResult, error) {
	var out DraftResult
	err := c.do(ctx, http.MethodPost, "/api/envelope/generate", nil, map[string]string{"name": name, "description": description}, &out)
	return &out, err
}
