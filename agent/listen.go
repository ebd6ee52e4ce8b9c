package agent

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Listen streams the messages of mailbox to fn over server-sent events (GET
// /mailbox/listen, as Academy's HttpExchangeTransport.listen does), reopening
// the stream every request window. It returns fn's error, ctx's error, an error
// matching ErrTerminated when the mailbox is closed, or one matching ErrTimeout
// when timeout (> 0) passes without a message.
func (c *Client) Listen(ctx context.Context, mailbox EntityID, timeout time.Duration, fn func(Message) error) error {
	last := time.Now()
	var downSince time.Time // the exchange stopped answering this listen (zero: it answers)
	// Bounded: each stream lasts at most one request window; the loop ends on
	// timeout without messages, termination, fn error or ctx end.
	for {
		win := c.requestWindow
		if timeout > 0 {
			left := time.Until(last.Add(timeout))
			if left <= 0 {
				return &StatusError{Op: "listen", Code: http.StatusRequestTimeout, Text: "no message within the timeout"}
			}
			win = min(win, left)
		}
		// A stream the exchange dropped (it restarted, the network blinked) is
		// reopened with backoff for up to the reconnect window; fn's own errors end
		// the listen at once.
		var fnErr error
		err := c.retryReport(ctx, func(err error) bool { return fnErr == nil && exchangeDown(err) }, func() error {
			got, err := c.listenOnce(ctx, mailbox, win, func() {
				// The exchange is back the moment a stream opens again: say so then,
				// with the outage measured from the first failure.
				if !downSince.IsZero() && c.onReconnect != nil {
					c.onReconnect(time.Since(downSince).Round(100 * time.Millisecond))
				}
				downSince = time.Time{}
			}, func(m Message) error {
				if err := fn(m); err != nil {
					fnErr = err
					return err
				}
				return nil
			})
			if got {
				last = time.Now()
			}
			if err != nil && downSince.IsZero() && exchangeDown(err) {
				downSince = time.Now()
			}
			return err
		}, false)
		if fnErr != nil {
			return fnErr
		}
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		// The server ends a stream at its timeout or when the mailbox was
		// terminated; the status tells which (and, after a reconnect, that the
		// mailbox is still there).
		var st Status
		err = c.retry(ctx, exchangeDown, func() error {
			var err error
			st, err = c.Status(ctx, mailbox)
			return err
		})
		if err != nil {
			return err
		}
		if st == StatusMissing {
			return &StatusError{Op: "listen", Code: http.StatusNotFound, Text: "mailbox " + mailbox.UID.String() + " is not on the exchange (did it restart without its state?)"}
		}
		if st == StatusTerminated {
			return &StatusError{Op: "listen", Code: 419, Text: "Mailbox was closed"}
		}
	}
}

// listenOnce reads one SSE stream; got reports whether a message was delivered.
// opened is called once the stream is open.
func (c *Client) listenOnce(ctx context.Context, mailbox EntityID, win time.Duration, opened func(), fn func(Message) error) (got bool, err error) {
	hdr := http.Header{"Accept": {"text/event-stream"}, "Cache-Control": {"no-cache"}}
	resp, err := c.open(ctx, "listen", http.MethodGet, "/mailbox/listen", map[string]any{"mailbox": mailbox.encode(), "timeout": win.Seconds()}, hdr)
	if err != nil {
		return false, err
	}
	opened()
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	var data strings.Builder
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		if line == "" {
			if data.Len() == 0 {
				continue // a ping comment, or an empty event
			}
			var m Message
			if err := json.Unmarshal([]byte(data.String()), &m); err != nil {
				return got, fmt.Errorf("exchange listen: bad event data: %w", err)
			}
			data.Reset()
			got = true
			if err := fn(m); err != nil {
				return got, err
			}
			continue
		}
		if line[0] == ':' {
			continue // comment (": ping")
		}
		field, value, _ := strings.Cut(line, ":")
		if field == "data" {
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			data.WriteString(strings.TrimPrefix(value, " "))
		}
	}
	if err := sc.Err(); err != nil && !errors.Is(err, context.Canceled) && ctx.Err() == nil {
		return got, fmt.Errorf("exchange listen: %w: %w", errStreamBroken, err)
	}
	return got, nil
}
