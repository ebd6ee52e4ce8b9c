package campaign

import (
	"github.com/google/uuid"
)

// AgentNamespace is the UUIDv5 namespace of agent mailbox ids. It is the one
// ChemGraph's `academy launch` uses (chemgraph runtime/registration.py), so a
// Mosaic-launched agent and a ChemGraph-launched one agree on ids for the same
// run and name.
var AgentNamespace = uuid.MustParse("1e7eda44-1b34-4f5a-b2a1-cf5ca5db8e8b")

// AgentUID is the deterministic mailbox uid of an agent in a run:
// UUIDv5(AgentNamespace, "<runID>/<agentName>"). Every site computes the same
// value, so peers can find each other without a shared file.
func AgentUID(runID, agentName string) uuid.UUID {
	return uuid.NewSHA1(AgentNamespace, []byte(runID+"/"+agentName))
}

// AgentUIDs returns the uid of every agent of the spec, by name.
func (s *Spec) AgentUIDs(runID string) map[string]uuid.UUID {
	out := make(map[string]uuid.UUID, len(s.Agents))
	for _, a := range s.Agents {
		out[a.Name] = AgentUID(runID, a.Name)
	}
	return out
}
