package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

var mcpTools = []string{"list_resources", "find_idle", "draft_envelope", "submit_task", "get_task", "list_tasks",
	"wait_task", "cancel_task", "replan_task", "recent_events", "task_logs", "system_env"}

// mcpCall calls a tool and decodes its structured output; a tool error fails the test.
func mcpCall(t *testing.T, cs *sdk.ClientSession, name string, args, out any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if res.IsError {
		t.Fatalf("%s: tool error: %s", name, toolText(res))
	}
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("%s: %v: %s", name, err, b)
	}
}

func toolText(res *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func checkToolList(t *testing.T, cs *sdk.ClientSession) {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	for _, want := range mcpTools {
		if !slices.Contains(names, want) {
			t.Errorf("tool %s missing: %v", want, names)
		}
	}
}

// TestMCPStdio drives the built `mosaic mcp` through the Go SDK's command transport
// against a real core: tools, a submitted task followed to the end, a bad argument.
func TestMCPStdio(t *testing.T) {
	e := newEnv(t)
	e.serve("--tick", "500ms")
	waitSnapshot(t, e)

	cmd := exec.Command(binary, "mcp")
	cmd.Env, cmd.Dir = e.vars, e.home
	cl := sdk.NewClient(&sdk.Implementation{Name: "e2e", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs, err := cl.Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	checkToolList(t, cs)

	var sub struct {
		Task struct{ ID string } `json:"task"`
	}
	mcpCall(t, cs, "submit_task", map[string]any{"name": "stdio", "command": "echo over stdio",
		"envelope": map[string]any{"cpu_cores": map[string]any{"min": 1}, "walltime": map[string]any{"min": "1h"}}}, &sub)
	var waited struct {
		Reached bool
		Task    struct{ State string } `json:"task"`
	}
	mcpCall(t, cs, "wait_task", map[string]any{"id": sub.Task.ID, "timeout_seconds": 60}, &waited)
	if !waited.Reached || waited.Task.State != "succeeded" {
		t.Fatalf("wait_task: %+v", waited)
	}
	var logs struct{ Stdout string }
	mcpCall(t, cs, "task_logs", map[string]any{"id": sub.Task.ID}, &logs)
	if !strings.Contains(logs.Stdout, "over stdio") {
		t.Errorf("stdout %q", logs.Stdout)
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "find_idle", Arguments: map[string]any{"gpus": "many"}})
	if err != nil || !res.IsError {
		t.Fatalf("a wrongly typed argument must be a tool error: %v %v", err, res)
	}
}

// TestMCPWithoutCore: `mosaic mcp` starts without a core and its tools say how to start one.
func TestMCPWithoutCore(t *testing.T) {
	e := newEnv(t)
	cmd := exec.Command(binary, "mcp")
	cmd.Env, cmd.Dir = e.vars, e.home
	cl := sdk.NewClient(&sdk.Implementation{Name: "e2e", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := cl.Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "list_resources", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || !strings.Contains(toolText(res), "mosaic serve") {
		t.Fatalf("want a tool error saying to run `mosaic serve`, got %s", toolText(res))
	}

	// Once a core is up, the same session works.
	e.serve("--tick", "500ms")
	waitSnapshot(t, e)
	var pool struct{ Systems []any }
	mcpCall(t, cs, "list_resources", map[string]any{}, &pool)
	if len(pool.Systems) != 6 {
		t.Fatalf("after mosaic serve: %d systems", len(pool.Systems))
	}
}

type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// TestMCPOverHTTP: /mcp on the core needs the token and serves the same tools; /skill
// and /skill/api serve the skill document and the API reference.
func TestMCPOverHTTP(t *testing.T) {
	e := newEnv(t)
	e.serve("--tick", "500ms")
	waitSnapshot(t, e)
	base := "http://" + e.addr

	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	for _, tok := range []string{"", "wrong"} {
		req, _ := http.NewRequest("POST", base+"/mcp", strings.NewReader(init))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("/mcp with token %q: %d, want 401", tok, resp.StatusCode)
		}
	}
	if code, _ := httpDo("POST", base+"/mcp", e.token(), "evil.example"); code != 403 {
		t.Errorf("/mcp with a foreign Host: %d, want 403", code)
	}

	cl := sdk.NewClient(&sdk.Implementation{Name: "e2e-http", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	hc := &http.Client{Transport: bearer{token: e.token(), next: http.DefaultTransport}}
	cs, err := cl.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: hc}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	checkToolList(t, cs)
	var idle struct{ Count int }
	mcpCall(t, cs, "find_idle", map[string]any{"gpus": 1}, &idle)
	if idle.Count == 0 {
		t.Error("find_idle over HTTP found nothing in the demo federation")
	}
	var dry struct {
		DryRun bool `json:"dry_run"`
		Trace  struct{ Chosen string }
	}
	mcpCall(t, cs, "submit_task", map[string]any{"name": "http", "command": "true", "dry_run": true,
		"envelope": map[string]any{"gpus": map[string]any{"min": 1}, "walltime": map[string]any{"min": "1h"}}}, &dry)
	if !dry.DryRun || dry.Trace.Chosen == "" {
		t.Errorf("dry run over HTTP: %+v", dry)
	}

	code, body := httpGet(base+"/skill", "")
	want, _ := os.ReadFile(filepath.Join(repoRoot(), "SKILL.md"))
	if code != 200 || string(body) != string(want) {
		t.Errorf("/skill: %d, %d bytes (want SKILL.md, %d bytes)", code, len(body), len(want))
	}
	code, body = httpGet(base+"/skill/api", "")
	if code != 200 || !strings.Contains(string(body), "### POST /api/tasks") || !strings.Contains(string(body), "## Schemas") {
		t.Errorf("/skill/api: %d %.300s", code, body)
	}
}

func TestSkillCommand(t *testing.T) {
	e := newEnv(t)
	out, errOut, rc := e.run("skill")
	want, err := os.ReadFile(filepath.Join(repoRoot(), "SKILL.md"))
	if err != nil {
		t.Fatal(err)
	}
	if rc != 0 || out != string(want) {
		t.Fatalf("mosaic skill: rc=%d stderr=%s; output differs from SKILL.md", rc, errOut)
	}
}

func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}
