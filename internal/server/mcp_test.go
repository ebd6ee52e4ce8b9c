package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mosaic-hpc/mosaic/internal/api"
	"github.com/mosaic-hpc/mosaic/internal/core/coretest"
	"github.com/mosaic-hpc/mosaic/internal/server"
)

// bearer adds the API token to every request.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// TestMCPCallsTheCoreInProcess: the tools of /mcp on the composed server call the
// core directly. Every request reaching the server is counted by path; after listing
// resources, a dry run, a real submission, reading it back and the activity log, no
// request but /mcp's has arrived. Before, /mcp called the API over loopback HTTP (a
// client built from the first request's address), so each tool call was also an
// /api request to this same listener.
func TestMCPCallsTheCoreInProcess(t *testing.T) {
	c := coretest.Start(t, coretest.Options{})
	srv, err := server.New(c, server.Options{Options: api.Options{Token: "tok"}, Headless: true})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	hits := map[string]int{}
	var apiHits atomic.Int64
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits[r.URL.Path]++
		mu.Unlock()
		if strings.HasPrefix(r.URL.Path, "/api") {
			apiHits.Add(1)
		}
		srv.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)

	cctx, ccancel := context.WithTimeout(context.Background(), time.Minute)
	defer ccancel()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "in-process", Version: "1"}, nil).Connect(cctx,
		&sdk.StreamableClientTransport{Endpoint: hs.URL + server.MCPPath, HTTPClient: &http.Client{Transport: bearer{"tok"}},
			DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	call := func(name string, args map[string]any, out any) {
		t.Helper()
		res, err := cs.CallTool(cctx, &sdk.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		b, _ := json.Marshal(res.StructuredContent)
		if res.IsError {
			t.Fatalf("%s: tool error %s", name, b)
		}
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s: %v: %s", name, err, b)
		}
	}
	env := map[string]any{"cpu_cores": map[string]any{"min": 1}, "memory_gb": map[string]any{"min": 1},
		"walltime": map[string]any{"min": "10m"}}
	var res struct{ Records []struct{ System string } }
	call("list_resources", map[string]any{}, &res)
	if len(res.Records) == 0 {
		t.Fatal("list_resources: no records")
	}
	var dry struct {
		DryRun bool `json:"dry_run"`
		Trace  struct{ Chosen string }
	}
	call("submit_task", map[string]any{"name": "dry", "command": "true", "envelope": env, "dry_run": true}, &dry)
	if !dry.DryRun || dry.Trace.Chosen == "" {
		t.Fatalf("dry run: %+v", dry)
	}
	var sub struct {
		Task struct{ ID string }
	}
	call("submit_task", map[string]any{"name": "real", "command": "true", "envelope": env}, &sub)
	var got struct{ ID, State string }
	call("get_task", map[string]any{"id": sub.Task.ID}, &got)
	if got.ID != sub.Task.ID || got.State == "" {
		t.Fatalf("get_task: %+v", got)
	}
	var evs struct{ Count int }
	call("recent_events", map[string]any{"task": sub.Task.ID}, &evs)
	if evs.Count == 0 {
		t.Error("recent_events: no events for the submitted task")
	}
	// The same task is what the HTTP API answers.
	req, _ := http.NewRequest("GET", hs.URL+"/api/tasks/"+sub.Task.ID, nil)
	before := apiHits.Load()
	if resp, err := (&http.Client{Transport: bearer{"tok"}}).Do(req); err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /api/tasks/%s: %v %v", sub.Task.ID, resp, err)
	} else {
		resp.Body.Close()
	}
	if apiHits.Load() != before+1 {
		t.Fatal("the counting wrapper does not see /api requests; the test proves nothing")
	}
	mu.Lock()
	defer mu.Unlock()
	for p, n := range hits {
		if p != server.MCPPath && p != "/api/tasks/"+sub.Task.ID {
			t.Errorf("%d request(s) to %s during MCP tool calls: /mcp must call the core in process", n, p)
		}
	}
}
