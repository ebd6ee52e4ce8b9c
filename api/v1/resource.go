package v1

import "time"

// NodeCounts are a partition's node states as its batch system reports them.
type NodeCounts struct {
	Idle      int `json:"idle"`
	Mixed     int `json:"mixed"`
	Allocated int `json:"allocated"`
	Down      int `json:"down"` // down, drained, failing, unreachable
	Total     int `json:"total"`
}

// ResourceRecord is one (system, partition, account) as one probe saw it.
type ResourceRecord struct {
	Timestamp time.Time `json:"timestamp"`
	Provider  string    `json:"provider"` // sim | ssh | local | globus
	Endpoint  string    `json:"endpoint"` // login host, Globus Compute endpoint id, or sim://name
	System    string    `json:"system"`
	Partition string    `json:"partition"`
	Account   string    `json:"account"`
	Arch      string    `json:"arch"` // x86_64 | aarch64

	CPUCoresPerNode int    `json:"cpu_cores_per_node"`
	MemoryPerNodeGB int    `json:"memory_per_node_gb"`
	GPUModel        string `json:"gpu_model,omitempty"`
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
	MaxRunningPerUser int      `json:"max_running_per_user,omitempty"`
	MaxSubmitPerUser  int      `json:"max_submit_per_user,omitempty"`
	Exclusive         bool     `json:"exclusive"` // whole-node allocation only
	ChargeFactor      float64  `json:"charge_factor,omitempty"`
	ContainerRuntimes []string `json:"container_runtimes"`
	Features          []string `json:"features,omitempty"`

	// Health is ok, degraded, down, needs-login or unknown.
	Health         string `json:"health"`
	LastError      string `json:"last_error,omitempty"`
	ProbeLatencyMS int64  `json:"probe_latency_ms"`
}

// Key identifies a record within a snapshot: system/partition/account.
func (r *ResourceRecord) Key() string { return r.System + "/" + r.Partition + "/" + r.Account }

// SystemHealth is a system's probe state.
type SystemHealth struct {
	System   string `json:"system"`
	Provider string `json:"provider"`
	Endpoint string `json:"endpoint"`
	// Health is ok, degraded, down, needs-login (a person must sign in) or unknown.
	Health         string    `json:"health"`
	LastError      string    `json:"last_error,omitempty"`
	ProbeLatencyMS int64     `json:"probe_latency_ms"`
	LastProbe      time.Time `json:"last_probe"`      // when the last probe (good or bad) finished
	LastSuccess    time.Time `json:"last_success"`    // zero if it never succeeded
	ConsecutiveBad int       `json:"consecutive_bad"` // probes in a row that failed
}

// ResourceSnapshot is the merged view of the federation at one moment
// (GET /api/federation).
type ResourceSnapshot struct {
	TakenAt time.Time        `json:"taken_at"`
	Seq     uint64           `json:"seq"`
	Systems []SystemHealth   `json:"systems"`
	Records []ResourceRecord `json:"records"`
}

// HistoryPoint is one stored observation of a partition (GET /api/federation/history).
type HistoryPoint struct {
	TakenAt     time.Time `json:"taken_at"`
	System      string    `json:"system"`
	Partition   string    `json:"partition"`
	Account     string    `json:"account"`
	Health      string    `json:"health"`
	FreeGPUs    int       `json:"free_gpus"`
	TotalGPUs   int       `json:"total_gpus"`
	FreeCores   int       `json:"free_cores"`
	TotalCores  int       `json:"total_cores"`
	RunningJobs int       `json:"running_jobs"`
	PendingJobs int       `json:"pending_jobs"`
	NodesIdle   int       `json:"nodes_idle"`
	NodesDown   int       `json:"nodes_down"`
	NodesTotal  int       `json:"nodes_total"`
}

// StatusRow is one partition in the queue-status view.
type StatusRow struct {
	System      string     `json:"system"`
	Partition   string     `json:"partition"`
	Health      string     `json:"health"`
	GPUModel    string     `json:"gpu_model,omitempty"`
	FreeGPUs    int        `json:"free_gpus"`
	TotalGPUs   int        `json:"total_gpus"`
	FreeCores   int        `json:"free_cores"`
	TotalCores  int        `json:"total_cores"`
	BusyPercent int        `json:"busy_percent"` // of the gating resource
	Nodes       NodeCounts `json:"nodes"`
	Running     int        `json:"running_jobs"`
	Pending     int        `json:"pending_jobs"`
	MyRunning   int        `json:"my_running_jobs"`
	MyPending   int        `json:"my_pending_jobs"`
	WalltimeCap Duration   `json:"walltime_cap"`
	// Wait is now, short, medium, long or unavailable.
	Wait string `json:"wait"`
}

// Status is the queue-status view (GET /api/status).
type Status struct {
	TakenAt time.Time      `json:"taken_at"`
	Systems []SystemHealth `json:"systems"`
	Rows    []StatusRow    `json:"partitions"`
}

// SimClock says how fast the simulated systems' clock runs against the wall clock.
type SimClock struct {
	// Speed is simulated seconds per real second (the fastest, if they differ).
	Speed float64 `json:"speed"`
	// Systems maps each simulated system to its speed.
	Systems map[string]float64 `json:"systems"`
	// Summary is the sentence surfaces show.
	Summary string `json:"summary"`
}

// About is the core's version and configuration (GET /api/about).
type About struct {
	Version   string    `json:"version"`
	Commit    string    `json:"commit,omitempty"`
	GoVersion string    `json:"go_version"`
	Catalog   string    `json:"catalog"` // file path or "embedded simulated federation"
	Systems   int       `json:"systems"`
	Tick      string    `json:"tick"`
	Store     string    `json:"store"`
	Ranker    string    `json:"ranker"`  // heuristic, or llm:<provider/model> with heuristic fallback
	Drafter   string    `json:"drafter"` // heuristic or llm:<provider/model>
	Rules     []string  `json:"rules"`   // the rule chain in order
	Started   time.Time `json:"started"`
	Sim       *SimClock `json:"sim,omitempty"` // nil when nothing is simulated
}

// ResourceDetail is one system with its catalog entry and partitions
// (GET /api/resources/{system}).
type ResourceDetail struct {
	System     SystemHealth     `json:"system"`
	Kind       string           `json:"kind"`
	Dialect    string           `json:"dialect"`
	Host       string           `json:"host,omitempty"`
	Endpoint   string           `json:"endpoint,omitempty"`
	Accounts   []string         `json:"accounts"`
	WorkDir    string           `json:"workdir,omitempty"`
	Machine    string           `json:"machine,omitempty"`
	Partitions []ResourceRecord `json:"partitions"`
}

// SiteEnv is what a look at a system's login node found (GET /api/resources/{system}/env).
type SiteEnv struct {
	Host              string   `json:"host"`
	User              string   `json:"user"`
	WorkDir           string   `json:"workdir"`
	WorkDirExists     bool     `json:"workdir_exists"`
	Python            string   `json:"python,omitempty"`
	Torch             string   `json:"torch,omitempty"`
	ContainerRuntimes []string `json:"container_runtimes,omitempty"`
	ModuleCount       int      `json:"module_count"`
	Modules           []string `json:"modules,omitempty"`
	Associations      []string `json:"associations,omitempty"`
}

// ExecResult is the output of one read-only look-around command
// (POST /api/resources/{system}/exec).
type ExecResult struct {
	Stdout    string `json:"stdout"`
	Stderr    string `json:"stderr"`
	ExitCode  int    `json:"exit_code"`
	Truncated bool   `json:"truncated"`
}
