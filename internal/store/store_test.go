package store

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

func snap(at time.Time, free int) *model.ResourceSnapshot {
	return &model.ResourceSnapshot{TakenAt: at,
		Systems: []model.SystemHealth{{System: "A@X", Health: model.HealthOK, ProbeLatencyMS: 12}},
		Records: []model.ResourceRecord{
			{System: "A@X", Partition: "gpu", Account: "acct", Health: model.HealthOK, FreeGPUs: free, TotalGPUs: 8, PendingJobs: 3,
				Nodes: model.NodeCounts{Idle: 1, Total: 2}},
			{System: "A@X", Partition: "cpu", Health: model.HealthOK, FreeCores: 64, TotalCores: 128},
		}}
}

func TestOpenMigratesAndPersists(t *testing.T) {
	forEachBackend(t, func(t *testing.T, db string) {
		if !IsPostgres(db) { // also: the directory of a new SQLite file is created
			db = filepath.Join(filepath.Dir(db), "state", "mosaic.db")
		}
		testOpenMigratesAndPersists(t, db)
	})
}

func testOpenMigratesAndPersists(t *testing.T, path string) {
	ctx := context.Background()
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	v, err := s.SchemaVersion(ctx)
	if err != nil || v < 1 {
		t.Fatalf("schema version %d %v", v, err)
	}
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	if err := s.SaveSnapshot(ctx, snap(t0, 4), time.Minute); err != nil {
		t.Fatal(err)
	}
	// Same bucket: replaced, not duplicated.
	if err := s.SaveSnapshot(ctx, snap(t0.Add(30*time.Second), 2), time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveSnapshot(ctx, snap(t0.Add(time.Minute), 6), time.Minute); err != nil {
		t.Fatal(err)
	}
	s.Close()

	s, err = Open(ctx, path) // reopen: migrations are not reapplied, data is there
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	pts, err := s.History(ctx, "A@X", t0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(pts) != 4 {
		t.Fatalf("want 2 buckets x 2 partitions, got %d: %+v", len(pts), pts)
	}
	var gpu []HistoryPoint
	for _, p := range pts {
		if p.Partition == "gpu" {
			gpu = append(gpu, p)
		}
	}
	if gpu[0].FreeGPUs != 2 || gpu[1].FreeGPUs != 6 || !gpu[0].TakenAt.Equal(t0) {
		t.Fatalf("gpu history %+v", gpu)
	}
	if pts, _ := s.History(ctx, "B@X", t0, 0); len(pts) != 0 {
		t.Fatalf("other system: %d", len(pts))
	}
	n, err := s.PruneHistory(ctx, t0.Add(time.Minute))
	if err != nil || n != 2 {
		t.Fatalf("pruned %d %v", n, err)
	}
	if !IsPostgres(path) {
		if st, _ := os.Stat(path); st == nil {
			t.Fatal("database file missing")
		}
	}
}

func TestNewerSchemaRefused(t *testing.T) { forEachBackend(t, testNewerSchemaRefused) }

func testNewerSchemaRefused(t *testing.T, path string) {
	ctx := context.Background()
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.ExecContext(ctx, `INSERT INTO schema_migrations(version, name) VALUES (?, ?)`, 9999, "future"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if s2, err := Open(ctx, path); err == nil || !strings.Contains(err.Error(), "schema version 9999 is newer than this binary knows") {
		if s2 != nil {
			s2.Close()
		}
		t.Fatalf("a database from a newer mosaic must be refused: %v", err)
	}
}

// TestInMemory: SQLite only (":memory:" is SQLite's private in-memory database).
func TestInMemory(t *testing.T) {
	s, err := Open(context.Background(), ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.SaveSnapshot(context.Background(), snap(time.Now(), 1), 0); err != nil {
		t.Fatal(err)
	}
}
