package client

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/mosaic-hpc/mosaic/internal/core"
	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/scheduler"
	"github.com/mosaic-hpc/mosaic/internal/scheduler/draft"
)

// Task types.
type (
	SubmitRequest = core.SubmitRequest
	SubmitResult  = core.SubmitResult
	TaskDetail    = core.TaskDetail
	TaskSummary   = core.TaskSummary
	Decision      = scheduler.Decision
	Envelope      = model.Envelope
	Event         = model.Event
	Logs          = model.Logs
	DraftResult   = draft.Result
)

// Submit submits a task (or, with DryRun, only places it).
func (c *Client) Submit(ctx context.Context, req SubmitRequest) (*SubmitResult, error) {
	var r SubmitResult
	return &r, c.do(ctx, http.MethodPost, "/api/tasks", nil, req, &r)
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

// TaskLogs returns stdout/stderr tails of a task's job (attempt 0 = latest).
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
type EventFilter struct {
	Task    string
	Since   string // RFC 3339 or a duration back from now
	AfterID int64
	Kinds   []string
	Limit   int
}

// Events returns activity-log entries.
func (c *Client) Events(ctx context.Context, f EventFilter) ([]Event, error) {
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
	if len(f.Kinds) > 0 {
		q.Set("kind", strings.Join(f.Kinds, ","))
	}
	if f.Limit > 0 {
		q.Set("limit", strconv.Itoa(f.Limit))
	}
	var out struct {
		Events []Event `json:"events"`
	}
	return out.Events, c.do(ctx, http.MethodGet, "/api/events", q, nil, &out)
}

// StreamEvents follows the server-sent-events stream, calling fn for each new event
// until ctx ends, fn returns an error, or the stream closes.
func (c *Client) StreamEvents(ctx context.Context, task string, afterID int64, fn func(Event) error) error {
	u := *c.base
	u.Path = strings.TrimRight(u.Path, "/") + "/api/events/stream"
	q := url.Values{}
	if task != "" {
		q.Set("task", task)
	}
	if afterID > 0 {
		q.Set("after_id", strconv.FormatInt(afterID, 10))
	}
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Accept", "text/event-stream")
	hc := *c.http
	hc.Timeout = 0 // a stream lives as long as ctx
	resp, err := hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("%w at %s; start one with `mosaic serve`", ErrNoCore, c.base)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return &APIError{Status: resp.StatusCode, Title: http.StatusText(resp.StatusCode)}
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	event := ""
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event:"):
			event = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case strings.HasPrefix(line, "data:") && event == "event":
			var e Event
			if err := json.Unmarshal([]byte(strings.TrimSpace(strings.TrimPrefix(line, "data:"))), &e); err != nil {
				return fmt.Errorf("event stream: %w", err)
			}
			if err := fn(e); err != nil {
				return err
			}
		case line == "":
			event = ""
		}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return sc.Err()
}

// DraftEnvelope drafts an envelope from a description.
func (c *Client) DraftEnvelope(ctx context.Context, name, description string) (*DraftResult, string, error) {
	var out struct {
		DraftResult
		Drafter string `json:"drafter"`
	}
	err := c.do(ctx, http.MethodPost, "/api/envelope/generate", nil, map[string]string{"name": name, "description": description}, &out)
	return &out.DraftResult, out.Drafter, err
}
