package exchange

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

// Defaults.
const (
	DefaultMaxMessageBytes = 1 << 20          // Academy's message_size_limit_kb=1024
	DefaultPingInterval    = 15 * time.Second // aiohttp_sse's default ping
	maxControlBody         = 64 << 10         // bodies of routes other than PUT /message
)

// Config configures a Server. The zero value is usable: in-memory backend, 1 MiB
// messages, 15 s SSE pings, token required.
type Config struct {
	// Backend stores mailboxes; nil means a new in-memory backend.
	Backend Backend
	// MaxMessageBytes caps the JSON size of one message (413 beyond); 0 = 1 MiB.
	MaxMessageBytes int64
	// PingInterval is the SSE keep-alive comment interval of /mailbox/listen.
	PingInterval time.Duration
	// MaxWait caps a blocking receive or listen whose client sent no timeout
	// (0 = no cap; the request still ends when the client goes away).
	MaxWait time.Duration
	// AnonymousRun, when set, is the run of requests that carry no
	// Authorization header (for loopback development with stock Academy
	// clients). Leave empty to require a token.
	AnonymousRun string
	// Logger receives one line per mailbox lifecycle event; nil = slog.Default().
	Logger *slog.Logger
	// Now is the clock; nil = time.Now.
	Now func() time.Time
}

// Server is the exchange: an http.Handler serving the Academy cloud-exchange
// protocol, embeddable in the Mosaic core or run alone (see Handler/ServeHTTP).
type Server struct {
	cfg   Config
	be    Backend
	mux   *http.ServeMux
	log   *slog.Logger
	now   func() time.Time
	cache sync.Map // token hash -> cachedRun (positive answers only)
}

// NewServer returns a Server for cfg.
func NewServer(cfg Config) *Server {
	s := &Server{cfg: cfg, be: cfg.Backend, log: cfg.Logger, now: cfg.Now}
	if s.be == nil {
		s.be = NewMemory()
	}
	if s.cfg.MaxMessageBytes <= 0 {
		s.cfg.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if s.cfg.PingInterval <= 0 {
		s.cfg.PingInterval = DefaultPingInterval
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.mux = http.NewServeMux()
	// Routes of academy/exchange/cloud/app.py create_app, plus heartbeat and
	// stats, which academy/exchange/cloud/client.py calls.
	s.mux.HandleFunc("POST /mailbox", s.auth(s.handleCreate))
	s.mux.HandleFunc("GET /mailbox", s.auth(s.handleStatus))
	s.mux.HandleFunc("DELETE /mailbox", s.auth(s.handleTerminate))
	s.mux.HandleFunc("PUT /message", s.auth(s.handleSend))
	s.mux.HandleFunc("GET /message", s.auth(s.handleRecv))
	s.mux.HandleFunc("GET /mailbox/listen", s.auth(s.handleListen))
	s.mux.HandleFunc("GET /discover", s.auth(s.handleDiscover))
	s.mux.HandleFunc("GET /mailbox/heartbeat", s.auth(s.handleHeartbeat))
	s.mux.HandleFunc("GET /mailbox/stats", s.auth(s.handleStats))
	return s
}

// ServeHTTP implements http.Handler. Mount it at the exchange's base URL (strip
// any prefix with http.StripPrefix).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Backend returns the server's backend.
func (s *Server) Backend() Backend { return s.be }

// Close closes the backend.
func (s *Server) Close() error { return s.be.Close() }

// HashToken returns the hex SHA-256 under which a token is stored; tokens
// themselves are never stored or logged.
func HashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// IssueToken creates a random bearer token bound to run. Mailboxes of other runs
// are 403 to its holder.
func (s *Server) IssueToken(ctx context.Context, run string) (string, error) {
	if run == "" {
		return "", errors.New("issue exchange token: run id is empty")
	}
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("issue exchange token: %w", err)
	}
	tok := "mxt_" + hex.EncodeToString(b[:])
	if err := s.AddToken(ctx, tok, run); err != nil {
		return "", err
	}
	return tok, nil
}

// AddToken binds an existing token (e.g. read from a 0600 file) to run.
func (s *Server) AddToken(ctx context.Context, token, run string) error {
	if token == "" || run == "" {
		return errors.New("add exchange token: token and run id must be non-empty")
	}
	if err := s.be.SetToken(ctx, HashToken(token), run); err != nil {
		return fmt.Errorf("add exchange token: %w", err)
	}
	return nil
}

// RegisterCampaign makes the exchange enforce the campaign's allowed_peers for
// run: an agent may only send requests to the peers it lists (responses may go
// back along either direction), only declared agents may register agent
// mailboxes, and user mailboxes (operators, bootstrap) may message any agent.
// Agent site hints feed the timeline; SetAgentSite overrides them.
func (s *Server) RegisterCampaign(ctx context.Context, run string, c model.Campaign) error {
	p := RunPolicy{Campaign: c.Name, Peers: map[string][]string{}, Sites: map[string]string{}}
	for _, a := range c.Agents {
		p.Peers[a.Name] = slices.Clone(a.AllowedPeers)
		if a.Site != "" {
			p.Sites[a.Name] = a.Site
		}
	}
	if err := s.be.SetPolicy(ctx, run, p); err != nil {
		return fmt.Errorf("register campaign %q for run %s: %w", c.Name, run, err)
	}
	return nil
}

// SetAgentSite records where an agent of run runs (for the timeline).
func (s *Server) SetAgentSite(ctx context.Context, run, agent, site string) error {
	p, ok, err := s.be.Policy(ctx, run)
	if err != nil {
		return err
	}
	if !ok {
		p = RunPolicy{}
	}
	if p.Sites == nil {
		p.Sites = map[string]string{}
	}
	p.Sites[agent] = site
	return s.be.SetPolicy(ctx, run, p)
}

// Timeline returns every message delivered in run, in order. Backend errors are
// logged and yield what could be read (nil); use TimelineContext to see them.
func (s *Server) Timeline(run string) []MessageRecord {
	recs, err := s.TimelineContext(context.Background(), run)
	if err != nil {
		s.log.Warn("exchange timeline", "run", run, "err", err)
	}
	return recs
}

// TimelineContext is Timeline with a context and an error.
func (s *Server) TimelineContext(ctx context.Context, run string) ([]MessageRecord, error) {
	return s.be.Records(ctx, run)
}

// SiteCounts summarises run's mailboxes and messages per site.
func (s *Server) SiteCounts(ctx context.Context, run string) ([]SiteCount, error) {
	recs, err := s.be.Records(ctx, run)
	if err != nil {
		return nil, err
	}
	boxes, err := s.be.List(ctx, run)
	if err != nil {
		return nil, err
	}
	pol, _, err := s.be.Policy(ctx, run)
	if err != nil {
		return nil, err
	}
	return countSites(recs, boxes, func(b MailboxRecord) string { return siteOf(b, pol) }), nil
}

func siteOf(b MailboxRecord, p RunPolicy) string {
	if b.Site != "" {
		return b.Site
	}
	return p.Sites[b.ID.NameOr("")]
}

// tokenCacheTTL bounds how long a server trusts a cached token after another
// server sharing the backend revoked it.
const tokenCacheTTL = 10 * time.Second

type cachedRun struct {
	run string
	at  time.Time
}

// RevokeToken makes token invalid (e.g. at campaign teardown). Servers sharing
// the backend stop accepting it within tokenCacheTTL; this one immediately.
func (s *Server) RevokeToken(ctx context.Context, token string) error {
	hash := HashToken(token)
	s.cache.Delete(hash)
	if err := s.be.DeleteToken(ctx, hash); err != nil {
		return fmt.Errorf("revoke exchange token: %w", err)
	}
	return nil
}

type runKey struct{}

func runOf(r *http.Request) string { v, _ := r.Context().Value(runKey{}).(string); return v }

// auth resolves the bearer token to a run (app.py authenticate_factory: 401 for
// missing headers, 403 for a token that is not valid).
func (s *Server) auth(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		authz := r.Header.Get("Authorization")
		var run string
		switch {
		case authz == "" && s.cfg.AnonymousRun != "":
			run = s.cfg.AnonymousRun
		case authz == "":
			httpError(w, http.StatusUnauthorized, "Missing required headers. Send 'Authorization: Bearer <token>' (MOSAIC_EXCHANGE_TOKEN).")
			return
		default:
			tok, ok := strings.CutPrefix(authz, "Bearer ")
			if !ok || strings.TrimSpace(tok) == "" {
				httpError(w, http.StatusUnauthorized, "Missing required headers. The Authorization header must be 'Bearer <token>'.")
				return
			}
			hash := HashToken(strings.TrimSpace(tok))
			if v, hit := s.cache.Load(hash); hit && time.Since(v.(cachedRun).at) < tokenCacheTTL {
				run = v.(cachedRun).run
				break
			}
			got, found, err := s.be.TokenRun(r.Context(), hash)
			if err != nil {
				httpError(w, http.StatusServiceUnavailable, "exchange backend unavailable")
				s.log.Error("exchange token lookup", "err", err)
				return
			}
			if !found {
				httpError(w, http.StatusForbidden, "Token expired or revoked. Check MOSAIC_EXCHANGE_TOKEN belongs to this run and exchange.")
				return
			}
			s.cache.Store(hash, cachedRun{run: got, at: time.Now()})
			run = got
		}
		h(w, r.WithContext(context.WithValue(r.Context(), runKey{}, run)))
	}
}

func httpError(w http.ResponseWriter, code int, text string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(text))
}
