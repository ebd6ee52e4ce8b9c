package store

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

// seedEvents appends n events, alternating tasks a and b, one second apart from t0.
func seedEvents(t *testing.T, s *Store, t0 time.Time, n int) []int64 {
	t.Helper()
	var evs []model.Event
	for i := range n {
		evs = append(evs, model.Event{Time: t0.Add(time.Duration(i) * time.Second), TaskID: []string{"a", "b"}[i%2],
			Kind: "transition", Message: fmt.Sprintf("event %d", i), Actor: model.ActorSystem})
	}
	ids, err := s.AppendEvents(context.Background(), evs...)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// TestEventsNewestFirstPagesWithBefore: reading newest first and continuing with
// BeforeID = the smallest id of each page visits every event exactly once, in
// descending order, with and without a task filter.
func TestEventsNewestFirstPagesWithBefore(t *testing.T) {
	forEachBackend(t, testEventsNewestFirstPagesWithBefore)
}

func testEventsNewestFirstPagesWithBefore(t *testing.T, db string) {
	ctx := context.Background()
	s := openT(t, db)
	ids := seedEvents(t, s, time.Now().Add(-time.Hour), 23)

	for _, c := range []struct {
		task string
		want int
	}{{"", 23}, {"a", 12}, {"b", 11}} {
		t.Run("task="+c.task, func(t *testing.T) {
			var seen []int64
			before := int64(0)
			for page := 0; page < 100; page++ {
				evs, err := s.Events(ctx, EventQuery{TaskID: c.task, BeforeID: before, Limit: 5, Newest: true})
				if err != nil {
					t.Fatal(err)
				}
				if len(evs) == 0 {
					break
				}
				for _, e := range evs {
					if c.task != "" && e.TaskID != c.task {
						t.Fatalf("task filter leaked %+v", e)
					}
					seen = append(seen, e.ID)
				}
				before = evs[len(evs)-1].ID
			}
			if len(seen) != c.want {
				t.Fatalf("saw %d events, want %d: %v", len(seen), c.want, seen)
			}
			for i := 1; i < len(seen); i++ {
				if seen[i] >= seen[i-1] {
					t.Fatalf("not strictly newest first: %v", seen)
				}
			}
			if c.task == "" && (seen[0] != ids[len(ids)-1] || seen[len(seen)-1] != ids[0]) {
				t.Fatalf("first/last %d/%d, want %d/%d", seen[0], seen[len(seen)-1], ids[len(ids)-1], ids[0])
			}
		})
	}
}

// TestEventsCursorsAndSince: the limit keeps the newest events, Since and the two
// cursors bound the window, and a window between AfterID and BeforeID is exclusive.
func TestEventsCursorsAndSince(t *testing.T) { forEachBackend(t, testEventsCursorsAndSince) }

func testEventsCursorsAndSince(t *testing.T, db string) {
	ctx := context.Background()
	s := openT(t, db)
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	ids := seedEvents(t, s, t0, 10)

	newest, err := s.Events(ctx, EventQuery{Limit: 3, Newest: true})
	if err != nil || len(newest) != 3 || newest[0].ID != ids[9] || newest[2].ID != ids[7] {
		t.Fatalf("newest 3: %v %+v", err, newest)
	}
	oldest, _ := s.Events(ctx, EventQuery{Limit: 3})
	if len(oldest) != 3 || oldest[0].ID != ids[0] {
		t.Fatalf("oldest 3: %+v", oldest)
	}
	since, _ := s.Events(ctx, EventQuery{Since: t0.Add(6 * time.Second), Newest: true})
	if len(since) != 4 || since[3].ID != ids[6] {
		t.Fatalf("since +6s: want events 6..9, got %+v", since)
	}
	window, _ := s.Events(ctx, EventQuery{AfterID: ids[2], BeforeID: ids[6]})
	if len(window) != 3 || window[0].ID != ids[3] || window[2].ID != ids[5] {
		t.Fatalf("window (2,6): %+v", window)
	}
	if none, _ := s.Events(ctx, EventQuery{BeforeID: ids[0]}); len(none) != 0 {
		t.Fatalf("before the first id: %+v", none)
	}
}

// TestAttemptOutputSurvivesReopen: the output location recorded with an attempt is read
// back by a new Store on the same file (what a restarted core does); attempts without
// one read as nil, unknown attempts as ErrNotFound.
func TestAttemptOutputSurvivesReopen(t *testing.T) {
	forEachBackend(t, testAttemptOutputSurvivesReopen)
}

func testAttemptOutputSurvivesReopen(t *testing.T, path string) {
	ctx := context.Background()
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if err := s.CreateTask(ctx, &TaskRow{Task: model.Task{ID: "t1", Name: "n", Command: "true", State: model.TaskPlaced, CreatedAt: now, UpdatedAt: now}}); err != nil {
		t.Fatal(err)
	}
	for n := 1; n <= 2; n++ {
		if err := s.CreateAttempt(ctx, &model.Attempt{TaskID: "t1", N: n, Tag: model.JobTag("t1", n), System: "S", Partition: "p",
			State: model.JobSubmitting, Spec: model.JobSpec{Tag: model.JobTag("t1", n), Nodes: 1}, CreatedAt: now}); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := s.AttemptOutput(ctx, "t1", 1); err != nil || out != nil {
		t.Fatalf("before recording: %+v %v", out, err)
	}
	id := "42"
	want := model.JobOutput{Host: "login.example", Stdout: "/scratch/u/mosaic/mosaic-t1-1.out", Stderr: "/scratch/u/mosaic/mosaic-t1-1.err"}
	if err := s.UpdateAttempt(ctx, "t1", 1, AttemptUpdate{JobID: &id, Output: &want}); err != nil {
		t.Fatal(err)
	}
	s.Close()

	s, err = Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := s.AttemptOutput(ctx, "t1", 1)
	if err != nil || got == nil || *got != want {
		t.Fatalf("after reopen: %+v %v, want %+v", got, err, want)
	}
	if out, err := s.AttemptOutput(ctx, "t1", 2); err != nil || out != nil {
		t.Fatalf("attempt without a location: %+v %v", out, err)
	}
	if _, err := s.AttemptOutput(ctx, "t1", 3); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown attempt: %v", err)
	}
}

// TestEventsCursorNeverSkipsConcurrentWriters: a reader following with AfterID while
// several writers append at once sees every event exactly once. On PostgreSQL ids come
// from a sequence at insert time, so this holds only because write transactions are
// serialized (Store.tx's writer lock): otherwise a transaction holding id 10 may commit
// after one holding 11, and a reader already past 11 never sees 10.
func TestEventsCursorNeverSkipsConcurrentWriters(t *testing.T) {
	forEachBackend(t, testEventsCursorNeverSkipsConcurrentWriters)
}

func testEventsCursorNeverSkipsConcurrentWriters(t *testing.T, db string) {
	ctx := context.Background()
	s := openT(t, db)
	const writers, each = 6, 40
	errc := make(chan error, writers)
	for w := range writers {
		go func() {
			for i := range each {
				if _, err := s.AppendEvents(ctx, model.Event{TaskID: fmt.Sprint(w), Kind: "k", Message: fmt.Sprint(i), Actor: model.ActorSystem}); err != nil {
					errc <- err
					return
				}
			}
			errc <- nil
		}()
	}
	seen := map[int64]int{}
	var after int64
	done := 0
	deadline := time.Now().Add(60 * time.Second)
	for len(seen) < writers*each && time.Now().Before(deadline) {
		select {
		case err := <-errc:
			if err != nil {
				t.Fatal(err)
			}
			done++
		default:
		}
		evs, err := s.Events(ctx, EventQuery{AfterID: after, Limit: 7})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			seen[e.ID]++
			after = e.ID
		}
		if len(evs) == 0 && done == writers {
			break
		}
	}
	if len(seen) != writers*each {
		all, _ := s.Events(ctx, EventQuery{Limit: 10000})
		t.Fatalf("the follower saw %d of %d events (%d stored): a cursor skipped events committed out of id order", len(seen), writers*each, len(all))
	}
	for id, n := range seen {
		if n != 1 {
			t.Fatalf("event %d seen %d times", id, n)
		}
	}
}
