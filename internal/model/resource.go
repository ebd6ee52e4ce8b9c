package model

import (
	"sort"
	"time"
)

// Health is the state of a system or one of its partitions as the last probe saw it.
type Health string

// Health values. needs-login means credentials are missing or expired: a person must act.
const (
	HealthOK         Health = "ok"
	HealthDegraded   Health = "degraded"
	HealthDown       Health = "down"
	HealthNeedsLogin Health = "needs-login"
	HealthUnknown    Health = "unknown"
)

// Usable reports whether work may be placed on a system in this state.
func (h Health) Usable() bool { return h == HealthOK || h == HealthDegraded }

// NodeCounts are partition node states as a batch system reports them.
type NodeCounts struct {
	Idle      int `json:"idle"`
	Mixed     int `json:"mixed"`
	Allocated int `json:"allocated"`
	Down      int `json:"down"` // down, drained, failing, unreachable
	Total     int `json:"total"`
}

// ResourceRecord is one (system, partition, account) as seen by one probe.
type ResourceRecord struct {
	Timestamp time.Time `json:"timestamp"`
	Provider  string    `json:"provider"` // sim | ssh | local | globus
	Endpoint  string    `json:"endpoint"` // login host, Globus Compute endpoint id, or sim://name
	System    string    `json:"system"`   // e.g. Delta@NCSA
	Partition string    `json:"partition"`
	Account   string    `json:"account"`
	Arch      string    `json:"arch"` // x86_64 | aarch64

	CPUCoresPerNode int    `json:"cpu_cores_per_node"`
	MemoryPerNodeGB int    `json:"memory_per_node_gb"`
	GPUModel        string `json:"gpu_model,omitempty"` // canonical model, e.g. A100, H100, MI100
	GPUsPerNode     int    `json:"gpus_per_node"`
	GPUMemoryGB     int    `json:"gpu_memory_gb"` // per GPU

	Nodes      NodeCounts `json:"nodes"`
	TotalGPUs  int        `json:"total_gpus"`
	FreeGPUs   int        `json:"free_gpus"`
	TotalCores int        `json:"total_cores"`
	FreeCores  int        `json:"free_cores"`

	RunningJobs   int `json:"running_jobs"`
	PendingJobs   int `json:"pending_jobs"` // queue depth
	MyRunningJobs int `json:"my_running_jobs"`
	MyPendingJobs int `json:"my_pending_jobs"`

	WalltimeCap       Duration `json:"walltime_cap"` // 0 = unlimited/unknown
	MaxNodesPerJob    int      `json:"max_nodes_per_job"`
	MaxRunningPerUser int      `json:"max_running_per_user,omitempty"` // 0 = unknown
	MaxSubmitPerUser  int      `json:"max_submit_per_user,omitempty"`  // 0 = unknown
	Exclusive         bool     `json:"exclusive"`                      // whole-node allocation only
	ChargeFactor      float64  `json:"charge_factor,omitempty"`
	ContainerRuntimes []string `json:"container_runtimes"`
	Features          []string `json:"features,omitempty"`

	Health         Health `json:"health"`
	LastError      string `json:"last_error,omitempty"`
	ProbeLatencyMS int64  `json:"probe_latency_ms"`
}

// Key identifies a record within a snapshot.
func (r *ResourceRecord) Key() string { return r.System + "/" + r.Partition + "/" + r.Account }

// IsGPU reports whether the partition's gating resource is GPUs.
func (r *ResourceRecord) IsGPU() bool { return r.GPUsPerNode > 0 }

// BusyFraction is the used share of the gating resource (GPUs on GPU partitions,
// cores on CPU ones), in [0,1].
func (r *ResourceRecord) BusyFraction() float64 {
	total, free := r.TotalCores, r.FreeCores
	if r.IsGPU() {
		total, free = r.TotalGPUs, r.FreeGPUs
	}
	if total <= 0 {
		return 0
	}
	f := 1 - float64(free)/float64(total)
	if f < 0 {
		return 0
	}
	if f > 1 {
		return 1
	}
	return f
}

// FreeUnits returns the free amount of the gating resource and its unit name.
func (r *ResourceRecord) FreeUnits() (int, string) {
	if r.IsGPU() {
		return r.FreeGPUs, "gpus"
	}
	return r.FreeCores, "cores"
}

// SystemHealth is a system's probe state.
type SystemHealth struct {
	System         string    `json:"system"`
	Provider       string    `json:"provider"`
	Endpoint       string    `json:"endpoint"`
	Health         Health    `json:"health"`
	LastError      string    `json:"last_error,omitempty"`
	ProbeLatencyMS int64     `json:"probe_latency_ms"`
	LastProbe      time.Time `json:"last_probe"`      // when the last probe (good or bad) finished
	LastSuccess    time.Time `json:"last_success"`    // zero if it never succeeded
	ConsecutiveBad int       `json:"consecutive_bad"` // probes in a row that failed
}

// ResourceSnapshot is the merged view of the federation at one moment.
type ResourceSnapshot struct {
	TakenAt time.Time        `json:"taken_at"`
	Seq     uint64           `json:"seq"`
	Systems []SystemHealth   `json:"systems"`
	Records []ResourceRecord `json:"records"`
}

// System returns a system's health entry.
func (s *ResourceSnapshot) System(name string) (SystemHealth, bool) {
	for _, h := range s.Systems {
		if h.System == name {
			return h, true
		}
	}
	return SystemHealth{}, false
}

// RecordsOf returns the records of one system in snapshot order.
func (s *ResourceSnapshot) RecordsOf(system string) []ResourceRecord {
	var out []ResourceRecord
	for _, r := range s.Records {
		if r.System == system {
			out = append(out, r)
		}
	}
	return out
}

// SortRecords orders records by system, partition, account (the snapshot's canonical order).
func SortRecords(rs []ResourceRecord) {
	sort.Slice(rs, func(i, j int) bool {
		a, b := &rs[i], &rs[j]
		if a.System != b.System {
			return a.System < b.System
		}
		if a.Partition != b.Partition {
			return a.Partition < b.Partition
		}
		return a.Account < b.Account
	})
}
