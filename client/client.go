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

// Client talks to one core.
type Client struct {
	base  *url.URL
	token string
	http  *http.Client
}

// New makes a client for a core URL and token.
func New(baseURL, token string) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(baseURL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("core URL %q: want http://host:port", baseURL)
	}
	return &Client{base: u, token: token, http: &http.Client{Timeout: RequestTimeout}}, nil
}

// URL returns the core's base URL.
func (c *Client) URL() string { return c.base.String() }

func (c *Client) do(ctx context.Context, method, path string, q url.Values, body, out any) error {
	u := *c.base
	u.Path = strings.TrimRight(u.Path, "/") + path
	if len(q) > 0 {
		u.RawQuery = q.Encode()
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		var op *net.OpError
		if errors.Is(err, syscall.ECONNREFUSED) || (errors.As(err, &op) && op.Op == "dial") {
			return fmt.Errorf("%w at %s; start one with `mosaic serve` (or set MOSAIC_URL)", ErrNoCore, c.base)
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
