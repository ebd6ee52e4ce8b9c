package metrics

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
)

// TestNilMetricsIgnoresObservations: hooks may be called on a nil *Metrics (a core
// built without instruments) without effect.
func TestNilMetricsIgnoresObservations(t *testing.T) {
	var m *Metrics
	m.ObservePlacement(time.Millisecond, "placed")
	m.ObserveProbe("A", time.Millisecond)
	m.TaskEnded("failed")
	m.Continuation("retry")
	m.ExchangeMessage()
	if m.Registry() != nil {
		t.Error("a nil Metrics has a registry")
	}
}

// value is the counter value, or the histogram's sample count, of the series of
// family name whose labels include match; -1 when there is none.
func value(fams []*dto.MetricFamily, name string, match map[string]string) float64 {
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			for k, v := range match {
				found := false
				for _, l := range m.GetLabel() {
					found = found || (l.GetName() == k && l.GetValue() == v)
				}
				if !found {
					continue series
				}
			}
			if h := m.GetHistogram(); h != nil {
				return float64(h.GetSampleCount())
			}
			return m.GetCounter().GetValue()
		}
	}
	return -1
}

// TestInstrumentsCountAndLintClean: each hook moves its instrument, the terminal
// states start at zero, and the registry passes Prometheus's linter.
func TestInstrumentsCountAndLintClean(t *testing.T) {
	m := New()
	m.ObservePlacement(2*time.Millisecond, "placed")
	m.ObservePlacement(time.Millisecond, "infeasible")
	m.ObserveProbe("Delta@NCSA", 30*time.Millisecond)
	m.TaskEnded("succeeded")
	m.Continuation("retry")
	m.Continuation("retry")
	m.ExchangeMessage()
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		match map[string]string
		want  float64
	}{
		{"mosaic_tasks_finished_total", map[string]string{"state": "succeeded"}, 1},
		{"mosaic_tasks_finished_total", map[string]string{"state": "cancelled"}, 0},
		{"mosaic_tasks_finished_total", map[string]string{"state": "failed"}, 0},
		{"mosaic_continuations_total", map[string]string{"action": "retry"}, 2},
		{"mosaic_exchange_messages_total", nil, 1},
		{"mosaic_placement_duration_seconds", map[string]string{"outcome": "placed"}, 1},
		{"mosaic_placement_duration_seconds", map[string]string{"outcome": "infeasible"}, 1},
		{"mosaic_probe_duration_seconds", map[string]string{"system": "Delta@NCSA"}, 1},
	} {
		if got := value(fams, c.name, c.match); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.match, got, c.want)
		}
	}
	problems, err := promlint.NewWithMetricFamilies(fams).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
}
