package api

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/sse"

	v1 "github.com/mosaic-hpc/mosaic/api/v1"
	"github.com/mosaic-hpc/mosaic/internal/core"
	"github.com/mosaic-hpc/mosaic/internal/model"
)

type submitIn struct {
	IdempotencyKey string `header:"Idempotency-Key" maxLength:"255" doc:"Makes a retry safe: a second submission with the same key returns the task the first created (200) instead of creating another"`
	Body           core.SubmitRequest
}

type submitOut struct {
	Status int
	Body   *v1.SubmitResult
}

type taskIn struct {
	ID string `path:"id" maxLength:"64"`
}

type taskOut struct{ Body *v1.TaskDetail }

type tasksIn struct {
	State string `query:"state" doc:"Comma-separated states: pending, placed, submitted, queued, running, succeeded, failed, cancelled"`
	Limit int    `query:"limit" minimum:"0" maximum:"10000" doc:"At most this many (default 1000)"`
}

type tasksOut struct {
	Body struct {
		Tasks []v1.TaskSummary `json:"tasks"`
	}
}

type replanIn struct {
	ID   string `path:"id" maxLength:"64"`
	Body *struct {
		ClearTarget bool `json:"clear_target,omitempty" doc:"Drop the pin and let the meta-scheduler choose"`
	} `required:"false"`
}

type logsIn struct {
	ID      string `path:"id" maxLength:"64"`
	Attempt int    `query:"attempt" minimum:"0" doc:"Attempt number; 0 = the latest submitted"`
	Tail    int    `query:"tail" minimum:"0" maximum:"1048576" doc:"Bytes from the end of each stream (default 65536)"`
}

type logsOut struct{ Body *v1.Logs }

type eventsIn struct {
	Task    string `query:"task" doc:"Only this task's events"`
	Since   string `query:"since" doc:"RFC 3339 time or a duration back from now (1h)"`
	AfterID int64  `query:"after_id" minimum:"0" doc:"Only events with a larger id (cursor for newer events; the page is then oldest first)"`
	Before  int64  `query:"before" minimum:"0" doc:"Only events with a smaller id (cursor for older pages: next_before of the previous page)"`
	Kind    string `query:"kind" doc:"Comma-separated kinds: decision, dispatch, transition, continuation, failure, finished, cancelled, replan, recovery, draft"`
	Limit   int    `query:"limit" minimum:"0" maximum:"10000" doc:"At most this many (default 200)"`
	Order   string `query:"order" doc:"newest (newest first; the default) or oldest (oldest first; the default with after_id)"`
}

type eventsOut struct {
	Body *v1.EventPage
}

// streamIn selects where the event stream starts. Resolve picks the cursor: the
// Last-Event-ID header an EventSource (or the CLI) resends on reconnecting, or
// after_id, whichever is later; without either the stream starts at the newest event.
type streamIn struct {
	Task        string `query:"task" doc:"Only this task's events"`
	AfterID     int64  `query:"after_id" minimum:"0" doc:"Replay events with a larger id, then follow (0 replays everything)"`
	LastEventID string `header:"Last-Event-ID" doc:"The id of the last event received (sent by EventSource on reconnect): replay what came after it"`

	cursor    int64
	hasCursor bool
}

// Resolve implements huma.Resolver.
func (in *streamIn) Resolve(ctx huma.Context) []error {
	if v := strings.TrimSpace(in.LastEventID); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return []error{&huma.ErrorDetail{Location: "header.Last-Event-ID", Message: "want the id of an event (a non-negative integer)", Value: v}}
		}
		in.cursor, in.hasCursor = n, true
	}
	if u := ctx.URL(); u.Query().Has("after_id") && (!in.hasCursor || in.AfterID > in.cursor) {
		in.cursor, in.hasCursor = in.AfterID, true
	}
	return nil
}

type envelopeIn struct {
	Body struct {
		Name        string `json:"name,omitempty" maxLength:"128"`
		Description string `json:"description" minLength:"1" maxLength:"20000"`
	}
}

type envelopeOut struct {
	Body *v1.DraftResult
}

func (s *Server) registerTasks() {
	huma.Register(s.api, huma.Operation{
		OperationID: "submit-task", Method: http.MethodPost, Path: "/api/tasks",
		Summary: "Submit a task (auto-placed or pinned); dry_run returns the decision only", Tags: []string{"tasks"},
		Errors:        apiErrors(409, 422, 503),
		DefaultStatus: http.StatusCreated,
		Description: "Validates the envelope (or drafts one from the description), runs the rule chain, sizing and " +
			"rankers, stores the task with its decision trace and submits attempt 1. An infeasible request or pin is " +
			"refused (422) with the failing rule's reason per system.",
	}, func(ctx context.Context, in *submitIn) (*submitOut, error) {
		res, err := s.core.SubmitTaskIdempotent(ctx, in.Body, in.IdempotencyKey)
		if err != nil {
			return nil, toHTTP(ctx, err)
		}
		st := http.StatusCreated
		if res.DryRun || res.Replayed {
			st = http.StatusOK
		}
		return &submitOut{Status: st, Body: core.V1SubmitResult(res)}, nil
	})

	huma.Register(s.api, huma.Operation{
		OperationID: "list-tasks", Method: http.MethodGet, Path: "/api/tasks",
		Summary: "List tasks, newest first", Tags: []string{"tasks"},
		Errors:      apiErrors(422),
		Description: "Task summaries (id, name, state, where it runs, attempts, times), newest first; state filters by one or more comma-separated states.",
	}, func(ctx context.Context, in *tasksIn) (*tasksOut, error) {
		var states []model.TaskState
		for _, st := range model.SplitList(in.State) {
			states = append(states, model.TaskState(st))
		}
		ts, err := s.core.Tasks(ctx, states, in.Limit)
		if err != nil {
			return nil, toHTTP(ctx, err)
		}
		out := &tasksOut{}
		out.Body.Tasks = core.V1TaskSummaries(ts)
		return out, nil
	})

	huma.Register(s.api, huma.Operation{
		OperationID: "get-task", Method: http.MethodGet, Path: "/api/tasks/{id}",
		Summary: "One task: state, attempts, decision trace", Tags: []string{"tasks"},
		Errors:      apiErrors(404),
		Description: "The task with its envelope, policy, every attempt (site, job id, state, exit code, times) and the latest placement decision: the rule chain, the candidate table with every verdict and score, and the chosen sizing.",
	}, func(ctx context.Context, in *taskIn) (*taskOut, error) {
		t, err := s.core.Task(ctx, in.ID)
		if err != nil {
			return nil, toHTTP(ctx, err)
		}
		return taskOutOf(t)
	})

	huma.Register(s.api, huma.Operation{
		OperationID: "cancel-task", Method: http.MethodPost, Path: "/api/tasks/{id}/cancel",
		Summary: "Cancel a task's jobs at their sites", Tags: []string{"tasks"},
		Errors:      apiErrors(404, 422),
		Description: "Cancels the task's open jobs at their sites (scancel/qdel) and marks it cancelled. A site that cannot be reached now does not fail the cancel: the task is cancelled and the monitor asks the site again every tick until the job is gone. 422 for a task that already ended, or that stayed busy (a placement or submission in progress) for longer than the wait. Answers the task as it stands after the cancel.",
	}, func(ctx context.Context, in *taskIn) (*taskOut, error) {
		t, err := s.core.CancelTask(ctx, in.ID)
		if err != nil {
			return nil, toHTTP(ctx, err)
		}
		return taskOutOf(t)
	})

	huma.Register(s.api, huma.Operation{
		OperationID: "replan-task", Method: http.MethodPost, Path: "/api/tasks/{id}/replan",
		Summary: "Place a task anew (clear_target drops its pin); a pending job is replaced", Tags: []string{"tasks"},
		Errors:      apiErrors(404, 422, 503),
		Description: "Runs placement again for a task that has not started: a pending job is replaced by one at the new choice (the old one cancelled first) when the choice changes. clear_target drops a pin so the meta-scheduler may choose freely. 422 when the task cannot be replanned (running or ended) or nothing can take it.",
	}, func(ctx context.Context, in *replanIn) (*taskOut, error) {
		clear := in.Body != nil && in.Body.ClearTarget
		t, err := s.core.ReplanTask(ctx, in.ID, clear)
		if err != nil {
			return nil, toHTTP(ctx, err)
		}
		return taskOutOf(t)
	})

	huma.Register(s.api, huma.Operation{
		OperationID: "get-task-logs", Method: http.MethodGet, Path: "/api/tasks/{id}/logs",
		Summary: "stdout/stderr tails of a task's job", Tags: []string{"tasks"},
		Errors: apiErrors(404, 422, 502, 503),
		Description: "Read from the output location recorded when the site accepted the job (also after a restart). " +
			"404: no job yet, or the files are gone; 503: the site is unreachable now. A job that has not started " +
			"returns empty tails with a note.",
	}, func(ctx context.Context, in *logsIn) (*logsOut, error) {
		l, err := s.core.TaskLogs(ctx, in.ID, in.Attempt, in.Tail)
		if err != nil {
			return nil, toHTTP(ctx, err)
		}
		return &logsOut{Body: core.V1Logs(l)}, nil
	})

	huma.Register(s.api, huma.Operation{
		OperationID: "list-events", Method: http.MethodGet, Path: "/api/events",
		Summary: "Activity log: decisions, dispatches, transitions, continuations, with rationales", Tags: []string{"events"},
		Errors: apiErrors(422),
		Description: "Newest first by default; limit keeps the newest N. Page back with before=next_before; read " +
			"forward (oldest first) with after_id.",
	}, func(ctx context.Context, in *eventsIn) (*eventsOut, error) {
		q, err := core.EventQueryFromV1(v1.EventQuery{Task: in.Task, Since: in.Since, AfterID: in.AfterID, BeforeID: in.Before,
			Kinds: model.SplitList(in.Kind), Limit: in.Limit, Order: in.Order}, time.Now())
		if err != nil {
			return nil, toHTTP(ctx, err)
		}
		page, err := s.core.EventPage(ctx, q)
		if err != nil {
			return nil, toHTTP(ctx, err)
		}
		return &eventsOut{Body: core.V1EventPage(page)}, nil
	})

	sse.Register(s.api, huma.Operation{
		OperationID: "stream-events", Method: http.MethodGet, Path: "/api/events/stream",
		Summary: "Server-sent events: each new activity-log entry as an `event` message", Tags: []string{"events"},
		Errors: apiErrors(422),
		Description: "Every message carries its event id. The stream starts with a `ready` message whose id is " +
			"the position it starts from; then it replays the events after the Last-Event-ID header (what " +
			"EventSource resends when it reconnects) or after_id, whichever is later (default: only new ones), " +
			"and follows. Reconnecting with the last id received loses nothing and repeats nothing, across " +
			"restarts of the core too. A `ping` keeps the connection alive every 15 s.",
	}, map[string]any{"event": v1.Event{}, "ping": ping{}, "ready": streamReady{}, "error": streamError{}}, func(ctx context.Context, in *streamIn, send sse.Sender) {
		s.streamEvents(ctx, in.Task, in.cursor, in.hasCursor, send)
	})

	huma.Register(s.api, huma.Operation{
		OperationID: "generate-envelope", Method: http.MethodPost, Path: "/api/envelope/generate",
		Summary: "Draft a resource envelope from a description (LLM when configured, heuristics otherwise)", Tags: []string{"tasks"},
		Errors:      apiErrors(422),
		Description: "Turns a plain-English description (\"train a 7B model on 4 A100s for about a day\") into a resource envelope: GPU, core, memory and walltime ranges, constraints and objective, each field with where it came from. Uses the configured LLM, else (or when the LLM fails) the heuristic drafter; the answer names which. Nothing is stored.",
	}, func(ctx context.Context, in *envelopeIn) (*envelopeOut, error) {
		r, err := s.core.DraftEnvelope(ctx, in.Body.Name, in.Body.Description)
		if err != nil {
			return nil, toHTTP(ctx, err)
		}
		return &envelopeOut{Body: core.V1Draft(r, s.core.About().Drafter)}, nil
	})
}

// streamEvents polls the store for new events (bounded batches) and sends them.
func (s *Server) streamEvents(ctx context.Context, task string, after int64, replay bool, send sse.Sender) {
	if !replay {
		// Start from now: find the newest id.
		evs, err := s.core.Events(ctx, core.EventQuery{TaskID: task, Limit: 1, Newest: true})
		if err != nil {
			send.Data(streamError{Error: err.Error()})
			return
		}
		if len(evs) > 0 {
			after = evs[0].ID
		}
	} else if after > 0 {
		// A cursor past the newest id cannot come from this store (ids only grow): the
		// client followed another one (or the database was replaced, serve --fresh).
		// Waiting for ids to pass it would hide everything, so replay this store instead.
		evs, err := s.core.Events(ctx, core.EventQuery{Limit: 1, Newest: true})
		if err != nil {
			send.Data(streamError{Error: err.Error()})
			return
		}
		if len(evs) == 0 || evs[0].ID < after {
			after = 0
		}
	}
	// The position goes out first (as the message id, so an EventSource resends it on
	// reconnect even if no event came in between); retry asks for a prompt reconnect.
	if err := send(sse.Message{ID: int(after), Retry: 1000, Data: streamReady{LastID: after}}); err != nil {
		return
	}
	poll := time.NewTicker(500 * time.Millisecond)
	defer poll.Stop()
	lastSent := time.Now()
	for {
		// The caller was authenticated when the stream opened; a token or user revoked
		// since ends the stream at its next poll.
		if _, err := s.core.Recheck(ctx); err != nil {
			send.Data(streamError{Error: "the token of this stream was revoked (or its user was); the stream ends: sign in again with a valid token"})
			return
		}
		evs, err := s.core.Events(ctx, core.EventQuery{TaskID: task, AfterID: after, Limit: 500})
		if err != nil {
			send.Data(streamError{Error: err.Error()})
			return
		}
		for _, e := range evs {
			if err := send(sse.Message{ID: int(e.ID), Data: core.V1Event(e)}); err != nil {
				return
			}
			after = e.ID
			lastSent = time.Now()
		}
		if time.Since(lastSent) > 15*time.Second {
			// A keep-alive ("event: ping") so proxies and clients see the stream is alive.
			if err := send.Data(ping{Time: time.Now().UTC()}); err != nil {
				return
			}
			lastSent = time.Now()
		}
		select {
		case <-ctx.Done():
			return
		case <-s.streams.done():
			return // the server is shutting down; clients reconnect with their last id
		case <-poll.C:
		}
	}
}

// streamStop ends every event stream when the HTTP server shuts down: a stream never
// goes idle, so http.Server.Shutdown would otherwise wait out its whole timeout (and
// `mosaic serve` would stop with "context deadline exceeded" whenever a page is open).
type streamStop struct {
	mu     sync.Mutex
	ch     chan struct{}
	closed bool
}

func (s *streamStop) done() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch == nil {
		s.ch = make(chan struct{})
	}
	return s.ch
}

func (s *streamStop) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch == nil {
		s.ch = make(chan struct{})
	}
	if !s.closed {
		close(s.ch)
		s.closed = true
	}
}

// streamReady opens a stream: the id of the event it follows from.
type streamReady struct {
	LastID int64 `json:"last_id"`
}

// streamError ends a stream that cannot go on (an unknown task, a store error).
type streamError struct {
	Error string `json:"error"`
}

// ping is the SSE keep-alive payload.
type ping struct {
	Time time.Time `json:"time"`
}

// taskOutOf answers with a task's wire form.
func taskOutOf(t *core.TaskDetail) (*taskOut, error) {
	return &taskOut{Body: core.V1TaskDetail(t)}, nil
}
