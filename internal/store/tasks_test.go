package store

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

func TestTaskAttemptEventLifecycle(t *testing.T) { forEachBackend(t, testTaskAttemptEventLifecycle) }

func testTaskAttemptEventLifecycle(t *testing.T, db string) {
	ctx := context.Background()
	s := openT(t, db)
	now := time.Now().UTC()
	task := &TaskRow{Task: model.Task{ID: "t1", Name: "train", Command: "python train.py", State: model.TaskPlaced,
		Envelope: model.Envelope{GPUs: model.IntRange{Min: 1, Max: 4}, Walltime: model.DurationRange{Min: model.Duration(time.Hour), Max: model.Duration(2 * time.Hour)}},
		Target:   &model.Target{System: "Delta@NCSA"}, CreatedAt: now, UpdatedAt: now},
		Decision: json.RawMessage(`{"mode":"pinned"}`)}
	if err := s.CreateTask(ctx, task, model.Event{TaskID: "t1", Kind: "decision", Message: "placed", Actor: model.ActorRules}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Task(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	if got.Envelope.GPUs.Max != 4 || got.Target.System != "Delta@NCSA" || string(got.Decision) != `{"mode":"pinned"}` {
		t.Fatalf("round trip: %+v", got)
	}
	if _, err := s.Task(ctx, "nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing task: %v", err)
	}

	a := &model.Attempt{TaskID: "t1", N: 1, Tag: model.JobTag("t1", 1), System: "Delta@NCSA", Partition: "gpuA100x4",
		State: model.JobSubmitting, Spec: model.JobSpec{Tag: "mosaic-t1-1", Nodes: 1}, CreatedAt: now}
	if err := s.CreateAttempt(ctx, a); err != nil {
		t.Fatal(err)
	}
	dup := *a
	dup.N = 2 // same tag
	if err := s.CreateAttempt(ctx, &dup); !errors.Is(err, ErrDuplicate) || !strings.Contains(err.Error(), dup.Tag) {
		t.Fatalf("a duplicate tag must be refused: %v", err)
	}
	open, _ := s.OpenAttempts(ctx)
	if len(open) != 1 || open[0].State != model.JobSubmitting {
		t.Fatalf("open attempts %+v", open)
	}
	id, st, code := "4242", model.JobFailed, 3
	ended := now.Add(time.Minute)
	if err := s.UpdateAttempt(ctx, "t1", 1, AttemptUpdate{JobID: &id}); err != nil {
		t.Fatal(err)
	}
	if err := s.UpdateAttempt(ctx, "t1", 1, AttemptUpdate{State: &st, ExitCode: &code, Ended: &ended},
		model.Event{TaskID: "t1", Attempt: 1, Kind: "transition", Message: "failed", Actor: model.ActorSystem}); err != nil {
		t.Fatal(err)
	}
	atts, _ := s.Attempts(ctx, "t1")
	if len(atts) != 1 || atts[0].JobID != "4242" || *atts[0].ExitCode != 3 || atts[0].EndedAt == nil {
		t.Fatalf("attempt %+v", atts[0])
	}
	if open, _ := s.OpenAttempts(ctx); len(open) != 0 {
		t.Fatalf("failed attempt is not open: %+v", open)
	}
	fs := model.TaskFailed
	var clear *model.Target
	if err := s.UpdateTask(ctx, "t1", TaskUpdate{State: &fs, Target: &clear}); err != nil {
		t.Fatal(err)
	}
	got, _ = s.Task(ctx, "t1")
	if got.State != model.TaskFailed || got.Target != nil {
		t.Fatalf("update: %+v", got)
	}
	list, _ := s.Tasks(ctx, []model.TaskState{model.TaskFailed}, 0)
	if len(list) != 1 {
		t.Fatalf("list: %d", len(list))
	}
	if list, _ := s.Tasks(ctx, []model.TaskState{model.TaskRunning}, 0); len(list) != 0 {
		t.Fatalf("state filter: %d", len(list))
	}
	evs, _ := s.Events(ctx, EventQuery{TaskID: "t1"})
	if len(evs) != 2 || evs[0].Kind != "decision" || evs[1].Attempt != 1 {
		t.Fatalf("events %+v", evs)
	}
	after, _ := s.Events(ctx, EventQuery{AfterID: evs[0].ID})
	if len(after) != 1 {
		t.Fatalf("after id: %d", len(after))
	}
}
