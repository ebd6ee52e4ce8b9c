package api

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

// snapshotCollector exports the latest snapshot as gauges at scrape time, so metrics
// never disagree with /api/federation and no global state is kept.
type snapshotCollector struct {
	s *Server

	freeGPUs, totalGPUs, freeCores, totalCores, running, pending, up, latency, seq *prometheus.Desc
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
		up:         prometheus.NewDesc("mosaic_system_up", "1 if the last probe of the system succeeded.", []string{"system", "health"}, nil),
		latency:    prometheus.NewDesc("mosaic_system_probe_latency_seconds", "Duration of the last probe.", []string{"system"}, nil),
		seq:        prometheus.NewDesc("mosaic_snapshot_seq", "Probe rounds since start.", nil, nil),
	}
}

func (c *snapshotCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.freeGPUs, c.totalGPUs, c.freeCores, c.totalCores, c.running, c.pending, c.up, c.latency, c.seq} {
		ch <- d
	}
}

func (c *snapshotCollector) Collect(ch chan<- prometheus.Metric) {
	snap, err := c.s.core.Federation()
	if err != nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(c.seq, prometheus.CounterValue, float64(snap.Seq))
	for _, h := range snap.Systems {
		up := 0.0
		if h.Health == model.HealthOK || h.Health == model.HealthDegraded {
			up = 1
		}
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, up, h.System, string(h.Health))
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

func (s *Server) metricsHandler() http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), newSnapshotCollector(s))
	reg.MustRegister(newLeaderCollector(s)) // team mode's lease (metrics_leader.go)
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
}
