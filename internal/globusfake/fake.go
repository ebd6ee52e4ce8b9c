// Package globusfake is an httptest server that speaks the Globus Auth and Globus
// Compute wire formats closely enough to test Mosaic without the real services (which
// cannot be reached from test machines). Every route cites the SDK source it follows:
//
//   - globus/globus-sdk-python src/globus_sdk/services/auth/flow_managers/native_app.py
//     (authorize URL parameters, PKCE S256),
//     src/globus_sdk/services/auth/client/base_login_client.py (POST /v2/oauth2/token,
//     POST /v2/oauth2/token/revoke, form encoding, client_id for native clients),
//     src/globus_sdk/services/auth/response/oauth.py (token response with other_tokens),
//     AuthClient.userinfo (GET /v2/oauth2/userinfo).
//   - globus/globus-compute compute_sdk/globus_compute_sdk/sdk/web_client.py (routes),
//     sdk/batch.py (submit body), sdk/client.py (_update_task_table, batch results),
//     serialize/concretes.py and serialize/utils.py (payload encodings).
//
// Tasks really run: the registered pure-source Python function is executed with
// python3 on this host (the endpoint's Env is added, e.g. SLURM_CONF for the Slurm
// rig), so a site reached through the fake behaves like one reached over SSH.
package globusfake

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/auth"
)

// Endpoint is one fake Globus Compute endpoint.
type Endpoint struct {
	ID       string
	Name     string
	Hostname string
	// Env is added to the environment of executed tasks.
	Env []string
	// Dir is the working directory of executed tasks ("" = the test's).
	Dir    string
	online bool
}

type client struct {
	id, secret string
}

type code struct {
	client, redirect, challenge string
	scopes                      []string
	offline                     bool
	used                        bool
}

type issued struct {
	rs, scope, client string
	refresh           string
	expires           time.Time
	revoked           bool
	service           bool
}

type refreshRec struct {
	client  string
	scopes  []string
	revoked bool
}

// Server is the fake. Create it with New; it stops when the test ends.
type Server struct {
	*httptest.Server
	// Identity is the user every sign-in acts as.
	Identity auth.Identity
	// TokenLifetime is expires_in of minted access tokens (Globus: 172800 s).
	TokenLifetime time.Duration
	// ResultLimit caps task results like the service (10 MiB).
	ResultLimit int
	// Python is the interpreter executing tasks ("" = python3 from PATH).
	Python string

	mu        sync.Mutex
	clients   map[string]client
	codes     map[string]*code
	tokens    map[string]*issued
	refreshes map[string]*refreshRec
	minted    []string
	functions map[string]function
	endpoints map[string]*Endpoint
	tasks     map[string]*task
	wg        sync.WaitGroup

	// Registrations counts POST /v3/functions.
	Registrations atomic.Int64
	// Submits counts POST /v3/endpoints/{id}/submit.
	Submits atomic.Int64
	// BatchStatusCalls counts POST /v2/batch_status.
	BatchStatusCalls atomic.Int64
	// StatusCalls counts GET /v2/endpoints/{id}/status.
	StatusCalls atomic.Int64
	// Refreshes counts refresh_token grants.
	Refreshes atomic.Int64
	// Introspections counts POST /v2/oauth2/token/introspect.
	Introspections atomic.Int64
}

// TB is the part of testing.TB the fake needs.
type TB interface {
	Helper()
	Cleanup(func())
}

// New starts a fake on 127.0.0.1.
func New(t TB) *Server {
	t.Helper()
	s := &Server{
		Identity:      auth.Identity{Sub: "b4e2f3a0-1111-4a4a-9a9a-000000000001", Username: "researcher@example.org", Name: "A. Researcher", Email: "researcher@example.org"},
		TokenLifetime: 48 * time.Hour,
		ResultLimit:   10 << 20,
		clients:       map[string]client{},
		codes:         map[string]*code{},
		tokens:        map[string]*issued{},
		refreshes:     map[string]*refreshRec{},
		functions:     map[string]function{},
		endpoints:     map[string]*Endpoint{},
		tasks:         map[string]*task{},
	}
	mux := http.NewServeMux()
	s.authRoutes(mux)
	s.computeRoutes(mux)
	s.Server = httptest.NewServer(mux)
	t.Cleanup(func() {
		s.Server.Close()
		s.wg.Wait()
	})
	return s
}

// AddClient registers an OAuth client; secret "" makes a native (public) client.
func (s *Server) AddClient(id, secret string) {
	s.mu.Lock()
	s.clients[id] = client{id: id, secret: secret}
	s.mu.Unlock()
}

// AddEndpoint registers an endpoint owned by Identity, online.
func (s *Server) AddEndpoint(e Endpoint) *Endpoint {
	s.mu.Lock()
	defer s.mu.Unlock()
	ep := e
	ep.online = true
	s.endpoints[e.ID] = &ep
	return &ep
}

// SetOnline connects or disconnects an endpoint; tasks waiting for it start when it
// comes online.
func (s *Server) SetOnline(id string, online bool) {
	s.mu.Lock()
	ep := s.endpoints[id]
	if ep == nil {
		s.mu.Unlock()
		return
	}
	ep.online = online
	var start []*task
	if online {
		for _, t := range s.tasks {
			if t.endpoint == id && t.status == "waiting-for-ep" {
				t.status = "running"
				start = append(start, t)
			}
		}
	}
	s.mu.Unlock()
	for _, t := range start {
		s.run(t)
	}
}

// Minted returns every token string the fake issued (tests grep logs for them).
func (s *Server) Minted() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.minted...)
}

// RevokeAll revokes every refresh token (as a user removing consent would).
func (s *Server) RevokeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.refreshes {
		r.revoked = true
	}
	for _, t := range s.tokens {
		t.revoked = true
	}
}

// ExpireAccessTokens makes every issued access token expired.
func (s *Server) ExpireAccessTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.tokens {
		t.expires = time.Now().Add(-time.Second)
	}
}

// Revoked reports whether a token string was revoked.
func (s *Server) Revoked(tok string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.tokens[tok]; ok {
		return t.revoked
	}
	if r, ok := s.refreshes[tok]; ok {
		return r.revoked
	}
	return false
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// newUUID returns a random version-4 UUID string.
func newUUID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b)
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
