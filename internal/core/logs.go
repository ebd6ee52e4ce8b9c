package core

import (
	"context"
	"errors"
	"fmt"

	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/provider"
	"github.com/mosaic-hpc/mosaic/internal/store"
)

// ErrUnavailable is wrapped by errors that mean something exists but cannot be read
// right now (the site holding a job's output is unreachable); the API answers 503.
var ErrUnavailable = errors.New("temporarily unavailable")

// JobLogs are the stdout/stderr tails of one attempt of a task, and where they are.
type JobLogs struct {
	model.Logs
	TaskID   string         `json:"task_id"`
	Attempt  int            `json:"attempt"`
	System   string         `json:"system"`
	Host     string         `json:"host,omitempty" doc:"Where the files are: the login host, or localhost"`
	JobState model.JobState `json:"job_state"`
	Note     string         `json:"note,omitempty" doc:"Why the logs are empty, when they are (the job has not started)"`
}

// TaskLogs returns the stdout/stderr tails of a task's attempt (0 = latest with a job).
// The files are found from the location recorded with the attempt when the site
// accepted the job, so they are readable after a restart of the core. Errors say what
// happened: no job yet or files gone (ErrNotFound), the site unreachable
// (ErrUnavailable).
func (c *Core) TaskLogs(ctx context.Context, id string, attempt, tail int) (*JobLogs, error) {
	t, err := c.Task(ctx, id)
	if err != nil {
		return nil, err
	}
	var a *model.Attempt
	for _, x := range t.Attempts {
		if x.JobID != "" && (attempt == 0 || x.N == attempt) {
			a = x
		}
	}
	if a == nil {
		if attempt > 0 {
			return nil, fmt.Errorf("task %s has no attempt %d that a site accepted (it has %d attempts; see `mosaic task %s`): %w", id, attempt, len(t.Attempts), id, ErrNotFound)
		}
		return nil, fmt.Errorf("task %s has no job yet: logs appear once a site accepts its job (`mosaic task %s` shows where it stands): %w", id, id, ErrNotFound)
	}
	if tail <= 0 || tail > 1<<20 {
		tail = 64 << 10
	}
	res := &JobLogs{TaskID: id, Attempt: a.N, System: a.System, JobState: a.State}
	res.JobID = a.JobID
	out, err := c.store.AttemptOutput(ctx, id, a.N)
	if err != nil {
		return nil, err
	}
	p, known := c.collector.Provider(a.System)
	if out == nil && known {
		out = provider.OutputOf(p, a.Spec, a.JobID) // attempts stored before locations were recorded
	}
	where := "its output files"
	if out != nil {
		res.Host, res.StdoutPath, res.StderrPath = out.Host, out.Stdout, out.Stderr
		where = fmt.Sprintf("%s and %s on %s", out.Stdout, out.Stderr, out.Host)
	}
	if !known {
		return nil, fmt.Errorf("attempt %d of task %s ran on %s, which is not in the site catalog any more, so its logs cannot be read (%s); add the system back to read them: %w",
			a.N, id, a.System, where, ErrNotFound)
	}
	var logs model.Logs
	if r, ok := p.(provider.OutputReader); ok && out != nil {
		logs, err = r.ReadOutput(ctx, *out, tail)
	} else {
		logs, err = p.Logs(ctx, a.JobID, tail)
	}
	started := a.StartedAt != nil // a job can start and end between two polls
	switch a.State {
	case model.JobRunning, model.JobCompleting, model.JobSuspended, model.JobSucceeded, model.JobFailed,
		model.JobTimeout, model.JobOOM, model.JobNodeFail, model.JobPreempted:
		started = true
	}
	switch {
	case errors.Is(err, provider.ErrNoOutput) && !started:
		res.Note = fmt.Sprintf("job %s has not started (state %s): it has written no output yet", a.JobID, a.State)
		if a.State.Final() {
			res.Note = fmt.Sprintf("job %s ended (%s) before it started: it wrote no output", a.JobID, a.State)
		}
		return res, nil
	case errors.Is(err, provider.ErrNoOutput):
		return nil, fmt.Errorf("the output of job %s (attempt %d of task %s on %s) is gone: %s no longer exist (deleted, or purged from scratch): %w",
			a.JobID, a.N, id, a.System, where, ErrNotFound)
	case errors.Is(err, provider.ErrSiteDown):
		return nil, fmt.Errorf("%s is unreachable, so the output of job %s (%s) cannot be read now; retry when `mosaic status` shows it up: %w: %w",
			a.System, a.JobID, where, ErrUnavailable, err)
	case err != nil:
		return nil, fmt.Errorf("%s: reading the output of job %s (%s) failed; retry, or look with `mosaic exec %s`: %w: %w",
			a.System, a.JobID, where, a.System, ErrUnavailable, err)
	}
	res.Logs = logs // names the paths it read
	res.JobID = a.JobID
	return res, nil
}

// EventQuery filters Events.
type EventQuery = store.EventQuery

// Events returns activity-log entries.
func (c *Core) Events(ctx context.Context, q EventQuery) ([]model.Event, error) {
	if caller := model.CallerOf(ctx); !caller.Admin {
		q.Owner = caller.Name // a user reads their own tasks' events and the federation's
	}
	if q.TaskID != "" {
		if _, err := c.Task(ctx, q.TaskID); err != nil {
			return nil, err
		}
	}
	evs, err := c.store.Events(ctx, q)
	if evs == nil {
		evs = []model.Event{}
	}
	return evs, err
}

// Event page bounds.
const (
	DefaultEventLimit = 200
	MaxEventLimit     = 10000
)

// EventPage is one page of the activity log with the cursors to continue.
type EventPage struct {
	Events []model.Event `json:"events"`
	// NextBefore is set when older events exist (pages read newest first): pass it as
	// before to read the next older page.
	NextBefore int64 `json:"next_before,omitempty" doc:"Cursor of the next older page: pass as before"`
	// NextAfter is set when newer events exist (pages read oldest first): pass it as
	// after_id to read on.
	NextAfter int64 `json:"next_after,omitempty" doc:"Cursor of the next newer page: pass as after_id"`
	// LastID is the largest event id in the store matching the filter when the page was
	// read (0 if none): after_id (or Last-Event-ID on the stream) to get only newer ones.
	LastID int64 `json:"last_id" doc:"The newest matching event id: pass as after_id, or to the stream, to follow from here"`
}

// EventPage reads one page of events (q.Newest: newest first) and says whether more
// exist beyond it.
func (c *Core) EventPage(ctx context.Context, q EventQuery) (*EventPage, error) {
	if q.Limit <= 0 {
		q.Limit = DefaultEventLimit
	}
	q.Limit = min(q.Limit, MaxEventLimit)
	evs, err := c.Events(ctx, q)
	if err != nil {
		return nil, err
	}
	page := &EventPage{Events: evs}
	newest := q
	newest.AfterID, newest.BeforeID, newest.Newest, newest.Limit = 0, 0, true, 1
	if last, err := c.Events(ctx, newest); err != nil {
		return nil, err
	} else if len(last) > 0 {
		page.LastID = last[0].ID
	}
	if len(evs) < q.Limit {
		return page, nil
	}
	edge := evs[len(evs)-1].ID
	more := q
	more.Limit = 1
	if q.Newest {
		more.BeforeID = edge
	} else {
		more.AfterID = edge
	}
	rest, err := c.Events(ctx, more)
	if err != nil {
		return nil, err
	}
	if len(rest) > 0 {
		if q.Newest {
			page.NextBefore = edge
		} else {
			page.NextAfter = edge
		}
	}
	return page, nil
}
