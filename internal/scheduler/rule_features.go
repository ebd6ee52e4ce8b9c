package scheduler

import "github.com/mosaic-hpc/mosaic/internal/model"

// FeaturesRule requires every feature in constraints.features among the partition's.
type FeaturesRule struct{}

var _ builtin = FeaturesRule{}

// Name implements Rule.
func (FeaturesRule) Name() string { return "features" }

// Check implements Rule.
func (x FeaturesRule) Check(r *Request, c *Candidate) Verdict { return verdict(x, r, c) }

// Constant implements ConstantRule: no required feature passes everywhere.
func (FeaturesRule) Constant(r *Request) (pass, ok bool) {
	return true, len(r.Envelope.Constraints.Features) == 0
}

const (
	featuresAll = iota
	featuresNone
	featuresMissing
)

func (FeaturesRule) test(r *Request, rec *model.ResourceRecord, _ model.Health) outcome {
	want := r.Envelope.Constraints.Features
	if len(want) == 0 {
		return pass(featuresNone)
	}
	if missingFeature(want, rec) >= 0 {
		return fail(featuresMissing)
	}
	return pass(featuresAll)
}

func (FeaturesRule) reason(w *words, r *Request, rec *model.ResourceRecord, _ model.Health, o outcome) string {
	switch o.why() {
	case featuresNone:
		return "none required"
	case featuresMissing:
		want := r.Envelope.Constraints.Features
		return w.join("feature ", want[missingFeature(want, rec)], " is not offered here (constraints.features)")
	}
	return "all required features"
}

// missingFeature is the index of the first of want that rec does not offer, or -1.
func missingFeature(want []string, rec *model.ResourceRecord) int {
	for i, f := range want {
		if !containsFold(rec.Features, f) {
			return i
		}
	}
	return -1
}
