package scheduler

import (
	"strconv"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

// UserLimitsRule refuses partitions where the user's per-partition submit limit is
// already reached (the batch system would reject the job). A reached running limit is
// not a refusal: the job would only wait, which the ranker accounts for.
type UserLimitsRule struct{}

var _ builtin = UserLimitsRule{}

// Name implements Rule.
func (UserLimitsRule) Name() string { return "user_limits" }

// Check implements Rule.
func (x UserLimitsRule) Check(r *Request, c *Candidate) Verdict { return verdict(x, r, c) }

const (
	limitsWithin = iota
	limitsUnknown
	limitsRunningReached
	limitsSubmitReached
)

func (UserLimitsRule) test(_ *Request, rec *model.ResourceRecord, _ model.Health) outcome {
	switch {
	case rec.MaxSubmitPerUser > 0 && rec.MyRunningJobs+rec.MyPendingJobs >= rec.MaxSubmitPerUser:
		return fail(limitsSubmitReached)
	case rec.MaxRunningPerUser > 0 && rec.MyRunningJobs >= rec.MaxRunningPerUser:
		return pass(limitsRunningReached)
	case rec.MaxSubmitPerUser == 0 && rec.MaxRunningPerUser == 0:
		return pass(limitsUnknown)
	}
	return pass(limitsWithin)
}

func (UserLimitsRule) reason(w *words, _ *Request, rec *model.ResourceRecord, _ model.Health, o outcome) string {
	switch o.why() {
	case limitsSubmitReached:
		return w.join("you have ", strconv.Itoa(rec.MyRunningJobs+rec.MyPendingJobs), " jobs here; the submit limit is ", strconv.Itoa(rec.MaxSubmitPerUser))
	case limitsRunningReached:
		return w.join("running limit reached (", strconv.Itoa(rec.MaxRunningPerUser), "): the job will wait for one of yours")
	case limitsUnknown:
		return "no limits known"
	}
	return "within limits"
}
