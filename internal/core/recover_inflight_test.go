package core

import (
	"context"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/store"
)

// TestRecoverLeavesInFlightSubmitsAlone: right after a restart, recovery runs while
// the API already takes submissions. A task this process just stored (placed, its
// attempt not yet dispatched) belongs to that submit call: recovery must not dispatch
// it too, or its command runs twice (seen in TestRigCrashRecovery). A task an earlier
// process left in the same state is carried on.
func TestRecoverLeavesInFlightSubmitsAlone(t *testing.T) {
	w := newSimWorld(t, 60, [][2]string{{"Alpha", ""}})
	ctx := context.Background()
	mk := func(id string, created time.Time) {
		t.Helper()
		row := &store.TaskRow{Task: model.Task{ID: id, Name: id, Command: "true", Envelope: *gpuEnvelope("5m..10m"),
			State: model.TaskPlaced, CreatedAt: created, UpdatedAt: created}}
		if err := w.c.store.CreateTask(ctx, row); err != nil {
			t.Fatal(err)
		}
	}
	mk("leftover", time.Now().Add(-time.Minute).UTC()) // before this core started
	mk("inflight", time.Now().UTC())
	if err := w.c.engine.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]int{"leftover": 1, "inflight": 0} {
		atts, err := w.c.store.Attempts(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if len(atts) != want {
			t.Errorf("task %s: %d attempts after recovery, want %d", id, len(atts), want)
		}
	}
}
