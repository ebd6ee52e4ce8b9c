package scheduler

import (
	"context"
	"testing"
	"time"
)

// BenchmarkPlace measures one placement (every rule on every candidate, sizing and
// heuristic ranking of the feasible ones) over a 1,000-partition snapshot. Target:
// ≥ 10,000 placements/s on one core:
//
//	go test -run=^$ -bench=Place -benchmem -cpu=1 ./internal/scheduler/
func BenchmarkPlace(b *testing.B) {
	snap := bigSnapshot(1000)
	task := a100Task()
	s := newTestScheduler(Options{})
	ctx := context.Background()
	d, err := s.Place(ctx, task, snap, PlaceOptions{})
	if err != nil {
		b.Fatal(err)
	}
	nf := len(d.Feasible())
	if d.Explain(); len(d.Candidates) != 1000 || nf == 0 || nf == 1000 {
		b.Fatalf("setup: %d candidates, %d feasible", len(d.Candidates), nf)
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPU()
	for b.Loop() {
		if _, err := s.Place(ctx, task, snap, PlaceOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	reportRates(b, processCPU()-cpu0)
}

// BenchmarkPlaceRanked adds building every feasible Candidate (Decision.Feasible), what
// a caller that reads the whole ranked table pays on top of Place.
func BenchmarkPlaceRanked(b *testing.B) {
	benchPlaceThen(b, func(d *Decision) {
		if len(d.Feasible()) == 0 {
			b.Fatal("no feasible candidate")
		}
	})
}

// BenchmarkPlaceExplained adds Explain (every verdict's reason and the infeasible
// candidates), the cost of producing the full trace for JSON or the table.
func BenchmarkPlaceExplained(b *testing.B) {
	benchPlaceThen(b, (*Decision).Explain)
}

// BenchmarkPlaceStored adds encoding the explained trace as JSON, what a stored submit
// pays per placement (the trace is what the store keeps and the API returns). It calls
// MarshalJSON as the store does: json.Marshal(d) also re-scans the megabyte the
// method returns (encoding/json checks every Marshaler's output), which costs more
// than writing it.
func BenchmarkPlaceStored(b *testing.B) {
	benchPlaceThen(b, func(d *Decision) {
		if _, err := d.MarshalJSON(); err != nil {
			b.Fatal(err)
		}
	})
}

// benchPlaceThen places the 1,000-partition task in a loop, calling then on each decision.
func benchPlaceThen(b *testing.B, then func(*Decision)) {
	snap := bigSnapshot(1000)
	task := a100Task()
	s := newTestScheduler(Options{})
	ctx := context.Background()
	b.ReportAllocs()
	cpu0 := processCPU()
	for b.Loop() {
		d, err := s.Place(ctx, task, snap, PlaceOptions{})
		if err != nil {
			b.Fatal(err)
		}
		then(d)
	}
	reportRates(b, processCPU()-cpu0)
}

// reportRates reports placements per wall-clock second and per CPU-second of this
// process (with -cpu=1 the latter is what one core sustains even when the machine is
// shared and the wall clock includes time spent waiting for the CPU).
func reportRates(b *testing.B, cpu time.Duration) {
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "placements/s")
	if cpu > 0 {
		b.ReportMetric(float64(b.N)/cpu.Seconds(), "placements/cpu-s")
	}
}
