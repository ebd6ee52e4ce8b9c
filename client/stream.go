package client

import (
	"bufio"
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

// Reconnection bounds of FollowEvents.
const (
	DefaultReconnectFor = v1.DefaultReconnectFor
	firstBackoff        = 250 * time.Millisecond
	maxBackoff          = 5 * time.Second
)

// FollowOptions say where FollowEvents starts and how long it keeps reconnecting.
type FollowOptions struct {
	Task string
	// AfterID: replay the events after this id (0: all of them), then follow.
	AfterID int64
	// FromNow starts at the newest event instead (AfterID is ignored).
	FromNow bool
	// ReconnectFor is how long to keep trying when the core cannot be reached (it
	// restarts, or the connection drops); 0 = DefaultReconnectFor, negative = never
	// reconnect. Reconnecting resends the last id received (Last-Event-ID), so the
	// server replays what was missed: nothing is lost and nothing repeats.
	ReconnectFor time.Duration
	// OnConnection, when set, hears about lost (err != nil) and regained (err == nil)
	// connections, e.g. to tell a user.
	OnConnection func(lastID int64, err error)
}

// FollowEvents follows the activity log, calling fn once per event in id order, until
// ctx ends (ctx.Err()), fn fails (its error), or the core stays unreachable for longer
// than o.ReconnectFor (an error wrapping ErrNoCore or the stream's error).
func (c *Client) FollowEvents(ctx context.Context, o FollowOptions, fn func(Event) error) error {
	window := o.ReconnectFor
	if window == 0 {
		window = DefaultReconnectFor
	}
	last, have := o.AfterID, !o.FromNow
	backoff := firstBackoff
	var lostAt time.Time
	for {
		connected := false
		err := c.streamOnce(ctx, o.Task, last, have, func(id int64) {
			last, have, connected = id, true, true
			backoff = firstBackoff
			if !lostAt.IsZero() {
				lostAt = time.Time{}
				if o.OnConnection != nil {
					o.OnConnection(last, nil)
				}
			}
		}, func(e Event) error {
			if e.ID <= last {
				return nil // already delivered
			}
			if err := fn(e); err != nil {
				return &stopError{err}
			}
			last = e.ID
			return nil
		})
		var stop *stopError
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.As(err, &stop):
			return stop.err
		case !retryable(err):
			return err
		case window < 0:
			return err
		}
		now := time.Now()
		if lostAt.IsZero() {
			lostAt = now
			if o.OnConnection != nil {
				o.OnConnection(last, err)
			}
		} else if now.Sub(lostAt) > window {
			return fmt.Errorf("the event stream from %s stayed down for %s (after event %d); gave up reconnecting: %w", c.base, window, last, err)
		}
		if connected {
			backoff = firstBackoff
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, maxBackoff)
	}
}

// StreamEvents follows the server-sent-events stream over one connection, calling fn
// for each new event (after afterID; 0 = only events from now on) until ctx ends, fn
// returns an error, or the stream closes. FollowEvents also reconnects.
func (c *Client) StreamEvents(ctx context.Context, task string, afterID int64, fn func(Event) error) error {
	err := c.streamOnce(ctx, task, afterID, afterID > 0, func(int64) {}, fn)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

type stopError struct{ err error }

func (e *stopError) Error() string { return e.err.Error() }

// errStreamEnded is returned when the core closed the stream (it stopped).
var errStreamEnded = errors.New("the core closed the event stream")

// retryable reports whether a stream error may pass by reconnecting: the core is down
// or restarting, or the connection broke. Refusals (a bad token, an unknown task) are not.
func retryable(err error) bool {
	var ae *APIError
	if errors.As(err, &ae) {
		return ae.Temporary()
	}
	return err != nil
}

// streamOnce reads one SSE connection. With have, the server replays the events after
// last (sent as Last-Event-ID, as an EventSource does on reconnect); without, it starts
// at the newest. ready hears the stream's starting position.
func (c *Client) streamOnce(ctx context.Context, task string, last int64, have bool, ready func(int64), fn func(Event) error) error {
	u := *c.base
	u.Path = strings.TrimRight(u.Path, "/") + "/api/events/stream"
	q := url.Values{}
	if task != "" {
		q.Set("task", task)
	}
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Accept", "text/event-stream")
	if have {
		req.Header.Set("Last-Event-ID", strconv.FormatInt(last, 10))
	}
	hc := *c.http
	hc.Timeout = 0 // a stream lives as long as ctx
	resp, err := hc.Do(req)
	if err != nil {
		var op *net.OpError
		if errors.Is(err, syscall.ECONNREFUSED) || (errors.As(err, &op) && op.Op == "dial") {
			return fmt.Errorf("%w at %s; start one with `mosaic serve`", ErrNoCore, c.base)
		}
		return fmt.Errorf("event stream: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		ae := &APIError{Status: resp.StatusCode, Title: http.StatusText(resp.StatusCode)}
		var body [64 << 10]byte
		n, _ := resp.Body.Read(body[:])
		_ = json.Unmarshal(body[:n], ae)
		ae.Status = resp.StatusCode
		return ae
	}
	err = parseStream(resp.Body, ready, fn)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// parseStream reads server-sent events
// (https://html.spec.whatwg.org/multipage/server-sent-events.html): fields until a
// blank line make one message. It returns fn's error, a malformed message's, or
// errStreamEnded when the stream ends.
func parseStream(body io.Reader, ready func(int64), fn func(Event) error) error {
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	var event, data string
	var id int64
	hasID := false
	for sc.Scan() {
		line := sc.Text()
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "event":
			event = value
		case "data":
			data += value
		case "id":
			if n, err := strconv.ParseInt(strings.TrimSpace(value), 10, 64); err == nil {
				id, hasID = n, true
			}
		case "":
			if line != "" {
				continue // a comment
			}
			switch event {
			case "ready":
				var r struct {
					LastID int64 `json:"last_id"`
				}
				if err := json.Unmarshal([]byte(data), &r); err != nil {
					return fmt.Errorf("event stream: bad ready message: %w", err)
				}
				ready(r.LastID)
			case "event":
				var e Event
				if err := json.Unmarshal([]byte(data), &e); err != nil {
					return fmt.Errorf("event stream: %w", err)
				}
				if hasID && id != e.ID {
					return fmt.Errorf("event stream: message id %d carries event %d", id, e.ID)
				}
				if err := fn(e); err != nil {
					return err
				}
			case "error":
				var p struct {
					Error string `json:"error"`
				}
				_ = json.Unmarshal([]byte(data), &p)
				return &APIError{Status: http.StatusInternalServerError, Detail: "event stream: " + p.Error}
			}
			event, data, hasID = "", "", false
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("event stream: %w", err)
	}
	return errStreamEnded
}

// FollowTask is FollowEvents for one task's events ("" = all) after afterID,
// reconnecting for up to reconnectFor (0 = DefaultReconnectFor, negative = never).
func (c *Client) FollowTask(ctx context.Context, task string, afterID int64, reconnectFor time.Duration, fn func(Event) error) error {
	return c.FollowEvents(ctx, FollowOptions{Task: task, AfterID: afterID, ReconnectFor: reconnectFor}, fn)
}
