// Package exchange is Mosaic's agent mailbox service. It speaks the HTTP protocol
// of Academy's cloud exchange (github.com/academy-agents/academy,
// academy/exchange/cloud/app.py for the server routes and client.py for the
// client that Academy agents use), so Academy agents and Mosaic's own agent SDK
// (package agent) can rendezvous and exchange messages through it.
//
// Protocol summary (all bodies JSON, GET and DELETE included; ids are
// double-encoded: the "mailbox" value is a string holding the compact JSON of an
// Academy EntityId {"uid","name","role"}):
//
//	POST   /mailbox            {"mailbox", "agent": "Cls,Base"}  register
//	GET    /mailbox            {"mailbox"} -> {"status": MISSING|ACTIVE|TERMINATED}
//	DELETE /mailbox            {"mailbox"}                        terminate
//	PUT    /message            {"message": "<Message JSON>"}      send
//	GET    /message            {"mailbox", "timeout"} -> {"message": "<JSON>"} | 408
//	GET    /mailbox/listen     {"mailbox", "timeout"} -> text/event-stream
//	GET    /discover           {"agent", "allow_subclasses"} -> {"agent_ids": "uid,uid"}
//	GET    /mailbox/heartbeat  {"mailbox"} -> {"heartbeat": seconds|null}
//	GET    /mailbox/stats      {"mailbox"} -> AgentStats
//
// Status codes follow app.py's StatusCode enum: 400 bad field, 401 missing
// credentials, 403 forbidden, 404 unknown mailbox, 408 receive timeout, 413
// message too large, 419 mailbox terminated.
package exchange

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/uuid"
)

// Status is a mailbox status as Academy's MailboxStatus enum spells it.
type Status string

// Mailbox statuses. MISSING is a normal 200 answer of GET /mailbox.
const (
	StatusMissing    Status = "MISSING"
	StatusActive     Status = "ACTIVE"
	StatusTerminated Status = "TERMINATED"
)

// Entity roles (academy/identifier.py: AgentId.role and UserId.role).
const (
	RoleAgent = "agent"
	RoleUser  = "user"
)

// StatusTerminatedCode is the non-standard HTTP status Academy uses for a
// terminated mailbox (app.py StatusCode.TERMINATED).
const StatusTerminatedCode = 419

// EntityID is Academy's AgentId/UserId: {"uid": UUID, "name": str|null, "role":
// "agent"|"user"} (academy/identifier.py). Field order matches pydantic's dump.
type EntityID struct {
	UID  uuid.UUID `json:"uid"`
	Name *string   `json:"name"`
	Role string    `json:"role"`
}

// NameOr returns the entity's name, or def when it has none.
func (e EntityID) NameOr(def string) string {
	if e.Name == nil {
		return def
	}
	return *e.Name
}

// Encode returns the compact JSON form that travels inside the "mailbox" field.
func (e EntityID) Encode() string {
	b, _ := json.Marshal(e) // cannot fail: fixed field types
	return string(b)
}

// ParseEntityID decodes the inner JSON of a "mailbox" field. Like pydantic's
// extra='forbid' it rejects unknown fields; a missing role means "agent" (the
// first member of Academy's EntityId union).
func ParseEntityID(s string) (EntityID, error) {
	var raw struct {
		UID  *uuid.UUID `json:"uid"`
		Name *string    `json:"name"`
		Role *string    `json:"role"`
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		return EntityID{}, fmt.Errorf("mailbox id is not an Academy EntityId JSON object: %w", err)
	}
	if raw.UID == nil {
		return EntityID{}, errors.New("mailbox id has no uid")
	}
	id := EntityID{UID: *raw.UID, Name: raw.Name, Role: RoleAgent}
	if raw.Role != nil {
		id.Role = *raw.Role
	}
	if id.Role != RoleAgent && id.Role != RoleUser {
		return EntityID{}, fmt.Errorf("mailbox id role %q is not \"agent\" or \"user\"", id.Role)
	}
	return id, nil
}

// Header is Academy's message header (academy/message.py Header).
type Header struct {
	Src   EntityID   `json:"src"`
	Dest  EntityID   `json:"dest"`
	Tag   uuid.UUID  `json:"tag"`
	Label *uuid.UUID `json:"label"`
	Kind  string     `json:"kind"` // "request" | "response"
}

// Message kinds of a header.
const (
	KindRequest  = "request"
	KindResponse = "response"
)

// Message is a parsed message: its header, the kind of its body (the pydantic
// discriminator, e.g. "action-request") and the compact raw JSON that is stored
// and delivered unchanged.
type Message struct {
	Header   Header
	BodyKind string
	Raw      []byte
}

// ParseMessage validates the JSON of an Academy Message {"header": {...},
// "body": {..., "kind": ...}} and compacts it (SSE data must be one line).
func ParseMessage(raw []byte) (Message, error) {
	var m struct {
		Header *struct {
			Src   json.RawMessage `json:"src"`
			Dest  json.RawMessage `json:"dest"`
			Tag   *uuid.UUID      `json:"tag"`
			Label *uuid.UUID      `json:"label"`
			Kind  string          `json:"kind"`
		} `json:"header"`
		Body json.RawMessage `json:"body"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return Message{}, fmt.Errorf("message is not valid JSON: %w", err)
	}
	if m.Header == nil {
		return Message{}, errors.New("message has no header")
	}
	src, err := ParseEntityID(string(m.Header.Src))
	if err != nil {
		return Message{}, fmt.Errorf("header.src: %w", err)
	}
	dest, err := ParseEntityID(string(m.Header.Dest))
	if err != nil {
		return Message{}, fmt.Errorf("header.dest: %w", err)
	}
	if m.Header.Tag == nil {
		return Message{}, errors.New("header.tag is missing")
	}
	if *m.Header.Tag == uuid.Nil {
		// The exchange tells messages apart by their tag (de-duplication, request
		// tracking): all-zero tags would make every such message one.
		return Message{}, errors.New("header.tag is the nil UUID; give every message its own tag (Academy and Mosaic's SDK send a random uuid4)")
	}
	if m.Header.Kind != KindRequest && m.Header.Kind != KindResponse {
		return Message{}, fmt.Errorf("header.kind %q is not \"request\" or \"response\"", m.Header.Kind)
	}
	var body struct {
		Kind *string `json:"kind"`
	}
	if len(m.Body) == 0 || json.Unmarshal(m.Body, &body) != nil || body.Kind == nil {
		return Message{}, errors.New("message body must be an object with a \"kind\"")
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return Message{}, fmt.Errorf("message is not valid JSON: %w", err)
	}
	return Message{
		Header:   Header{Src: src, Dest: dest, Tag: *m.Header.Tag, Label: m.Header.Label, Kind: m.Header.Kind},
		BodyKind: *body.Kind,
		Raw:      buf.Bytes(),
	}, nil
}

// terminatedReply builds the reply the exchange sends for a request still pending
// when its destination is terminated: an AcademyErrorResponse with error code
// MAILBOX_TERMINATED (academy/message.py AcademyErrorCode, and
// _respond_pending_requests_on_terminate in academy/exchange/transport.py).
func terminatedReply(req Header, terminated EntityID) Message {
	h := Header{Src: req.Dest, Dest: req.Src, Tag: req.Tag, Label: req.Label, Kind: KindResponse}
	body := struct {
		ErrorCode int      `json:"error_code"`
		MailboxID EntityID `json:"mailbox_id"`
		Kind      string   `json:"kind"`
	}{0, terminated, "academy-error-response"}
	raw, _ := json.Marshal(struct {
		Header Header `json:"header"`
		Body   any    `json:"body"`
	}{h, body})
	return Message{Header: h, BodyKind: body.Kind, Raw: raw}
}

// AgentStats are exchange-level counters of a mailbox (academy/stats.py).
type AgentStats struct {
	Incoming   int64 `json:"incoming"`
	Outgoing   int64 `json:"outgoing"`
	Completed  int64 `json:"completed"`
	InProgress int64 `json:"in_progress"`
	Queued     int64 `json:"queued"`
}
