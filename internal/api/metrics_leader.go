package api

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Team mode's lease metrics (docs/TEAM.md): on every replica, whether it leads, the
// lease's fencing token, how long ago the lease was renewed, and the changes of
// holder it saw. In laptop mode (no lease) only mosaic_leader is exported, as 1.
var (
	leaderDesc = prometheus.NewDesc("mosaic_leader",
		"1 on the replica that holds the leader lease (and in laptop mode), 0 on a follower.", nil, nil)
	leaseTokenDesc = prometheus.NewDesc("mosaic_lease_token",
		"The leader lease's fencing token as this replica last read it; grows by one with every change of leader.", nil, nil)
	leaseLagDesc = prometheus.NewDesc("mosaic_lease_renew_lag_seconds",
		"Seconds since the leader lease was last renewed (by whichever replica holds it); above the lease TTL means no leader.", nil, nil)
	leaderChangesDesc = prometheus.NewDesc("mosaic_leader_changes_total",
		"Changes of leader this replica saw since it started.", nil, nil)
)

type leaderCollector struct{ s *Server }

func newLeaderCollector(s *Server) prometheus.Collector { return leaderCollector{s} }

func (c leaderCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- leaderDesc
	ch <- leaseTokenDesc
	ch <- leaseLagDesc
	ch <- leaderChangesDesc
}

func (c leaderCollector) Collect(ch chan<- prometheus.Metric) {
	l := c.s.core.Leadership()
	lead := 0.0
	if l.Role != "follower" {
		lead = 1
	}
	ch <- prometheus.MustNewConstMetric(leaderDesc, prometheus.GaugeValue, lead)
	if l.Role == "single" {
		return
	}
	ch <- prometheus.MustNewConstMetric(leaseTokenDesc, prometheus.GaugeValue, float64(l.Token))
	ch <- prometheus.MustNewConstMetric(leaseLagDesc, prometheus.GaugeValue, l.RenewLag.Seconds())
	ch <- prometheus.MustNewConstMetric(leaderChangesDesc, prometheus.CounterValue, float64(l.Changes))
}
