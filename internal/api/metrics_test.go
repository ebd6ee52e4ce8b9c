package api

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	pmodel "github.com/prometheus/common/model"

	"github.com/mosaic-hpc/mosaic/internal/core"
	"github.com/mosaic-hpc/mosaic/internal/model"
)

// scrape fetches /metrics, checks it with the Prometheus client library's linter
// (zero problems) and parses it with the text parser Prometheus uses.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("/metrics: HTTP %d", resp.StatusCode)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	problems, err := promlint.New(bytes.NewReader(body)).Lint()
	if err != nil {
		t.Fatalf("promlint: %v", err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
	p := expfmt.NewTextParser(pmodel.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("parsing /metrics: %v", err)
	}
	return fams
}

func labelsOf(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

// TestMetricsFollowPrometheusConventions: /metrics lints clean and parses; health
// is a gauge set (one series per state, exactly one at 1 per system), probe rounds a
// _total counter (the old mosaic_snapshot_seq is gone), and after a task is placed
// and finishes the placement, probe and HTTP histograms and the task counter moved.
func TestMetricsFollowPrometheusConventions(t *testing.T) {
	hs, c := coreServer(t, Options{Token: "tok"})
	env := model.Envelope{CPUCores: model.IntRange{Min: 1, Max: 1}, Walltime: model.DurationRange{Min: model.Duration(10 * time.Minute), Max: model.Duration(10 * time.Minute)}}
	submit := func(name, command string, env model.Envelope, want int) {
		t.Helper()
		req, _ := http.NewRequest("POST", hs.URL+"/api/tasks", strings.NewReader(mustJSON(t, core.SubmitRequest{Name: name, Command: command, Envelope: &env})))
		req.Header.Set("Authorization", "Bearer tok")
		req.Header.Set("Content-Type", "application/json")
		if code, body := do(t, req); code != want {
			t.Fatalf("submit %s: HTTP %d %s", name, code, body)
		}
	}
	submit("ok", "true", env, http.StatusCreated)
	submit("bad", "exit 3", env, http.StatusCreated)
	huge := env
	huge.GPUs = model.IntRange{Min: 100000, Max: 100000}
	submit("huge", "true", huge, http.StatusUnprocessableEntity)
	// The tasks end in the simulator (60× speed): wait for both, bounded.
	deadline := time.Now().Add(30 * time.Second)
	for {
		ts, err := c.Tasks(context.Background(), []model.TaskState{model.TaskSucceeded, model.TaskFailed}, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(ts) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the tasks did not end within 30s: %+v", ts)
		}
		time.Sleep(100 * time.Millisecond)
	}

	fams := scrape(t, hs.URL)
	wantType := map[string]dto.MetricType{
		"mosaic_system_health":                 dto.MetricType_GAUGE,
		"mosaic_system_up":                     dto.MetricType_GAUGE,
		"mosaic_snapshots_total":               dto.MetricType_COUNTER,
		"mosaic_placement_duration_seconds":    dto.MetricType_HISTOGRAM,
		"mosaic_probe_duration_seconds":        dto.MetricType_HISTOGRAM,
		"mosaic_http_request_duration_seconds": dto.MetricType_HISTOGRAM,
		"mosaic_tasks_finished_total":          dto.MetricType_COUNTER,
		"mosaic_continuations_total":           dto.MetricType_COUNTER,
		"mosaic_exchange_messages_total":       dto.MetricType_COUNTER,
		"mosaic_partition_free_gpus":           dto.MetricType_GAUGE,
	}
	for name, typ := range wantType {
		f, ok := fams[name]
		if !ok {
			t.Errorf("/metrics has no %s", name)
			continue
		}
		if f.GetType() != typ {
			t.Errorf("%s is a %s, want %s", name, f.GetType(), typ)
		}
	}
	if _, ok := fams["mosaic_snapshot_seq"]; ok {
		t.Error("mosaic_snapshot_seq (a counter without _total) is still exported")
	}
	// Health: per system, one series per state, exactly one of them 1.
	perSystem := map[string][]string{}
	for _, m := range fams["mosaic_system_health"].GetMetric() {
		l := labelsOf(m)
		if m.GetGauge().GetValue() == 1 {
			perSystem[l["system"]] = append(perSystem[l["system"]], l["state"])
		} else if m.GetGauge().GetValue() != 0 {
			t.Errorf("mosaic_system_health %v = %v, want 0 or 1", l, m.GetGauge().GetValue())
		}
	}
	snap, _ := c.Federation()
	if len(perSystem) != len(snap.Systems) || len(fams["mosaic_system_health"].GetMetric()) != len(snap.Systems)*len(healthStates) {
		t.Errorf("mosaic_system_health: %d series for %d systems, current states %v", len(fams["mosaic_system_health"].GetMetric()), len(snap.Systems), perSystem)
	}
	for sys, states := range perSystem {
		if len(states) != 1 {
			t.Errorf("system %s is in states %v at once", sys, states)
		}
	}
	for _, m := range fams["mosaic_system_up"].GetMetric() {
		if _, has := labelsOf(m)["health"]; has {
			t.Errorf("mosaic_system_up still has a health label: %v", labelsOf(m))
		}
	}
	count := func(name string, match map[string]string) uint64 {
		var n uint64
		for _, m := range fams[name].GetMetric() {
			l, ok := labelsOf(m), true
			for k, v := range match {
				ok = ok && l[k] == v
			}
			if ok {
				if h := m.GetHistogram(); h != nil {
					n += h.GetSampleCount()
				} else {
					n += uint64(m.GetCounter().GetValue())
				}
			}
		}
		return n
	}
	if n := count("mosaic_placement_duration_seconds", map[string]string{"outcome": "placed"}); n < 1 {
		t.Errorf("placements observed: %d, want ≥ 1", n)
	}
	for _, h := range snap.Systems {
		if n := count("mosaic_probe_duration_seconds", map[string]string{"system": h.System}); n < 1 {
			t.Errorf("probes of %s observed: %d", h.System, n)
		}
	}
	if n := count("mosaic_placement_duration_seconds", map[string]string{"outcome": "infeasible"}); n < 1 {
		t.Errorf("infeasible placements observed: %d, want ≥ 1", n)
	}
	if n := count("mosaic_http_request_duration_seconds", map[string]string{"method": "POST", "route": "/api/tasks", "code": "201"}); n != 2 {
		t.Errorf("HTTP POST /api/tasks 201 observed %d times, want 2", n)
	}
	if n := count("mosaic_http_request_duration_seconds", map[string]string{"method": "POST", "route": "/api/tasks", "code": "422"}); n != 1 {
		t.Errorf("HTTP POST /api/tasks 422 observed %d times, want 1", n)
	}
	for _, st := range []string{"succeeded", "failed"} {
		if n := count("mosaic_tasks_finished_total", map[string]string{"state": st}); n != 1 {
			t.Errorf("tasks finished %s = %d, want 1", st, n)
		}
	}
	if n := count("mosaic_continuations_total", map[string]string{"action": "fail"}); n != 1 {
		t.Errorf("continuations fail = %d, want 1 (the failed task's)", n)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
