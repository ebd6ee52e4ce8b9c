package scheduler

import (
	"strconv"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

// HealthRule refuses systems and partitions the last probe did not find usable, and
// partitions whose nodes are all down.
type HealthRule struct{}

var _ builtin = HealthRule{}

// Name implements Rule.
func (HealthRule) Name() string { return "health" }

// Check implements Rule.
func (x HealthRule) Check(r *Request, c *Candidate) Verdict { return verdict(x, r, c) }

const (
	healthOK = iota
	healthDegraded
	healthNeedsLogin
	healthSystemDown
	healthPartitionDown
	healthNodesDown
)

func (HealthRule) test(_ *Request, rec *model.ResourceRecord, sys model.Health) outcome {
	switch {
	case sys == model.HealthNeedsLogin:
		return fail(healthNeedsLogin)
	case sys != "" && !sys.Usable():
		return fail(healthSystemDown)
	case rec.Health != "" && !rec.Health.Usable():
		return fail(healthPartitionDown)
	case rec.Nodes.Total > 0 && rec.Nodes.Down >= rec.Nodes.Total:
		return fail(healthNodesDown)
	case sys == model.HealthDegraded || rec.Health == model.HealthDegraded:
		return pass(healthDegraded)
	}
	return pass(healthOK)
}

func (HealthRule) reason(w *words, _ *Request, rec *model.ResourceRecord, sys model.Health, o outcome) string {
	switch o.why() {
	case healthNeedsLogin:
		return w.join(rec.System, " needs a login: refresh the credentials (mosaic login) and probe again")
	case healthSystemDown:
		return w.join(rec.System, " is ", string(sys), " at the last probe")
	case healthPartitionDown:
		if rec.LastError != "" {
			return w.join("partition is ", string(rec.Health), ": ", rec.LastError)
		}
		return w.join("partition is ", string(rec.Health))
	case healthNodesDown:
		return w.join("all ", strconv.Itoa(rec.Nodes.Total), " nodes are down or drained")
	case healthDegraded:
		return "degraded but usable"
	}
	return "ok"
}
