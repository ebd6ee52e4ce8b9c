package scheduler

import "github.com/mosaic-hpc/mosaic/internal/model"

// FeaturesRule requires every feature in constraints.features among the partition's.
type FeaturesRule struct{}

// Name implements Rule.
func (FeaturesRule) Name() string { return "features" }

// Check implements Rule.
func (FeaturesRule) Check(r *Request, c *Candidate) Verdict {
	want := r.Envelope.Constraints.Features
	if len(want) == 0 {
		return Pass("none required")
	}
	for _, f := range want {
		if !containsFold(c.Record.Features, f) {
			return Failf(r, func() string { return "feature " + f + " is not offered here (constraints.features)" })
		}
	}
	return Pass("all required features")
}

// Constant implements ConstantRule: no required feature passes everywhere.
func (FeaturesRule) Constant(r *Request) (pass, ok bool) {
	return true, len(r.Envelope.Constraints.Features) == 0
}

// fails is Check's pass/fail without the reason (see quickRule).
func (FeaturesRule) fails(r *Request, rec *model.ResourceRecord, _ model.Health) bool {
	for _, f := range r.Envelope.Constraints.Features {
		if !containsFold(rec.Features, f) {
			return true
		}
	}
	return false
}
