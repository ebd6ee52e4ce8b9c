package model

// Objective says what a placement optimises.
type Objective string

// Objectives.
const (
	ObjEarliestStart Objective = "earliest_start" // default
	ObjFastestFinish Objective = "fastest_finish"
	ObjMaxThroughput Objective = "max_throughput"
	ObjMinCost       Objective = "min_cost" // in allocation units (SU)
)

// Objectives lists the valid objectives in documentation order.
var Objectives = []Objective{ObjEarliestStart, ObjFastestFinish, ObjMaxThroughput, ObjMinCost}

// IntRange is a closed [min viable, max useful] range.
type IntRange struct {
	Min int `json:"min,omitempty" yaml:"min"`
	Max int `json:"max,omitempty" yaml:"max"`
}

// DurationRange is a closed range of durations.
type DurationRange struct {
	Min Duration `json:"min,omitempty" yaml:"min"`
	Max Duration `json:"max,omitempty" yaml:"max"`
}

// Constraints restrict where a task may run, independent of size.
type Constraints struct {
	Arch           []string   `json:"arch,omitempty" yaml:"arch,omitempty"`                         // allowed archs; empty = any
	GPUModels      []string   `json:"gpu_models,omitempty" yaml:"gpu_models,omitempty"`             // allow list; empty = any
	AvoidGPUModels []string   `json:"avoid_gpu_models,omitempty" yaml:"avoid_gpu_models,omitempty"` // deny list
	MinGPUMemoryGB int        `json:"min_gpu_memory_gb,omitempty" yaml:"min_gpu_memory_gb,omitempty"`
	Container      *Container `json:"container,omitempty" yaml:"container,omitempty"`
	Features       []string   `json:"features,omitempty" yaml:"features,omitempty"`           // required site features
	AvoidSystems   []string   `json:"avoid_systems,omitempty" yaml:"avoid_systems,omitempty"` // never place here
}

// Envelope is a task's resource request as a range plus constraints and an objective.
// GPUs, CPU cores and memory are totals for the whole job; Nodes bounds how they may be
// spread. A zero Max means "same as Min".
type Envelope struct {
	GPUs         IntRange      `json:"gpus,omitempty" yaml:"gpus,omitempty"`
	CPUCores     IntRange      `json:"cpu_cores,omitempty" yaml:"cpu_cores,omitempty"`
	MemoryGB     IntRange      `json:"memory_gb,omitempty" yaml:"memory_gb,omitempty"`
	Walltime     DurationRange `json:"walltime,omitempty" yaml:"walltime,omitempty"`
	Nodes        IntRange      `json:"nodes,omitempty" yaml:"nodes,omitempty"`
	Constraints  Constraints   `json:"constraints,omitempty" yaml:"constraints,omitempty"`
	Objective    Objective     `json:"objective,omitempty" yaml:"objective,omitempty"`
	MaxQueueWait Duration      `json:"max_queue_wait,omitempty" yaml:"max_queue_wait,omitempty"`

	// Provenance of a draft.
	Source     string  `json:"source,omitempty" yaml:"source,omitempty"` // user | heuristic | llm
	Confidence float64 `json:"confidence,omitempty" yaml:"confidence,omitempty"`
	Rationale  string  `json:"rationale,omitempty" yaml:"rationale,omitempty"`
}

// Envelope sources.
const (
	SourceUser      = "user"
	SourceHeuristic = "heuristic"
	SourceLLM       = "llm"
)
