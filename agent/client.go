package agent

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/google/uuid"
)

// Environment variables an agent started by Mosaic receives.
const (
	EnvExchangeURL   = "MOSAIC_EXCHANGE_URL"
	EnvExchangeToken = "MOSAIC_EXCHANGE_TOKEN"
	EnvRunID         = "MOSAIC_RUN_ID"
	EnvAgentName     = "MOSAIC_AGENT_NAME"
	EnvSite          = "MOSAIC_SITE"
)

// DedupeHeader is the response header with which an exchange says it
// de-duplicates PUT /message: the same message sent twice (same sender,
// destination, tag and kind) within its window is queued once. Its value is the
// window in whole seconds (at least 2; "900" for Mosaic's default 15 minutes; the
// value "1" of earlier Mosaic exchanges means their fixed 15 minutes). A Mosaic
// exchange sends it on every answer (a Mosaic extension; Academy's exchanges do
// not), and a Client that saw it retries a Send whose answer was lost, within the
// window (see WithReconnect).
const DedupeHeader = "Mosaic-Exchange-Dedupe"

// legacyDedupeWindow is the window meant by the DedupeHeader value "1".
const legacyDedupeWindow = 15 * time.Minute

// maxDedupeWindow caps the window a DedupeHeader can advertise (no overflow; a
// window longer than any reconnect window changes nothing).
const maxDedupeWindow = 7 * 24 * time.Hour

// parseDedupeWindow reads a DedupeHeader value: the window, or 0 when the value
// does not say the exchange de-duplicates (absent or malformed: the safe reading,
// a send is then never repeated where it may have arrived).
func parseDedupeWindow(v string) time.Duration {
	if v == "1" {
		return legacyDedupeWindow
	}
	if v == "" || len(v) > 12 || strings.TrimLeft(v, "0123456789") != "" || v[0] == '0' {
		return 0
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 2 {
		return 0
	}
	if n > int64(maxDedupeWindow/time.Second) {
		return maxDedupeWindow
	}
	return time.Duration(n) * time.Second
}

// Status of a mailbox.
type Status string

// Mailbox statuses (Academy MailboxStatus).
const (
	StatusMissing    Status = "MISSING"
	StatusActive     Status = "ACTIVE"
	StatusTerminated Status = "TERMINATED"
)

// Stats are the exchange's counters of a mailbox (academy/stats.py AgentStats).
type Stats struct {
	Incoming   int64 `json:"incoming"`
	Outgoing   int64 `json:"outgoing"`
	Completed  int64 `json:"completed"`
	InProgress int64 `json:"in_progress"`
	Queued     int64 `json:"queued"`
}

// Client talks to one exchange with one credential. It is safe for concurrent use.
type Client struct {
	base   string
	token  string
	site   string
	holder holder
	hc     *http.Client
	// requestWindow bounds one blocking receive/listen request; longer waits are
	// made of several requests (client.py request_timeout_s, default 60 s).
	requestWindow time.Duration
	// reconnectFor and onReconnect: see WithReconnect.
	reconnectFor time.Duration
	onReconnect  func(after time.Duration)
	contacted    atomic.Bool  // the exchange answered once (reconnects only then)
	dedupe       atomic.Int64 // the window (ns) DedupeHeader advertised on the exchange's last own answer; 0: none
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient sets the HTTP client (it must not set a total Timeout shorter
// than the longest receive you make).
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.hc = hc } }

// WithSite sets the site reported when registering mailboxes.
func WithSite(site string) Option { return func(c *Client) { c.site = site } }

// WithRequestWindow sets the longest single blocking request (default 60 s).
func WithRequestWindow(d time.Duration) Option {
	return func(c *Client) {
		if d > 0 {
			c.requestWindow = d
		}
	}
}

// holder is what Register sends as "holder" (a Mosaic extension): who holds
// the mailbox, so that a second live registration is refused naming the first.
type holder struct {
	Instance string `json:"instance"`
	Host     string `json:"host,omitempty"`
	PID      int    `json:"pid,omitempty"`
}

// WithInstance sets the instance id sent when registering (default: host,
// pid and a random suffix, unique to this Client). Registrations with the same
// instance are the same holder.
func WithInstance(id string) Option {
	return func(c *Client) {
		if id != "" {
			c.holder.Instance = id
		}
	}
}

// New returns a client of the exchange at baseURL (e.g. http://127.0.0.1:8765/exchange).
func New(baseURL, token string, opts ...Option) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("exchange URL %q is not an http(s) URL; check %s", baseURL, EnvExchangeURL)
	}
	host, _ := os.Hostname()
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	c := &Client{base: strings.TrimRight(baseURL, "/"), token: token, hc: &http.Client{}, requestWindow: 60 * time.Second, reconnectFor: DefaultReconnectFor,
		holder: holder{Instance: fmt.Sprintf("%s/%d/%x", host, os.Getpid(), rnd), Host: host, PID: os.Getpid()}}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// FromEnv builds a client from MOSAIC_EXCHANGE_URL, MOSAIC_EXCHANGE_TOKEN and
// MOSAIC_SITE. An agent started by `mosaic agent run` finds its own token
// there; when the token is a run token and MOSAIC_RUN_ID and MOSAIC_AGENT_NAME
// are set, the agent's own token is derived from it (TokenFor).
func FromEnv(opts ...Option) (*Client, error) {
	u := os.Getenv(EnvExchangeURL)
	if u == "" {
		return nil, fmt.Errorf("%s is not set; agents started by `mosaic agent run` get it automatically, otherwise export the exchange URL", EnvExchangeURL)
	}
	tok := os.Getenv(EnvExchangeToken)
	if run, name := os.Getenv(EnvRunID), os.Getenv(EnvAgentName); run != "" && name != "" {
		tok = TokenFor(tok, run, name)
	}
	opts = append([]Option{WithSite(os.Getenv(EnvSite))}, opts...)
	return New(u, tok, opts...)
}

// URL returns the exchange base URL.
func (c *Client) URL() string { return c.base }

// Instance returns the instance id this client registers mailboxes with.
func (c *Client) Instance() string { return c.holder.Instance }

// do sends a JSON body with method to path and returns the answer body on 200.
func (c *Client) do(ctx context.Context, op, method, path string, body any) ([]byte, error) {
	resp, err := c.open(ctx, op, method, path, body, nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("exchange %s: read answer: %w", op, err)
	}
	return data, nil
}

func (c *Client) open(ctx context.Context, op, method, path string, body any, hdr http.Header) (*http.Response, error) {
	payload, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("exchange %s: encode request: %w", op, err)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, bytes.NewReader(payload))
	if err != nil {
		return nil, fmt.Errorf("exchange %s: %w", op, err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header[k] = v
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	var reused bool
	req = req.WithContext(httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { reused = i.Reused }}))
	resp, err := c.hc.Do(req)
	if err != nil {
		if reused && (errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)) {
			// An idle kept-alive connection the exchange had closed (it restarted): the
			// request died on it before any answer, as net/http treats it for the
			// requests it replays itself.
			err = fmt.Errorf("%w: %w", errStaleConn, err)
		}
		return nil, fmt.Errorf("exchange %s at %s: %w (is the exchange running and %s right?)", op, c.base, err, EnvExchangeURL)
	}
	c.contacted.Store(true)
	switch w := parseDedupeWindow(resp.Header.Get(DedupeHeader)); {
	case w > 0:
		c.dedupe.Store(int64(w))
	case resp.StatusCode != http.StatusBadGateway && resp.StatusCode != http.StatusServiceUnavailable && resp.StatusCode != http.StatusGatewayTimeout:
		// An answer of the exchange itself without the header (a gateway's 502-504
		// while it is away says nothing about it).
		c.dedupe.Store(0)
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		text, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return nil, &StatusError{Op: op, Code: resp.StatusCode, Text: strings.TrimSpace(string(text))}
	}
	return resp, nil
}

// Register creates the mailbox id (idempotent for this Client). agentClasses
// is the agent's class hierarchy, most specific first, used by Discover. When
// another process holds the mailbox (it registered and is alive) the error
// matches ErrConflict and names that holder.
func (c *Client) Register(ctx context.Context, id EntityID, agentClasses ...string) error {
	body := map[string]any{"mailbox": id.encode(), "holder": c.holder}
	if len(agentClasses) > 0 {
		body["agent"] = strings.Join(agentClasses, ",")
	}
	if c.site != "" {
		body["site"] = c.site
	}
	_, err := c.do(ctx, "register", http.MethodPost, "/mailbox", body)
	return err
}

// Status returns the status of a mailbox (MISSING is not an error).
func (c *Client) Status(ctx context.Context, id EntityID) (Status, error) {
	data, err := c.do(ctx, "status", http.MethodGet, "/mailbox", map[string]any{"mailbox": id.encode()})
	if err != nil {
		return "", err
	}
	var out struct {
		Status Status `json:"status"`
	}
	if err := json.Unmarshal(data, &out); err != nil {
		return "", fmt.Errorf("exchange status: bad answer: %w", err)
	}
	return out.Status, nil
}

// Terminate closes a mailbox; pending requests to it get error replies.
func (c *Client) Terminate(ctx context.Context, id EntityID) error {
	_, err := c.do(ctx, "terminate", http.MethodDelete, "/mailbox", map[string]any{"mailbox": id.encode()})
	return err
}

// Send delivers m to its destination mailbox. While the exchange is away it retries
// (see WithReconnect); to an exchange that de-duplicates (DedupeHeader) it retries
// even when the request may have arrived, since the exchange queues m only once —
// but only within the exchange's window. m must have a tag (NewRequest and Reply
// give one); a nil tag is refused before anything is sent.
func (c *Client) Send(ctx context.Context, m Message) error {
	if m.Header.Tag == uuid.Nil {
		return errors.New("exchange send: the message has the nil tag; build messages with agent.NewRequest or Message.Reply, which give each its own tag")
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("exchange send: encode message: %w", err)
	}
	rule := &sendRule{c: c}
	err = c.retryWith(ctx, rule.retryable, func() error {
		_, err := c.do(ctx, "send", http.MethodPut, "/message", map[string]any{"message": string(raw)})
		return err
	}, true)
	if err != nil && rule.pastWindow > 0 {
		return fmt.Errorf("%w; the exchange may have queued the message, and repeating it %s after the first try that may have arrived would pass its de-duplication window (%s) and could deliver it twice, so the send was given up: check whether the receiver got it before sending it again", err, rule.elapsed.Round(time.Second), rule.pastWindow)
	}
	return err
}

// Receive waits up to timeout for the next message of mailbox (timeout <= 0:
// until ctx ends). It returns an error matching ErrTimeout when none arrived.
func (c *Client) Receive(ctx context.Context, mailbox EntityID, timeout time.Duration) (Message, error) {
	var deadline time.Time
	if timeout > 0 {
		deadline = time.Now().Add(timeout)
	}
	// Bounded: each request waits at most requestWindow; the loop ends at the
	// deadline or when ctx is done.
	for {
		win := c.requestWindow
		if !deadline.IsZero() {
			left := time.Until(deadline)
			if left <= 0 {
				return Message{}, &StatusError{Op: "receive", Code: http.StatusRequestTimeout, Text: "Request timeout"}
			}
			win = min(win, left)
		}
		var data []byte
		err := c.retry(ctx, notDelivered, func() error {
			var err error
			data, err = c.do(ctx, "receive", http.MethodGet, "/message", map[string]any{"mailbox": mailbox.encode(), "timeout": win.Seconds()})
			return err
		})
		if errors.Is(err, ErrTimeout) && (deadline.IsZero() || time.Now().Before(deadline)) && ctx.Err() == nil {
			continue
		}
		if err != nil {
			return Message{}, err
		}
		var out struct {
			Message string `json:"message"`
		}
		if err := json.Unmarshal(data, &out); err != nil {
			return Message{}, fmt.Errorf("exchange receive: bad answer: %w", err)
		}
		var m Message
		if err := json.Unmarshal([]byte(out.Message), &m); err != nil {
			return Message{}, fmt.Errorf("exchange receive: bad message: %w", err)
		}
		return m, nil
	}
}

// Discover returns the uids of active agents of the caller's run whose class is
// agentClass (or a subclass of it, with allowSubclasses). An empty agentClass
// lists every agent of the run (Mosaic exchanges only).
func (c *Client) Discover(ctx context.Context, agentClass string, allowSubclasses bool) ([]uuid.UUID, error) {
	data, err := c.do(ctx, "discover", http.MethodGet, "/discover", map[string]any{"agent": agentClass, "allow_subclasses": allowSubclasses})
	if err != nil {
		return nil, err
	}
	var out struct {
		AgentIDs string `json:"agent_ids"`
	}
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("exchange discover: bad answer: %w", err)
	}
	var ids []uuid.UUID
	for _, s := range strings.Split(out.AgentIDs, ",") {
		if s == "" {
			continue
		}
		u, err := uuid.Parse(s)
		if err != nil {
			return nil, fmt.Errorf("exchange discover: bad uid %q: %w", s, err)
		}
		ids = append(ids, u)
	}
	return ids, nil
}

// Heartbeat returns how long ago the mailbox was last active (ok=false: never).
func (c *Client) Heartbeat(ctx context.Context, id EntityID) (age time.Duration, ok bool, err error) {
	data, err := c.do(ctx, "heartbeat", http.MethodGet, "/mailbox/heartbeat", map[string]any{"mailbox": id.encode()})
	if err != nil {
		return 0, false, err
	}
	var out struct {
		Heartbeat *float64 `json:"heartbeat"`
	}
	if err := json.Unmarshal(data, &out); err != nil {
		return 0, false, fmt.Errorf("exchange heartbeat: bad answer: %w", err)
	}
	if out.Heartbeat == nil {
		return 0, false, nil
	}
	return time.Duration(*out.Heartbeat * float64(time.Second)), true, nil
}

// Stats returns the exchange's counters of a mailbox.
func (c *Client) Stats(ctx context.Context, id EntityID) (Stats, error) {
	data, err := c.do(ctx, "stats", http.MethodGet, "/mailbox/stats", map[string]any{"mailbox": id.encode()})
	if err != nil {
		return Stats{}, err
	}
	var s Stats
	if err := json.Unmarshal(data, &s); err != nil {
		return Stats{}, fmt.Errorf("exchange stats: bad answer: %w", err)
	}
	return s, nil
}
