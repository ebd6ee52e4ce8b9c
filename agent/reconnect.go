package agent

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"syscall"
	"time"
)

// DefaultReconnectFor is how long a Client keeps retrying an exchange that stopped
// answering before it gives up and returns the error (see WithReconnect).
const DefaultReconnectFor = 10 * time.Minute

// Backoff between reconnect attempts: exponential from reconnectFirst, capped at
// reconnectCap, with ±20% jitter so that a run's agents do not return in step.
const (
	reconnectFirst = 200 * time.Millisecond
	reconnectCap   = 10 * time.Second
)

// WithReconnect sets how long the client keeps retrying when the exchange stops
// answering — connection refused or reset, a stream that broke, 502/503/504 — before
// returning the error (0 disables retrying; default DefaultReconnectFor), and a
// function told, once the exchange answers again, how long it was away (nil: none).
// Listen and Receive re-check their mailbox after a reconnect and resume. Receive
// retries only when the request cannot have been delivered (no connection, or a
// gateway's 503), so a message is never taken off the queue and dropped. Send retries
// on every sign of the exchange being away — also a connection closed or reset after
// the request was written, a broken stream, a 502 or 504, where the exchange may have
// queued the message — when the exchange advertises de-duplication (DedupeHeader, on
// its last own answer; Mosaic's exchange does): it queues a message sent again within
// its window (15 min by default, longer than DefaultReconnectFor) only once, so the
// message arrives exactly once. Once such a failure happened, Send repeats the
// message only while the repeat reaches the exchange within that window (less a
// margin of 30 s, or a quarter of a shorter window), whatever maxOutage says, and
// then returns the error saying the message may have been queued. Against an exchange that does not advertise it
// (Academy's), Send retries only when the request cannot have been delivered, so a
// message is never sent twice, and an ambiguous failure is returned. Only a client
// that has reached the exchange once retries: a wrong URL fails at once.
func WithReconnect(maxOutage time.Duration, onReconnect func(after time.Duration)) Option {
	return func(c *Client) {
		c.reconnectFor = maxOutage
		c.onReconnect = onReconnect
	}
}

// retry runs call until it succeeds, fails with an error retryable does not accept,
// ctx ends, or the exchange has been away longer than the client's reconnect window.
// It is bounded by that window (and by ctx). Only a client that has talked to the
// exchange before retries: a wrong URL or an exchange never started fails at once.
func (c *Client) retry(ctx context.Context, retryable func(error) bool, call func() error) error {
	return c.retryReport(ctx, retryable, call, true)
}

// retryReport is retry; report=false leaves telling onReconnect to the caller (a
// listen stream is back when it opens, not when it ends).
func (c *Client) retryReport(ctx context.Context, retryable func(error) bool, call func() error, report bool) error {
	return c.retryWith(ctx, func(err error, _, _ time.Time) bool { return retryable(err) }, call, report)
}

// retryWith is retryReport with a rule that also sees when the failed attempt
// started and when the next one would (after the backoff).
func (c *Client) retryWith(ctx context.Context, retryable func(err error, attempt, next time.Time) bool, call func() error, report bool) error {
	var since time.Time
	wait := reconnectFirst
	for {
		attempt := time.Now()
		err := call()
		d := time.Duration(float64(wait) * (0.8 + 0.4*rand.Float64()))
		if err == nil || c.reconnectFor <= 0 || !c.contacted.Load() || ctx.Err() != nil || !retryable(err, attempt, time.Now().Add(d)) {
			if err == nil && report && !since.IsZero() && c.onReconnect != nil {
				c.onReconnect(time.Since(since).Round(100 * time.Millisecond))
			}
			return err
		}
		if since.IsZero() {
			since = time.Now()
		}
		if time.Since(since) >= c.reconnectFor {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(d):
		}
		wait = min(2*wait, reconnectCap)
	}
}

// exchangeDown reports whether err means the exchange was not there to answer: no
// connection (refused, reset, unreachable, timed out dialling, DNS), a connection
// closed before the answer (an ssh tunnel's listener whose exchange is gone accepts
// and then closes), a broken stream, or a gateway in front of it saying so. Answers
// of the exchange itself (4xx, 500) are not: retrying cannot change them.
func exchangeDown(err error) bool {
	var se *StatusError
	if errors.As(err, &se) {
		return se.Code == http.StatusBadGateway || se.Code == http.StatusServiceUnavailable || se.Code == http.StatusGatewayTimeout
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	if errors.Is(err, errStreamBroken) || errors.Is(err, errStaleConn) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ENETUNREACH) || errors.Is(err, syscall.EHOSTUNREACH) {
		return true
	}
	var ne net.Error
	var oe *net.OpError
	return errors.As(err, &oe) || (errors.As(err, &ne) && ne.Timeout())
}

// notDelivered reports whether a failed request cannot have reached the exchange:
// the connection was never made, or a gateway answered 503 (the exchange is down).
// Only these are safe to repeat for a Send (a message is never sent twice) or a
// Receive (a message taken off the queue is never dropped): a 502 may come after the
// exchange received the request.
func notDelivered(err error) bool {
	var se *StatusError
	if errors.As(err, &se) {
		return se.Code == http.StatusServiceUnavailable
	}
	if errors.Is(err, errStaleConn) {
		return true
	}
	var oe *net.OpError
	return errors.As(err, &oe) && oe.Op == "dial"
}

// sendRetryable is Send's retry rule for one failure, the window aside: notDelivered,
// or any exchangeDown error when the exchange de-duplicates (a repeat of a message
// it queued is not queued again).
func (c *Client) sendRetryable(err error) bool {
	return notDelivered(err) || (c.dedupe.Load() > 0 && exchangeDown(err))
}

// dedupeMargin is how long before the end of the exchange's de-duplication window
// Send stops repeating a message that may have arrived: a repeat must reach the
// exchange's Put while the first copy is still remembered, and a request may take
// up to the exchange's body read timeout (30 s) to get there. A quarter of a
// shorter window.
func dedupeMargin(window time.Duration) time.Duration { return min(30*time.Second, window/4) }

// sendRule is the retry rule of one Send. Once an attempt failed where the exchange
// may have queued the message (an ambiguous failure), every later attempt — also
// after failures where a request cannot have arrived — must start within the
// exchange's window (less dedupeMargin) of that attempt's start, which is no later
// than the exchange's time of accepting it: later, the exchange would have forgotten
// the first copy and queue the repeat as a new message. Until then only
// notDelivered failures happened and the message is nowhere: those are retried for
// the whole reconnect window.
type sendRule struct {
	c          *Client
	ambiguous  time.Time     // start of the first attempt that may have arrived
	pastWindow time.Duration // set when the rule gave up for the window: the window
	elapsed    time.Duration // since ambiguous, when it gave up
}

func (r *sendRule) retryable(err error, attempt, next time.Time) bool {
	if !r.c.sendRetryable(err) {
		return false
	}
	if !notDelivered(err) && r.ambiguous.IsZero() {
		r.ambiguous = attempt
	}
	if r.ambiguous.IsZero() {
		return true
	}
	window := time.Duration(r.c.dedupe.Load())
	if next.Sub(r.ambiguous) >= window-dedupeMargin(window) {
		r.pastWindow, r.elapsed = window, next.Sub(r.ambiguous)
		return false
	}
	return true
}

// errStreamBroken marks a listen stream that ended mid-way (the exchange went away).
var errStreamBroken = errors.New("exchange stream broken")

// errStaleConn marks a request that failed on a reused idle connection before any
// answer (the exchange had closed it): net/http's own test for a request it may replay.
var errStaleConn = errors.New("stale connection")
