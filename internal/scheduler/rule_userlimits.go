package scheduler

import (
	"strconv"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

// UserLimitsRule refuses partitions where the user's per-partition submit limit is
// already reached (the batch system would reject the job). A reached running limit is
// not a refusal: the job would only wait, which the ranker accounts for.
type UserLimitsRule struct{}

// Name implements Rule.
func (UserLimitsRule) Name() string { return "user_limits" }

// Check implements Rule.
func (UserLimitsRule) Check(r *Request, c *Candidate) Verdict {
	rec := c.Record
	if lim := rec.MaxSubmitPerUser; lim > 0 && rec.MyRunningJobs+rec.MyPendingJobs >= lim {
		return Failf(r, func() string {
			return "you have " + strconv.Itoa(rec.MyRunningJobs+rec.MyPendingJobs) + " jobs here; the submit limit is " + strconv.Itoa(lim)
		})
	}
	if lim := rec.MaxRunningPerUser; lim > 0 && rec.MyRunningJobs >= lim {
		return Passf(r, func() string {
			return "running limit reached (" + strconv.Itoa(lim) + "): the job will wait for one of yours"
		})
	}
	if rec.MaxSubmitPerUser == 0 && rec.MaxRunningPerUser == 0 {
		return Pass("no limits known")
	}
	return Pass("within limits")
}

// fails is Check's pass/fail without the reason (see quickRule).
func (UserLimitsRule) fails(_ *Request, rec *model.ResourceRecord, _ model.Health) bool {
	lim := rec.MaxSubmitPerUser
	return lim > 0 && rec.MyRunningJobs+rec.MyPendingJobs >= lim
}
