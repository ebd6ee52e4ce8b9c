package exchange

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strings"
	"time"
)

// body is a decoded request body: every route takes a JSON object, GET and
// DELETE included (academy/exchange/cloud/client.py sends json= on every call).
type body map[string]json.RawMessage

// readBody decodes the JSON object of r, at most limit bytes (413 beyond).
func readBody(w http.ResponseWriter, r *http.Request, limit int64) (body, bool) {
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			httpError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("Request body larger than limit %d.", limit))
			return nil, false
		}
		httpError(w, http.StatusBadRequest, "Could not read request body: "+err.Error())
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
func readMailbox(w http.ResponseWriter, r *http.Request) (body, EntityID, bool) {
	b, ok := readBody(w, r, maxControlBody)
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

// owned looks up a mailbox of the caller's run: 404 unknown, 403 other run.
func (s *Server) owned(w http.ResponseWriter, r *http.Request, id EntityID) (MailboxRecord, bool) {
	rec, err := s.be.Lookup(r.Context(), id.UID)
	if err != nil {
		s.backendError(w, err)
		return MailboxRecord{}, false
	}
	if rec.Run != runOf(r) {
		httpError(w, http.StatusForbidden, "Incorrect permissions: mailbox belongs to another run")
		return MailboxRecord{}, false
	}
	return rec, true
}

// backendError maps backend errors to app.py's status codes.
func (s *Server) backendError(w http.ResponseWriter, err error) {
	switch {
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

// handleCreate registers a mailbox (app.py _create_mailbox_route). Registration
// is idempotent; re-registering a terminated mailbox answers 419 (the exchange
// keeps a gravestone, as Academy's backends do).
func (s *Server) handleCreate(w http.ResponseWriter, r *http.Request) {
	b, id, ok := readMailbox(w, r)
	if !ok {
		return
	}
	agent, _, err := b.str("agent")
	if err != nil {
		httpError(w, http.StatusBadRequest, "Missing or invalid field: "+err.Error())
		return
	}
	site, _, err := b.str("site") // Mosaic extension: where the agent runs
	if err != nil {
		httpError(w, http.StatusBadRequest, "Missing or invalid field: "+err.Error())
		return
	}
	run := runOf(r)
	ctx := r.Context()
	if id.Role == RoleAgent {
		if pol, has, err := s.be.Policy(ctx, run); err != nil {
			s.backendError(w, err)
			return
		} else if has {
			if _, declared := pol.Peers[id.NameOr("")]; !declared {
				httpError(w, http.StatusForbidden, fmt.Sprintf("Incorrect permissions: agent %q is not declared in campaign %q of this run", id.NameOr(""), pol.Campaign))
				return
			}
		}
	}
	rec := MailboxRecord{ID: id, Run: run, Site: site, Created: s.now().UTC()}
	if agent != "" {
		rec.Agent = strings.Split(agent, ",")
	}
	existing, created, err := s.be.Create(ctx, rec)
	if err != nil {
		s.backendError(w, err)
		return
	}
	if !created {
		switch {
		case existing.Run != run:
			httpError(w, http.StatusForbidden, "Incorrect permissions: mailbox belongs to another run")
			return
		case existing.Status == StatusTerminated:
			httpError(w, StatusTerminatedCode, "Mailbox was closed")
			return
		}
	}
	_ = s.be.Touch(ctx, id.UID, s.now())
	if created {
		s.log.Info("exchange mailbox created", "run", run, "mailbox", id.UID, "name", id.NameOr(""), "role", id.Role)
	}
	w.WriteHeader(http.StatusOK)
}

// handleStatus answers {"status": ...}; an unknown mailbox is a 200 MISSING
// (app.py _check_mailbox_route).
func (s *Server) handleStatus(w http.ResponseWriter, r *http.Request) {
	_, id, ok := readMailbox(w, r)
	if !ok {
		return
	}
	rec, err := s.be.Lookup(r.Context(), id.UID)
	switch {
	case errors.Is(err, ErrNotFound):
		writeJSON(w, map[string]Status{"status": StatusMissing})
	case err != nil:
		s.backendError(w, err)
	case rec.Run != runOf(r):
		httpError(w, http.StatusForbidden, "Incorrect permissions: mailbox belongs to another run")
	default:
		writeJSON(w, map[string]Status{"status": rec.Status})
	}
}

// handleTerminate closes a mailbox and answers the requests still pending on it
// with MAILBOX_TERMINATED error responses (app.py _terminate_route and
// backend.py terminate). Terminating an unknown mailbox is a no-op 200.
func (s *Server) handleTerminate(w http.ResponseWriter, r *http.Request) {
	_, id, ok := readMailbox(w, r)
	if !ok {
		return
	}
	ctx := r.Context()
	rec, err := s.be.Lookup(ctx, id.UID)
	if errors.Is(err, ErrNotFound) {
		w.WriteHeader(http.StatusOK)
		return
	}
	if err != nil {
		s.backendError(w, err)
		return
	}
	if rec.Run != runOf(r) {
		httpError(w, http.StatusForbidden, "Incorrect permissions: mailbox belongs to another run")
		return
	}
	pending, err := s.be.Terminate(ctx, id.UID)
	if err != nil {
		s.backendError(w, err)
		return
	}
	pol, _, _ := s.be.Policy(ctx, rec.Run)
	for _, h := range pending {
		reply := terminatedReply(h, rec.ID)
		var dest *MailboxRecord
		if d, err := s.be.Lookup(ctx, h.Src.UID); err == nil {
			dest = &d
		}
		// An error means the requester is gone too; nobody to tell.
		_ = s.be.Put(ctx, reply, s.record(rec.Run, pol, &rec, dest, reply))
	}
	s.log.Info("exchange mailbox terminated", "run", rec.Run, "mailbox", id.UID, "name", id.NameOr(""), "pending_answered", len(pending))
	w.WriteHeader(http.StatusOK)
}

// handleSend enqueues a message (app.py _send_message_route).
func (s *Server) handleSend(w http.ResponseWriter, r *http.Request) {
	limit := s.cfg.MaxMessageBytes
	// The message travels as a JSON string inside the body, so escaping can
	// double it; anything beyond that is certainly over the limit.
	b, ok := readBody(w, r, 2*limit+maxControlBody)
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
	run := runOf(r)
	dest, err := s.be.Lookup(ctx, msg.Header.Dest.UID)
	if err != nil {
		s.backendError(w, err)
		return
	}
	if dest.Run != run {
		httpError(w, http.StatusForbidden, "Incorrect permissions: destination mailbox belongs to another run")
		return
	}
	if dest.Status == StatusTerminated {
		httpError(w, StatusTerminatedCode, "Mailbox was closed")
		return
	}
	var src *MailboxRecord
	if rec, err := s.be.Lookup(ctx, msg.Header.Src.UID); err == nil {
		if rec.Run != run {
			httpError(w, http.StatusForbidden, "Incorrect permissions: source mailbox belongs to another run")
			return
		}
		src = &rec
	} else if !errors.Is(err, ErrNotFound) {
		s.backendError(w, err)
		return
	}
	pol, policed, err := s.be.Policy(ctx, run)
	if err != nil {
		s.backendError(w, err)
		return
	}
	if policed {
		if why := peerRefusal(pol, src, dest, msg.Header); why != "" {
			httpError(w, http.StatusForbidden, "Incorrect permissions: "+why)
			return
		}
	}
	if err := s.be.Put(ctx, msg, s.record(run, pol, src, &dest, msg)); err != nil {
		s.backendError(w, err)
		return
	}
	w.WriteHeader(http.StatusOK)
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

// handleRecv is the blocking receive (app.py _recv_message_route): 408 when the
// timeout passes without a message.
func (s *Server) handleRecv(w http.ResponseWriter, r *http.Request) {
	b, id, ok := readMailbox(w, r)
	if !ok {
		return
	}
	wait, ok := s.wait(w, b)
	if !ok {
		return
	}
	if _, ok := s.owned(w, r, id); !ok {
		return
	}
	raw, err := s.be.Get(r.Context(), id.UID, wait)
	if err != nil {
		s.backendError(w, err)
		return
	}
	writeJSON(w, map[string]string{"message": string(raw)})
}

// handleDiscover lists active agent mailboxes of the caller's run whose agent
// class (or, with allow_subclasses, any base class) matches (app.py
// _discover_route; backend.py discover). Mosaic extension: an absent or empty
// "agent" matches every agent of the run.
func (s *Server) handleDiscover(w http.ResponseWriter, r *http.Request) {
	b, ok := readBody(w, r, maxControlBody)
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
// (client.py heartbeat_status; backend.py heartbeat_status).
func (s *Server) handleHeartbeat(w http.ResponseWriter, r *http.Request) {
	_, id, ok := readMailbox(w, r)
	if !ok {
		return
	}
	if _, ok := s.owned(w, r, id); !ok {
		return
	}
	t, seen, err := s.be.LastActive(r.Context(), id.UID)
	if err != nil {
		s.backendError(w, err)
		return
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
	_, id, ok := readMailbox(w, r)
	if !ok {
		return
	}
	if _, ok := s.owned(w, r, id); !ok {
		return
	}
	st, err := s.be.Stats(r.Context(), id.UID)
	if err != nil {
		s.backendError(w, err)
		return
	}
	writeJSON(w, st)
}
