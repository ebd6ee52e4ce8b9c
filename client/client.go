// Package client is the Go client of Mosaic's HTTP API. The mosaic CLI uses it, and so
// can any Go program or agent: New(url, token). The core listens on
// http://127.0.0.1:8642 by default and writes its token to $XDG_CONFIG_HOME/mosaic/token
// (mode 0600); the CLI finds both from its settings and passes them in.
//
// The values it returns are the wire types of package api/v1 (aliased here for
// convenience). The package imports only api/v1 and the standard library, so a program
// that uses it does not link the core (a test, deps_test.go, keeps it so).
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	v1 "github.com/mosaic-hpc/mosaic/api/v1"
)

// Federation types (aliases of the api/v1 wire types).
type (
	ResourceSnapshot = v1.ResourceSnapshot
	ResourceRecord   = v1.ResourceRecord
	SystemHealth     = v1.SystemHealth
	Status           = v1.Status
	ResourceDetail   = v1.ResourceDetail
	About            = v1.About
	HistoryPoint     = v1.HistoryPoint
)

// ErrNoCore means nothing answered at the core's URL.
var ErrNoCore = v1.ErrNoCore

// APIError is an error response from the core (an RFC 9457 problem).
type APIError = v1.Error

// RequestTimeout bounds one request (not an event stream, which lives as long as its
// context). It is above the core's longest bound on work it does while a request
// waits, so the core answers first, with its own error: a site command
// (transport.DefaultTimeout, 2 minutes; a login-node probe gives up after 90 s).
const RequestTimeout = 3 * time.Minute

// Client talks to one core, or to the replicas of a team-mode deployment
// (docs/TEAM.md): New accepts several base URLs separated by commas, and a request
// that finds a replica down, or answered 503 marked v1.NoLeaderHeader (a follower
// with no leader to forward to during a takeover), is tried on the next one,
// boundedly; other 502/503 answers only when the request is idempotent.
type Client struct {
	base  *url.URL   // the first base URL (URL, event streams)
	bases []*url.URL // every base URL, in the order given
	token string
	http  *http.Client

	mu  sync.Mutex
	cur int // index of the base URL that answered last
}

// New makes a client for a core URL and token. baseURL may list several replicas'
// URLs separated by commas ("http://a:8642,http://b:8642").
func New(baseURL, token string) (*Client, error) {
	var bases []*url.URL
	for _, one := range strings.Split(baseURL, ",") {
		one = strings.TrimSpace(one)
		u, err := url.Parse(strings.TrimRight(one, "/"))
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("core URL %q: want http://host:port (several replicas: separated by commas)", one)
		}
		bases = append(bases, u)
	}
	return &Client{base: bases[0], bases: bases, token: token, http: &http.Client{Timeout: RequestTimeout}}, nil
}

// URL returns the core's base URL (the first, when several are given).
func (c *Client) URL() string { return c.base.String() }

// Failover bounds: a takeover takes at most two of the leader's probe ticks, so a
// request keeps trying the replicas for up to failoverWindow, pausing failoverPause
// after each round over all of them.
const (
	failoverWindow = 30 * time.Second
	failoverPause  = 500 * time.Millisecond
)

func (c *Client) do(ctx context.Context, method, path string, q url.Values, body, out any) error {
	return c.doWith(ctx, method, path, q, body, out, nil)
}

// doWith sends one request with extra headers. With several base URLs, a request is
// tried again on the next replica when it was not carried out: the connection was
// refused, or the answer was a follower's 503 marked v1.NoLeaderHeader; and also
// after a 502/503 or a broken connection when it is safe to repeat (a GET, or a
// request with an Idempotency-Key). See failover.
func (c *Client) doWith(ctx context.Context, method, path string, q url.Values, body, out any, hdr http.Header) error {
	var payload []byte
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		payload = b
	}
	if len(c.bases) == 1 {
		return plain(c.once(ctx, c.base, method, path, q, payload, out, hdr))
	}
	repeatable := method == http.MethodGet || method == http.MethodHead || hdr.Get("Idempotency-Key") != ""
	c.mu.Lock()
	start := c.cur
	c.mu.Unlock()
	deadline := time.Now().Add(failoverWindow)
	var last error
	for i := 0; ; i++ {
		idx := (start + i) % len(c.bases)
		err := c.once(ctx, c.bases[idx], method, path, q, payload, out, hdr)
		if err == nil || !failover(err, repeatable) {
			if err == nil {
				c.mu.Lock()
				c.cur = idx
				c.mu.Unlock()
			}
			return plain(err)
		}
		last = err
		if time.Now().After(deadline) || i >= 200 {
			return fmt.Errorf("no replica of %d could answer within %s: %w", len(c.bases), failoverWindow, last)
		}
		if (i+1)%len(c.bases) == 0 {
			select {
			case <-ctx.Done():
				return errors.Join(ctx.Err(), last)
			case <-time.After(failoverPause):
			}
		}
	}
}

// failover reports whether a request that failed with err should go to the next
// replica: when it certainly was not carried out (the connection was refused, or a
// follower's 503 says no leader could be reached, v1.NoLeaderHeader), or when it is
// safe to repeat (a GET, or a request with an Idempotency-Key) and the answer was a
// 502/503 or a broken connection. A POST without a key that got a 502 (a follower
// forwarded it and got no answer) is never sent again: it may have been carried out.
func failover(err error, repeatable bool) bool {
	var nl *noLeaderError
	if errors.As(err, &nl) || errors.Is(err, ErrNoCore) {
		return true // nothing was carried out
	}
	var ae *APIError
	if errors.As(err, &ae) {
		return repeatable && (ae.Status == http.StatusServiceUnavailable || ae.Status == http.StatusBadGateway)
	}
	return repeatable && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

// noLeaderError is an APIError marked with v1.NoLeaderHeader (see failover); callers
// get the APIError itself (plain).
type noLeaderError struct{ *APIError }

func (e *noLeaderError) Unwrap() error { return e.APIError }

// plain returns the APIError inside a noLeaderError, err otherwise.
func plain(err error) error {
	if nl, ok := err.(*noLeaderError); ok {
		return nl.APIError
	}
	return err
}

func (c *Client) once(ctx context.Context, base *url.URL, method, path string, q url.Values, payload []byte, out any, hdr http.Header) error {
	u := *base
	u.Path = strings.TrimRight(u.Path, "/") + path
	if len(q) > 0 {
		u.RawQuery = q.Encode()
	}
	var rd io.Reader
	if payload != nil {
		rd = bytes.NewReader(payload)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return err
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if payload != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		var op *net.OpError
		if errors.Is(err, syscall.ECONNREFUSED) || (errors.As(err, &op) && op.Op == "dial") {
			return fmt.Errorf("%w at %s; start one with `mosaic serve` (or set MOSAIC_URL)", ErrNoCore, base)
		}
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("%s %s: read response: %w", method, path, err)
	}
	if resp.StatusCode >= 300 {
		ae := &APIError{Status: resp.StatusCode, Title: http.StatusText(resp.StatusCode)}
		_ = json.Unmarshal(data, ae)
		if ae.Status == 0 {
			ae.Status = resp.StatusCode
		}
		if resp.StatusCode == http.StatusUnauthorized {
			ae.Detail = "the core refused the token: " + ae.Detail
		}
		if resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get(v1.NoLeaderHeader) == "1" {
			return &noLeaderError{ae}
		}
		return ae
	}
	switch o := out.(type) {
	case nil:
		return nil
	case *[]byte:
		*o = data
		return nil
	default:
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("%s %s: decode response: %w", method, path, err)
		}
	}
	return nil
}

// Federation returns the latest merged snapshot.
func (c *Client) Federation(ctx context.Context) (*ResourceSnapshot, error) {
	var s ResourceSnapshot
	return &s, c.do(ctx, http.MethodGet, "/api/federation", nil, nil, &s)
}

// History returns stored partition history; since is an RFC 3339 time or a duration ("1h").
func (c *Client) History(ctx context.Context, system, since string, limit int) ([]HistoryPoint, error) {
	q := url.Values{}
	if system != "" {
		q.Set("system", system)
	}
	if since != "" {
		q.Set("since", since)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var out struct {
		Points []HistoryPoint `json:"points"`
	}
	return out.Points, c.do(ctx, http.MethodGet, "/api/federation/history", q, nil, &out)
}

// Status returns the queue-status view.
func (c *Client) Status(ctx context.Context) (*Status, error) {
	var s Status
	return &s, c.do(ctx, http.MethodGet, "/api/status", nil, nil, &s)
}

// StatusMarkdown returns the status as Markdown.
func (c *Client) StatusMarkdown(ctx context.Context) (string, error) {
	var b []byte
	err := c.do(ctx, http.MethodGet, "/api/status", url.Values{"format": {"text"}}, nil, &b)
	return string(b), err
}

// Resource returns one system's detail.
func (c *Client) Resource(ctx context.Context, system string) (*ResourceDetail, error) {
	var d ResourceDetail
	return &d, c.do(ctx, http.MethodGet, "/api/resources/"+url.PathEscape(system), nil, nil, &d)
}

// IdleQuery filters Idle.
type IdleQuery = v1.IdleQuery

// Idle returns partitions with free capacity now. A nil f.MaxQueue sends no
// max_queue, so the core's default applies: any queue depth.
func (c *Client) Idle(ctx context.Context, f IdleQuery) ([]ResourceRecord, error) {
	r, err := c.IdleExplained(ctx, f)
	return r.Partitions, err
}

// IdleResult is GET /api/idle's answer: the partitions, and when there are none, which
// filter removed the last ones.
type IdleResult = v1.IdleResult

// IdleExplained is Idle with the server's explanation of an empty result.
func (c *Client) IdleExplained(ctx context.Context, f IdleQuery) (IdleResult, error) {
	q := url.Values{}
	set := func(k string, v int) {
		if v > 0 {
			q.Set(k, strconv.Itoa(v))
		}
	}
	set("gpus", f.GPUs)
	set("gpu_mem", f.GPUMemGB)
	set("cores", f.Cores)
	if f.MaxQueue != nil {
		q.Set("max_queue", strconv.Itoa(*f.MaxQueue))
	}
	for k, v := range map[string]string{"arch": f.Arch, "gpu_model": f.GPUModel, "provider": f.Provider, "system": f.System} {
		if v != "" {
			q.Set(k, v)
		}
	}
	var out IdleResult
	err := c.do(ctx, http.MethodGet, "/api/idle", q, nil, &out)
	return out, err
}

// About returns the core's version and configuration.
func (c *Client) About(ctx context.Context) (*About, error) {
	var a About
	return &a, c.do(ctx, http.MethodGet, "/api/about", nil, nil, &a)
}
