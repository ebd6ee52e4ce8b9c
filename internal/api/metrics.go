package api

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

// healthStates are the values of mosaic_system_health's state label: each system
// has one series per state, 1 for its current state and 0 for the others.
var healthStates = []model.Health{model.HealthOK, model.HealthDegraded, model.HealthDown, model.HealthNeedsLogin}

// snapshotCollector exports the latest snapshot as gauges at scrape time, so metrics
// never disagree with /api/federation and no global state is kept.
type snapshotCollector struct {
	s *Server

	freeGPUs, totalGPUs, freeCores, totalCores, running, pending, up, health, latency, rounds *prometheus.Desc
}

func newSnapshotCollector(s *Server) *snapshotCollector {
	part := []string{"system", "partition"}
	return &snapshotCollector{s: s,
		freeGPUs:   prometheus.NewDesc("mosaic_partition_free_gpus", "Free GPUs in the partition.", part, nil),
		totalGPUs:  prometheus.NewDesc("mosaic_partition_gpus", "GPUs in the partition.", part, nil),
		freeCores:  prometheus.NewDesc("mosaic_partition_free_cores", "Free CPU cores in the partition.", part, nil),
		totalCores: prometheus.NewDesc("mosaic_partition_cores", "CPU cores in the partition.", part, nil),
		running:    prometheus.NewDesc("mosaic_partition_running_jobs", "Running jobs.", part, nil),
		pending:    prometheus.NewDesc("mosaic_partition_pending_jobs", "Pending jobs (queue depth).", part, nil),
		up:         prometheus.NewDesc("mosaic_system_up", "1 if the system's last probe succeeded (health ok or degraded), else 0.", []string{"system"}, nil),
		health: prometheus.NewDesc("mosaic_system_health",
			"The system's probe health: 1 for its current state (ok, degraded, down, needs-login), 0 for the others.", []string{"system", "state"}, nil),
		latency: prometheus.NewDesc("mosaic_system_probe_latency_seconds", "Duration of the system's last probe (see mosaic_probe_duration_seconds for the distribution).", []string{"system"}, nil),
		rounds:  prometheus.NewDesc("mosaic_snapshots_total", "Probe rounds (merged snapshots) since the core started.", nil, nil),
	}
}

func (c *snapshotCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.freeGPUs, c.totalGPUs, c.freeCores, c.totalCores, c.running, c.pending, c.up, c.health, c.latency, c.rounds} {
		ch <- d
	}
}

func (c *snapshotCollector) Collect(ch chan<- prometheus.Metric) {
	snap, err := c.s.core.Federation()
	if err != nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(c.rounds, prometheus.CounterValue, float64(snap.Seq))
	for _, h := range snap.Systems {
		up := 0.0
		if h.Health == model.HealthOK || h.Health == model.HealthDegraded {
			up = 1
		}
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, up, h.System)
		for _, st := range healthStates {
			v := 0.0
			if h.Health == st {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(c.health, prometheus.GaugeValue, v, h.System, string(st))
		}
		ch <- prometheus.MustNewConstMetric(c.latency, prometheus.GaugeValue, float64(h.ProbeLatencyMS)/1000, h.System)
	}
	seen := map[string]bool{}
	for i := range snap.Records {
		r := &snap.Records[i]
		k := r.System + "/" + r.Partition
		if seen[k] {
			continue
		}
		seen[k] = true
		g := func(d *prometheus.Desc, v int) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), r.System, r.Partition)
		}
		g(c.freeGPUs, r.FreeGPUs)
		g(c.totalGPUs, r.TotalGPUs)
		g(c.freeCores, r.FreeCores)
		g(c.totalCores, r.TotalCores)
		g(c.running, r.RunningJobs)
		g(c.pending, r.PendingJobs)
	}
}

// HTTPBuckets are the buckets of mosaic_http_request_duration_seconds.
var HTTPBuckets = []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}

// newServerMetrics makes the server's own registry: Go and process collectors, the
// snapshot gauges and the HTTP request histogram (fed by the access log, accesslog.go).
func (s *Server) newServerMetrics() {
	s.reg = prometheus.NewRegistry()
	s.httpDur = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "mosaic_http_request_duration_seconds",
		Help:    "HTTP requests by method, route (the mux pattern; \"unmatched\" for none) and status code, with their duration.",
		Buckets: HTTPBuckets,
	}, []string{"method", "route", "code"})
	s.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		newSnapshotCollector(s), s.httpDur)
	s.reg.MustRegister(newLeaderCollector(s)) // team mode's lease (metrics_leader.go)
}

// metricsHandler serves the server's registry and the core's (internal/metrics: the
// instruments the core's layers feed, and whatever else registered there) as one.
func (s *Server) metricsHandler() http.Handler {
	g := prometheus.Gatherers{s.reg}
	if r := s.core.Metrics().Registry(); r != nil {
		g = append(g, r)
	}
	return promhttp.HandlerFor(g, promhttp.HandlerOpts{ErrorLog: slogPrinter{s}})
}

// slogPrinter logs promhttp's gathering errors.
type slogPrinter struct{ s *Server }

func (p slogPrinter) Println(v ...any) { p.s.opts.Logger.Error("metrics: gathering failed", "err", v) }
