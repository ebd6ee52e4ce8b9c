// Package metrics holds the core's Prometheus instruments: the histograms and
// counters that lower layers feed through plain function hooks (the collector's
// OnProbe, the scheduler's OnPlace, the engine's OnTaskEnded and OnContinuation, the
// exchange's OnMessage), so none of them imports Prometheus. The core makes one
// Metrics and wires the hooks; the API serves its Registry at /metrics together with
// the snapshot gauges and the HTTP instruments (internal/api/metrics.go).
//
// Other parts of the core register their own collectors on Registry (the seam for
// e.g. leader-lease metrics). Names follow Prometheus conventions: base units
// (seconds), counters end in _total, every name starts with mosaic_.
package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Buckets of the latency histograms, in seconds. Placement runs in milliseconds
// (the rule chain) to seconds (site start estimates, an LLM ranker); a probe is
// tens of milliseconds locally and seconds over ssh or Globus.
var (
	PlacementBuckets = []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}
	ProbeBuckets     = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}
)

// Metrics are the core's instruments. A nil *Metrics ignores every observation,
// so a hook may be called unconditionally.
type Metrics struct {
	reg           *prometheus.Registry
	placement     *prometheus.HistogramVec
	probe         *prometheus.HistogramVec
	tasksEnded    *prometheus.CounterVec
	continuations *prometheus.CounterVec
	exchange      prometheus.Counter
}

// New makes the instruments on a new registry.
func New() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		placement: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "mosaic_placement_duration_seconds",
			Help:    "Time to place a task (rule chain, sizing, rankers), by outcome: placed, infeasible or error.",
			Buckets: PlacementBuckets,
		}, []string{"outcome"}),
		probe: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "mosaic_probe_duration_seconds",
			Help:    "Time of one probe of a system (sinfo/squeue or qstat, or the simulator), successful or not.",
			Buckets: ProbeBuckets,
		}, []string{"system"}),
		tasksEnded: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mosaic_tasks_finished_total",
			Help: "Tasks that reached a terminal state (succeeded, failed, cancelled) since the core started.",
		}, []string{"state"}),
		continuations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mosaic_continuations_total",
			Help: "Continuation actions taken after an attempt ended badly or waited too long (retry, resize, migrate, fail, cancel, replan).",
		}, []string{"action"}),
		exchange: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "mosaic_exchange_messages_total",
			Help: "Messages the core's agent exchange accepted into a mailbox.",
		}),
	}
	m.reg.MustRegister(m.placement, m.probe, m.tasksEnded, m.continuations, m.exchange)
	// Known label values start at zero, so rate() and absent() work before the first event.
	for _, s := range []string{"succeeded", "failed", "cancelled"} {
		m.tasksEnded.WithLabelValues(s)
	}
	return m
}

// Registry is where the instruments live; other parts of the core register their
// collectors here and the API serves it. Nil for a nil Metrics.
func (m *Metrics) Registry() *prometheus.Registry {
	if m == nil {
		return nil
	}
	return m.reg
}

// ObservePlacement records one placement and its outcome.
func (m *Metrics) ObservePlacement(took time.Duration, outcome string) {
	if m == nil {
		return
	}
	m.placement.WithLabelValues(outcome).Observe(took.Seconds())
}

// ObserveProbe records one probe of a system.
func (m *Metrics) ObserveProbe(system string, took time.Duration) {
	if m == nil {
		return
	}
	m.probe.WithLabelValues(system).Observe(took.Seconds())
}

// TaskEnded counts a task reaching a terminal state.
func (m *Metrics) TaskEnded(state string) {
	if m == nil {
		return
	}
	m.tasksEnded.WithLabelValues(state).Inc()
}

// Continuation counts one continuation action.
func (m *Metrics) Continuation(action string) {
	if m == nil {
		return
	}
	m.continuations.WithLabelValues(action).Inc()
}

// ExchangeMessage counts one message accepted by the exchange.
func (m *Metrics) ExchangeMessage() {
	if m == nil {
		return
	}
	m.exchange.Inc()
}
