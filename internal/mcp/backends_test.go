package mcp_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	v1 "github.com/mosaic-hpc/mosaic/api/v1"
	"github.com/mosaic-hpc/mosaic/client"
	"github.com/mosaic-hpc/mosaic/internal/mcp"
	"github.com/mosaic-hpc/mosaic/internal/provider/hpc"
	"github.com/mosaic-hpc/mosaic/internal/server"
	"github.com/mosaic-hpc/mosaic/internal/transport"
)

// backends returns both Backend implementations, each on its own real core.
func backends(t *testing.T) map[string]mcp.Backend {
	return map[string]mcp.Backend{"http": startCore(t), "in-process": mcp.CoreBackend(openCore(t))}
}

// TestFollowTaskAgreesAcrossBackends: FollowTask means the same over both backends.
// An unknown task ends it at once with the core's refusal naming the task, whatever
// the reconnect window (before, the in-process backend polled a refusal for the whole
// window, where the HTTP stream's error ends the client's follow at once); and a
// task's events arrive in id order after the given id with the window 0.
func TestFollowTaskAgreesAcrossBackends(t *testing.T) {
	for name, b := range backends(t) {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			start := time.Now()
			err := b.FollowTask(ctx, "t-no-such-task", 0, time.Minute, func(v1.Event) error { return nil })
			var ve *v1.Error
			if !errors.As(err, &ve) || !strings.Contains(err.Error(), "t-no-such-task") {
				t.Fatalf("unknown task: %v (after %s), want the core's refusal naming it", err, time.Since(start))
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Fatalf("unknown task: gave up after %s, want at once", d)
			}

			res, err := b.Submit(ctx, v1.SubmitRequest{Name: "follow", Command: "true", Envelope: &v1.Envelope{
				CPUCores: v1.IntRange{Min: 1}, MemoryGB: v1.IntRange{Min: 1}, Walltime: v1.DurationRange{Min: v1.Duration(10 * time.Minute)}}})
			if err != nil {
				t.Fatal(err)
			}
			var ids []int64
			err = b.FollowTask(ctx, res.Task.ID, 0, 0, func(e v1.Event) error {
				if e.TaskID != res.Task.ID {
					t.Errorf("event %d of task %q, following %s", e.ID, e.TaskID, res.Task.ID)
				}
				ids = append(ids, e.ID)
				if len(ids) == 2 {
					return errStopFollowing
				}
				return nil
			})
			if !errors.Is(err, errStopFollowing) || len(ids) != 2 || ids[0] >= ids[1] {
				t.Fatalf("following %s: %v, ids %v: want two events in id order, then fn's error", res.Task.ID, err, ids)
			}
		})
	}
}

var errStopFollowing = errors.New("enough")

// TestHTTPFollowKeepsTryingWithZeroWindow: over HTTP, a window of 0 is
// v1.DefaultReconnectFor too: with the core gone, FollowTask keeps reconnecting until
// the caller's context ends instead of failing at once.
func TestHTTPFollowKeepsTryingWithZeroWindow(t *testing.T) {
	var o server.Options
	o.Token, o.Headless = testToken, true
	srv, err := server.New(openCore(t), o)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	cl, err := client.New(hs.URL, testToken)
	if err != nil {
		t.Fatal(err)
	}
	hs.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err = cl.FollowTask(ctx, "", 0, 0, func(v1.Event) error { return nil })
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("core gone, window 0: %v, want to keep trying until the context ends", err)
	}
}

// TestClientOutwaitsTheCoresBounds: the stdio backend's per-request timeout is longer
// than every bound the core puts on work a request waits for, so a slow login node
// gives the same answer over stdio as over /mcp (the core's error, not a client
// timeout). Before, the client gave up after 60 s and the environment probe may take 90.
func TestClientOutwaitsTheCoresBounds(t *testing.T) {
	for name, bound := range map[string]time.Duration{
		"hpc.EnvTimeout (system_env)": hpc.EnvTimeout, "hpc.ExecTimeout (exec)": hpc.ExecTimeout,
		"transport.DefaultTimeout (one site command)": transport.DefaultTimeout,
	} {
		if client.RequestTimeout <= bound {
			t.Errorf("client.RequestTimeout %s is not above %s = %s", client.RequestTimeout, name, bound)
		}
	}
}
