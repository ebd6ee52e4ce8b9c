package scheduler

import (
	"strings"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

// ArchRule checks the partition's CPU architecture against constraints.arch.
type ArchRule struct{}

// Name implements Rule.
func (ArchRule) Name() string { return "arch" }

// Check implements Rule.
func (ArchRule) Check(r *Request, c *Candidate) Verdict {
	allowed := r.Envelope.Constraints.Arch
	if len(allowed) == 0 {
		return Pass("any arch")
	}
	a := c.Record.Arch
	if a == "" {
		return Failf(r, func() string {
			return "partition arch is unknown; constraints.arch asks for " + strings.Join(allowed, ",")
		})
	}
	if !containsFold(allowed, a) {
		return Failf(r, func() string { return a + " is not in constraints.arch (" + strings.Join(allowed, ",") + ")" })
	}
	return Pass(a)
}

// Constant implements ConstantRule: no arch constraint passes everywhere.
func (ArchRule) Constant(r *Request) (pass, ok bool) {
	return true, len(r.Envelope.Constraints.Arch) == 0
}

// fails is Check's pass/fail without the reason (see quickRule).
func (ArchRule) fails(r *Request, rec *model.ResourceRecord, _ model.Health) bool {
	allowed := r.Envelope.Constraints.Arch
	return len(allowed) > 0 && (rec.Arch == "" || !containsFold(allowed, rec.Arch))
}
