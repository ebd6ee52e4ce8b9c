package mcp_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mosaic-hpc/mosaic/client"
	"github.com/mosaic-hpc/mosaic/internal/core"
	"github.com/mosaic-hpc/mosaic/internal/core/coretest"
	"github.com/mosaic-hpc/mosaic/internal/mcp"
	"github.com/mosaic-hpc/mosaic/internal/server"
)

const testToken = "mcp-test-token"

// The HTTP client is the Backend of `mosaic mcp` (stdio).
var _ mcp.Backend = (*client.Client)(nil)

// forEachBackend runs body once per Backend implementation, each on its own core:
// the HTTP client (what `mosaic mcp` over stdio uses) and the core in process (what
// /mcp on the core's server uses). The tools must behave the same over both.
func forEachBackend(t *testing.T, body func(t *testing.T, s *session)) {
	t.Run("http", func(t *testing.T) { body(t, connect(t, mcp.Static(startCore(t)))) })
	t.Run("in-process", func(t *testing.T) { body(t, connect(t, mcp.Static(mcp.CoreBackend(openCore(t))))) })
}

// openCore runs a real core on the embedded simulated federation (in-memory store).
func openCore(t *testing.T) *core.Core {
	t.Helper()
	c := coretest.Start(t, coretest.Options{})
	return c
}

// startCore runs a real core behind the real HTTP API and returns a client for it.
func startCore(t *testing.T) *client.Client {
	t.Helper()
	// The composed server, as `mosaic serve` builds it (its own /mcp is not used here).
	var o server.Options
	o.Token, o.Headless = testToken, true
	srv, err := server.New(openCore(t), o)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	cl, err := client.New(hs.URL, testToken)
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// session connects an SDK client to a Mosaic MCP server through in-memory transports.
type session struct {
	t  *testing.T
	cs *sdk.ClientSession

	mu       sync.Mutex
	progress []*sdk.ProgressNotificationParams
}

func connect(t *testing.T, conn mcp.Connect) *session {
	t.Helper()
	ctx := context.Background()
	srv := mcp.NewServer(conn, mcp.Options{PollInterval: 100 * time.Millisecond})
	ct, st := sdk.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := &session{t: t}
	cl := sdk.NewClient(&sdk.Implementation{Name: "mosaic-test", Version: "1"}, &sdk.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *sdk.ProgressNotificationClientRequest) {
			s.mu.Lock()
			s.progress = append(s.progress, r.Params)
			s.mu.Unlock()
		},
	})
	cs, err := cl.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.cs = cs
	t.Cleanup(func() { cs.Close(); ss.Wait() })
	return s
}

// call invokes a tool and returns its result; a protocol error fails the test.
func (s *session) call(name string, args any, progressToken any) *sdk.CallToolResult {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	p := &sdk.CallToolParams{Name: name, Arguments: args}
	if progressToken != nil {
		p.SetProgressToken(progressToken)
	}
	res, err := s.cs.CallTool(ctx, p)
	if err != nil {
		s.t.Fatalf("%s %s: protocol error: %v", name, jsonOf(args), err)
	}
	return res
}

// ok calls a tool that must succeed and decodes its structured output into out.
func (s *session) ok(name string, args, out any) {
	s.t.Helper()
	res := s.call(name, args, nil)
	if res.IsError {
		s.t.Fatalf("%s %s: tool error: %s", name, jsonOf(args), text(res))
	}
	decode(s.t, res, out)
}

// fails calls a tool that must fail with a tool error mentioning every want.
func (s *session) fails(name string, args any, want ...string) string {
	s.t.Helper()
	res := s.call(name, args, nil)
	if !res.IsError {
		s.t.Fatalf("%s %s: want a tool error, got %s", name, jsonOf(args), text(res))
	}
	msg := text(res)
	for _, w := range want {
		if !strings.Contains(strings.ToLower(msg), strings.ToLower(w)) {
			s.t.Errorf("%s %s: error %q does not mention %q", name, jsonOf(args), msg, w)
		}
	}
	return msg
}

func decode(t *testing.T, res *sdk.CallToolResult, out any) {
	t.Helper()
	if out == nil {
		return
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("decoding structured content: %v\n%s", err, b)
	}
	// The text content carries the same JSON for clients without structured content.
	if len(res.Content) == 0 {
		t.Fatal("no text content")
	}
	if tc, ok := res.Content[0].(*sdk.TextContent); !ok || !json.Valid([]byte(tc.Text)) {
		t.Fatalf("text content is not the JSON result: %#v", res.Content[0])
	}
}

func text(res *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// deadAddr is a loopback address nothing listens on.
func deadAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}
