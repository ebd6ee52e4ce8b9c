// Package agent is the Go SDK for agents of a Mosaic campaign: a client of the
// exchange's HTTP protocol (the Academy cloud-exchange protocol, see
// github.com/academy-agents/academy academy/exchange/cloud/client.py) with
// deterministic agent ids and a wait-for-peers rendezvous.
//
// An agent started by Mosaic finds its settings in the environment:
// MOSAIC_EXCHANGE_URL, MOSAIC_EXCHANGE_TOKEN (its own token: it opens only its
// own mailbox and sends only as itself), MOSAIC_RUN_ID, MOSAIC_AGENT_NAME and
// MOSAIC_SITE. Agent tokens derive from the run's token (AgentToken).
//
// Messages are interoperable with Python Academy agents: academy.go has
// Academy's body kinds (action, ping, shutdown and cancel requests and their
// responses; JSON serialization only, pickle refused), Client.Call calls an
// action, and Agent (NewAgent, Handle, Serve, Call) owns a mailbox that serves
// actions while making calls of its own.
package agent

import (
	"encoding/json"

	"github.com/google/uuid"
)

// Namespace is the UUIDv5 namespace of agent ids, shared with ChemGraph's
// `academy launch` (runtime/registration.py) and Mosaic's campaign package.
var Namespace = uuid.MustParse("1e7eda44-1b34-4f5a-b2a1-cf5ca5db8e8b")

// UID returns the deterministic uid of agent name in run:
// UUIDv5(Namespace, "<runID>/<name>").
func UID(runID, name string) uuid.UUID {
	return uuid.NewSHA1(Namespace, []byte(runID+"/"+name))
}

// Roles of an EntityID.
const (
	RoleAgent = "agent"
	RoleUser  = "user"
)

// EntityID is Academy's AgentId/UserId (academy/identifier.py).
type EntityID struct {
	UID  uuid.UUID `json:"uid"`
	Name *string   `json:"name"`
	Role string    `json:"role"`
}

// AgentID returns the deterministic id of agent name in run.
func AgentID(runID, name string) EntityID {
	return EntityID{UID: UID(runID, name), Name: &name, Role: RoleAgent}
}

// UserID returns a fresh id for a user (operator, bootstrap) mailbox.
func UserID(name string) EntityID {
	return EntityID{UID: uuid.New(), Name: &name, Role: RoleUser}
}

// NameOr returns the name, or def when the id has none.
func (e EntityID) NameOr(def string) string {
	if e.Name == nil {
		return def
	}
	return *e.Name
}

// String returns "name(uid)".
func (e EntityID) String() string { return e.NameOr("?") + "(" + e.UID.String() + ")" }

func (e EntityID) encode() string {
	b, _ := json.Marshal(e)
	return string(b)
}
