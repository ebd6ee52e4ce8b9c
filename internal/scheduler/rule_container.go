package scheduler

import (
	"strings"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

// ContainerRule requires a container runtime when the envelope names an image. Apptainer
// and Singularity are interchangeable (sites alias one to the other).
type ContainerRule struct{}

// Name implements Rule.
func (ContainerRule) Name() string { return "container" }

// Check implements Rule.
func (ContainerRule) Check(r *Request, c *Candidate) Verdict {
	ct := r.Envelope.Constraints.Container
	if ct == nil {
		return Pass("no container")
	}
	have := c.Record.ContainerRuntimes
	if len(have) == 0 {
		return Failf(r, func() string { return "no container runtime reported here; the task runs in " + ct.Image })
	}
	want := ct.Runtime
	if want == "" {
		want = model.DefaultContainerRuntime // what the job script runs
	}
	for _, h := range have {
		if runtimeCompatible(want, h) {
			return Pass(h)
		}
	}
	return Failf(r, func() string {
		return "runtime " + want + " is not available (have " + strings.Join(have, ",") + ")"
	})
}

func runtimeCompatible(want, have string) bool { return model.ContainerRuntimeCompatible(want, have) }

// Constant implements ConstantRule: no container passes everywhere.
func (ContainerRule) Constant(r *Request) (pass, ok bool) {
	return true, r.Envelope.Constraints.Container == nil
}

// fails is Check's pass/fail without the reason (see quickRule).
func (ContainerRule) fails(r *Request, rec *model.ResourceRecord, _ model.Health) bool {
	ct := r.Envelope.Constraints.Container
	if ct == nil {
		return false
	}
	have := rec.ContainerRuntimes
	if len(have) == 0 {
		return true
	}
	want := ct.Runtime
	if want == "" {
		want = model.DefaultContainerRuntime
	}
	for _, h := range have {
		if runtimeCompatible(want, h) {
			return false
		}
	}
	return true
}
