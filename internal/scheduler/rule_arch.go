package scheduler

import (
	"strings"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

// ArchRule checks the partition's CPU architecture against constraints.arch.
type ArchRule struct{}

var _ builtin = ArchRule{}

// Name implements Rule.
func (ArchRule) Name() string { return "arch" }

// Check implements Rule.
func (x ArchRule) Check(r *Request, c *Candidate) Verdict { return verdict(x, r, c) }

// Constant implements ConstantRule: no arch constraint passes everywhere.
func (ArchRule) Constant(r *Request) (pass, ok bool) {
	return true, len(r.Envelope.Constraints.Arch) == 0
}

const (
	archAny = iota
	archAllowed
	archUnknown
	archOther
)

func (ArchRule) test(r *Request, rec *model.ResourceRecord, _ model.Health) outcome {
	allowed := r.Envelope.Constraints.Arch
	switch {
	case len(allowed) == 0:
		return pass(archAny)
	case rec.Arch == "":
		return fail(archUnknown)
	case !containsFold(allowed, rec.Arch):
		return fail(archOther)
	}
	return pass(archAllowed)
}

func (ArchRule) reason(w *words, r *Request, rec *model.ResourceRecord, _ model.Health, o outcome) string {
	allowed := r.Envelope.Constraints.Arch
	switch o.why() {
	case archUnknown:
		return w.join("partition arch is unknown; constraints.arch asks for ", strings.Join(allowed, ","))
	case archOther:
		return w.join(rec.Arch, " is not in constraints.arch (", strings.Join(allowed, ","), ")")
	case archAllowed:
		return rec.Arch
	}
	return "any arch"
}
