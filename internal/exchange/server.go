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
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mosaic-hpc/mosaic/agent"
	"github.com/mosaic-hpc/mosaic/internal/model"
)

// Defaults.
const (
	DefaultMaxMessageBytes    = 1 << 20          // Academy's message_size_limit_kb=1024
	DefaultPingInterval       = 15 * time.Second // aiohttp_sse's default ping
	DefaultMaxQueuedMessages  = 10_000           // per mailbox
	DefaultMaxQueuedBytes     = 64 << 20         // per mailbox
	DefaultMaxMailboxesPerRun = 1_000
	DefaultMaxTotalBytes      = 512 << 20 // every mailbox of the server (backend)
	DefaultLeaseTTL           = 90 * time.Second
	DefaultBodyReadTimeout    = 30 * time.Second
	DefaultMaxPendingAuth     = 256
	// DefaultDedupeWindow outlasts the agent SDK's reconnect window
	// (agent.DefaultReconnectFor, 10 min) plus its backoff: a sender's retry of a
	// message the exchange accepted before it went away is always recognised.
	DefaultDedupeWindow = 15 * time.Minute
	maxControlBody      = 64 << 10 // bodies of routes other than PUT /message
)

// Config configures a Server. The zero value is usable: in-memory backend,
// 1 MiB messages, 15 s SSE pings, token required, the default quotas.
type Config struct {
	// Backend stores mailboxes; nil means a new in-memory backend.
	Backend Backend
	// MaxMessageBytes caps the JSON size of one message (413 beyond); 0 = 1 MiB.
	MaxMessageBytes int64
	// MaxQueuedMessages caps the messages queued in one mailbox, and the
	// requests sent to it still unanswered (429 beyond); 0 = 10,000, < 0 = none.
	MaxQueuedMessages int64
	// MaxQueuedBytes caps the bytes queued in one mailbox (413); 0 = 64 MiB.
	MaxQueuedBytes int64
	// MaxMailboxesPerRun caps the mailboxes of one run (429); 0 = 1,000.
	MaxMailboxesPerRun int64
	// MaxTotalBytes caps the bytes queued in the whole backend (413); 0 = 512 MiB.
	MaxTotalBytes int64
	// LeaseTTL is how long a registration holds an agent mailbox after its
	// holder was last seen (receive, listen, heartbeat, send); a second live
	// registration is refused with 409 until then. 0 = 90 s.
	LeaseTTL time.Duration
	// BodyReadTimeout bounds reading one request body (the long-poll part of
	// a request, after its body, is not limited). 0 = 30 s.
	BodyReadTimeout time.Duration
	// MaxPendingAuth bounds requests being authenticated at once (503
	// beyond); 0 = 256.
	MaxPendingAuth int
	// PingInterval is the SSE keep-alive comment interval of /mailbox/listen.
	PingInterval time.Duration
	// OnMessage, if set, is called after each send request the exchange accepted
	// (for metrics). It must not block.
	OnMessage func()
	// MaxWait caps a blocking receive or listen whose client sent no timeout
	// (0 = no cap; the request still ends when the client goes away).
	MaxWait time.Duration
	// AnonymousRun, when set, is the run of requests that carry no
	// Authorization header (for loopback development with stock Academy
	// clients); they act as that run's operator. Leave empty to require a token.
	AnonymousRun string
	// DedupeWindow is how long a message accepted by PUT /message is remembered
	// so that the same message sent again (same sender, destination, tag and kind:
	// a retry after a lost answer) is answered 200 without being queued twice;
	// 0 = 15 min, < 0 = no de-duplication (and none advertised). DedupeEntries
	// bounds the messages remembered per destination mailbox and sender (<= 0:
	// 256), DedupeMailboxEntries those per destination mailbox from all senders, a
	// memory guard (<= 0: 65,536).
	DedupeWindow         time.Duration
	DedupeEntries        int64
	DedupeMailboxEntries int64
	// Logger receives one line per mailbox lifecycle event; nil = slog.Default().
	Logger *slog.Logger
	// Now is the clock; nil = time.Now.
	Now func() time.Time
}

// Server is the exchange: an http.Handler serving the Academy cloud-exchange
// protocol, embeddable in the Mosaic core or run alone (see Handler/ServeHTTP).
//
// Credentials: a run's operator token (IssueToken, AddToken) and, once the
// run's campaign is registered, one token per declared agent, derived from the
// operator token (agent.AgentToken). The server stores only their hashes; it
// keeps the operator tokens it was given in memory to derive agent tokens
// whichever of AddToken and RegisterCampaign comes first.
type Server struct {
	cfg Config
	lim Limits
	// dedupeAdvert is the value of agent.DedupeHeader: the window in seconds ("":
	// none sent).
	dedupeAdvert string
	be           Backend
	mux          *http.ServeMux
	log          *slog.Logger
	now          func() time.Time
	cache        sync.Map // token hash -> cachedToken (positive answers only)
	auths        chan struct{}

	opsMu sync.Mutex
	ops   map[string][]string // run -> operator tokens given to this server
}

func orDefault[T int | int64 | time.Duration](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}

// NewServer returns a Server for cfg.
func NewServer(cfg Config) *Server {
	s := &Server{cfg: cfg, be: cfg.Backend, log: cfg.Logger, now: cfg.Now, ops: map[string][]string{}}
	if s.be == nil {
		s.be = NewMemory()
	}
	if s.cfg.MaxMessageBytes <= 0 {
		s.cfg.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if s.cfg.PingInterval <= 0 {
		s.cfg.PingInterval = DefaultPingInterval
	}
	s.cfg.LeaseTTL = max(orDefault(s.cfg.LeaseTTL, DefaultLeaseTTL), time.Second)
	s.cfg.BodyReadTimeout = max(orDefault(s.cfg.BodyReadTimeout, DefaultBodyReadTimeout), 10*time.Millisecond)
	s.cfg.MaxPendingAuth = max(orDefault(s.cfg.MaxPendingAuth, DefaultMaxPendingAuth), 1)
	s.lim = Limits{
		MaxQueuedMessages:  orDefault(s.cfg.MaxQueuedMessages, DefaultMaxQueuedMessages),
		MaxQueuedBytes:     orDefault(s.cfg.MaxQueuedBytes, DefaultMaxQueuedBytes),
		MaxMailboxesPerRun: orDefault(s.cfg.MaxMailboxesPerRun, DefaultMaxMailboxesPerRun),
		MaxTotalBytes:      orDefault(s.cfg.MaxTotalBytes, DefaultMaxTotalBytes),
		DedupeWindow:       orDefault(s.cfg.DedupeWindow, DefaultDedupeWindow),
	}
	s.lim.DedupeEntries, s.lim.DedupeMailboxEntries = s.cfg.DedupeEntries, s.cfg.DedupeMailboxEntries
	s.lim.DedupeEntries, s.lim.DedupeMailboxEntries = s.lim.dedupeEntries(), s.lim.dedupeMailboxEntries() // <= 0: the defaults
	if secs := int64(s.lim.DedupeWindow / time.Second); secs >= 2 {
		// Whole seconds; "1" meant "the default window" to SDKs of before, so a window
		// under 2 s is not advertised (too short to retry through anyway).
		s.dedupeAdvert = strconv.FormatInt(secs, 10)
	}
	s.auths = make(chan struct{}, s.cfg.MaxPendingAuth)
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
	// Mosaic extension: the run's timeline, for its operator.
	s.mux.HandleFunc("GET "+agent.TimelinePath, s.auth(s.handleTimeline))
	return s
}

// Limits returns the quotas the server enforces.
func (s *Server) Limits() Limits { return s.lim }

// ServeHTTP implements http.Handler. Mount it at the exchange's base URL (strip
// any prefix with http.StripPrefix).
//
// A request that reaches no route as sent — unknown path (404), wrong method
// (405), or a path the mux would redirect to its clean form — is answered at
// once with its connection closed and its body unread, as refuse answers
// unauthenticated requests: otherwise net/http would read (discard) up to
// 256 KiB of its body, without deadline, before answering, so a stranger
// could hold connections outside MaxPendingAuth and BodyReadTimeout.
//
// Every answer carries agent.DedupeHeader, the window in seconds, when the server
// de-duplicates sends (Config.DedupeWindow, at least 2 s): the agent SDK then
// retries a send whose answer it lost, for as long as the window allows.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.dedupeAdvert != "" {
		w.Header().Set(agent.DedupeHeader, s.dedupeAdvert)
	}
	h, pattern := s.mux.Handler(r)
	if _, path, _ := strings.Cut(pattern, " "); path == "" || path != r.URL.EscapedPath() {
		closeUnread(w)
		h.ServeHTTP(w, r)
		return
	}
	s.mux.ServeHTTP(w, r)
}

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

// IssueToken creates a random operator token bound to run. Mailboxes of other
// runs do not exist for its holder.
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

// AddToken binds an existing operator token (e.g. read from a 0600 file) to
// run. When run's campaign is registered, the tokens of its agents (derived
// from this one) are bound too.
func (s *Server) AddToken(ctx context.Context, token, run string) error {
	if token == "" || run == "" {
		return errors.New("add exchange token: token and run id must be non-empty")
	}
	if agent.IsAgentToken(token) {
		return fmt.Errorf("add exchange token: a run token may not start with %q (that prefix marks per-agent tokens); choose another token", agent.AgentTokenPrefix)
	}
	if err := s.be.SetToken(ctx, HashToken(token), TokenInfo{Run: run}); err != nil {
		return fmt.Errorf("add exchange token: %w", err)
	}
	s.opsMu.Lock()
	if !slices.Contains(s.ops[run], token) {
		s.ops[run] = append(s.ops[run], token)
	}
	s.opsMu.Unlock()
	pol, ok, err := s.be.Policy(ctx, run)
	if err != nil {
		return fmt.Errorf("add exchange token: %w", err)
	}
	if ok {
		return s.bindAgentTokens(ctx, run, pol, []string{token})
	}
	return nil
}

// bindAgentTokens stores the hashes of the agent tokens of every declared agent
// of run, derived from each of ops.
func (s *Server) bindAgentTokens(ctx context.Context, run string, pol RunPolicy, ops []string) error {
	for _, op := range ops {
		for name := range pol.Peers {
			uid := agent.UID(run, name)
			if err := s.be.SetToken(ctx, HashToken(agent.AgentToken(op, run, uid)), TokenInfo{Run: run, Agent: uid, Name: name}); err != nil {
				return fmt.Errorf("bind the token of agent %s of run %s: %w", name, run, err)
			}
		}
	}
	return nil
}

// RegisterCampaign makes the exchange enforce the campaign for run: every
// declared agent gets its own credential (derived from the run's operator
// token, see agent.AgentToken) that opens only its own mailbox, under its
// deterministic uid; an agent may only send requests to the peers it lists
// (responses may go back along either direction); undeclared agents cannot
// register; user mailboxes (operators, bootstrap) are created and used with
// the operator token and may message any agent. Agent site hints feed the
// timeline; SetAgentSite overrides them.
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
	s.opsMu.Lock()
	ops := slices.Clone(s.ops[run])
	s.opsMu.Unlock()
	return s.bindAgentTokens(ctx, run, p, ops)
}

// SetAgentSite records where an agent of run runs (for the timeline).
func (s *Server) SetAgentSite(ctx context.Context, run, agentName, site string) error {
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
	p.Sites[agentName] = site
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

type cachedToken struct {
	info TokenInfo
	at   time.Time
}

// RevokeToken makes an operator token invalid (e.g. at campaign teardown),
// with the agent tokens derived from it. Servers sharing the backend stop
// accepting them within tokenCacheTTL; this one immediately.
func (s *Server) RevokeToken(ctx context.Context, token string) error {
	hashes := []string{HashToken(token)}
	info, ok, err := s.be.Token(ctx, hashes[0])
	if err != nil {
		return fmt.Errorf("revoke exchange token: %w", err)
	}
	if ok && info.Operator() {
		if pol, has, err := s.be.Policy(ctx, info.Run); err == nil && has {
			for name := range pol.Peers {
				hashes = append(hashes, HashToken(agent.AgentToken(token, info.Run, agent.UID(info.Run, name))))
			}
		}
		s.opsMu.Lock()
		s.ops[info.Run] = slices.DeleteFunc(s.ops[info.Run], func(t string) bool { return t == token })
		s.opsMu.Unlock()
	}
	for _, h := range hashes {
		s.cache.Delete(h)
		if err := s.be.DeleteToken(ctx, h); err != nil {
			return fmt.Errorf("revoke exchange token: %w", err)
		}
	}
	return nil
}

type principalKey struct{}

// principal is who a request authenticated as.
type principal struct {
	TokenInfo
	policy  RunPolicy
	policed bool // the run has a campaign policy
}

func principalOf(r *http.Request) principal {
	p, _ := r.Context().Value(principalKey{}).(principal)
	return p
}

func runOf(r *http.Request) string { return principalOf(r).Run }

// bearer extracts the token of an Authorization header; the scheme is
// case-insensitive (RFC 9110 section 11.1).
func bearer(authz string) (string, bool) {
	scheme, tok, ok := strings.Cut(strings.TrimSpace(authz), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimSpace(tok)
	return tok, tok != ""
}

// auth resolves the bearer token to a principal (app.py authenticate_factory:
// 401 for missing headers, 403 for a token that is not valid). At most
// MaxPendingAuth requests are authenticated at once; beyond, 503 at once.
func (s *Server) auth(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		select {
		case s.auths <- struct{}{}:
		default:
			w.Header().Set("Retry-After", "1")
			refuse(w, http.StatusServiceUnavailable, fmt.Sprintf("Exchange busy: %d requests are being authenticated (MaxPendingAuth); retry shortly.", s.cfg.MaxPendingAuth))
			return
		}
		p, ok := s.authenticate(w, r)
		<-s.auths
		if !ok {
			return
		}
		h(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)))
	}
}

func (s *Server) authenticate(w http.ResponseWriter, r *http.Request) (principal, bool) {
	authz := r.Header.Get("Authorization")
	var info TokenInfo
	switch {
	case authz == "" && s.cfg.AnonymousRun != "":
		info = TokenInfo{Run: s.cfg.AnonymousRun}
	case authz == "":
		refuse(w, http.StatusUnauthorized, "Missing required headers. Send 'Authorization: Bearer <token>' (MOSAIC_EXCHANGE_TOKEN).")
		return principal{}, false
	default:
		tok, ok := bearer(authz)
		if !ok {
			refuse(w, http.StatusUnauthorized, "Missing required headers. The Authorization header must be 'Bearer <token>'.")
			return principal{}, false
		}
		hash := HashToken(tok)
		if v, hit := s.cache.Load(hash); hit && time.Since(v.(cachedToken).at) < tokenCacheTTL {
			info = v.(cachedToken).info
			break
		}
		got, found, err := s.be.Token(r.Context(), hash)
		if err != nil {
			refuse(w, http.StatusServiceUnavailable, "exchange backend unavailable")
			s.log.Error("exchange token lookup", "err", err)
			return principal{}, false
		}
		if !found {
			msg := "Token expired or revoked. Check MOSAIC_EXCHANGE_TOKEN belongs to this run and exchange."
			if agent.IsAgentToken(tok) {
				msg = "Agent token not known to this exchange: it is derived from another run token, for another run or agent, or the run's campaign was never registered (mosaic exchange serve --campaign, or the token API with a campaign)."
			}
			refuse(w, http.StatusForbidden, msg)
			return principal{}, false
		}
		s.cache.Store(hash, cachedToken{info: got, at: time.Now()})
		info = got
	}
	pol, policed, err := s.be.Policy(r.Context(), info.Run)
	if err != nil {
		s.log.Error("exchange policy lookup", "err", err)
		refuse(w, http.StatusServiceUnavailable, "Exchange backend unavailable")
		return principal{}, false
	}
	return principal{TokenInfo: info, policy: pol, policed: policed}, true
}

// refuse answers a request that did not authenticate and closes its
// connection: its body is never read (see closeUnread).
func refuse(w http.ResponseWriter, code int, text string) {
	closeUnread(w)
	httpError(w, code, text)
}

// closeUnread makes the answer to a request whose body will not be read close
// its connection at once. net/http would otherwise read (discard) up to
// 256 KiB of the body without deadline: before sending the answer unless it
// says Connection: close, and after the handler in any case (to look for the
// body's end), so a client trickling a body could hold a connection and a
// goroutine without any credential. The expired read deadline ends that
// second read at once.
func closeUnread(w http.ResponseWriter) {
	w.Header().Set("Connection", "close")
	_ = http.NewResponseController(w).SetReadDeadline(time.Now()) // ErrNotSupported: no conn to hold
}

func httpError(w http.ResponseWriter, code int, text string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(text))
}
