package exchange

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/mosaic-hpc/mosaic/agent"
)

// body is a decoded request body: every route takes a JSON object, GET and
// DELETE included (academy/exchange/cloud/client.py sends json= on every call).
type body map[string]json.RawMessage

// readBody decodes the JSON object of r, at most limit bytes (413 beyond),
// read within BodyReadTimeout (408 beyond). The deadline is lifted once the
// body is in, so long polls and SSE streams are not cut.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request, limit int64) (body, bool) {
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(s.cfg.BodyReadTimeout)) // ErrNotSupported: no conn to bound
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	_ = rc.SetReadDeadline(time.Time{})
	if err != nil {
		var mbe *http.MaxBytesError
		var ne net.Error
		switch {
		case errors.As(err, &mbe):
			httpError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("Request body larger than limit %d.", limit))
		case errors.As(err, &ne) && ne.Timeout():
			w.Header().Set("Connection", "close")
			httpError(w, http.StatusRequestTimeout, fmt.Sprintf("Request body not received within %s.", s.cfg.BodyReadTimeout))
		default:
			httpError(w, http.StatusBadRequest, "Could not read request body: "+err.Error())
		}
		return nil, false
	}
	var b body
	if err := json.Unmarshal(data, &b); err != nil || b == nil {
		httpError(w, http.StatusBadRequest, "Missing or invalid field: request body must be a JSON object")
		return nil, false
	}
	return b, true
}

func (b body) str(key string) (string, bool, error) {
	raw, ok := b[key]
	if !ok || string(raw) == "null" {
		return "", false, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", true, fmt.Errorf("field %q must be a string", key)
	}
	return s, true, nil
}

// readMailbox reads a control request's body and the mailbox it names, answering the
// error itself when either is bad (every mailbox route starts this way).
func (s *Server) readMailbox(w http.ResponseWriter, r *http.Request) (body, EntityID, bool) {
	b, ok := s.readBody(w, r, maxControlBody)
	if !ok {
		return nil, EntityID{}, false
	}
	id, ok := b.mailbox(w)
	return b, id, ok
}

// mailbox decodes the double-encoded "mailbox" field (400 when bad).
func (b body) mailbox(w http.ResponseWriter) (EntityID, bool) {
	s, ok, err := b.str("mailbox")
	if err == nil && !ok {
		err = errors.New("missing field \"mailbox\"")
	}
	if err != nil {
		httpError(w, http.StatusBadRequest, "Missing or invalid field: "+err.Error())
		return EntityID{}, false
	}
	id, err := ParseEntityID(s)
	if err != nil {
		httpError(w, http.StatusBadRequest, "Missing or invalid field: "+err.Error())
		return EntityID{}, false
	}
	return id, true
}

// wait decodes the optional "timeout" (seconds, float or null). Absent/null
// means wait until the client leaves, capped by Config.MaxWait.
func (s *Server) wait(w http.ResponseWriter, b body) (time.Duration, bool) {
	raw, ok := b["timeout"]
	if !ok || string(raw) == "null" {
		if s.cfg.MaxWait > 0 {
			return s.cfg.MaxWait, true
		}
		return -1, true
	}
	var sec float64
	if err := json.Unmarshal(raw, &sec); err != nil || math.IsNaN(sec) {
		httpError(w, http.StatusBadRequest, "Missing or invalid field: \"timeout\" must be a number of seconds or null")
		return 0, false
	}
	if sec <= 0 {
		return 0, true
	}
	d := time.Duration(min(sec, 365*24*3600) * float64(time.Second))
	if s.cfg.MaxWait > 0 {
		d = min(d, s.cfg.MaxWait)
	}
	return d, true
}

// Mailbox access kinds.
const (
	accessStatus = iota // status of any mailbox of the run
	accessOwn           // heartbeat, stats, terminate: own mailbox (operator: any of the run)
	accessRead          // receive, listen: own mailbox (operator: user mailboxes, any in a run without campaign)
)

// access checks that the caller may use mailbox id the way kind says and
// returns its record: 403 when not allowed, 404 when unknown.
func (s *Server) access(w http.ResponseWriter, r *http.Request, id EntityID, kind int) (MailboxRecord, bool) {
	p := principalOf(r)
	if kind != accessStatus && !p.Operator() && id.UID != p.Agent {
		httpError(w, http.StatusForbidden, fmt.Sprintf("Incorrect permissions: the token of agent %q opens only its own mailbox %s, not %s", p.Name, p.Agent, id.UID))
		return MailboxRecord{}, false
	}
	rec, err := s.be.Lookup(r.Context(), p.Run, id.UID)
	if err != nil {
		s.backendError(w, err)
		return MailboxRecord{}, false
	}
	if kind == accessRead && p.Operator() && p.policed && rec.ID.Role == RoleAgent {
		httpError(w, http.StatusForbidden, fmt.Sprintf("Incorrect permissions: the run token does not read the messages of agent %q; only that agent's own token does", rec.ID.NameOr("")))
		return MailboxRecord{}, false
	}
	return rec, true
}

// backendError maps backend errors to app.py's status codes.
func (s *Server) backendError(w http.ResponseWriter, err error) {
	var qe *QuotaError
	switch {
	case errors.As(err, &qe):
		httpError(w, qe.Status, "Quota exceeded: "+qe.Error())
	case errors.Is(err, ErrNotFound):
		httpError(w, http.StatusNotFound, "Unknown mailbox ID")
	case errors.Is(err, ErrTerminated):
		httpError(w, StatusTerminatedCode, "Mailbox was closed")
	case errors.Is(err, ErrTimeout):
		httpError(w, http.StatusRequestTimeout, "Request timeout")
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		httpError(w, 444, "No response") // client went away (app.py NO_RESPONSE)
	default:
		s.log.Error("exchange backend", "err", err)
		httpError(w, http.StatusServiceUnavailable, "Exchange backend unavailable")
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	_ = json.NewEncoder(w).Encode(v)
}

// holder decodes the optional "holder" field (Mosaic extension).
func (b body) holder() (Holder, error) {
	raw, ok := b["holder"]
	if !ok || string(raw) == "null" {
		return Holder{}, nil
	}
	var h Holder
	if err := json.Unmarshal(raw, &h); err != nil || len(h.Instance) > 256 || len(h.Host) > 256 {
		return Holder{}, errors.New("field \"holder\" must be {\"instance\": str, \"host\": str, \"pid\": int} (at most 256 bytes each)")
	}
	return h, nil
}

// handleCreate registers a mailbox (app.py _create_mailbox_route). Registration
// is idempotent for its holder; a second live holder of the same mailbox is
// refused with 409 naming the first. Re-registering a terminated mailbox answers
// 419 (the exchange keeps a gravestone, as Academy's backends do), except that
// the run's operator token reopens a terminated agent mailbox for a restart.
//
// Who may register what: an agent token only its own agent mailbox (the
// deterministic uid of its name); in a campaign run the operator token creates
// user mailboxes and reopens agent mailboxes, and undeclared agents are
// refused; in a run without campaign the operator token creates any mailbox.
func (s *Server) handleCreate(w http.ResponseWriter, r *http.Request) {
	b, id, ok := s.readMailbox(w, r)
	if !ok {
		return
	}
	agentCls, _, err := b.str("agent")
	if err == nil {
		var site string
		site, _, err = b.str("site") // Mosaic extension: where the agent runs
		if err == nil {
			var h Holder
			if h, err = b.holder(); err == nil {
				s.create(w, r, id, agentCls, site, h)
				return
			}
		}
	}
	httpError(w, http.StatusBadRequest, "Missing or invalid field: "+err.Error())
}

func (s *Server) create(w http.ResponseWriter, r *http.Request, id EntityID, agentCls, site string, h Holder) {
	p := principalOf(r)
	ctx := r.Context()
	name := id.NameOr("")
	if !p.Operator() {
		switch {
		case id.Role != RoleAgent:
			httpError(w, http.StatusForbidden, fmt.Sprintf("Incorrect permissions: the token of agent %q cannot create user mailboxes; user mailboxes are the operator's (run token)", p.Name))
			return
		case id.UID != p.Agent || (id.Name != nil && name != p.Name):
			httpError(w, http.StatusForbidden, fmt.Sprintf("Incorrect permissions: the token of agent %q registers only its own mailbox %s (name %q), not %s (name %q)", p.Name, p.Agent, p.Name, id.UID, name))
			return
		}
		name = p.Name
	}
	if id.Role == RoleUser && p.policed {
		// A declared agent's uid is deterministic (agent.UID): a user mailbox
		// under it would receive that agent's messages, readable with the run
		// token, and the agent's own registration would land on it.
		for n := range p.policy.Peers {
			if agent.UID(p.Run, n) == id.UID {
				httpError(w, http.StatusForbidden, fmt.Sprintf("Incorrect permissions: uid %s is the mailbox of agent %q declared in campaign %q of this run; a user mailbox needs a uid of its own (e.g. a random one)", id.UID, n, p.policy.Campaign))
				return
			}
		}
	}
	if id.Role == RoleAgent && p.policed {
		if _, declared := p.policy.Peers[name]; !declared {
			httpError(w, http.StatusForbidden, fmt.Sprintf("Incorrect permissions: agent %q is not declared in campaign %q of this run", name, p.policy.Campaign))
			return
		}
		if p.Operator() {
			s.operatorReopen(w, r, id, name)
			return
		}
	}
	rec := MailboxRecord{ID: id, Run: p.Run, Site: site, Created: s.now().UTC()}
	if rec.ID.Name == nil && !p.Operator() {
		rec.ID.Name = &p.Name
	}
	if agentCls != "" {
		rec.Agent = strings.Split(agentCls, ",")
	}
	existing, created, err := s.be.Create(ctx, rec, s.lim)
	if err != nil {
		s.backendError(w, err)
		return
	}
	if !created {
		if why := registrationMismatch(existing.ID, rec.ID); why != "" {
			httpError(w, http.StatusConflict, why)
			return
		}
	}
	if !created && existing.Status == StatusTerminated {
		httpError(w, StatusTerminatedCode, "Mailbox was closed. The run's operator can reopen it for a restart (POST /mailbox with the run token).")
		return
	}
	cr, err := s.be.Claim(ctx, p.Run, id.UID, h, s.now(), s.cfg.LeaseTTL)
	if err != nil {
		s.backendError(w, err)
		return
	}
	if !cr.OK {
		age := max(0, s.now().Sub(cr.LastActive)).Round(time.Second)
		left := max(0, s.cfg.LeaseTTL-s.now().Sub(cr.LastActive)).Round(time.Second)
		httpError(w, http.StatusConflict, fmt.Sprintf("Mailbox %s (%q) is held by a live registration: %s, last active %s ago. Stop that process, or wait %s for its lease to lapse, then register again.",
			id.UID, name, cr.Holder, age, left))
		return
	}
	if created {
		s.log.Info("exchange mailbox created", "run", p.Run, "mailbox", id.UID, "name", name, "role", id.Role)
	}
	w.WriteHeader(http.StatusOK)
}

// operatorReopen is POST /mailbox of an agent mailbox with the run token in a
// campaign run: a terminated mailbox becomes active again without holder (for
// a restart); an active one is left alone; a missing one is the agent's to
// register.
func (s *Server) operatorReopen(w http.ResponseWriter, r *http.Request, id EntityID, name string) {
	p := principalOf(r)
	rec, err := s.be.Lookup(r.Context(), p.Run, id.UID)
	switch {
	case errors.Is(err, ErrNotFound):
		httpError(w, http.StatusForbidden, fmt.Sprintf("Incorrect permissions: agent mailboxes of a campaign run are registered by the agent itself with its own token (derived from the run token; `mosaic agent run` does it), not with the run token; agent %q has none yet", name))
	case err != nil:
		s.backendError(w, err)
	case registrationMismatch(rec.ID, EntityID{UID: id.UID, Name: &name, Role: id.Role}) != "":
		httpError(w, http.StatusConflict, registrationMismatch(rec.ID, EntityID{UID: id.UID, Name: &name, Role: id.Role}))
	case rec.Status == StatusTerminated:
		if err := s.be.Reopen(r.Context(), p.Run, id.UID); err != nil {
			s.backendError(w, err)
			return
		}
		s.log.Info("exchange mailbox reopened", "run", p.Run, "mailbox", id.UID, "name", name)
		w.WriteHeader(http.StatusOK)
	default:
		w.WriteHeader(http.StatusOK)
	}
}

// registrationMismatch returns why registering want does not match the
// existing record of its uid (409), or "". A uid is one mailbox: registration
// is idempotent only for the role and name it was created with, so that no
// one can pre-register a uid under another role (a user mailbox the run token
// reads) or name and have its owner's later registration succeed on it.
func registrationMismatch(existing, want EntityID) string {
	var diffs []string
	if existing.Role != want.Role {
		diffs = append(diffs, fmt.Sprintf("role %s, not role %s", existing.Role, want.Role))
	}
	if existing.NameOr("") != want.NameOr("") {
		diffs = append(diffs, fmt.Sprintf("name %q, not %q", existing.NameOr(""), want.NameOr("")))
	}
	if len(diffs) == 0 {
		return ""
	}
	return fmt.Sprintf("Mailbox %s is already registered with %s. A mailbox keeps the role and name it was registered with: register it as it is, or use another uid.", existing.UID, strings.Join(diffs, " and "))
}

// handleStatus answers {"status": ...}; an unknown mailbox is a 200 MISSING
// (app.py _check_mailbox_route). Any credential of the run may ask about any
// mailbox of the run (agents wait for their peers this way).
func (s *Server) handleStatus(w http.ResponseWriter, r *http.Request) {
	_, id, ok := s.readMailbox(w, r)
	if !ok {
		return
	}
	rec, err := s.be.Lookup(r.Context(), runOf(r), id.UID)
	switch {
	case errors.Is(err, ErrNotFound):
		writeJSON(w, map[string]Status{"status": StatusMissing})
	case err != nil:
		s.backendError(w, err)
	default:
		writeJSON(w, map[string]Status{"status": rec.Status})
	}
}

// handleTerminate closes a mailbox and answers the requests still pending on it
// with MAILBOX_TERMINATED error responses (app.py _terminate_route and
// backend.py terminate). Terminating an unknown mailbox is a no-op 200. An
// agent token terminates only its own mailbox; the run token any of the run.
func (s *Server) handleTerminate(w http.ResponseWriter, r *http.Request) {
	_, id, ok := s.readMailbox(w, r)
	if !ok {
		return
	}
	ctx := r.Context()
	p := principalOf(r)
	if !p.Operator() && id.UID != p.Agent {
		s.access(w, r, id, accessOwn) // answers the 403
		return
	}
	rec, err := s.be.Lookup(ctx, p.Run, id.UID)
	if errors.Is(err, ErrNotFound) {
		w.WriteHeader(http.StatusOK)
		return
	}
	if err != nil {
		s.backendError(w, err)
		return
	}
	pending, err := s.be.Terminate(ctx, p.Run, id.UID)
	if err != nil {
		s.backendError(w, err)
		return
	}
	for _, h := range pending {
		reply := terminatedReply(h, rec.ID)
		var dest *MailboxRecord
		if d, err := s.be.Lookup(ctx, p.Run, h.Src.UID); err == nil {
			dest = &d
		}
		// An error means the requester is gone too; nobody to tell.
		_ = s.be.Put(ctx, reply, s.record(p.Run, p.policy, &rec, dest, reply), Limits{})
	}
	s.log.Info("exchange mailbox terminated", "run", p.Run, "mailbox", id.UID, "name", id.NameOr(""), "pending_answered", len(pending))
	w.WriteHeader(http.StatusOK)
}

// handleSend enqueues a message (app.py _send_message_route). The sender is
// the authenticated identity: an agent token sends only with src = its own
// agent; in a campaign run the run token sends only from user mailboxes; the
// header's src must match the registered mailbox (name and role).
func (s *Server) handleSend(w http.ResponseWriter, r *http.Request) {
	limit := s.cfg.MaxMessageBytes
	// The message travels as a JSON string inside the body, so escaping can
	// double it; anything beyond that is certainly over the limit.
	b, ok := s.readBody(w, r, 2*limit+maxControlBody)
	if !ok {
		return
	}
	raw, has, err := b.str("message")
	if err == nil && !has {
		err = errors.New("missing field \"message\"")
	}
	if err != nil {
		httpError(w, http.StatusBadRequest, "Missing or invalid message: "+err.Error())
		return
	}
	msg, err := ParseMessage([]byte(raw))
	if err != nil {
		httpError(w, http.StatusBadRequest, "Missing or invalid message: "+err.Error())
		return
	}
	if int64(len(msg.Raw)) > limit {
		httpError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("Message of size %d larger than limit %d.", len(msg.Raw), limit))
		return
	}
	ctx := r.Context()
	p := principalOf(r)
	hs := msg.Header.Src
	if !p.Operator() && (hs.UID != p.Agent || hs.Role != RoleAgent || (hs.Name != nil && *hs.Name != p.Name)) {
		httpError(w, http.StatusForbidden, fmt.Sprintf("Incorrect permissions: the token of agent %q sends only as itself (src %s, role agent), not as %s %q (%s)", p.Name, p.Agent, hs.Role, hs.NameOr(""), hs.UID))
		return
	}
	dest, err := s.be.Lookup(ctx, p.Run, msg.Header.Dest.UID)
	if err != nil {
		s.backendError(w, err)
		return
	}
	// A terminated destination is refused by Put (419), after it has recognised a
	// repeat of a message queued before the termination (answered 200 as its first
	// copy was, so the sender does not report a delivered message as refused).
	if hd := msg.Header.Dest; dest.ID.Role != hd.Role || (hd.Name != nil && dest.ID.NameOr("") != *hd.Name) {
		// A message for an agent never lands in a mailbox of another role or
		// name that holds its uid (e.g. a user mailbox the run token reads).
		httpError(w, http.StatusForbidden, fmt.Sprintf("Incorrect permissions: header dest names %s %q but mailbox %s is %s %q", hd.Role, hd.NameOr(""), hd.UID, dest.ID.Role, dest.ID.NameOr("")))
		return
	}
	var src *MailboxRecord
	if rec, err := s.be.Lookup(ctx, p.Run, hs.UID); err == nil {
		if rec.ID.Role != hs.Role || (hs.Name != nil && rec.ID.NameOr("") != *hs.Name) {
			httpError(w, http.StatusForbidden, fmt.Sprintf("Incorrect permissions: header src names %s %q but mailbox %s is %s %q", hs.Role, hs.NameOr(""), hs.UID, rec.ID.Role, rec.ID.NameOr("")))
			return
		}
		src = &rec
	} else if !errors.Is(err, ErrNotFound) {
		s.backendError(w, err)
		return
	}
	if p.Operator() && p.policed && (src == nil || src.ID.Role != RoleUser) {
		httpError(w, http.StatusForbidden, fmt.Sprintf("Incorrect permissions: the run token sends only from user mailboxes it registered (operator, bootstrap), not as %s %q; an agent sends with its own token", hs.Role, hs.NameOr("")))
		return
	}
	if p.policed {
		if why := peerRefusal(p.policy, src, dest, msg.Header); why != "" {
			httpError(w, http.StatusForbidden, "Incorrect permissions: "+why)
			return
		}
	}
	if err := s.be.Put(ctx, msg, s.record(p.Run, p.policy, src, &dest, msg), s.lim); err != nil {
		s.backendError(w, err)
		return
	}
	if s.cfg.OnMessage != nil {
		s.cfg.OnMessage()
	}
	w.WriteHeader(http.StatusOK)
}

// handleRecv is the blocking receive (app.py _recv_message_route): 408 when the
// timeout passes without a message. The wait is made of steps of at most a
// third of the lease, each renewing the holder's lease.
func (s *Server) handleRecv(w http.ResponseWriter, r *http.Request) {
	b, id, ok := s.readMailbox(w, r)
	if !ok {
		return
	}
	wait, ok := s.wait(w, b)
	if !ok {
		return
	}
	if _, ok := s.access(w, r, id, accessRead); !ok {
		return
	}
	var deadline time.Time
	if wait >= 0 {
		deadline = time.Now().Add(wait)
	}
	// Bounded: each step waits at most LeaseTTL/3; the loop ends at the
	// deadline, on a message, on an error or when the client goes away.
	for {
		step := s.cfg.LeaseTTL / 3
		if !deadline.IsZero() {
			step = min(step, max(time.Until(deadline), 0))
		}
		raw, err := s.be.Get(r.Context(), runOf(r), id.UID, step)
		if errors.Is(err, ErrTimeout) && (deadline.IsZero() || time.Now().Before(deadline)) && r.Context().Err() == nil {
			continue
		}
		if err != nil {
			s.backendError(w, err)
			return
		}
		writeJSON(w, map[string]string{"message": string(raw)})
		return
	}
}

// handleDiscover lists active agent mailboxes of the caller's run whose agent
// class (or, with allow_subclasses, any base class) matches (app.py
// _discover_route; backend.py discover). Mosaic extension: an absent or empty
// "agent" matches every agent of the run.
func (s *Server) handleDiscover(w http.ResponseWriter, r *http.Request) {
	b, ok := s.readBody(w, r, maxControlBody)
	if !ok {
		return
	}
	agent, _, err := b.str("agent")
	if err != nil {
		httpError(w, http.StatusBadRequest, "Missing or invalid field: "+err.Error())
		return
	}
	allowSub := true
	if raw, ok := b["allow_subclasses"]; ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &allowSub); err != nil {
			httpError(w, http.StatusBadRequest, "Missing or invalid field: \"allow_subclasses\" must be a boolean")
			return
		}
	}
	boxes, err := s.be.List(r.Context(), runOf(r))
	if err != nil {
		s.backendError(w, err)
		return
	}
	var ids []string
	for _, m := range boxes {
		if m.ID.Role != RoleAgent || m.Status != StatusActive {
			continue
		}
		if agent == "" || (len(m.Agent) > 0 && m.Agent[0] == agent) || (allowSub && slices.Contains(m.Agent, agent)) {
			ids = append(ids, m.ID.UID.String())
		}
	}
	writeJSON(w, map[string]string{"agent_ids": strings.Join(ids, ",")})
}

// handleHeartbeat answers {"heartbeat": seconds since last activity | null}
// (client.py heartbeat_status; backend.py heartbeat_status). An agent asking
// about its own mailbox renews its lease.
func (s *Server) handleHeartbeat(w http.ResponseWriter, r *http.Request) {
	_, id, ok := s.readMailbox(w, r)
	if !ok {
		return
	}
	if _, ok := s.access(w, r, id, accessOwn); !ok {
		return
	}
	t, seen, err := s.be.LastActive(r.Context(), runOf(r), id.UID)
	if err != nil {
		s.backendError(w, err)
		return
	}
	if !principalOf(r).Operator() {
		// The agent asking about its own mailbox is alive: renew its lease.
		_ = s.be.Touch(r.Context(), runOf(r), id.UID, s.now())
	}
	var age *float64
	if seen {
		a := max(0, s.now().Sub(t).Seconds())
		age = &a
	}
	writeJSON(w, map[string]*float64{"heartbeat": age})
}

// handleStats answers the mailbox's AgentStats (client.py agent_stats).
func (s *Server) handleStats(w http.ResponseWriter, r *http.Request) {
	_, id, ok := s.readMailbox(w, r)
	if !ok {
		return
	}
	if _, ok := s.access(w, r, id, accessOwn); !ok {
		return
	}
	st, err := s.be.Stats(r.Context(), runOf(r), id.UID)
	if err != nil {
		s.backendError(w, err)
		return
	}
	writeJSON(w, st)
}

// peerRefusal returns why the campaign policy refuses msg, or "".
func peerRefusal(pol RunPolicy, src *MailboxRecord, dest MailboxRecord, h Header) string {
	if src == nil {
		return fmt.Sprintf("sender %s is not registered; register its mailbox (POST /mailbox) before sending in a campaign run", h.Src.UID)
	}
	if src.ID.Role == RoleUser || dest.ID.Role == RoleUser {
		return "" // operators and bootstrap clients may talk to any agent
	}
	from, to := src.ID.NameOr(""), dest.ID.NameOr("")
	peers, declared := pol.Peers[from]
	if !declared {
		return fmt.Sprintf("agent %q is not declared in campaign %q", from, pol.Campaign)
	}
	if slices.Contains(peers, to) {
		return ""
	}
	if h.Kind == KindResponse && slices.Contains(pol.Peers[to], from) {
		return "" // answering a peer that may talk to us
	}
	return fmt.Sprintf("agent %q may not message %q: %q is not in its allowed_peers (campaign %q)", from, to, to, pol.Campaign)
}

// record builds the timeline record of msg.
func (s *Server) record(run string, pol RunPolicy, src, dest *MailboxRecord, msg Message) MessageRecord {
	rec := MessageRecord{
		Run: run, Time: s.now().UTC(), Kind: msg.BodyKind, Size: len(msg.Raw), Tag: msg.Header.Tag,
		SrcUID: msg.Header.Src.UID, DestUID: msg.Header.Dest.UID,
		Src: msg.Header.Src.NameOr(""), Dest: msg.Header.Dest.NameOr(""),
	}
	if src != nil {
		rec.Src, rec.SrcSite = src.ID.NameOr(rec.Src), siteOf(*src, pol)
	} else {
		rec.SrcSite = pol.Sites[rec.Src]
	}
	if dest != nil {
		rec.Dest, rec.DestSite = dest.ID.NameOr(rec.Dest), siteOf(*dest, pol)
	}
	return rec
}
