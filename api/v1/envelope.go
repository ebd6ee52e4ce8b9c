package v1

// IntRange is a closed [min viable, max useful] range; a zero Max means "same as Min".
type IntRange struct {
	Min int `json:"min,omitempty"`
	Max int `json:"max,omitempty"`
}

// DurationRange is a closed range of durations.
type DurationRange struct {
	Min Duration `json:"min,omitempty"`
	Max Duration `json:"max,omitempty"`
}

// Container asks for a job to run inside an image.
type Container struct {
	// Image is the container image (e.g. docker://pytorch/pytorch or a .sif path).
	Image string `json:"image"`
	// Runtime is apptainer, singularity, ... ("" = the site's default).
	Runtime string `json:"runtime,omitempty"`
}

// Constraints restrict where a task may run, independent of size.
type Constraints struct {
	Arch           []string   `json:"arch,omitempty"`             // allowed archs; empty = any
	GPUModels      []string   `json:"gpu_models,omitempty"`       // allow list; empty = any
	AvoidGPUModels []string   `json:"avoid_gpu_models,omitempty"` // deny list
	MinGPUMemoryGB int        `json:"min_gpu_memory_gb,omitempty"`
	Container      *Container `json:"container,omitempty"`
	Features       []string   `json:"features,omitempty"`      // required site features
	AvoidSystems   []string   `json:"avoid_systems,omitempty"` // never place here
}

// Envelope is a task's resource request: ranges of GPUs, CPU cores, memory (totals for
// the whole job), walltime and nodes, plus constraints and an objective.
type Envelope struct {
	GPUs        IntRange      `json:"gpus,omitempty"`
	CPUCores    IntRange      `json:"cpu_cores,omitempty"`
	MemoryGB    IntRange      `json:"memory_gb,omitempty"`
	Walltime    DurationRange `json:"walltime,omitempty"`
	Nodes       IntRange      `json:"nodes,omitempty"`
	Constraints Constraints   `json:"constraints,omitempty"`
	// Objective is earliest_start (default), fastest_finish, max_throughput or min_cost.
	Objective    string   `json:"objective,omitempty"`
	MaxQueueWait Duration `json:"max_queue_wait,omitempty"`

	// Source says who wrote the envelope: user, heuristic or llm.
	Source     string  `json:"source,omitempty"`
	Confidence float64 `json:"confidence,omitempty"`
	Rationale  string  `json:"rationale,omitempty"`
}

// Policy is a task's continuation policy; zero fields take the core's defaults
// (docs/EXECUTION.md lists them).
type Policy struct {
	MaxAttempts       int      `json:"max_attempts,omitempty"`
	MaxMigrations     int      `json:"max_migrations,omitempty"`
	RetryFailed       int      `json:"retry_failed,omitempty"`
	RetryTransient    *bool    `json:"retry_transient,omitempty"`
	ResizeOnTimeout   *bool    `json:"resize_on_timeout,omitempty"`
	ResizeOnOOM       *bool    `json:"resize_on_oom,omitempty"`
	Growth            float64  `json:"growth,omitempty"`
	MigrateOnWait     *bool    `json:"migrate_on_wait,omitempty"`
	WaitFactor        float64  `json:"wait_factor,omitempty"`
	WaitSlack         Duration `json:"wait_slack,omitempty"`
	SiteDownTicks     int      `json:"site_down_ticks,omitempty"`
	LostGrace         Duration `json:"lost_grace,omitempty"`
	DownOutlookFactor float64  `json:"down_outlook_factor,omitempty"`
	MigrateMargin     Duration `json:"migrate_margin,omitempty"`
	ReestimateEvery   Duration `json:"reestimate_every,omitempty"`
	StayBackoff       Duration `json:"stay_backoff,omitempty"`
}

// DraftResult is a drafted envelope (POST /api/envelope/generate).
type DraftResult struct {
	// Envelope's Source and Confidence say who drafted it.
	Envelope Envelope `json:"envelope"`
	// FallbackReason is set when an LLM was asked but its answer was not used.
	FallbackReason string `json:"fallback_reason,omitempty"`
	// Drafter is heuristic or llm:<provider/model>.
	Drafter string `json:"drafter"`
}
