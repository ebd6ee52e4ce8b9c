package core_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/core"
	"github.com/mosaic-hpc/mosaic/internal/core/coretest"
	"github.com/mosaic-hpc/mosaic/internal/model"
)

// TestReplayedSubmitHasDecision: a submission replayed by its Idempotency-Key answers
// with the placement decision of the first one (rebuilt from the stored trace), as
// the first answer did; the CLI prints it.
func TestReplayedSubmitHasDecision(t *testing.T) {
	c := coretest.Start(t, coretest.Options{SimSpeed: 60})
	env := model.Envelope{CPUCores: model.IntRange{Min: 1, Max: 1}, Walltime: model.DurationRange{Min: model.Duration(10 * time.Minute), Max: model.Duration(10 * time.Minute)}}
	alice := model.WithCaller(context.Background(), model.Caller{Name: "alice"})
	req := core.SubmitRequest{Name: "idem", Command: "true", Envelope: &env}
	first, err := c.SubmitTaskIdempotent(alice, req, "k1")
	if err != nil {
		t.Fatal(err)
	}
	again, err := c.SubmitTaskIdempotent(alice, req, "k1")
	if err != nil {
		t.Fatal(err)
	}
	if !again.Replayed || again.Task.ID != first.Task.ID {
		t.Fatalf("replay: replayed=%v task %s, want task %s replayed", again.Replayed, again.Task.ID, first.Task.ID)
	}
	out := core.V1SubmitResult(again)
	want := core.V1SubmitResult(first)
	if out.Decision == nil {
		t.Fatal("the replayed submission has no decision (the CLI printed it through a nil pointer)")
	}
	if out.Decision.Chosen != want.Decision.Chosen || out.Decision.Rationale != want.Decision.Rationale || out.Decision.Mode != want.Decision.Mode ||
		len(out.Decision.Candidates) != len(want.Decision.Candidates) {
		t.Fatalf("replayed decision %+v, want the first's %+v", out.Decision, want.Decision)
	}
}

// TestIdempotencyKeyWithAnotherRequestRefused: a second submission with the same key
// and a different request is refused (ErrInvalid, 422 on the API) with advice, not
// answered with the first task; the same request still replays.
func TestIdempotencyKeyWithAnotherRequestRefused(t *testing.T) {
	c := coretest.Start(t, coretest.Options{SimSpeed: 60})
	env := model.Envelope{CPUCores: model.IntRange{Min: 1, Max: 1}, Walltime: model.DurationRange{Min: model.Duration(10 * time.Minute), Max: model.Duration(10 * time.Minute)}}
	alice := model.WithCaller(context.Background(), model.Caller{Name: "alice"})
	first, err := c.SubmitTaskIdempotent(alice, core.SubmitRequest{Name: "idem", Command: "true", Envelope: &env}, "k1")
	if err != nil {
		t.Fatal(err)
	}
	again, err := c.SubmitTaskIdempotent(alice, core.SubmitRequest{Name: "other", Command: "rm -rf x", Envelope: &env}, "k1")
	if !errors.Is(err, core.ErrInvalid) || !strings.Contains(err.Error(), "different submission") || !strings.Contains(err.Error(), first.Task.ID) {
		t.Fatalf("same key, another request: %+v, %v; want ErrInvalid naming task %s", again, err, first.Task.ID)
	}
	if res, err := c.SubmitTaskIdempotent(alice, core.SubmitRequest{Name: "idem", Command: "true", Envelope: &env}, "k1"); err != nil || res.Task.ID != first.Task.ID {
		t.Fatalf("same key, same request: %v, want task %s replayed", err, first.Task.ID)
	}
}
