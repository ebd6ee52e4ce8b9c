// Package api is Mosaic's HTTP surface: a huma v2 API under /api (OpenAPI 3.1 at
// /openapi.json, an offline docs page at /docs), /healthz, /metrics, /skill and the
// routes other surfaces mount on it (the web UI, /mcp: see Options.Routes and
// TokenRoutes; internal/server composes them), behind the loopback security baseline:
// a bearer token or a browser session cookie (with a CSRF token for state-changing
// calls), a Host allow-list (DNS-rebinding defence) and an Origin check. Its answers
// are the wire types of api/v1.
package api

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"path"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humago"
	"github.com/prometheus/client_golang/prometheus"

	v1 "github.com/mosaic-hpc/mosaic/api/v1"
	"github.com/mosaic-hpc/mosaic/internal/core"
	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/session"
)

// Options configure the server.
type Options struct {
	Token      string   // required for /api/*
	AllowHosts []string // extra Host names accepted besides loopback names
	// Sessions is the browser-session store whose cookies the guard accepts; nil = a
	// new one. The web UI that issues the sessions must be given the same store.
	Sessions *session.Sessions
	// Routes register further routes on the server's mux, behind the guard (the web
	// UI: its pages, /login and /api/session, which the guard protects like /api).
	Routes []func(mux *http.ServeMux)
	// TokenRoutes are handlers (by mux pattern) that need the API token as a bearer
	// token — never a session cookie — besides the guard: /mcp.
	TokenRoutes map[string]http.Handler
	// SignIn, when set, serves the Globus web sign-in under /auth/ (login, callback,
	// logout, status); see internal/auth.
	SignIn http.Handler
	Logger *slog.Logger
	// UnauthTimeout bounds how long a request without a valid credential may take to
	// send its headers and body and to receive its answer; 0 = DefaultUnauthTimeout.
	UnauthTimeout time.Duration
	// MaxUnauth bounds requests without a valid credential in progress at once; more
	// are answered 503 with Retry-After. 0 = DefaultMaxUnauth.
	MaxUnauth int
	// TrustedProxies are the reverse proxies whose X-Forwarded-For the audit log
	// believes: a request from one of them is recorded with the client the header
	// names. None by default (the header is ignored).
	TrustedProxies []netip.Prefix
}

// Limits of the HTTP server. Requests without a valid credential (the login page and
// its POST, assets, docs, /healthz, refused calls) may come from any local process, so
// they get a deadline, a body limit and a concurrency bound; authenticated ones keep
// no read or write deadline, so server-sent events and MCP streams stay open.
const (
	DefaultUnauthTimeout = 10 * time.Second
	DefaultMaxUnauth     = 64
	MaxUnauthBody        = 64 << 10 // bytes of request body without a valid credential
	MaxHeaderBytes       = 64 << 10
	IdleTimeout          = 2 * time.Minute
	unauthRetryAfter     = 2 // seconds, in the Retry-After of a 503
)

// Server is the HTTP handler of a core.
type Server struct {
	core     *core.Core
	opts     Options
	mux      *http.ServeMux
	api      huma.API
	handler  http.Handler
	sessions *session.Sessions
	streams  streamStop // ends event streams on shutdown (tasks.go)

	reg     *prometheus.Registry     // the server's metrics (metrics.go); the core's are in core.Metrics
	httpDur *prometheus.HistogramVec // mosaic_http_request_duration_seconds, fed by accessLog
}

// New builds the handler.
func New(c *core.Core, opts Options) (*Server, error) {
	if opts.Token == "" {
		return nil, errors.New("api: empty token; refusing to serve without authentication")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Sessions == nil {
		opts.Sessions = session.NewSessions(nil)
	}
	s := &Server{core: c, opts: opts, mux: http.NewServeMux(), sessions: opts.Sessions}
	s.newServerMetrics()
	cfg := huma.DefaultConfig("Mosaic", core.Version)
	cfg.Info.Description = "Mosaic treats a researcher's allocations on several supercomputers as one machine. " +
		"Every /api route needs `Authorization: Bearer <token>`; the token is in $XDG_CONFIG_HOME/mosaic/token."
	cfg.DocsPath = "" // the default renderer loads from a CDN; /docs is served offline below
	cfg.Components.SecuritySchemes = map[string]*huma.SecurityScheme{
		"bearer": {Type: "http", Scheme: "bearer"},
	}
	cfg.Security = []map[string][]string{{"bearer": {}}}
	cfg.Components.Schemas = huma.NewMapRegistry("#/components/schemas/", schemaName)
	cfg.OnAddOperation = append(cfg.OnAddOperation, documentBodyErrors)
	// Durations travel as strings ("2h", "1:30:00", "2-00:00:00").
	cfg.Components.Schemas.RegisterTypeAlias(reflect.TypeOf(model.Duration(0)), reflect.TypeOf(""))
	cfg.Components.Schemas.RegisterTypeAlias(reflect.TypeOf(v1.Duration(0)), reflect.TypeOf(""))
	s.api = humago.New(s.mux, cfg)
	s.registerFederation()
	s.registerLookAround()
	s.registerTasks()
	s.registerSkill()
	s.registerCampaigns()
	s.registerCampaignJobs()
	s.typeDecision()
	s.registerUsers()
	s.mux.HandleFunc("GET /healthz", s.healthz)
	s.mux.Handle("GET /metrics", s.metricsHandler())
	s.mux.HandleFunc("GET /docs", serveDocs)
	for _, register := range opts.Routes {
		register(s.mux)
	}
	for pattern, h := range opts.TokenRoutes {
		s.mux.Handle(pattern, s.requireToken(h))
	}
	if opts.SignIn != nil {
		s.mux.Handle("/auth/", opts.SignIn)
	} else {
		// Without a Globus client the web UI still asks; it is told so (auth.WebStatus's
		// shape) instead of a 404 the browser logs as an error on every page.
		s.mux.HandleFunc("GET /auth/status", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Cache-Control", "no-store")
			_, _ = io.WriteString(w, `{"configured":false,"signed_in":false,"login_url":""}`+"\n")
		})
	}
	s.handler = s.accessLog(s.guard(s.forward(notePattern(s.mux)))) // forward: team mode's follower → leader (forward.go)
	return s, nil
}

// schemaName names OpenAPI schemas. Answers are api/v1 types, named as they are;
// request bodies are decoded with the core's own types (internal/model), which read
// every duration form a user types ("2-00:00:00", "2d", "90"), and share names with
// wire types (Envelope, Policy), so those are named <Name>Input. The anonymous bodies
// of handlers get real names (openapi.go).
func schemaName(t reflect.Type, hint string) string {
	name := cleanWrapperName(huma.DefaultSchemaNamer(t, hint))
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	if t.PkgPath() == modelPkg {
		return name + "Input"
	}
	return name
}

var modelPkg = reflect.TypeOf(model.Envelope{}).PkgPath()

// HTTPServer returns an http.Server for this handler with the server's limits:
// headers within the unauthenticated timeout, MaxHeaderBytes, IdleTimeout. There is no
// global ReadTimeout or WriteTimeout (they would cut off event streams); the guard sets
// per-request deadlines on requests without a valid credential instead.
func (s *Server) HTTPServer() *http.Server {
	hs := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: s.unauthTimeout(),
		IdleTimeout:       IdleTimeout,
		MaxHeaderBytes:    MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(s.opts.Logger.Handler(), slog.LevelDebug),
	}
	hs.RegisterOnShutdown(s.streams.stop)
	return hs
}

func (s *Server) unauthTimeout() time.Duration {
	if s.opts.UnauthTimeout > 0 {
		return s.opts.UnauthTimeout
	}
	return DefaultUnauthTimeout
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// LoginURL returns a one-time login URL for the web UI, base + "/login?code=…"
// (base is e.g. "http://127.0.0.1:8642"). Opening it sets an HttpOnly, SameSite=Strict
// session cookie and lands on the workbench; the code works once, within 24 hours.
// `mosaic serve` prints it.
func (s *Server) LoginURL(base string) string { return s.sessions.LoginURL(base) }

// API exposes the huma API (for registering further operations and for tests).
func (s *Server) API() huma.API { return s.api }

// guard applies the security baseline before any route.
func (s *Server) guard(next http.Handler) http.Handler {
	maxUnauth := s.opts.MaxUnauth
	if maxUnauth <= 0 {
		maxUnauth = DefaultMaxUnauth
	}
	unauth := make(chan struct{}, maxUnauth) // a semaphore over requests without a credential
	timeout := s.unauthTimeout()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The exchange authenticates its own (run) tokens and holds long polls; its
		// limits are its own (internal/exchange), which also answer its unknown
		// routes without reading their body. Only a clean path under /exchange/
		// reaches it as sent: /exchange itself and paths the mux would redirect are
		// answered by the core, so they stay under this guard.
		exchange := strings.HasPrefix(r.URL.Path, ExchangePrefix+"/") && path.Clean(r.URL.Path) == r.URL.Path
		if !exchange && !s.credentialed(r) {
			// Bound what a stranger can hold: the rest of the body and the answer must
			// pass within the timeout, at most maxUnauth at once, a small body.
			// The connection closes after the answer, so these deadlines never carry
			// over to a later (authenticated, perhaps streaming) request on it, and an
			// unread body is not waited for.
			rc := http.NewResponseController(w)
			deadline := time.Now().Add(timeout)
			_ = rc.SetReadDeadline(deadline) // not supported by test recorders: then no deadline
			_ = rc.SetWriteDeadline(deadline)
			w.Header().Set("Connection", "close")
			select {
			case unauth <- struct{}{}:
				defer func() { <-unauth }()
			default:
				w.Header().Set("Retry-After", strconv.Itoa(unauthRetryAfter))
				noteCause(r.Context(), errTooManyUnauth)
				writeProblem(w, http.StatusServiceUnavailable, "too many requests without a token are in progress; "+
					"retry in a few seconds, or send Authorization: Bearer <token> (the token is in $XDG_CONFIG_HOME/mosaic/token)")
				return
			}
			if r.Body != nil {
				r.Body = http.MaxBytesReader(w, r.Body, MaxUnauthBody)
			}
		}
		if !s.hostAllowed(r.Host) {
			closeUnread(w)
			writeProblem(w, http.StatusForbidden, "Host "+quoteHeader(r.Host)+" is not a loopback name; start mosaic with --allow-host to accept it")
			return
		}
		if o := r.Header.Get("Origin"); o != "" && !s.originAllowed(o, r.Host) {
			closeUnread(w)
			writeProblem(w, http.StatusForbidden, "cross-origin request from "+quoteHeader(o)+" refused")
			return
		}
		// The Globus sign-in routes act for the core's owner (they decide whose Globus
		// identity the core uses), so they need the same authentication as /api; only
		// the OAuth callback stays open — its state value ties it to a login started
		// by an authenticated user.
		protected := strings.HasPrefix(r.URL.Path, "/api/") || r.URL.Path == "/api" ||
			(strings.HasPrefix(r.URL.Path, "/auth/") && r.URL.Path != "/auth/callback")
		if protected {
			switch {
			case r.Header.Get("Authorization") != "":
				// A bearer request is judged by its token alone, never by a cookie.
				caller, ok := s.authorized(r)
				if !ok {
					w.Header().Set("WWW-Authenticate", `Bearer realm="mosaic"`)
					writeProblem(w, http.StatusUnauthorized, "missing, wrong or revoked token: send Authorization: Bearer <token> (the token is in $XDG_CONFIG_HOME/mosaic/token, printed by `mosaic serve`, or one an admin made with `mosaic token create`)")
					return
				}
				if id := r.Header.Get(OnBehalfHeader); id != "" && caller.TokenID == "" && caller.Name == model.LocalUser && r.Header.Get(ForwardedHeader) != "" {
					// A follower's forward of a user's browser session (forward.go).
					onBehalf, err := s.core.CallerByTokenID(r.Context(), id)
					if err != nil {
						w.Header().Set("WWW-Authenticate", `Bearer realm="mosaic"`)
						writeProblem(w, http.StatusUnauthorized, "the token that opened this browser session was revoked (or its user was): sign in again with a valid token at /login")
						return
					}
					caller = onBehalf
				}
				r = s.withCaller(r, caller)
			default:
				_, sess, ok := s.sessions.FromRequest(r)
				if !ok {
					w.Header().Set("WWW-Authenticate", `Bearer realm="mosaic"`)
					writeProblem(w, http.StatusUnauthorized, "not signed in: send Authorization: Bearer <token> (the token is in $XDG_CONFIG_HOME/mosaic/token), or open the one-time login URL `mosaic serve` printed")
					return
				}
				if !session.CheckCSRF(r, sess) {
					writeProblem(w, http.StatusForbidden, "cookie-authenticated "+r.Method+" without a valid "+session.CSRFHeader+" header from this origin refused (CSRF protection); reload the page")
					return
				}
				// A browser session acts for whoever opened it (the login link's minter
				// or the pasted token), checked again on every request.
				caller, err := s.sessionCaller(r.Context(), sess.Owner)
				if err != nil {
					if id, _, ok := s.sessions.FromRequest(r); ok {
						s.sessions.Close(id) // the token or its user was revoked: the session ends
					}
					session.ClearCookie(w, r)
					s.opts.Logger.Debug("session refused", "err", err, "remote", r.RemoteAddr)
					w.Header().Set("WWW-Authenticate", `Bearer realm="mosaic"`)
					writeProblem(w, http.StatusUnauthorized, "the token that opened this browser session was revoked (or its user was): "+
						"sign in again with a valid token at /login")
					return
				}
				r = withAcceptedSession(s.withCaller(r, caller))
			}
			// The Globus sign-in decides whose Globus identity the whole core uses: an
			// admin's decision, not any user's.
			if strings.HasPrefix(r.URL.Path, "/auth/") && !model.CallerOf(r.Context()).Admin {
				writeProblem(w, http.StatusForbidden, "the Globus sign-in sets the identity the whole core uses, so it needs an admin; ask one (`mosaic users list` shows who is)")
				return
			}
			if (r.URL.Path == "/auth/login" || r.URL.Path == "/auth/logout") && s.core != nil {
				s.core.RecordAudit(r.Context(), "globus."+strings.TrimPrefix(r.URL.Path, "/auth/"), "", "the core's Globus identity")
			}
			if r.URL.Path == "/api/status" && r.URL.Query().Get("format") == "text" && s.core.Leading() { // a follower forwards it
				s.statusText(w, r)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// errTooManyUnauth is the cause logged for the guard's 503 (the unauthenticated limit).
var errTooManyUnauth = errors.New("MaxUnauth requests without a valid credential were already in progress")

// credentialed reports whether a request carries a valid credential: the API token
// as a bearer token, or (without an Authorization header) a live session cookie.
// closeUnread makes the answer to a request whose body is not read close its
// connection at once: Connection: close keeps net/http from reading (discarding)
// up to 256 KiB of the body before the answer, and the expired read deadline ends
// the read it still makes after the handler. Without them an /exchange request
// (outside the stranger guard) refused here could be held by a trickled body.
func closeUnread(w http.ResponseWriter) {
	w.Header().Set("Connection", "close")
	_ = http.NewResponseController(w).SetReadDeadline(time.Now()) // not supported by test recorders
}

func (s *Server) credentialed(r *http.Request) bool {
	if r.Header.Get("Authorization") != "" {
		_, ok := s.authorized(r)
		return ok
	}
	_, _, ok := s.sessions.FromRequest(r)
	return ok
}

// authorized returns who a request's bearer token stands for: the laptop token (the
// implicit local admin, compared in constant time) or a user token (mos_…, looked up
// by its hash in the store on every request, so a revocation holds from the next
// request on). The scheme name is case-insensitive (RFC 7235 section 2.1: "bearer",
// "BEARER" and "Bearer" are the same scheme), followed by one or more spaces.
func (s *Server) authorized(r *http.Request) (model.Caller, bool) {
	tok, ok := bearerToken(r.Header.Get("Authorization"))
	if !ok {
		return model.Caller{}, false
	}
	caller, err := s.logins().Login(r.Context(), tok)
	if err != nil {
		if s.opts.Logger == nil { // a bare Server (the guard's unit tests)
			return model.Caller{}, false
		}
		// The error names the token's display id only, never the token.
		s.opts.Logger.Debug("token refused", "err", err, "remote", r.RemoteAddr)
		return model.Caller{}, false
	}
	return caller, true
}

// sessionCaller is who a browser session acts for: the laptop token's holder (the
// local admin) or the user whose token opened it, looked up again by the token's id
// so a revoked token or user ends the session at once.
func (s *Server) sessionCaller(ctx context.Context, o session.Owner) (model.Caller, error) {
	if o.TokenID == "" {
		if o.User != "" && o.User != model.LocalUser {
			return model.Caller{}, fmt.Errorf("session of %s names no token: %w", o.User, core.ErrUnauthenticated)
		}
		return model.LocalCaller(), nil
	}
	caller, err := s.core.CallerByTokenID(ctx, o.TokenID)
	if err != nil {
		return model.Caller{}, err
	}
	if caller.Name != o.User {
		return model.Caller{}, fmt.Errorf("session of %s names token %s of %s: %w", o.User, o.TokenID, caller.Name, core.ErrUnauthenticated)
	}
	return caller, nil
}

func (s *Server) logins() Logins { return Logins{core: s.core, token: s.opts.Token} }

// Logins authenticates the tokens a surface is handed (the web UI's paste-the-token
// login) exactly as the API's guard does, and records the surface's audit entries.
type Logins struct {
	core  *core.Core
	token string
}

// NewLogins returns the logins of core c whose laptop token is token.
func NewLogins(c *core.Core, token string) Logins { return Logins{core: c, token: token} }

// Login returns who tok stands for: the laptop token (the implicit local admin,
// compared in constant time) or a user token (mos_…, looked up by its hash in the store
// on every call, so a revocation holds from the next request on). Errors never
// repeat the token.
func (l Logins) Login(ctx context.Context, tok string) (model.Caller, error) {
	if TokenChecker(l.token)(tok) {
		return model.LocalCaller(), nil
	}
	if !strings.HasPrefix(tok, userTokenPrefix) || l.core == nil {
		return model.Caller{}, fmt.Errorf("not this core's laptop token nor a user token (mos_…): %w", core.ErrUnauthenticated)
	}
	return l.core.Authenticate(ctx, tok)
}

// Audit records an action of the caller of ctx in the audit log.
func (l Logins) Audit(ctx context.Context, action, target, detail string) {
	if l.core != nil { // a server without a core (the guard's tests) has no audit log
		l.core.RecordAudit(ctx, action, target, detail)
	}
}

// userTokenPrefix starts every user token (store.TokenPrefix).
const userTokenPrefix = "mos_"

// withCaller puts the authenticated caller, with the client's address, in the
// request's context: the core's ownership checks and the audit log read it there.
func (s *Server) withCaller(r *http.Request, c model.Caller) *http.Request {
	c.Remote = ClientAddr(r, s.opts.TrustedProxies)
	return r.WithContext(model.WithCaller(r.Context(), c))
}

// ClientAddr is the client of a request for the audit log: its peer address, or, when
// the peer is one of the trusted reverse proxies, the nearest address in
// X-Forwarded-For that is not a trusted proxy (recorded as "ADDR via PEER"). A header
// from any other peer is ignored, so it cannot be forged.
func ClientAddr(r *http.Request, trusted []netip.Prefix) string {
	peer, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil || len(trusted) == 0 || !inPrefixes(peer.Addr().Unmap(), trusted) {
		return r.RemoteAddr
	}
	var hops []string
	for _, h := range r.Header.Values("X-Forwarded-For") {
		hops = append(hops, strings.Split(h, ",")...)
	}
	for i := len(hops) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			break // a malformed hop: believe nothing further left
		}
		if !inPrefixes(a.Unmap(), trusted) {
			return a.String() + " via " + r.RemoteAddr
		}
	}
	return r.RemoteAddr
}

func inPrefixes(a netip.Addr, ps []netip.Prefix) bool {
	for _, p := range ps {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// bearerToken extracts the token of an "Authorization: Bearer <token>" header value.
func bearerToken(h string) (string, bool) {
	scheme, rest, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok := strings.TrimSpace(rest)
	return tok, tok != ""
}

// TokenChecker returns a constant-time check of a presented token against token
// (the web UI's paste-the-token login uses it).
func TokenChecker(token string) func(string) bool {
	return func(tok string) bool { return subtle.ConstantTimeCompare([]byte(tok), []byte(token)) == 1 }
}

// requireToken lets a request through only with the API token as a bearer token.
func (s *Server) requireToken(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		caller, ok := s.authorized(r)
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="mosaic"`)
			writeProblem(w, http.StatusUnauthorized, "missing, wrong or revoked token: send Authorization: Bearer <token> "+
				"(the token is in $XDG_CONFIG_HOME/mosaic/token, printed by `mosaic serve`, or one an admin made with `mosaic token create`)")
			return
		}
		next.ServeHTTP(w, s.withCaller(r, caller))
	})
}

// hostAllowed accepts loopback names and addresses (any port) and the allow-list.
func (s *Server) hostAllowed(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if host == "" {
		return false
	}
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return true
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return true
	}
	for _, a := range s.opts.AllowHosts {
		if strings.EqualFold(a, host) || strings.EqualFold(a, hostport) {
			return true
		}
	}
	return false
}

// originAllowed accepts an Origin whose host is itself allowed (same machine).
func (s *Server) originAllowed(origin, host string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	return s.hostAllowed(u.Host)
}

func quoteHeader(s string) string {
	if len(s) > 100 {
		s = s[:100] + "…"
	}
	return `"` + strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return '?'
		}
		return r
	}, s) + `"`
}

func writeProblem(w http.ResponseWriter, status int, detail string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	b, _ := jsonMarshal(map[string]any{"title": http.StatusText(status), "status": status, "detail": detail})
	w.Write(b)
}
