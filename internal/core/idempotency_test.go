package core_test

import (
	"context"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/core"
	"github.com/mosaic-hpc/mosaic/internal/core/coretest"
	"github.com/mosaic-hpc/mosaic/internal/model"
)

// TestIdempotencyKeyPerUser: a retry with the same key returns the first task
// (Replayed); the same key from another user is another submission, never that
// user's view of the first one.
func TestIdempotencyKeyPerUser(t *testing.T) {
	c := coretest.Start(t, coretest.Options{SimSpeed: 60})
	env := model.Envelope{CPUCores: model.IntRange{Min: 1, Max: 1}, Walltime: model.DurationRange{Min: model.Duration(10 * time.Minute), Max: model.Duration(10 * time.Minute)}}
	req := core.SubmitRequest{Name: "idem", Command: "true", Envelope: &env}
	alice := model.WithCaller(context.Background(), model.Caller{Name: "alice"})
	bob := model.WithCaller(context.Background(), model.Caller{Name: "bob"})
	first, err := c.SubmitTaskIdempotent(alice, req, "k1")
	if err != nil || first.Replayed {
		t.Fatalf("first: %+v %v", first, err)
	}
	again, err := c.SubmitTaskIdempotent(alice, req, "k1")
	if err != nil || !again.Replayed || again.Task.ID != first.Task.ID {
		t.Fatalf("retry: %+v %v, want task %s replayed", again, err, first.Task.ID)
	}
	other, err := c.SubmitTaskIdempotent(bob, req, "k1")
	if err != nil || other.Replayed || other.Task.ID == first.Task.ID || other.Task.Owner != "bob" {
		t.Fatalf("bob with alice's key: %+v %v, want a new task of bob's", other, err)
	}
	plain, err := c.SubmitTaskIdempotent(alice, req, "")
	if err != nil || plain.Replayed || plain.Task.ID == first.Task.ID {
		t.Fatalf("no key: %+v %v, want a new task", plain, err)
	}
}
