package exchange

import (
	"errors"
	"net/http"
	"time"
)

// handleListen streams a mailbox as server-sent events (app.py
// _listen_mailbox_route, which client.py HttpExchangeTransport.listen reads):
// one "data: <message JSON>" event per message, a ": ping" comment every
// PingInterval while idle, and the stream ends when the requested timeout
// passes, the mailbox is terminated or the client goes away. Unknown mailboxes
// are 404 and terminated ones 419 before the stream starts.
func (s *Server) handleListen(w http.ResponseWriter, r *http.Request) {
	b, id, ok := s.readMailbox(w, r)
	if !ok {
		return
	}
	wait, ok := s.wait(w, b)
	if !ok {
		return
	}
	rec, ok := s.access(w, r, id, accessRead)
	if !ok {
		return
	}
	if rec.Status == StatusTerminated {
		httpError(w, StatusTerminatedCode, "Mailbox was closed")
		return
	}
	fl, _ := w.(http.Flusher)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	flush := func() {
		if fl != nil {
			fl.Flush()
		}
	}
	flush()

	ctx := r.Context()
	var deadline time.Time
	if wait >= 0 {
		deadline = time.Now().Add(wait)
	}
	lastWrite := time.Now()
	// Bounded: every iteration either delivers a message, writes a ping, or
	// ends the stream; it waits at most one ping interval and stops at the
	// deadline, on termination or when the client disconnects.
	for {
		step := s.cfg.PingInterval - time.Since(lastWrite)
		if !deadline.IsZero() {
			left := time.Until(deadline)
			if left <= 0 {
				return
			}
			step = min(step, left)
		}
		step = max(min(step, s.cfg.LeaseTTL/3), 0) // each Get renews the holder's lease
		raw, err := s.be.Get(ctx, rec.Run, id.UID, step)
		switch {
		case err == nil:
			if _, err := w.Write(append(append([]byte("data: "), raw...), '\n', '\n')); err != nil {
				return // message is lost with the connection, as in app.py
			}
			flush()
			lastWrite = time.Now()
		case errors.Is(err, ErrTimeout):
			if !deadline.IsZero() && !time.Now().Before(deadline) {
				return
			}
			if time.Since(lastWrite) >= s.cfg.PingInterval {
				if _, err := w.Write([]byte(": ping\n\n")); err != nil {
					return
				}
				flush()
				lastWrite = time.Now()
			}
		default:
			return // terminated, unknown, backend failure or client gone
		}
	}
}
