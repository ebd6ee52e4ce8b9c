package scheduler

import (
	"strconv"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

// GPUMemoryRule checks memory per GPU against constraints.min_gpu_memory_gb.
type GPUMemoryRule struct{}

// Name implements Rule.
func (GPUMemoryRule) Name() string { return "gpu_memory" }

// Check implements Rule.
func (GPUMemoryRule) Check(r *Request, c *Candidate) Verdict {
	want := r.Envelope.Constraints.MinGPUMemoryGB
	if want <= 0 {
		return Pass("no minimum")
	}
	if !c.Record.IsGPU() {
		return Pass("no GPUs on this partition (the accelerator rule decides)")
	}
	have := c.Record.GPUMemoryGB
	if have == 0 {
		return Failf(r, func() string {
			return "GPU memory is unknown here; the task needs " + strconv.Itoa(want) + " GB per GPU"
		})
	}
	if have < want {
		return Failf(r, func() string {
			return strconv.Itoa(have) + " GB per GPU < " + strconv.Itoa(want) + " GB (constraints.min_gpu_memory_gb)"
		})
	}
	return Passf(r, func() string { return strconv.Itoa(have) + " GB per GPU" })
}

// Constant implements ConstantRule: no minimum passes everywhere.
func (GPUMemoryRule) Constant(r *Request) (pass, ok bool) {
	return true, r.Envelope.Constraints.MinGPUMemoryGB <= 0
}

// fails is Check's pass/fail without the reason (see quickRule).
func (GPUMemoryRule) fails(r *Request, rec *model.ResourceRecord, _ model.Health) bool {
	want := r.Envelope.Constraints.MinGPUMemoryGB
	return want > 0 && rec.IsGPU() && rec.GPUMemoryGB < want // 0 (unknown) < want fails too
}
