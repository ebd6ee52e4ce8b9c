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
	if ct.Runtime == "" {
		return Pass(have[0])
	}
	for _, h := range have {
		if runtimeCompatible(ct.Runtime, h) {
			return Pass(h)
		}
	}
	return Failf(r, func() string {
		return "runtime " + ct.Runtime + " is not available (have " + strings.Join(have, ",") + ")"
	})
}

func runtimeCompatible(want, have string) bool {
	if strings.EqualFold(want, have) {
		return true
	}
	isApp := func(s string) bool { return strings.EqualFold(s, "apptainer") || strings.EqualFold(s, "singularity") }
	return isApp(want) && isApp(have)
}

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
	if ct.Runtime == "" {
		return false
	}
	for _, h := range have {
		if runtimeCompatible(ct.Runtime, h) {
			return false
		}
	}
	return true
}
