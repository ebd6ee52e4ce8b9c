package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mosaic-hpc/mosaic/internal/api"
	"github.com/mosaic-hpc/mosaic/internal/core/coretest"
	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/server"
)

// TestMCPActsAsTheTokensUser: /mcp tools act as the user of the bearer token: a task
// submitted through alice's session is hers; bob's session does not list it and is
// refused reading or cancelling it; and a session opened with alice's token cannot be
// continued with bob's (the SDK binds a session to its user).
func TestMCPActsAsTheTokensUser(t *testing.T) {
	c := coretest.Start(t, coretest.Options{})
	admin := model.WithCaller(context.Background(), model.LocalCaller())
	for _, u := range []string{"alice", "bob"} {
		if _, err := c.AddUser(admin, u, false); err != nil {
			t.Fatal(err)
		}
	}
	alice, _, err := c.CreateToken(admin, "alice", "")
	if err != nil {
		t.Fatal(err)
	}
	bob, _, err := c.CreateToken(admin, "bob", "")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(c, server.Options{Options: api.Options{Token: "tok"}, Headless: true})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	session := func(token string) *sdk.ClientSession {
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "u", Version: "1"}, nil).Connect(ctx,
			&sdk.StreamableClientTransport{Endpoint: hs.URL + server.MCPPath, HTTPClient: &http.Client{Transport: bearer{token}},
				DisableStandaloneSSE: true}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	call := func(cs *sdk.ClientSession, name string, args map[string]any) (string, bool) {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if res.IsError {
			var b strings.Builder
			for _, c := range res.Content {
				if tc, ok := c.(*sdk.TextContent); ok {
					b.WriteString(tc.Text)
				}
			}
			return b.String(), true
		}
		b, _ := json.Marshal(res.StructuredContent)
		return string(b), false
	}
	as, bs := session(alice), session(bob)
	env := map[string]any{"cpu_cores": map[string]any{"min": 1}, "memory_gb": map[string]any{"min": 1}, "walltime": map[string]any{"min": "10m"}}
	out, isErr := call(as, "submit_task", map[string]any{"name": "hers", "command": "sleep 300", "envelope": env})
	if isErr {
		t.Fatalf("alice submit: %s", out)
	}
	var sub struct{ Task struct{ ID string } }
	json.Unmarshal([]byte(out), &sub)
	if d, err := c.Task(admin, sub.Task.ID); err != nil || d.Owner != "alice" {
		t.Fatalf("the task submitted in alice's session: %v %+v", err, d)
	}
	if out, isErr := call(bs, "list_tasks", map[string]any{}); isErr || strings.Contains(out, sub.Task.ID) {
		t.Fatalf("bob's list_tasks: %v %s", isErr, out)
	}
	for _, tool := range []string{"get_task", "cancel_task"} {
		if out, isErr := call(bs, tool, map[string]any{"id": sub.Task.ID}); !isErr || !strings.Contains(out, "no task ") {
			t.Errorf("bob %s: error=%v %s", tool, isErr, out)
		}
	}
	if out, isErr := call(as, "get_task", map[string]any{"id": sub.Task.ID}); isErr {
		t.Fatalf("alice get_task: %s", out)
	}
	// alice's session id presented with bob's token is refused; with hers it works.
	raw := func(token string) int {
		req, _ := http.NewRequest("POST", hs.URL+server.MCPPath, strings.NewReader(`{"jsonrpc":"2.0","id":9,"method":"tools/list"}`))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Mcp-Session-Id", as.ID())
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if st := raw(alice); st >= 300 {
		t.Fatalf("alice's own session with her token: %d", st)
	}
	if st := raw(bob); st != http.StatusForbidden {
		t.Fatalf("bob continued alice's MCP session: %d, want 403", st)
	}
}
