package store

// SQLite only: these tests check the file (its header, PRAGMA quick_check, --fresh's
// move-aside, the WAL after a crash), which a PostgreSQL store does not have; its
// server checks its own pages, and --fresh does not apply to it.

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

// realStore writes a store with several tables and rows (tasks, events, history) and
// closes it, so the WAL is checkpointed into the file. It returns the path and size.
func realStore(t testing.TB, tasks int) (string, int64) {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state", "mosaic.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 12, 1, 7, 0, 0, 0, time.UTC)
	for i := range tasks {
		id := fmt.Sprintf("t%05d", i)
		row := &TaskRow{Task: model.Task{ID: id, Name: "train " + id, Command: strings.Repeat("python train.py ", 8), State: model.TaskPlaced,
			Envelope:  model.Envelope{GPUs: model.IntRange{Min: 1, Max: 4}, Walltime: model.DurationRange{Min: model.Duration(time.Hour), Max: model.Duration(2 * time.Hour)}},
			CreatedAt: now, UpdatedAt: now}}
		if err := s.CreateTask(ctx, row, model.Event{TaskID: id, Time: now, Kind: "decision", Message: "placed " + id, Rationale: strings.Repeat("because ", 10), Actor: model.ActorRules}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 50 {
		if err := s.SaveSnapshot(ctx, snap(now.Add(time.Duration(i)*time.Minute), i), time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path + "-wal"); err == nil && fi.Size() > 0 {
		t.Fatalf("the WAL was not checkpointed on close (%d bytes)", fi.Size())
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, fi.Size()
}

func pageSizeOf(t *testing.T, path string) int64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil || len(b) < 100 {
		t.Fatalf("read %s: %v", path, err)
	}
	ps := int64(b[16])<<8 | int64(b[17])
	if ps == 1 {
		ps = 65536
	}
	return ps
}

// TestOpenRefusesDamagedFiles is finding 8: an empty, truncated, corrupted or foreign
// file where Mosaic's state is expected is refused with its path and what to do, and
// left exactly as it was.
func TestOpenRefusesDamagedFiles(t *testing.T) {
	cases := []struct {
		name    string
		damage  func(t *testing.T, path string, size int64)
		problem string
	}{
		{"empty file", func(t *testing.T, path string, _ int64) { os.Truncate(path, 0) }, "is an empty file (0 bytes)"},
		{"truncated inside the header", func(t *testing.T, path string, _ int64) { os.Truncate(path, 60) }, "is truncated (60 bytes"},
		{"truncated mid-page", func(t *testing.T, path string, size int64) { os.Truncate(path, size/2+100) }, "is truncated"},
		{"truncated at a page boundary", func(t *testing.T, path string, size int64) {
			ps := pageSizeOf(t, path)
			os.Truncate(path, (size/ps/2)*ps)
		}, "is truncated"},
		{"corrupted pages", func(t *testing.T, path string, size int64) {
			ps := pageSizeOf(t, path)
			f, err := os.OpenFile(path, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			rng := rand.New(rand.NewSource(14))
			pages := size / ps
			for _, p := range []int64{pages / 3, pages / 2, 2 * pages / 3} {
				junk := make([]byte, ps)
				rng.Read(junk)
				if _, err := f.WriteAt(junk, p*ps); err != nil {
					t.Fatal(err)
				}
			}
		}, "fails SQLite's integrity check"},
		{"random bytes", func(t *testing.T, path string, size int64) {
			junk := make([]byte, size)
			rand.New(rand.NewSource(8)).Read(junk)
			os.WriteFile(path, junk, 0o600)
		}, "is not an SQLite database"},
		{"text file", func(t *testing.T, path string, _ int64) { os.WriteFile(path, []byte("MOSAIC_URL=http://x\n"), 0o600) }, "is not an SQLite database"},
		{"damaged page size", func(t *testing.T, path string, _ int64) {
			f, _ := os.OpenFile(path, os.O_RDWR, 0)
			f.WriteAt([]byte{0x03, 0x00}, 16)
			f.Close()
		}, "damaged header"},
		{"another program's database", func(t *testing.T, path string, _ int64) {
			os.Remove(path)
			db, err := sql.Open("sqlite", "file:"+path)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := db.Exec(`CREATE TABLE photos (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO photos(name) VALUES ('cat')`); err != nil {
				t.Fatal(err)
			}
			db.Close()
		}, "another program"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path, size := realStore(t, 300)
			tc.damage(t, path, size)
			before, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			s, err := Open(context.Background(), path)
			if err == nil {
				s.Close()
				t.Fatal("a damaged store was opened")
			}
			var de *DamagedError
			if !errors.As(err, &de) || !errors.Is(err, ErrDamaged) {
				t.Fatalf("want a *DamagedError, got %T: %v", err, err)
			}
			msg := err.Error()
			for _, want := range []string{path, tc.problem, "mosaic serve --fresh", "backup"} {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q lacks %q", msg, want)
				}
			}
			after, err := os.ReadFile(path)
			if err != nil || !bytes.Equal(before, after) {
				t.Errorf("the refused file was modified (%d -> %d bytes, %v)", len(before), len(after), err)
			}
		})
	}
}

// TestOpenFreshMovesDamagedFileAside: with Fresh, a damaged file is kept as
// <path>.bad-<time> (byte for byte) and an empty, working store starts in its place.
func TestOpenFreshMovesDamagedFileAside(t *testing.T) {
	ctx := context.Background()
	for _, damage := range []string{"empty", "corrupted"} {
		t.Run(damage, func(t *testing.T) {
			path, size := realStore(t, 300)
			if damage == "empty" {
				os.Truncate(path, 0)
			} else {
				f, _ := os.OpenFile(path, os.O_RDWR, 0)
				f.WriteAt(bytes.Repeat([]byte{0xA5}, 8192), size/2)
				f.Close()
			}
			before, _ := os.ReadFile(path)
			when := time.Date(2026, 12, 1, 8, 30, 0, 0, time.UTC)
			s, err := Open(ctx, path, Fresh(), func(o *openOptions) { o.now = func() time.Time { return when } })
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			want := path + ".bad-20261201T083000Z"
			if s.MovedAside() != want {
				t.Errorf("MovedAside = %q, want %q", s.MovedAside(), want)
			}
			kept, err := os.ReadFile(want)
			if err != nil || !bytes.Equal(kept, before) {
				t.Errorf("the damaged file was not kept as it was: %v", err)
			}
			rows, err := s.Tasks(ctx, nil, 0)
			if err != nil || len(rows) != 0 {
				t.Errorf("fresh store: %d tasks, %v", len(rows), err)
			}
			if err := s.CreateTask(ctx, &TaskRow{Task: model.Task{ID: "n1", Name: "n", State: model.TaskPlaced, CreatedAt: when, UpdatedAt: when}}); err != nil {
				t.Errorf("fresh store does not take writes: %v", err)
			}
		})
	}
	// A healthy store is never moved, even with Fresh.
	path, _ := realStore(t, 5)
	s, err := Open(ctx, path, Fresh())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.MovedAside() != "" {
		t.Errorf("a healthy store was moved aside to %s", s.MovedAside())
	}
	if rows, err := s.Tasks(ctx, nil, 0); err != nil || len(rows) != 5 {
		t.Errorf("healthy store with Fresh: %d tasks, %v", len(rows), err)
	}
	if m, _ := filepath.Glob(path + ".bad-*"); len(m) != 0 {
		t.Errorf("files moved aside: %v", m)
	}
}

// BenchmarkOpenIntegrityCheck measures Open on an existing store, which runs the header
// check and PRAGMA quick_check, and the check alone, on stores of 1,000, 20,000 and 100,000
// tasks (one event each) with 50 history buckets.
func BenchmarkOpenIntegrityCheck(b *testing.B) {
	for _, n := range []int{1000, 20000, 100000} {
		b.Run(fmt.Sprintf("tasks=%d", n), func(b *testing.B) {
			path, size := realStore(b, n)
			ctx := context.Background()
			b.Run("open", func(b *testing.B) {
				for range b.N {
					s, err := Open(ctx, path)
					if err != nil {
						b.Fatal(err)
					}
					s.Close()
				}
				b.ReportMetric(float64(size)/(1<<20), "MB")
			})
			b.Run("quick_check", func(b *testing.B) {
				db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
				if err != nil {
					b.Fatal(err)
				}
				defer db.Close()
				for range b.N {
					if p := check(ctx, db); p != "" {
						b.Fatal(p)
					}
				}
				b.ReportMetric(float64(size)/(1<<20), "MB")
			})
		})
	}
}

// TestOpenAfterCrashKeepsWAL: a store whose last writes are still only in the WAL (the
// process was killed) passes the check and keeps them: the check must not refuse a
// healthy, recoverable store.
func TestOpenAfterCrashKeepsWAL(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "live.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	now := time.Now().UTC()
	for i := range 20 {
		id := fmt.Sprintf("w%d", i)
		if err := s.CreateTask(ctx, &TaskRow{Task: model.Task{ID: id, Name: id, State: model.TaskPlaced, CreatedAt: now, UpdatedAt: now}}); err != nil {
			t.Fatal(err)
		}
	}
	if fi, err := os.Stat(path + "-wal"); err != nil || fi.Size() == 0 {
		t.Fatalf("want a live WAL: %v", err)
	}
	// Copy the files as a crash would leave them (the store is still open).
	crashed := filepath.Join(dir, "crashed.db")
	for _, side := range []string{"", "-wal"} {
		b, err := os.ReadFile(path + side)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(crashed+side, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	c, err := Open(ctx, crashed)
	if err != nil {
		t.Fatalf("a crashed but healthy store was refused: %v", err)
	}
	defer c.Close()
	if rows, err := c.Tasks(ctx, nil, 0); err != nil || len(rows) != 20 {
		t.Errorf("after the crash: %d tasks, %v (want 20)", len(rows), err)
	}
}
