package model

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Envelope defaults and limits. Normalize applies the defaults; Validate enforces the limits.
//
//   - Any range whose Max is 0 gets Max = Min ("max 0 means same as min").
//   - nodes: Min 0 becomes 1, so the default is exactly one node (1..1). A multi-node
//     job must say so (nodes.max > 1); Mosaic never spreads a job over nodes unasked.
//   - cpu_cores: Min 0 becomes 1. Sizing gives a GPU job that asks for at most one
//     core the node's share per GPU instead (scheduler.Size).
//   - memory_gb: 0..0 means "the site's default memory" for a CPU job and the node's
//     memory share per GPU for a GPU job (scheduler.Size).
//   - gpus: 0..0 means a CPU-only job.
//   - walltime: there is no default; walltime.min must be positive.
//   - objective: empty becomes earliest_start.
//   - source: empty becomes user; a user envelope with confidence 0 gets confidence 1.
const (
	MaxEnvelopeGPUs        = 100_000
	MaxEnvelopeCPUCores    = 10_000_000
	MaxEnvelopeMemoryGB    = 100_000_000
	MaxEnvelopeNodes       = 100_000
	MaxEnvelopeGPUMemoryGB = 1024
	MaxEnvelopeWalltime    = MaxDuration
)

// KnownArchs are the canonical CPU architectures.
var KnownArchs = []string{"x86_64", "aarch64"}

// CanonicalArch maps amd64/x86-64/arm64 spellings to x86_64 or aarch64; ok is false otherwise.
func CanonicalArch(s string) (string, bool) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "x86_64", "x86-64", "amd64", "x64", "intel64":
		return "x86_64", true
	case "aarch64", "arm64", "armv8", "arm":
		return "aarch64", true
	}
	return strings.TrimSpace(s), false
}

// EnvelopeFieldError names the envelope field that is wrong and why.
type EnvelopeFieldError struct {
	Field   string `json:"field"`
	Problem string `json:"problem"`
}

// Error implements error.
func (e *EnvelopeFieldError) Error() string {
	return "envelope field " + e.Field + ": " + e.Problem
}

// Normalize fills defaults (see the constants block above) and canonicalises names
// (GPU models, archs, runtimes), trimming and de-duplicating lists. It never fails:
// names it cannot canonicalise stay as written so Validate can name them.
func (e *Envelope) Normalize() {
	fill := func(r *IntRange) {
		if r.Max == 0 {
			r.Max = r.Min
		}
	}
	if e.Nodes.Min == 0 {
		e.Nodes.Min = 1
	}
	if e.CPUCores.Min == 0 {
		e.CPUCores.Min = 1
	}
	fill(&e.GPUs)
	fill(&e.CPUCores)
	fill(&e.MemoryGB)
	fill(&e.Nodes)
	if e.Walltime.Max == 0 {
		e.Walltime.Max = e.Walltime.Min
	}
	if e.Objective == "" {
		e.Objective = ObjEarliestStart
	}
	e.Objective = Objective(strings.ToLower(strings.TrimSpace(string(e.Objective))))
	if e.Source == "" {
		e.Source = SourceUser
	}
	if e.Source == SourceUser && e.Confidence == 0 {
		e.Confidence = 1
	}
	c := &e.Constraints
	c.Arch = normList(c.Arch, func(s string) string { a, _ := CanonicalArch(s); return a })
	c.GPUModels = normList(c.GPUModels, func(s string) string { g, _ := CanonicalGPU(s); return g })
	c.AvoidGPUModels = normList(c.AvoidGPUModels, func(s string) string { g, _ := CanonicalGPU(s); return g })
	c.Features = normList(c.Features, strings.TrimSpace)
	c.AvoidSystems = normList(c.AvoidSystems, strings.TrimSpace)
	if c.Container != nil {
		c.Container.Image = strings.TrimSpace(c.Container.Image)
		c.Container.Runtime = strings.ToLower(strings.TrimSpace(c.Container.Runtime))
	}
}

func normList(in []string, f func(string) string) []string {
	if len(in) == 0 {
		return nil
	}
	out := make([]string, 0, len(in))
	seen := make(map[string]bool, len(in))
	for _, s := range in {
		v := f(s)
		k := strings.ToLower(v)
		if v == "" || seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, v)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// Validate checks the envelope as Normalize would leave it (it does not modify e) and
// returns every problem found, each an *EnvelopeFieldError naming the field, joined
// with errors.Join. A nil result means the envelope can be scheduled.
func (e *Envelope) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, &EnvelopeFieldError{Field: field, Problem: fmt.Sprintf(format, args...)})
	}
	// Negative values are checked on the raw input, before defaults hide them.
	for _, r := range []struct {
		name string
		v    IntRange
	}{{"gpus", e.GPUs}, {"cpu_cores", e.CPUCores}, {"memory_gb", e.MemoryGB}, {"nodes", e.Nodes}} {
		if r.v.Min < 0 {
			bad(r.name+".min", "is %d; it must be 0 or more", r.v.Min)
		}
		if r.v.Max < 0 {
			bad(r.name+".max", "is %d; it must be 0 or more (0 means the same as min)", r.v.Max)
		}
	}
	if e.Walltime.Min < 0 {
		bad("walltime.min", "is negative (%s)", e.Walltime.Min)
	}
	if e.Walltime.Max < 0 {
		bad("walltime.max", "is negative (%s)", e.Walltime.Max)
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}

	n := *e
	n.Constraints.Arch = append([]string(nil), e.Constraints.Arch...)
	n.Constraints.GPUModels = append([]string(nil), e.Constraints.GPUModels...)
	n.Constraints.AvoidGPUModels = append([]string(nil), e.Constraints.AvoidGPUModels...)
	if e.Constraints.Container != nil {
		cc := *e.Constraints.Container
		n.Constraints.Container = &cc
	}
	n.Normalize()

	for _, r := range []struct {
		name  string
		v     IntRange
		limit int
	}{
		{"gpus", n.GPUs, MaxEnvelopeGPUs}, {"cpu_cores", n.CPUCores, MaxEnvelopeCPUCores},
		{"memory_gb", n.MemoryGB, MaxEnvelopeMemoryGB}, {"nodes", n.Nodes, MaxEnvelopeNodes},
	} {
		if r.v.Min > r.v.Max {
			bad(r.name, "min %d is greater than max %d; lower min or raise max", r.v.Min, r.v.Max)
		}
		if r.v.Max > r.limit {
			bad(r.name+".max", "%d is beyond the limit of %d", r.v.Max, r.limit)
		}
	}
	if n.Nodes.Min > 1 && n.GPUs.Max > 0 && n.GPUs.Max < n.Nodes.Min {
		bad("gpus.max", "%d GPUs cannot be spread over at least %d nodes", n.GPUs.Max, n.Nodes.Min)
	}
	switch {
	case n.Walltime.Min == 0:
		bad("walltime.min", "is zero; give the shortest run that is useful, e.g. \"30m\" or \"02:00:00\"")
	case n.Walltime.Min > n.Walltime.Max:
		bad("walltime", "min %s is greater than max %s", n.Walltime.Min, n.Walltime.Max)
	}
	if n.Walltime.Max > MaxEnvelopeWalltime {
		bad("walltime.max", "%s is over the %d-day limit", n.Walltime.Max, int64(MaxEnvelopeWalltime.D()/day))
	}
	if n.MaxQueueWait < 0 {
		bad("max_queue_wait", "is negative (%s)", n.MaxQueueWait)
	}
	if n.MaxQueueWait > MaxDuration {
		bad("max_queue_wait", "%s is over the %d-day limit", n.MaxQueueWait, int64(MaxDuration.D()/day))
	}
	if !validObjective(n.Objective) {
		bad("objective", "%q is not one of %v", n.Objective, Objectives)
	}
	switch n.Source {
	case SourceUser, SourceHeuristic, SourceLLM:
	default:
		bad("source", "%q is not one of user, heuristic, llm", n.Source)
	}
	if n.Confidence < 0 || n.Confidence > 1 || n.Confidence != n.Confidence {
		bad("confidence", "%v is outside [0, 1]", n.Confidence)
	}

	c := &n.Constraints
	for _, a := range c.Arch {
		if _, ok := CanonicalArch(a); !ok {
			bad("constraints.arch", "unknown architecture %q; use one of %v", a, KnownArchs)
		}
	}
	allow := map[string]bool{}
	for _, g := range c.GPUModels {
		if _, err := ParseGPUModel(g); err != nil {
			bad("constraints.gpu_models", "%v", err)
		}
		allow[g] = true
	}
	if host := ImpliedHostArch(c.GPUModels); host != "" && len(c.Arch) > 0 && !containsFoldStr(c.Arch, host) {
		bad("constraints.arch", "%s runs on an %s host but constraints.arch asks for %s; drop the arch or pick another GPU model",
			strings.Join(c.GPUModels, ","), host, strings.Join(c.Arch, ","))
	}
	for _, g := range c.AvoidGPUModels {
		if _, err := ParseGPUModel(g); err != nil {
			bad("constraints.avoid_gpu_models", "%v", err)
		}
		if allow[g] {
			bad("constraints.avoid_gpu_models", "%s is both allowed (gpu_models) and avoided", g)
		}
	}
	if n.GPUs.Max == 0 && len(c.GPUModels) > 0 {
		bad("constraints.gpu_models", "is set but the envelope asks for no GPUs (gpus.min 0); set gpus or drop gpu_models")
	}
	if c.MinGPUMemoryGB < 0 || c.MinGPUMemoryGB > MaxEnvelopeGPUMemoryGB {
		bad("constraints.min_gpu_memory_gb", "%d is outside 0..%d", c.MinGPUMemoryGB, MaxEnvelopeGPUMemoryGB)
	}
	if n.GPUs.Max == 0 && c.MinGPUMemoryGB > 0 {
		bad("constraints.min_gpu_memory_gb", "is set but the envelope asks for no GPUs (gpus.min 0)")
	}
	if ct := c.Container; ct != nil {
		if ct.Image == "" {
			bad("constraints.container.image", "is empty; give an image such as docker://nvcr.io/nvidia/pytorch:24.01-py3 or a .sif path")
		} else if err := CheckLine("it", ct.Image, MaxLineChars); err != nil {
			bad("constraints.container.image", "%v", err)
		}
		switch {
		case ct.Runtime == "":
		case !IsKnownContainerRuntime(ct.Runtime):
			bad("constraints.container.runtime", "unknown runtime %q; use %s", ct.Runtime, strings.Join(RunnableContainerRuntimes, " or "))
		default:
			if _, err := ScriptRuntime(ct); err != nil {
				bad("constraints.container.runtime", "%v", err)
			}
		}
	}
	for _, f := range e.Constraints.Features {
		if strings.TrimSpace(f) == "" {
			bad("constraints.features", "contains an empty feature name")
		} else if err := CheckLine("feature "+strconv.Quote(f), f, MaxLineChars); err != nil {
			bad("constraints.features", "%v", err)
		}
	}
	for _, s := range e.Constraints.AvoidSystems {
		if strings.TrimSpace(s) == "" {
			bad("constraints.avoid_systems", "contains an empty system name")
		} else if err := CheckLine("system "+strconv.Quote(s), s, MaxLineChars); err != nil {
			bad("constraints.avoid_systems", "%v", err)
		}
	}
	for _, l := range [][]string{e.Constraints.Arch, e.Constraints.GPUModels, e.Constraints.AvoidGPUModels} {
		for _, v := range l {
			if err := CheckLine(strconv.Quote(v), v, MaxLineChars); err != nil {
				bad("constraints", "%v", err)
			}
		}
	}
	if err := CheckText("it", e.Rationale, MaxDescriptionChars); err != nil {
		bad("rationale", "%v", err)
	}
	return errors.Join(errs...)
}

func containsFoldStr(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}

func validObjective(o Objective) bool {
	for _, x := range Objectives {
		if o == x {
			return true
		}
	}
	return false
}

// DecodeEnvelopeJSON reads one envelope from JSON, refusing unknown fields and trailing
// data, then normalizes and validates it.
func DecodeEnvelopeJSON(b []byte) (Envelope, error) {
	var e Envelope
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		return Envelope{}, fmt.Errorf("envelope JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Envelope{}, fmt.Errorf("envelope JSON: unexpected data after the envelope object")
	}
	if err := e.Validate(); err != nil {
		return Envelope{}, err
	}
	e.Normalize()
	return e, nil
}

// DecodeEnvelopeYAML reads one envelope from YAML, refusing unknown fields, then
// normalizes and validates it. Durations take any ParseDuration form; note that a bare
// number is minutes here (Slurm's convention) while JSON numbers are seconds.
func DecodeEnvelopeYAML(b []byte) (Envelope, error) {
	var e Envelope
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&e); err != nil {
		if errors.Is(err, io.EOF) {
			return Envelope{}, fmt.Errorf("envelope YAML: the document is empty")
		}
		return Envelope{}, fmt.Errorf("envelope YAML: %w", err)
	}
	if err := e.Validate(); err != nil {
		return Envelope{}, err
	}
	e.Normalize()
	return e, nil
}
