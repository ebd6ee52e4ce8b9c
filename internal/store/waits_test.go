package store

import (
	"context"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

func TestStartHistory(t *testing.T) { forEachBackend(t, testStartHistory) }

func testStartHistory(t *testing.T, db string) {
	ctx := context.Background()
	s := openT(t, db)
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	if err := s.CreateTask(ctx, &TaskRow{Task: model.Task{ID: "t1", Name: "x", Command: "true", State: model.TaskPlaced, CreatedAt: t0, UpdatedAt: t0}}); err != nil {
		t.Fatal(err)
	}
	add := func(n int, est, started *time.Time) {
		t.Helper()
		a := &model.Attempt{TaskID: "t1", N: n, Tag: model.JobTag("t1", n), System: "alpha", Partition: "gpu",
			State: model.JobPending, Spec: model.JobSpec{Tag: model.JobTag("t1", n), Nodes: 1}, CreatedAt: t0.Add(time.Duration(n) * time.Minute), EstimatedStart: est}
		if err := s.CreateAttempt(ctx, a); err != nil {
			t.Fatal(err)
		}
		if started != nil {
			if err := s.UpdateAttempt(ctx, "t1", n, AttemptUpdate{Started: started}); err != nil {
				t.Fatal(err)
			}
		}
	}
	at := func(m int) *time.Time { x := t0.Add(time.Duration(m) * time.Minute); return &x }
	add(1, at(10), at(30)) // started third
	add(2, nil, at(5))     // no estimate: not history
	add(3, at(4), nil)     // not started yet
	add(4, at(4), at(6))   // started first
	add(5, at(20), at(25)) // started second
	got, err := s.StartHistory(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || !got[0].Started.Equal(*at(6)) || !got[1].Started.Equal(*at(25)) || !got[2].Started.Equal(*at(30)) {
		t.Fatalf("history %+v, want attempts 4, 5, 1 (by start)", got)
	}
	if g := got[2]; g.System != "alpha" || g.Partition != "gpu" || !g.Created.Equal(*at(1)) || !g.Estimated.Equal(*at(10)) {
		t.Errorf("observation %+v", g)
	}
	got, err = s.StartHistory(ctx, 2) // the latest two, oldest first
	if err != nil || len(got) != 2 || !got[0].Started.Equal(*at(25)) || !got[1].Started.Equal(*at(30)) {
		t.Fatalf("limit 2: %+v %v", got, err)
	}
}
