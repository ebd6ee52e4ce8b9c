package scheduler

import (
	"strconv"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

// GPUMemoryRule checks memory per GPU against constraints.min_gpu_memory_gb.
type GPUMemoryRule struct{}

var _ builtin = GPUMemoryRule{}

// Name implements Rule.
func (GPUMemoryRule) Name() string { return "gpu_memory" }

// Check implements Rule.
func (x GPUMemoryRule) Check(r *Request, c *Candidate) Verdict { return verdict(x, r, c) }

// Constant implements ConstantRule: no minimum passes everywhere.
func (GPUMemoryRule) Constant(r *Request) (pass, ok bool) {
	return true, r.Envelope.Constraints.MinGPUMemoryGB <= 0
}

const (
	gpuMemEnough = iota
	gpuMemNoMinimum
	gpuMemNoGPUs
	gpuMemUnknown
	gpuMemTooSmall
)

func (GPUMemoryRule) test(r *Request, rec *model.ResourceRecord, _ model.Health) outcome {
	want := r.Envelope.Constraints.MinGPUMemoryGB
	switch {
	case want <= 0:
		return pass(gpuMemNoMinimum)
	case !rec.IsGPU():
		return pass(gpuMemNoGPUs)
	case rec.GPUMemoryGB == 0:
		return fail(gpuMemUnknown)
	case rec.GPUMemoryGB < want:
		return fail(gpuMemTooSmall)
	}
	return pass(gpuMemEnough)
}

func (GPUMemoryRule) reason(w *words, r *Request, rec *model.ResourceRecord, _ model.Health, o outcome) string {
	want, have := r.Envelope.Constraints.MinGPUMemoryGB, rec.GPUMemoryGB
	switch o.why() {
	case gpuMemNoMinimum:
		return "no minimum"
	case gpuMemNoGPUs:
		return "no GPUs on this partition (the accelerator rule decides)"
	case gpuMemUnknown:
		return w.join("GPU memory is unknown here; the task needs ", strconv.Itoa(want), " GB per GPU")
	case gpuMemTooSmall:
		return w.join(strconv.Itoa(have), " GB per GPU < ", strconv.Itoa(want), " GB (constraints.min_gpu_memory_gb)")
	}
	return w.join(strconv.Itoa(have), " GB per GPU")
}
