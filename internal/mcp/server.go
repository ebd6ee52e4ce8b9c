package mcp

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mosaic-hpc/mosaic/internal/core"
	"github.com/mosaic-hpc/mosaic/internal/model"
)

// Options configure a server.
type Options struct {
	// Logger receives the SDK's diagnostics; nil discards them.
	Logger *slog.Logger
	// PollInterval is how often wait_task asks the core; default 1s.
	PollInterval time.Duration
}

// instructions is sent to the client on initialize; agents read it before any tool.
const instructions = `Mosaic treats the user's allocations on several supercomputers as one machine.
Workflow: look at the pool (list_resources, find_idle) -> draft an envelope (draft_envelope) ->
submit_task (auto, or pinned with target; dry_run first to see the decision) -> track (get_task,
wait_task, recent_events, task_logs) -> intervene (cancel_task, replan_task).
Task states: pending, placed, submitted, queued, running, then succeeded, failed or cancelled.
The full guide is the skill document: run ` + "`mosaic skill`" + ` or GET /skill on the core.`

// NewServer builds the MCP server with every tool. connect yields the backend per call.
func NewServer(connect Connect, opts Options) *mcp.Server {
	if opts.PollInterval <= 0 {
		opts.PollInterval = time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "mosaic", Title: "Mosaic meta-scheduler", Version: core.Version},
		&mcp.ServerOptions{Instructions: instructions, Logger: opts.Logger})
	t := &tools{connect: connect, poll: opts.PollInterval, log: opts.Logger}
	t.registerPool(s)
	t.registerTasks(s)
	t.registerTracking(s)
	t.registerCampaigns(s)
	return s
}

// ServeStdio serves one session over stdin/stdout until the client disconnects or ctx ends.
func ServeStdio(ctx context.Context, connect Connect, opts Options) error {
	return NewServer(connect, opts).Run(ctx, &mcp.StdioTransport{})
}

// HTTPHandler serves the streamable-HTTP transport. It does no authentication: the
// caller (the core's /mcp route) checks the bearer token and the Host/Origin first.
//
// The tools act as the caller the core's guard put in the request context
// (model.CallerFrom; the local admin when none): it travels to them as the SDK's
// token info, whose user id also binds each MCP session to the user who opened it.
func HTTPHandler(connect Connect, opts Options) http.Handler {
	srv := NewServer(connect, opts)
	return auth.RequireBearerToken(callerInfo, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(
		streamable(srv, opts))
}

// callerKey is where the caller travels in the SDK's token info.
const callerKey = "mosaic.caller"

// callerInfo is the SDK's token verifier: the token was checked by the core's guard
// already, so it only carries the caller that check found.
func callerInfo(ctx context.Context, _ string, _ *http.Request) (*auth.TokenInfo, error) {
	c := model.CallerOf(ctx)
	return &auth.TokenInfo{UserID: c.Name, Extra: map[string]any{callerKey: c}}, nil
}

// withCaller returns ctx carrying the caller of a tool call's request, if any.
func withCaller(ctx context.Context, req *mcp.CallToolRequest) context.Context {
	if req == nil || req.Extra == nil || req.Extra.TokenInfo == nil {
		return ctx
	}
	if c, ok := req.Extra.TokenInfo.Extra[callerKey].(model.Caller); ok {
		return model.WithCaller(ctx, c)
	}
	return ctx
}

func streamable(srv *mcp.Server, opts Options) http.Handler {
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{
		Logger:         opts.Logger,
		SessionTimeout: 30 * time.Minute,
		// The core's guard already enforces its Host allow-list (loopback names plus
		// --allow-host) on every route; the SDK's loopback-only check would reject
		// allow-listed names.
		DisableLocalhostProtection: true,
	})
}

// tools holds what every tool handler needs.
type tools struct {
	connect Connect
	poll    time.Duration
	log     *slog.Logger
}

func (t *tools) backend(ctx context.Context) (Backend, error) {
	b, err := t.connect(ctx)
	if err != nil {
		return nil, actionable(err)
	}
	return b, nil
}

func ptr[T any](v T) *T { return &v }

// addTool registers a typed tool whose schemas are inferred with Mosaic's type
// mappings, and whose errors become actionable tool errors.
func addTool[In, Out any](s *mcp.Server, name, title, desc string, ann mcp.ToolAnnotations,
	h func(ctx context.Context, req *mcp.CallToolRequest, in In) (Out, error)) {
	ann.Title = title
	mcp.AddTool(s, &mcp.Tool{Name: name, Title: title, Description: desc,
		InputSchema: schemaFor[In](), OutputSchema: schemaFor[Out](), Annotations: &ann},
		func(ctx context.Context, req *mcp.CallToolRequest, in In) (*mcp.CallToolResult, Out, error) {
			out, err := h(withCaller(ctx, req), req, in)
			if err != nil {
				var zero Out
				return nil, zero, actionable(err)
			}
			return nil, out, nil
		})
}

// Annotation presets.
var (
	readOnly = mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)}
	mutating = mcp.ToolAnnotations{DestructiveHint: ptr(false), OpenWorldHint: ptr(true)}
	stopping = mcp.ToolAnnotations{DestructiveHint: ptr(true), IdempotentHint: true, OpenWorldHint: ptr(true)}
)
