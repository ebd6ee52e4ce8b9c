package scheduler

import (
	"strings"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

// ContainerRule requires a container runtime when the envelope names an image: the one
// asked for, or the job scripts' default; compatibility is model.ContainerRuntimeCompatible
// (apptainer and singularity are interchangeable).
type ContainerRule struct{}

var _ builtin = ContainerRule{}

// Name implements Rule.
func (ContainerRule) Name() string { return "container" }

// Check implements Rule.
func (x ContainerRule) Check(r *Request, c *Candidate) Verdict { return verdict(x, r, c) }

// Constant implements ConstantRule: no container passes everywhere.
func (ContainerRule) Constant(r *Request) (pass, ok bool) {
	return true, r.Envelope.Constraints.Container == nil
}

const (
	containerRuntime = iota // the first compatible runtime (of the default's family when none is asked for)
	containerNone
	containerNoRuntimes
	containerUnavailable
)

func (ContainerRule) test(r *Request, rec *model.ResourceRecord, _ model.Health) outcome {
	ct := r.Envelope.Constraints.Container
	switch {
	case ct == nil:
		return pass(containerNone)
	case len(rec.ContainerRuntimes) == 0:
		return fail(containerNoRuntimes)
	case compatibleRuntime(ct.Runtime, rec.ContainerRuntimes) < 0:
		return fail(containerUnavailable)
	}
	return pass(containerRuntime)
}

func (ContainerRule) reason(w *words, r *Request, rec *model.ResourceRecord, _ model.Health, o outcome) string {
	ct, have := r.Envelope.Constraints.Container, rec.ContainerRuntimes
	switch o.why() {
	case containerNone:
		return "no container"
	case containerNoRuntimes:
		return w.join("no container runtime reported here; the task runs in ", ct.Image)
	case containerUnavailable:
		return w.join("runtime ", wantRuntime(ct.Runtime), " is not available (have ", strings.Join(have, ","), ")")
	}
	return have[compatibleRuntime(ct.Runtime, have)]
}

// wantRuntime is the runtime the job script runs for a container asking for rt.
func wantRuntime(rt string) string {
	if rt == "" {
		return model.DefaultContainerRuntime
	}
	return rt
}

// compatibleRuntime is the index of the first runtime of have that can run want (the
// default runtime when want is ""), or -1.
func compatibleRuntime(want string, have []string) int {
	want = wantRuntime(want)
	for i, h := range have {
		if model.ContainerRuntimeCompatible(want, h) {
			return i
		}
	}
	return -1
}
