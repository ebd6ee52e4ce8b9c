package mcp

import (
	"context"

	"github.com/mosaic-hpc/mosaic/client"
)

// Backend is what the tools call: the subset of *client.Client they use.
type Backend interface {
	Federation(ctx context.Context) (*client.ResourceSnapshot, error)
	Idle(ctx context.Context, f client.IdleQuery) ([]client.ResourceRecord, error)
	DraftEnvelope(ctx context.Context, name, description string) (*client.DraftResult, string, error)
	Submit(ctx context.Context, req client.SubmitRequest) (*client.SubmitResult, error)
	Task(ctx context.Context, id string) (*client.TaskDetail, error)
	Tasks(ctx context.Context, states []string, limit int) ([]client.TaskSummary, error)
	Cancel(ctx context.Context, id string) (*client.TaskDetail, error)
	Replan(ctx context.Context, id string, clearTarget bool) (*client.TaskDetail, error)
	Events(ctx context.Context, f client.EventFilter) ([]client.Event, error)
	TaskLogs(ctx context.Context, id string, attempt, tail int) (*client.Logs, error)
	SystemEnv(ctx context.Context, system string) (*client.SiteEnv, error)
}

var _ Backend = (*client.Client)(nil)

// Connect returns the backend for one tool call. A stdio server re-discovers the core on
// each call until it finds one, so an agent started before `mosaic serve` recovers.
type Connect func(ctx context.Context) (Backend, error)

// Static returns a Connect that always uses b.
func Static(b Backend) Connect {
	return func(context.Context) (Backend, error) { return b, nil }
}
