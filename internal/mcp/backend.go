package mcp

import (
	"context"
	"time"

	v1 "github.com/mosaic-hpc/mosaic/api/v1"
)

// Backend is what the tools call, in the API's wire types (api/v1). It has two
// implementations: the core itself, in process (CoreBackend; /mcp on the core's own
// HTTP server), and the HTTP client of package client (`mosaic mcp` over stdio, which
// reaches a core running elsewhere). Errors are *v1.Error where the core refused
// something (its Status says why), or wrap v1.ErrNoCore when no core answers.
type Backend interface {
	Federation(ctx context.Context) (*v1.ResourceSnapshot, error)
	// IdleExplained answers find_idle: the partitions, and for an empty answer the
	// sentence naming the filter that removed the last ones.
	IdleExplained(ctx context.Context, f v1.IdleQuery) (v1.IdleResult, error)
	SystemEnv(ctx context.Context, system string) (*v1.SiteEnv, error)
	DraftEnvelope(ctx context.Context, name, description string) (*v1.DraftResult, error)
	Submit(ctx context.Context, req v1.SubmitRequest) (*v1.SubmitResult, error)
	Task(ctx context.Context, id string) (*v1.TaskDetail, error)
	Tasks(ctx context.Context, states []string, limit int) ([]v1.TaskSummary, error)
	Cancel(ctx context.Context, id string) (*v1.TaskDetail, error)
	Replan(ctx context.Context, id string, clearTarget bool) (*v1.TaskDetail, error)
	TaskLogs(ctx context.Context, id string, attempt, tail int) (*v1.Logs, error)
	EventsPage(ctx context.Context, f v1.EventQuery) (*v1.EventPage, error)
	// FollowTask calls fn for each event of the task ("" = every task) after afterID,
	// in id order, until ctx ends (ctx.Err()), fn fails (its error) or the core refuses
	// (its *v1.Error). While the core cannot be reached or answers that it is not ready
	// (v1.Error.Temporary) it keeps trying for reconnectFor: 0 = v1.DefaultReconnectFor,
	// negative = never.
	FollowTask(ctx context.Context, task string, afterID int64, reconnectFor time.Duration, fn func(v1.Event) error) error
	CampaignRuns(ctx context.Context) ([]v1.CampaignRunSummary, error)
	CampaignRun(ctx context.Context, run string) (*v1.CampaignRunDetail, error)
	CampaignTimeline(ctx context.Context, run string) (*v1.CampaignTimeline, error)
}

// Connect returns the backend for one tool call. A stdio server re-discovers the core on
// each call until it finds one, so an agent started before `mosaic serve` recovers.
type Connect func(ctx context.Context) (Backend, error)

// Static returns a Connect that always uses b.
func Static(b Backend) Connect {
	return func(context.Context) (Backend, error) { return b, nil }
}
