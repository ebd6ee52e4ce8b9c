package store

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/store/pgtest"
)

// TestTextSanitized: text that is not valid UTF-8 or holds NUL bytes (ssh or sbatch
// stderr, a site's error) is stored on both backends, the same on both: PostgreSQL
// refuses such text, SQLite would keep it as it is.
func TestTextSanitized(t *testing.T) { forEachBackend(t, testTextSanitized) }

func testTextSanitized(t *testing.T, db string) {
	ctx := context.Background()
	s := openT(t, db)
	const bad, want = "sbatch: \xff\xfeerror\x00 at \xc3", "sbatch: \uFFFDerror\uFFFD at \uFFFD"
	now := time.Now().UTC()
	if err := s.CreateTask(ctx, &TaskRow{Task: model.Task{ID: "t1", Name: "n", Command: "c", State: model.TaskPlaced,
		Reason: bad, CreatedAt: now, UpdatedAt: now}}); err != nil {
		t.Fatalf("create task: %v", err)
	}
	reason := bad + "!"
	if err := s.UpdateTask(ctx, "t1", TaskUpdate{Reason: &reason}); err != nil {
		t.Fatalf("update task: %v", err)
	}
	a := &model.Attempt{TaskID: "t1", N: 1, Tag: model.JobTag("t1", 1), System: "S", State: model.JobSubmitting, CreatedAt: now}
	if err := s.CreateAttempt(ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := s.UpdateAttempt(ctx, "t1", 1, AttemptUpdate{Reason: &reason}); err != nil {
		t.Fatalf("update attempt: %v", err)
	}
	if _, err := s.AppendEvents(ctx, model.Event{TaskID: "t1", Kind: "transition", Message: bad, Actor: model.ActorSystem}); err != nil {
		t.Fatalf("append events: %v", err)
	}
	snap := &model.ResourceSnapshot{TakenAt: now, Systems: []model.SystemHealth{{System: "S", Health: "down", LastError: bad}}}
	if err := s.SaveSnapshot(ctx, snap, time.Minute); err != nil {
		t.Fatalf("save snapshot: %v", err)
	}

	got, err := s.Task(ctx, "t1")
	if err != nil || got.Reason != want+"!" {
		t.Errorf("task reason %q, %v; want %q", got.Reason, err, want+"!")
	}
	atts, err := s.Attempts(ctx, "t1")
	if err != nil || len(atts) != 1 || atts[0].Reason != want+"!" {
		t.Errorf("attempt reason %+v, %v", atts, err)
	}
	evs, err := s.Events(ctx, EventQuery{TaskID: "t1"})
	if err != nil || len(evs) != 1 || evs[0].Message != want {
		t.Errorf("events %+v, %v", evs, err)
	}
	var lastErr string
	if err := s.db.QueryRowContext(ctx, `SELECT last_error FROM system_history WHERE system = ?`, "S").Scan(&lastErr); err != nil || lastErr != want {
		t.Errorf("last_error %q, %v; want %q", lastErr, err, want)
	}
}

func TestCleanText(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", ""},
		{"plain ü text", "plain ü text"},
		{"nul\x00", "nul\uFFFD"},
		{"\x00\x00", "\uFFFD\uFFFD"},
		{"bad \xff\xff run", "bad \uFFFD run"},
		{"cut \xe2\x82", "cut \uFFFD"},
		{"\xc0\x80", "\uFFFD"}, // overlong NUL
	} {
		if got := cleanText(c.in); got != c.want {
			t.Errorf("cleanText(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestTextOrderIsBytewise: text sort keys order by bytes on both backends, also in a
// PostgreSQL database whose default collation is not "C" (ICU en-US puts "a" before
// "B"; SQLite and "C" put "B" first).
func TestTextOrderIsBytewise(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) { testTextOrderIsBytewise(t, filepath.Join(t.TempDir(), "m.db")) })
	t.Run("postgres-icu", func(t *testing.T) { testTextOrderIsBytewise(t, pgtest.NewICU(t, "en-US")) })
}

func testTextOrderIsBytewise(t *testing.T, db string) {
	ctx := context.Background()
	s := openT(t, db)
	now := time.Now().UTC()
	ids := []string{"b", "a", "B", "_x", "A"}
	want := []string{"A", "B", "_x", "a", "b"}
	var recs []model.ResourceRecord
	for _, id := range ids {
		if err := s.CreateTask(ctx, &TaskRow{Task: model.Task{ID: id, Name: "n", Command: "c", State: model.TaskPlaced,
			CreatedAt: now, UpdatedAt: now}}); err != nil {
			t.Fatal(err)
		}
		recs = append(recs, model.ResourceRecord{System: id, Partition: "p"})
	}
	tasks, err := s.Tasks(ctx, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, task := range tasks {
		got = append(got, task.ID)
	}
	if !slices.Equal(got, want) {
		t.Errorf("Tasks order %q, want %q", got, want)
	}
	if err := s.SaveSnapshot(ctx, &model.ResourceSnapshot{TakenAt: now, Records: recs}, time.Minute); err != nil {
		t.Fatal(err)
	}
	hist, err := s.History(ctx, "", now.Add(-time.Hour), 0)
	if err != nil {
		t.Fatal(err)
	}
	got = got[:0]
	for _, h := range hist {
		got = append(got, h.System)
	}
	if !slices.Equal(got, want) {
		t.Errorf("History order %q, want %q", got, want)
	}
}
