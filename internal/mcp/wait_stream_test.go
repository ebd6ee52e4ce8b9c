package mcp_test

import (
	"context"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mosaic-hpc/mosaic/internal/mcp"
)

// TestWaitTaskFollowsTheEventStream: with the poll interval set to an hour, wait_task
// still returns as soon as the task ends, because it looks at the task when the
// task's events arrive on the stream. Before the change it only polled, so this wait
// gave up at once (the next poll was past its deadline).
func TestWaitTaskFollowsTheEventStream(t *testing.T) {
	for name, b := range map[string]func(*testing.T) mcp.Backend{
		"http":       func(t *testing.T) mcp.Backend { return startCore(t) },
		"in-process": func(t *testing.T) mcp.Backend { return mcp.CoreBackend(openCore(t)) },
	} {
		t.Run(name, func(t *testing.T) {
			srv := mcp.NewServer(mcp.Static(b(t)), mcp.Options{PollInterval: time.Hour})
			ct, st := sdk.NewInMemoryTransports()
			ctx := context.Background()
			ss, err := srv.Connect(ctx, st, nil)
			if err != nil {
				t.Fatal(err)
			}
			cs, err := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, ct, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cs.Close(); ss.Wait() })
			s := &session{t: t, cs: cs}

			var sub struct {
				Task struct{ ID string } `json:"task"`
			}
			s.ok("submit_task", map[string]any{"name": "streamed", "command": "sleep 3", "envelope": smallEnvelope}, &sub)
			start := time.Now()
			var w mcp.WaitTaskOut
			s.ok("wait_task", map[string]any{"id": sub.Task.ID, "timeout_seconds": 60}, &w)
			if !w.Reached || w.Task.State != "succeeded" {
				t.Fatalf("wait_task: reached=%v state=%s progress=%v", w.Reached, w.Task.State, w.Progress)
			}
			if el := time.Since(start); el > 20*time.Second {
				t.Fatalf("wait_task took %s for a 3 s job: it did not follow the stream", el)
			}
			if len(w.Progress) < 2 {
				t.Errorf("want the state changes seen on the way, got %v", w.Progress)
			}
		})
	}
}
