package mcp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	v1 "github.com/mosaic-hpc/mosaic/api/v1"
	"github.com/mosaic-hpc/mosaic/internal/core"
	"github.com/mosaic-hpc/mosaic/internal/model"
)

// TestFailKeepsTheCoresOwnDeadline: an error of the core that wraps
// context.DeadlineExceeded from one of its own bounds (the login-node probe gives up
// after 90 s) is the core's answer while the tool's context is live: in process it
// reads exactly as the HTTP API's 500 problem reads through the client. Only the
// tool's own cancelled or expired context stays itself. Before, fail passed every
// DeadlineExceeded through, so in-process system_env said "the core did not answer in
// time" where the HTTP backend said "the core answered 500: <the site's error>".
func TestFailKeepsTheCoresOwnDeadline(t *testing.T) {
	probe := fmt.Errorf("Delta@NCSA: environment probe: %w", context.DeadlineExceeded)

	got := fail(context.Background(), probe)
	var ve *v1.Error
	if !errors.As(got, &ve) || ve.Status != http.StatusInternalServerError || !strings.Contains(ve.Detail, "Delta@NCSA") {
		t.Fatalf("live context: fail = %#v, want the core's 500 problem naming the site", got)
	}
	// Over HTTP the API answers core.V1Error(err) and the client returns that problem.
	overHTTP := actionable(core.V1Error(probe)).Error()
	if inProcess := actionable(got).Error(); inProcess != overHTTP {
		t.Fatalf("the backends disagree:\n in process %q\n over HTTP  %q", inProcess, overHTTP)
	}
	if !strings.HasPrefix(overHTTP, "the core answered 500") {
		t.Fatalf("over HTTP: %q", overHTTP)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if got := fail(ctx, fmt.Errorf("reading: %w", ctx.Err())); !errors.Is(got, context.Canceled) || errors.As(got, &ve) {
		t.Fatalf("cancelled tool: fail = %#v, want the context's error itself", got)
	}
	ctx, cancel = context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel()
	<-ctx.Done()
	got = fail(ctx, probe)
	if !errors.Is(got, context.DeadlineExceeded) || errors.As(got, &ve) {
		t.Fatalf("expired tool: fail = %#v, want the deadline itself", got)
	}
	if msg := actionable(got).Error(); !strings.Contains(msg, "did not answer in time") {
		t.Fatalf("expired tool: %q", msg)
	}
}

var errStop = errors.New("stop")

// TestFollowRetriesAsTheClientDoes: the in-process FollowTask keeps the HTTP client's
// rules. reconnectFor 0 is v1.DefaultReconnectFor (before, it gave up on the first
// error, where the client keeps trying for two minutes); a temporary answer (503) is
// retried, negative never retries, any other error ends it at once, and a window
// that passes ends it with the last error.
func TestFollowRetriesAsTheClientDoes(t *testing.T) {
	notReady := fmt.Errorf("probing: %w", core.ErrNotReady)
	ev := model.Event{ID: 7, Kind: "task.submitted", Message: "hello"}

	t.Run("zero window is the default", func(t *testing.T) {
		var reads atomic.Int32
		var got []int64
		err := follow(context.Background(), func(context.Context, int64) ([]model.Event, error) {
			if reads.Add(1) <= 3 {
				return nil, notReady
			}
			return []model.Event{ev}, nil
		}, 0, 0, func(e v1.Event) error {
			got = append(got, e.ID)
			return errStop
		})
		if !errors.Is(err, errStop) || len(got) != 1 || got[0] != 7 || reads.Load() != 4 {
			t.Fatalf("err %v, events %v after %d reads: want event 7 after three refused reads", err, got, reads.Load())
		}
	})
	t.Run("negative never retries", func(t *testing.T) {
		var reads atomic.Int32
		err := follow(context.Background(), func(context.Context, int64) ([]model.Event, error) {
			reads.Add(1)
			return nil, notReady
		}, 0, -1, func(v1.Event) error { return nil })
		var ve *v1.Error
		if !errors.As(err, &ve) || ve.Status != http.StatusServiceUnavailable || reads.Load() != 1 {
			t.Fatalf("err %#v after %d reads: want the 503 after one", err, reads.Load())
		}
	})
	t.Run("a refusal is final", func(t *testing.T) {
		var reads atomic.Int32
		err := follow(context.Background(), func(context.Context, int64) ([]model.Event, error) {
			reads.Add(1)
			return nil, fmt.Errorf("task t-9: %w", core.ErrNotFound)
		}, 0, time.Minute, func(v1.Event) error { return nil })
		var ve *v1.Error
		if !errors.As(err, &ve) || ve.Status != http.StatusNotFound || reads.Load() != 1 {
			t.Fatalf("err %#v after %d reads: want the 404 after one read", err, reads.Load())
		}
	})
	t.Run("the window ends", func(t *testing.T) {
		start := time.Now()
		err := follow(context.Background(), func(context.Context, int64) ([]model.Event, error) {
			return nil, notReady
		}, 3, 700*time.Millisecond, func(v1.Event) error { return nil })
		var ve *v1.Error
		if !errors.As(err, &ve) || ve.Status != http.StatusServiceUnavailable || !strings.Contains(err.Error(), "after event 3") {
			t.Fatalf("err %v: want the 503, saying where it stopped", err)
		}
		if d := time.Since(start); d < 700*time.Millisecond || d > 10*time.Second {
			t.Fatalf("gave up after %s, want just past the 700ms window", d)
		}
	})
	t.Run("context ends", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		err := follow(ctx, func(context.Context, int64) ([]model.Event, error) { return nil, nil }, 0, 0,
			func(v1.Event) error { return nil })
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err %v, want the context's", err)
		}
	})
}
