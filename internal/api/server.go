// Package api is Mosaic's HTTP surface: a huma v2 API under /api (OpenAPI 3.1 at
// /openapi.json, an offline docs page at /docs), /healthz, /metrics and (unless
// headless) the embedded web UI at /, behind the loopback security baseline: a bearer
// token or a browser session cookie (with a CSRF token for state-changing calls), a
// Host allow-list (DNS-rebinding defence) and an Origin check.
package api

import (
	"crypto/subtle"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"reflect"
	"strings"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humago"

	"github.com/mosaic-hpc/mosaic/internal/core"
	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/web"
)

// Options configure the server.
type Options struct {
	Token      string   // required for /api/*
	AllowHosts []string // extra Host names accepted besides loopback names
	Headless   bool     // API only: no pages at /
	// SignIn, when set, serves the Globus web sign-in under /auth/ (login, callback,
	// logout, status); see internal/auth.
	SignIn http.Handler
	Logger *slog.Logger
}

// Server is the HTTP handler of a core.
type Server struct {
	core     *core.Core
	opts     Options
	mux      *http.ServeMux
	api      huma.API
	handler  http.Handler
	sessions *web.Sessions
}

// New builds the handler.
func New(c *core.Core, opts Options) (*Server, error) {
	if opts.Token == "" {
		return nil, errors.New("api: empty token; refusing to serve without authentication")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{core: c, opts: opts, mux: http.NewServeMux(), sessions: web.NewSessions(nil)}
	cfg := huma.DefaultConfig("Mosaic", core.Version)
	cfg.Info.Description = "Mosaic treats a researcher's allocations on several supercomputers as one machine. " +
		"Every /api route needs `Authorization: Bearer <token>`; the token is in $XDG_CONFIG_HOME/mosaic/token."
	cfg.DocsPath = "" // the default renderer loads from a CDN; /docs is served offline below
	cfg.Components.SecuritySchemes = map[string]*huma.SecurityScheme{
		"bearer": {Type: "http", Scheme: "bearer"},
	}
	cfg.Security = []map[string][]string{{"bearer": {}}}
	// Durations travel as strings ("2h", "1:30:00", "2-00:00:00").
	cfg.Components.Schemas.RegisterTypeAlias(reflect.TypeOf(model.Duration(0)), reflect.TypeOf(""))
	s.api = humago.New(s.mux, cfg)
	s.registerFederation()
	s.registerLookAround()
	s.registerTasks()
	s.registerMCP()
	s.registerCampaigns()
	s.mux.HandleFunc("GET /healthz", s.healthz)
	s.mux.Handle("GET /metrics", s.metricsHandler())
	s.mux.HandleFunc("GET /docs", serveDocs)
	if !opts.Headless {
		web.New(s.sessions, s.tokenOK).Register(s.mux)
	}
	if opts.SignIn != nil {
		s.mux.Handle("/auth/", opts.SignIn)
	}
	s.handler = s.guard(s.mux)
	return s, nil
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
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.hostAllowed(r.Host) {
			writeProblem(w, http.StatusForbidden, "Host "+quoteHeader(r.Host)+" is not a loopback name; start mosaic with --allow-host to accept it")
			return
		}
		if o := r.Header.Get("Origin"); o != "" && !s.originAllowed(o, r.Host) {
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
				if !s.authorized(r) {
					w.Header().Set("WWW-Authenticate", `Bearer realm="mosaic"`)
					writeProblem(w, http.StatusUnauthorized, "missing or wrong token: send Authorization: Bearer <token> (the token is in $XDG_CONFIG_HOME/mosaic/token, printed by `mosaic serve`)")
					return
				}
			default:
				_, sess, ok := s.sessions.FromRequest(r)
				if !ok {
					w.Header().Set("WWW-Authenticate", `Bearer realm="mosaic"`)
					writeProblem(w, http.StatusUnauthorized, "not signed in: send Authorization: Bearer <token> (the token is in $XDG_CONFIG_HOME/mosaic/token), or open the one-time login URL `mosaic serve` printed")
					return
				}
				if !web.CheckCSRF(r, sess) {
					writeProblem(w, http.StatusForbidden, "cookie-authenticated "+r.Method+" without a valid "+web.CSRFHeader+" header from this origin refused (CSRF protection); reload the page")
					return
				}
			}
			if r.URL.Path == "/api/status" && r.URL.Query().Get("format") == "text" {
				s.statusText(w, r)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Server) authorized(r *http.Request) bool {
	h := r.Header.Get("Authorization")
	tok, ok := strings.CutPrefix(h, "Bearer ")
	if !ok {
		return false
	}
	return s.tokenOK(strings.TrimSpace(tok))
}

// tokenOK compares a presented token with the API token in constant time.
func (s *Server) tokenOK(tok string) bool {
	return subtle.ConstantTimeCompare([]byte(tok), []byte(s.opts.Token)) == 1
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
