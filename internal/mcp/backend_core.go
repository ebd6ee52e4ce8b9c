package mcp

import (
	"context"
	"fmt"
	"time"

	v1 "github.com/mosaic-hpc/mosaic/api/v1"
	"github.com/mosaic-hpc/mosaic/internal/core"
	"github.com/mosaic-hpc/mosaic/internal/model"
)

// CoreBackend is the in-process Backend: the tools call the core directly, with the
// same mapping onto api/v1 (and the same error classification, core.V1Error) as the
// HTTP API, so /mcp answers exactly what the HTTP API would without a loopback call.
func CoreBackend(c *core.Core) Backend { return coreBackend{c} }

type coreBackend struct{ c *core.Core }

// followPoll is how often FollowTask reads new events from the store (as the HTTP
// event stream does).
const followPoll = 500 * time.Millisecond

// fail classifies a core error as the HTTP API would (core.V1Error: a site that
// cannot be reached 503, one that failed the request 502, core.ErrSiteFailed). Only
// when the tool's own ctx has ended does the error stay itself (a cancelled or expired
// call, as the HTTP client reports it): an error that merely wraps
// context.DeadlineExceeded from a bound inside the core (the 90 s login-node probe, a
// site command's timeout) is the core's answer, classified as over HTTP.
func fail(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return err
	}
	return core.V1Error(err)
}

func (b coreBackend) Federation(ctx context.Context) (*v1.ResourceSnapshot, error) {
	s, err := b.c.Federation()
	if err != nil {
		return nil, fail(ctx, err)
	}
	return core.V1Snapshot(s), nil
}

func (b coreBackend) IdleExplained(ctx context.Context, f v1.IdleQuery) (v1.IdleResult, error) {
	rs, why, err := b.c.IdleExplained(core.IdleFilterFromV1(f))
	if err != nil {
		return v1.IdleResult{}, fail(ctx, err)
	}
	return v1.IdleResult{Partitions: core.V1Records(rs), Explanation: why}, nil
}

func (b coreBackend) SystemEnv(ctx context.Context, system string) (*v1.SiteEnv, error) {
	e, err := b.c.SystemEnv(ctx, system)
	if err != nil {
		return nil, fail(ctx, err)
	}
	out := core.V1SiteEnv(*e)
	return &out, nil
}

func (b coreBackend) DraftEnvelope(ctx context.Context, name, description string) (*v1.DraftResult, error) {
	r, err := b.c.DraftEnvelope(ctx, name, description)
	if err != nil {
		return nil, fail(ctx, err)
	}
	return core.V1Draft(r, b.c.About().Drafter), nil
}

func (b coreBackend) Submit(ctx context.Context, req v1.SubmitRequest) (*v1.SubmitResult, error) {
	r, err := b.c.SubmitTask(ctx, core.SubmitRequestFromV1(req))
	if err != nil {
		return nil, fail(ctx, err)
	}
	return core.V1SubmitResult(r), nil
}

// detail maps a task read of the core (its error classified as fail does, for ctx).
func detail(ctx context.Context) func(*core.TaskDetail, error) (*v1.TaskDetail, error) {
	return func(t *core.TaskDetail, err error) (*v1.TaskDetail, error) {
		if err != nil {
			return nil, fail(ctx, err)
		}
		return core.V1TaskDetail(t), nil
	}
}

func (b coreBackend) Task(ctx context.Context, id string) (*v1.TaskDetail, error) {
	return detail(ctx)(b.c.Task(ctx, id))
}

func (b coreBackend) Tasks(ctx context.Context, states []string, limit int) ([]v1.TaskSummary, error) {
	var ss []model.TaskState
	for _, s := range states {
		ss = append(ss, model.TaskState(s))
	}
	ts, err := b.c.Tasks(ctx, ss, limit)
	if err != nil {
		return nil, fail(ctx, err)
	}
	return core.V1TaskSummaries(ts), nil
}

func (b coreBackend) Cancel(ctx context.Context, id string) (*v1.TaskDetail, error) {
	return detail(ctx)(b.c.CancelTask(ctx, id))
}

func (b coreBackend) Replan(ctx context.Context, id string, clearTarget bool) (*v1.TaskDetail, error) {
	return detail(ctx)(b.c.ReplanTask(ctx, id, clearTarget))
}

func (b coreBackend) TaskLogs(ctx context.Context, id string, attempt, tail int) (*v1.Logs, error) {
	l, err := b.c.TaskLogs(ctx, id, attempt, tail)
	if err != nil {
		return nil, fail(ctx, err)
	}
	return core.V1Logs(l), nil
}

func (b coreBackend) EventsPage(ctx context.Context, f v1.EventQuery) (*v1.EventPage, error) {
	q, err := core.EventQueryFromV1(f, time.Now())
	if err != nil {
		return nil, fail(ctx, err)
	}
	p, err := b.c.EventPage(ctx, q)
	if err != nil {
		return nil, fail(ctx, err)
	}
	return core.V1EventPage(p), nil
}

// FollowTask reads the store's new events every followPoll, in bounded batches, until
// ctx ends or fn fails, as the HTTP event stream does for the client; each poll checks
// the caller's token again (a revoked one ends it with the core's 401).
func (b coreBackend) FollowTask(ctx context.Context, task string, afterID int64, reconnectFor time.Duration, fn func(v1.Event) error) error {
	return follow(ctx, func(ctx context.Context, after int64) ([]model.Event, error) {
		// A token or user revoked while the tool waits ends the wait at the next poll.
		if _, err := b.c.Recheck(ctx); err != nil {
			return nil, err
		}
		return b.c.Events(ctx, core.EventQuery{TaskID: task, AfterID: after, Limit: 500})
	}, afterID, reconnectFor, fn)
}

// follow is FollowTask's loop over read, with the client's rules (client.FollowEvents):
// an answer that may pass (v1.Error.Temporary: the core not ready yet) is retried for
// up to reconnectFor (0 = v1.DefaultReconnectFor, negative = never); any other error of
// the core ends it at once, as the HTTP stream's error message ends the client's.
func follow(ctx context.Context, read func(ctx context.Context, after int64) ([]model.Event, error),
	afterID int64, reconnectFor time.Duration, fn func(v1.Event) error) error {
	if reconnectFor == 0 {
		reconnectFor = v1.DefaultReconnectFor
	}
	tick := time.NewTicker(followPoll)
	defer tick.Stop()
	var failingSince time.Time
	for {
		evs, err := read(ctx, afterID)
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case err != nil:
			e := core.V1Error(err)
			if !e.Temporary() || reconnectFor < 0 {
				return e
			}
			if failingSince.IsZero() {
				failingSince = time.Now()
			} else if time.Since(failingSince) > reconnectFor {
				return fmt.Errorf("the core's events stayed unreadable for %s (after event %d); gave up: %w", reconnectFor, afterID, e)
			}
		default:
			failingSince = time.Time{}
			for _, e := range evs {
				if err := fn(core.V1Event(e)); err != nil {
					return err
				}
				afterID = e.ID
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

func (b coreBackend) CampaignRuns(ctx context.Context) ([]v1.CampaignRunSummary, error) {
	rs, err := b.c.CampaignRuns(ctx)
	if err != nil {
		return nil, fail(ctx, err)
	}
	return core.V1CampaignRuns(rs), nil
}

func (b coreBackend) CampaignRun(ctx context.Context, run string) (*v1.CampaignRunDetail, error) {
	d, err := b.c.CampaignRun(ctx, run)
	if err != nil {
		return nil, fail(ctx, err)
	}
	return core.V1CampaignRun(d), nil
}

func (b coreBackend) CampaignTimeline(ctx context.Context, run string) (*v1.CampaignTimeline, error) {
	t, err := b.c.CampaignTimeline(ctx, run)
	if err != nil {
		return nil, fail(ctx, err)
	}
	return core.V1CampaignTimeline(t), nil
}
