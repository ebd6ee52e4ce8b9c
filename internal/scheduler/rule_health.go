package scheduler

import (
	"strconv"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

// HealthRule refuses systems and partitions the last probe did not find usable, and
// partitions whose nodes are all down.
type HealthRule struct{}

// Name implements Rule.
func (HealthRule) Name() string { return "health" }

// Check implements Rule.
func (HealthRule) Check(r *Request, c *Candidate) Verdict {
	switch h := c.SystemHealth; {
	case h == model.HealthNeedsLogin:
		return Failf(r, func() string {
			return c.System + " needs a login: refresh the credentials (mosaic login) and probe again"
		})
	case h != "" && !h.Usable():
		return Failf(r, func() string { return c.System + " is " + string(h) + " at the last probe" })
	}
	rec := c.Record
	if rec.Health != "" && !rec.Health.Usable() {
		return Failf(r, func() string {
			msg := "partition is " + string(rec.Health)
			if rec.LastError != "" {
				msg += ": " + rec.LastError
			}
			return msg
		})
	}
	if n := rec.Nodes; n.Total > 0 && n.Down >= n.Total {
		return Failf(r, func() string { return "all " + strconv.Itoa(n.Total) + " nodes are down or drained" })
	}
	if c.SystemHealth == model.HealthDegraded || rec.Health == model.HealthDegraded {
		return Pass("degraded but usable")
	}
	return Pass("ok")
}

// fails is Check's pass/fail without the reason (see quickRule).
func (HealthRule) fails(_ *Request, rec *model.ResourceRecord, sys model.Health) bool {
	if sys == model.HealthNeedsLogin || (sys != "" && !sys.Usable()) {
		return true
	}
	if rec.Health != "" && !rec.Health.Usable() {
		return true
	}
	return rec.Nodes.Total > 0 && rec.Nodes.Down >= rec.Nodes.Total
}
