// Package site reads the site catalog (sites.yaml): which systems form the federation,
// how each is reached, and the shape of its partitions. It also carries the built-in
// shapes of known machines and the embedded default catalog (the simulated federation).
package site

import "github.com/mosaic-hpc/mosaic/internal/model"

// Provider kinds.
const (
	KindSim    = "sim"
	KindSSH    = "ssh"
	KindLocal  = "local"
	KindGlobus = "globus"
)

// Scheduler dialects.
const (
	DialectSlurm = "slurm"
	DialectPBS   = "pbs"
)

// How the user's own queued jobs are ordered at a site (System.OrderOwnJobs).
const (
	OrderSubmission    = "submission"     // as submitted (the default)
	OrderSmallestFirst = "smallest-first" // smaller jobs first, by --nice (Slurm)
)

// Smallest-first's nice per doubling of a job's size (System.OrderNiceStep).
const (
	DefaultOrderNiceStep = 32
	MaxOrderNiceStep     = 1000
)

// Catalog is a whole sites.yaml.
type Catalog struct {
	// Path is where the catalog was read from ("" for the embedded default).
	Path    string    `yaml:"-" json:"path,omitempty"`
	Sim     SimGlobal `yaml:"sim,omitempty" json:"sim"`
	Systems []System  `yaml:"systems" json:"systems"`
	// Warnings are non-fatal problems found while loading (e.g. placeholder accounts),
	// each "file:line: field: message". Set by Parse/Load; not read from the file.
	Warnings []string `yaml:"-" json:"warnings,omitempty"`
}

// SimGlobal holds settings shared by all simulated systems.
type SimGlobal struct {
	Speed   float64 `yaml:"speed,omitempty" json:"speed"`     // simulated seconds per real second; default 60
	Seed    int64   `yaml:"seed,omitempty" json:"seed"`       // default 1
	WorkDir string  `yaml:"workdir,omitempty" json:"workdir"` // where user jobs run; default $XDG_STATE_HOME/mosaic/sim
}

// System is one supercomputer (or one simulated one).
type System struct {
	Name     string `yaml:"name" json:"name"`                           // e.g. Delta@NCSA
	Kind     string `yaml:"kind" json:"kind"`                           // sim | ssh | local | globus
	Machine  string `yaml:"machine,omitempty" json:"machine,omitempty"` // known shape to start from: delta, deltaai, anvil, vista, frontera, lonestar6
	Dialect  string `yaml:"dialect,omitempty" json:"dialect"`           // slurm | pbs (default slurm)
	Host     string `yaml:"host,omitempty" json:"host,omitempty"`       // login host (ssh), may be an ~/.ssh/config alias
	User     string `yaml:"user,omitempty" json:"user,omitempty"`
	Endpoint string `yaml:"endpoint,omitempty" json:"endpoint,omitempty"` // Globus Compute endpoint UUID (globus)
	SSH      *SSH   `yaml:"ssh,omitempty" json:"ssh,omitempty"`

	Accounts          []string `yaml:"accounts,omitempty" json:"accounts"`
	WorkDir           string   `yaml:"workdir,omitempty" json:"workdir,omitempty"` // job scripts, outputs, staged files
	Arch              string   `yaml:"arch,omitempty" json:"arch,omitempty"`       // default for partitions
	ContainerRuntimes []string `yaml:"container_runtimes,omitempty" json:"container_runtimes,omitempty"`
	Features          []string `yaml:"features,omitempty" json:"features,omitempty"`
	EnvScript         string   `yaml:"env_script,omitempty" json:"env_script,omitempty"` // sourced before a job's command
	// OrderOwnJobs is how Mosaic orders the user's own queued jobs at this site:
	// "submission" (the default: as submitted) or "smallest-first" (Slurm only: each
	// job is submitted with a --nice that grows with its size, so the user's smaller
	// jobs go ahead of their larger ones; see OrderSmallestFirst).
	OrderOwnJobs string `yaml:"order_own_jobs,omitempty" json:"order_own_jobs,omitempty"`
	// OrderNiceStep is smallest-first's nice per doubling of a job's size (0: the
	// default, DefaultOrderNiceStep). A smaller step lets fewer of the user's later
	// small jobs pass a large one: a longer mean wait, a shorter tail.
	OrderNiceStep int `yaml:"order_nice_step,omitempty" json:"order_nice_step,omitempty"`

	Partitions []Partition `yaml:"partitions,omitempty" json:"partitions"`
	SimConfig  *SimSystem  `yaml:"sim,omitempty" json:"sim,omitempty"` // kind: sim only

	// Users are per-user site identities (team mode): the account(s), ssh login and
	// identity file a user's jobs run under (identity.go).
	Users []UserIdentity `yaml:"users,omitempty" json:"users,omitempty"`
	// DefaultIdentity says what a user without an entry in Users gets: "shared" (the
	// system's own user, identity and accounts) or "refuse" (their tasks are not
	// placed here). Default: shared when Users is empty, refuse when it is not.
	DefaultIdentity string `yaml:"default_identity,omitempty" json:"default_identity,omitempty"`

	// Line is the line of the system's entry in the catalog file (0 if built in).
	Line int `yaml:"-" json:"-"`
}

// SSH holds transport options for kind ssh. Everything else comes from ~/.ssh/config.
type SSH struct {
	Port           int      `yaml:"port,omitempty" json:"port,omitempty"`
	IdentityFile   string   `yaml:"identity_file,omitempty" json:"identity_file,omitempty"`
	ProxyJump      string   `yaml:"proxy_jump,omitempty" json:"proxy_jump,omitempty"`
	ConfigFile     string   `yaml:"config_file,omitempty" json:"config_file,omitempty"` // -F
	ConnectTimeout string   `yaml:"connect_timeout,omitempty" json:"connect_timeout,omitempty"`
	Options        []string `yaml:"options,omitempty" json:"options,omitempty"` // extra -o Key=Value
}

// Partition is one partition (Slurm) or queue (PBS) with its node shape and limits.
type Partition struct {
	Name              string         `yaml:"name" json:"name"`
	Nodes             int            `yaml:"nodes" json:"nodes"`
	CPUCores          int            `yaml:"cpu_cores" json:"cpu_cores"` // per node
	MemoryGB          int            `yaml:"memory_gb" json:"memory_gb"` // per node
	GPUs              int            `yaml:"gpus,omitempty" json:"gpus"` // per node
	GPUModel          string         `yaml:"gpu_model,omitempty" json:"gpu_model,omitempty"`
	GPUMemoryGB       int            `yaml:"gpu_memory_gb,omitempty" json:"gpu_memory_gb,omitempty"`
	MaxWalltime       model.Duration `yaml:"max_walltime,omitempty" json:"max_walltime"`
	MaxNodesPerJob    int            `yaml:"max_nodes_per_job,omitempty" json:"max_nodes_per_job,omitempty"`
	MaxRunningPerUser int            `yaml:"max_running_per_user,omitempty" json:"max_running_per_user,omitempty"`
	MaxSubmitPerUser  int            `yaml:"max_submit_per_user,omitempty" json:"max_submit_per_user,omitempty"`
	Exclusive         bool           `yaml:"exclusive,omitempty" json:"exclusive"`
	ChargeFactor      float64        `yaml:"charge_factor,omitempty" json:"charge_factor,omitempty"`
	Arch              string         `yaml:"arch,omitempty" json:"arch,omitempty"`         // overrides the system's
	Accounts          []string       `yaml:"accounts,omitempty" json:"accounts,omitempty"` // overrides the system's
	Features          []string       `yaml:"features,omitempty" json:"features,omitempty"`

	Line int `yaml:"-" json:"-"`
}

// SimSystem configures a simulated system: how big, how loaded, what goes wrong.
type SimSystem struct {
	// MaxNodes caps each simulated partition's node count (the real machine may have
	// thousands); 0 = default 64.
	MaxNodes int     `yaml:"max_nodes,omitempty" json:"max_nodes,omitempty"`
	Load     SimLoad `yaml:"load,omitempty" json:"load"`
	Faults   Faults  `yaml:"faults,omitempty" json:"faults"`
}

// SimLoad is a simulated system's background workload.
type SimLoad struct {
	// Trace is a Standard Workload Format file (.swf or .swf.gz) replayed as background
	// load, scaled to each partition. Empty = the seeded synthetic generator.
	Trace string `yaml:"trace,omitempty" json:"trace,omitempty"`
	// Utilization is the offered load the generator (or trace time-scaling) aims at, 0–1.5;
	// default 0.85.
	Utilization float64 `yaml:"utilization,omitempty" json:"utilization,omitempty"`
	// MeanRuntime of synthetic jobs (default 2h simulated).
	MeanRuntime model.Duration `yaml:"mean_runtime,omitempty" json:"mean_runtime,omitempty"`
}

// Faults injects failures into a simulated system. Times are simulated, relative to
// the simulation's start.
type Faults struct {
	Outages        []Window      `yaml:"outages,omitempty" json:"outages,omitempty"`
	NodeFailures   []NodeFailure `yaml:"node_failures,omitempty" json:"node_failures,omitempty"`
	JobFailureProb float64       `yaml:"job_failure_prob,omitempty" json:"job_failure_prob,omitempty"` // per user job, 0–1: ends NODE_FAIL
}

// Window is a period of simulated time.
type Window struct {
	Start    model.Duration `yaml:"start" json:"start"`
	Duration model.Duration `yaml:"duration" json:"duration"`
}

// NodeFailure takes nodes of a partition down for a while; jobs on them end NODE_FAIL.
type NodeFailure struct {
	Partition string         `yaml:"partition" json:"partition"`
	Nodes     int            `yaml:"nodes" json:"nodes"`
	At        model.Duration `yaml:"at" json:"at"`
	Duration  model.Duration `yaml:"duration" json:"duration"`
}
