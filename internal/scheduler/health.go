package scheduler

import "github.com/mosaic-hpc/mosaic/internal/model"

// healthIndex answers "what is this system's probe health" for every record of a
// placement. A federation has a handful of systems, so a linear scan with a one-entry
// cache beats hashing the system name of each of 1,000 records (records of one system
// usually share the name's backing array, which makes the string compare a pointer
// compare); large federations fall back to a map.
type healthIndex struct {
	systems []model.SystemHealth
	byName  map[string]model.Health // only when there are many systems
	last    int                     // index of the last hit: always the last entry of its name
	// anyUnusable is set when some system's health fails HealthRule (neither ok,
	// degraded nor unknown). When it is false, every record passes HealthRule's system
	// check whatever its system, so the decision pass need not look the health up.
	anyUnusable bool
}

// linearHealthMax is the most systems scanned linearly before building a map.
const linearHealthMax = 16

func newHealthIndex(systems []model.SystemHealth) healthIndex {
	h := healthIndex{systems: systems}
	for _, s := range systems {
		if s.Health != "" && !s.Health.Usable() {
			h.anyUnusable = true
		}
	}
	if len(systems) > linearHealthMax {
		h.byName = make(map[string]model.Health, len(systems))
		for _, s := range systems {
			h.byName[s.System] = s.Health
		}
	}
	return h
}

// of returns the health of system, "" when the snapshot has no entry for it. Like the
// map it replaces, a later entry for the same system wins.
func (h *healthIndex) of(system string) model.Health {
	if h.byName != nil {
		return h.byName[system]
	}
	if h.last < len(h.systems) && h.systems[h.last].System == system {
		return h.systems[h.last].Health
	}
	for i := len(h.systems) - 1; i >= 0; i-- { // backwards: the last entry wins
		if h.systems[i].System == system {
			h.last = i
			return h.systems[i].Health
		}
	}
	return ""
}
