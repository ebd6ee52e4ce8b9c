package api

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	v1 "github.com/mosaic-hpc/mosaic/api/v1"

	"github.com/mosaic-hpc/mosaic/internal/core"
	"github.com/mosaic-hpc/mosaic/internal/model"
)

// Team mode (docs/TEAM.md): every replica serves the API and the UI, but only the
// leader acts. A follower answers store-backed reads itself (task lists, task detail,
// the event list) and forwards everything else (writes, the federation snapshot,
// logs, event streams, MCP, the exchange, the Globus sign-in) to the leader's
// advertised URL. A forward keeps the caller's Authorization header (a browser
// session, which is this replica's own, is replaced by the API token the session
// stands for) and carries ForwardedHeader; a forwarded request that reaches a
// follower (the leader changed on the way) is answered 503, never forwarded again.

// ForwardedHeader marks a request a follower forwarded; its value is the follower's
// replica id.
const ForwardedHeader = "X-Mosaic-Forwarded-By"

// forwardRetryAfter is the Retry-After (seconds) of a 503 for want of a leader: a
// takeover takes at most two probe ticks.
const forwardRetryAfter = 2

// OnBehalfHeader carries, on a forward of a browser session opened by a user's token,
// that token's display id (mos_xxxxxxxx, never the token): the leader does not know
// the follower's session, so the forward authenticates as the replicas' shared API
// token and names the user it acts for. The leader honours it only together with the
// API token and ForwardedHeader (the API token's holder is the admin already, so this
// narrows, never widens, what the request may do), and looks the token id up again,
// so a revoked token or user is refused there too.
const OnBehalfHeader = "X-Mosaic-On-Behalf-Of"

// sessionKey marks, in a request's context, that the guard accepted it on this
// replica's browser session (no Authorization header).
type sessionKey struct{}

// withAcceptedSession records that the guard accepted r on a browser session.
func withAcceptedSession(r *http.Request) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), sessionKey{}, true))
}

// acceptedSession reports whether the guard accepted r on a browser session.
func acceptedSession(r *http.Request) bool {
	ok, _ := r.Context().Value(sessionKey{}).(bool)
	return ok
}

// localOnFollower reports whether a follower answers the request itself.
func localOnFollower(r *http.Request) bool {
	p := r.URL.Path
	if !strings.HasPrefix(p, "/api/") && p != "/api" && p != "/mcp" && !strings.HasPrefix(p, "/mcp/") &&
		!strings.HasPrefix(p, ExchangePrefix+"/") && !strings.HasPrefix(p, "/auth/") {
		return true // the UI's pages and assets, /healthz, /metrics, /docs, /openapi.json, /skill
	}
	if p == "/api/session" || strings.HasPrefix(p, "/api/session/") {
		return true // the web UI's session is this replica's own
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	switch {
	case p == "/api/tasks", p == "/api/events":
		return true
	case strings.HasPrefix(p, "/api/tasks/"):
		rest := strings.TrimPrefix(p, "/api/tasks/")
		return rest != "" && !strings.Contains(rest, "/") // detail; logs read the site
	}
	return false
}

// forward wraps the mux: in team mode, a follower forwards what it does not serve.
func (s *Server) forward(next http.Handler) http.Handler {
	if !s.core.Replicated() {
		return next
	}
	tr := &http.Transport{
		Proxy:                 nil, // replicas reach each other directly
		DialContext:           (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConnsPerHost:   64,
		IdleConnTimeout:       IdleTimeout,
		ResponseHeaderTimeout: 0, // streams and long site calls answer late
	}
	me := s.core.Leadership().Replica
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if localOnFollower(r) || s.core.Leading() {
			next.ServeHTTP(w, r)
			return
		}
		if by := r.Header.Get(ForwardedHeader); by != "" {
			noLeader(w)
			writeProblem(w, http.StatusServiceUnavailable, "this replica is not the leader and the request was already forwarded once (by replica "+
				quoteHeader(by)+"): the leader changed while it was on its way; retry in a few seconds")
			return
		}
		leader := s.core.Leadership().Leader
		if leader == "" {
			noLeader(w)
			writeProblem(w, http.StatusServiceUnavailable, "no replica is the leader right now (the last leader's lease ran out and another takes over within two probe ticks); "+
				"this follower cannot act on its own: retry in a few seconds")
			return
		}
		target, err := url.Parse(leader)
		if err != nil || target.Host == "" {
			noLeader(w)
			writeProblem(w, http.StatusServiceUnavailable, "the leader advertises an unusable address "+quoteHeader(leader)+"; fix its --advertise URL")
			return
		}
		session := acceptedSession(r)
		rp := &httputil.ReverseProxy{
			Rewrite: func(pr *httputil.ProxyRequest) {
				pr.SetURL(target)
				// The caller's Host: the leader's Host check accepts what this
				// replica accepted (the same --allow-host names), not its own address.
				pr.Out.Host = pr.In.Host
				pr.SetXForwarded()
				pr.Out.Header.Set(ForwardedHeader, me)
				pr.Out.Header.Del(OnBehalfHeader) // only this replica may say whom a forward acts for
				if session {
					// The guard accepted this replica's browser session; the leader does
					// not know it, so the forward carries the API token it stands for.
					// Only then: a request the guard did not judge (/mcp, /exchange/*,
					// /auth/callback, judged by the leader's own handlers) is forwarded
					// exactly as received, never with a token it did not carry.
					pr.Out.Header.Del("Cookie")
					pr.Out.Header.Set("Authorization", "Bearer "+s.opts.Token)
					// A session a user's token opened acts for that user on the leader,
					// not for the admin the API token stands for.
					if c := model.CallerOf(pr.In.Context()); c.TokenID != "" {
						pr.Out.Header.Set(OnBehalfHeader, c.TokenID)
					}
				}
			},
			Transport:     tr,
			FlushInterval: -1, // event streams pass through as they come
			ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
				if errors.Is(r.Context().Err(), err) || r.Context().Err() != nil {
					return // the caller went away
				}
				s.opts.Logger.Warn("forwarding to the leader failed", "leader", target.Host, "path", r.URL.Path, "err", err)
				w.Header().Set("Retry-After", strconv.Itoa(forwardRetryAfter))
				if !connectFailed(err) {
					// Sent, and no answer came: the leader may have carried it out.
					writeProblem(w, http.StatusBadGateway, "this follower forwarded the request to the leader at "+target.Host+
						" and got no answer (it may have died while working on it): whether it was carried out is unknown; check (e.g. `mosaic tasks`) before repeating it")
					return
				}
				noLeader(w)
				writeProblem(w, http.StatusServiceUnavailable, "this follower could not connect to the leader at "+target.Host+
					" (it may have just died; another replica takes over within two probe ticks); nothing was sent: retry in a few seconds")
			},
		}
		rp.ServeHTTP(w, r)
	})
}

// noLeader marks a 503 for want of a leader: the request was not carried out, so a
// client may send it to another replica whatever its method (v1.NoLeaderHeader).
func noLeader(w http.ResponseWriter) {
	w.Header().Set("Retry-After", strconv.Itoa(forwardRetryAfter))
	w.Header().Set(v1.NoLeaderHeader, "1")
}

// connectFailed reports whether a forward failed before anything was sent: the
// leader's address refused the connection or could not be dialled.
func connectFailed(err error) bool {
	var op *net.OpError
	return errors.Is(err, syscall.ECONNREFUSED) || (errors.As(err, &op) && op.Op == "dial")
}

// addLeadership puts a replica's role into /healthz: role (single, leader or
// follower), and in team mode the leader's URL, the lease token and the seconds since
// its last renewal.
func addLeadership(body map[string]any, l core.Leadership) {
	body["role"] = l.Role
	if l.Role == "single" {
		return
	}
	body["replica"] = l.Replica
	body["leader"] = l.Leader
	body["lease_token"] = l.Token
	body["lease_renew_lag_s"] = l.RenewLag.Seconds()
	body["leader_changes"] = l.Changes
	if l.TakeoverLag > 0 {
		body["takeover_lag_s"] = l.TakeoverLag.Seconds()
	}
}
