package scheduler

import (
	"strconv"
	"strings"
	"unsafe"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

// AcceleratorRule matches GPUs: a GPU task needs a GPU partition whose model is allowed
// (constraints.gpu_models) and not avoided (constraints.avoid_gpu_models) and where the
// minimum GPU count is reachable. A CPU task may use a GPU partition (some sites put
// CPU queues on GPU nodes), but the ranker's fit score pushes it behind CPU partitions,
// which is where CPU work belongs and is charged least.
type AcceleratorRule struct{}

var _ builtin = AcceleratorRule{}

// Name implements Rule.
func (AcceleratorRule) Name() string { return "accelerator" }

// Check implements Rule.
func (x AcceleratorRule) Check(r *Request, c *Candidate) Verdict { return verdict(x, r, c) }

const (
	accelGPUMatch = iota
	accelCPUTaskCPUPart
	accelCPUTaskGPUPart
	accelOptionalGPUs
	accelNoGPUs
	accelModel // not in gpu_models, or in avoid_gpu_models
	accelTooFew
)

func (AcceleratorRule) test(r *Request, rec *model.ResourceRecord, _ model.Health) outcome {
	env := &r.Envelope
	switch {
	case env.GPUs.Min == 0 && env.GPUs.Max == 0:
		if rec.IsGPU() {
			return pass(accelCPUTaskGPUPart)
		}
		return pass(accelCPUTaskCPUPart)
	case !rec.IsGPU():
		if env.GPUs.Min == 0 {
			return pass(accelOptionalGPUs)
		}
		return fail(accelNoGPUs)
	case modelExcludedRec(r, rec):
		return fail(accelModel)
	case rec.GPUsPerNode*nodeCap(env, rec) < env.GPUs.Min:
		return fail(accelTooFew)
	}
	return pass(accelGPUMatch)
}

func (AcceleratorRule) reason(w *words, r *Request, rec *model.ResourceRecord, _ model.Health, o outcome) string {
	env := &r.Envelope
	m := rec.GPUModel
	switch o.why() {
	case accelCPUTaskGPUPart:
		return w.join("GPU partition (", strconv.Itoa(rec.GPUsPerNode), "x", gpuName(m), " per node) for a CPU task: allowed, ranked after CPU partitions")
	case accelCPUTaskCPUPart:
		return "CPU task, CPU partition"
	case accelOptionalGPUs:
		return "CPU partition; GPUs are optional (gpus.min 0)"
	case accelNoGPUs:
		return w.join("no GPUs on this partition; the task needs at least ", strconv.Itoa(env.GPUs.Min))
	case accelModel:
		if allow := env.Constraints.GPUModels; len(allow) > 0 && !anyGPUMatch(allow, rec) {
			if m == "" {
				m = "unknown model"
			}
			if detailMatters(allow) {
				m = gpuDesc(rec)
			}
			return w.join(m, " is not in constraints.gpu_models (", strings.Join(allow, ","), ")", impliedNote(allow))
		}
		if detailMatters(env.Constraints.AvoidGPUModels) {
			m = gpuDesc(rec)
		}
		return w.join(m, " is in constraints.avoid_gpu_models")
	case accelTooFew:
		most := rec.GPUsPerNode * nodeCap(env, rec)
		return w.join("at most ", strconv.Itoa(most), " GPUs reachable (", strconv.Itoa(rec.GPUsPerNode), "x", gpuName(m), " per node); gpus.min is ", strconv.Itoa(env.GPUs.Min))
	}
	return w.join(strconv.Itoa(rec.GPUsPerNode), "x", gpuName(m), " per node")
}

// gpuName is how reasons name GPU model m ("GPU" when it is unknown).
func gpuName(m string) string {
	if m == "" {
		return "GPU"
	}
	return m
}

// modelExcludedRec reports whether the envelope's gpu_models / avoid_gpu_models rule
// out the record's GPUs. Names that match by model alone ("A100") use modelExcluded's
// per-request cache; a memory variant ("A100-80GB") or a superchip ("GH200", whose
// match depends on the host architecture) is matched against the record through the
// catalogue (model.GPUMatches).
func modelExcludedRec(r *Request, rec *model.ResourceRecord) bool {
	c := &r.Envelope.Constraints
	v := &r.models
	if !v.checked {
		v.checked = true
		v.complex = !allPlain(c.GPUModels) || !allPlain(c.AvoidGPUModels)
		if v.complex {
			v.allow, v.avoid = parseSpecs(c.GPUModels), parseSpecs(c.AvoidGPUModels)
		}
	}
	if !v.complex {
		return modelExcluded(r, rec.GPUModel)
	}
	return (len(c.GPUModels) > 0 && !specsMatch(v.allow, rec)) || specsMatch(v.avoid, rec)
}

func parseSpecs(list []string) []model.GPUSpec {
	out := make([]model.GPUSpec, 0, len(list))
	for _, m := range list {
		if g, err := model.ParseGPUModel(m); err == nil {
			out = append(out, g)
		}
	}
	return out
}

func specsMatch(specs []model.GPUSpec, rec *model.ResourceRecord) bool {
	for _, g := range specs {
		if g.Matches(rec.GPUModel, rec.GPUMemoryGB, rec.Arch) {
			return true
		}
	}
	return false
}

func allPlain(list []string) bool {
	for _, m := range list {
		if !model.GPUSpecIsPlain(m) {
			return false
		}
	}
	return true
}

func anyGPUMatch(list []string, rec *model.ResourceRecord) bool {
	for _, m := range list {
		if model.GPUMatches(m, rec.GPUModel, rec.GPUMemoryGB, rec.Arch) {
			return true
		}
	}
	return false
}

// detailMatters reports whether a list names a memory variant or a superchip, whose
// match depends on the record's GPU memory or host arch: reasons then show those.
func detailMatters(list []string) bool {
	for _, m := range list {
		if spec, err := model.ParseGPUModel(m); err == nil {
			if info, _ := model.LookupGPUModel(spec.Model); spec.MemoryGB > 0 || info.Class != "" {
				return true
			}
		}
	}
	return false
}

// gpuDesc names a record's GPUs for a reason: "H100 80 GB on x86_64".
func gpuDesc(rec *model.ResourceRecord) string {
	s := gpuName(rec.GPUModel)
	if rec.GPUMemoryGB > 0 {
		s += " " + strconv.Itoa(rec.GPUMemoryGB) + " GB"
	}
	if rec.Arch != "" {
		s += " on " + rec.Arch
	}
	return s
}

// impliedNote explains a superchip request: "; GH200 = H100-class GPU on an aarch64 host".
func impliedNote(allow []string) string {
	for _, m := range allow {
		if spec, err := model.ParseGPUModel(m); err == nil {
			if info, _ := model.LookupGPUModel(spec.Model); info.Class != "" {
				return "; " + info.Name + " = " + info.Class + "-class GPU on an " + info.HostArch + " host"
			}
		}
	}
	return ""
}

// modelExcluded reports whether the envelope's gpu_models / avoid_gpu_models rule out
// GPU model m. A federation has a handful of models, which its 1,000 records repeat,
// so the answers for the first few models are kept in the request. Records usually
// share the model strings' bytes (the catalog's or the parser's canonical string):
// those are found by comparing the pointer and length, without a call; others by
// comparing the text.
func modelExcluded(r *Request, m string) bool {
	c := &r.models
	p := unsafe.StringData(m)
	for i := 0; i < c.n; i++ {
		if unsafe.StringData(c.names[i]) == p && len(c.names[i]) == len(m) {
			return c.bad[i]
		}
	}
	for i := 0; i < c.n; i++ {
		if c.names[i] == m {
			return c.bad[i]
		}
	}
	allow := r.Envelope.Constraints.GPUModels
	bad := (len(allow) > 0 && !containsFold(allow, m)) || containsFold(r.Envelope.Constraints.AvoidGPUModels, m)
	if c.n < len(c.names) {
		c.names[c.n], c.bad[c.n] = m, bad
		c.n++
	}
	return bad
}

// modelVerdicts remembers modelExcluded's answers within one request.
type modelVerdicts struct {
	checked      bool            // complex is set
	complex      bool            // some name needs the record's memory or arch (see modelExcludedRec)
	allow, avoid []model.GPUSpec // parsed gpu_models / avoid_gpu_models when complex
	n            int
	names        [6]string
	bad          [6]bool
}
