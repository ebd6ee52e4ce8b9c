package agent

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
)

// TestSendRetryRule: which failures of a Send are retried, against an exchange that
// de-duplicates and one that does not. Every sign of the exchange being away is
// retried when it de-duplicates; otherwise only failures where the request cannot
// have arrived. Answers of the exchange itself (4xx, 500) and the caller's own
// cancellation never are.
func TestSendRetryRule(t *testing.T) {
	urlErr := func(err error) error {
		return fmt.Errorf("exchange send at http://x: %w (is the exchange running?)", &url.Error{Op: "Put", URL: "http://x/message", Err: err})
	}
	for _, tc := range []struct {
		name          string
		err           error
		dedupe, plain bool
	}{
		{"connection refused", urlErr(&net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}), true, true},
		{"stale idle connection", urlErr(fmt.Errorf("%w: %w", errStaleConn, io.EOF)), true, true},
		{"EOF after the request (tunnel)", urlErr(io.EOF), true, false},
		{"unexpected EOF in the answer", urlErr(io.ErrUnexpectedEOF), true, false},
		{"reset after the request", urlErr(&net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}), true, false},
		{"broken pipe writing", urlErr(&net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", syscall.EPIPE)}), true, false},
		{"broken stream", fmt.Errorf("x: %w", errStreamBroken), true, false},
		{"502", &StatusError{Op: "send", Code: http.StatusBadGateway}, true, false},
		{"503", &StatusError{Op: "send", Code: http.StatusServiceUnavailable}, true, true},
		{"504", &StatusError{Op: "send", Code: http.StatusGatewayTimeout}, true, false},
		{"500", &StatusError{Op: "send", Code: http.StatusInternalServerError}, false, false},
		{"404", &StatusError{Op: "send", Code: http.StatusNotFound}, false, false},
		{"403", &StatusError{Op: "send", Code: http.StatusForbidden}, false, false},
		{"429 quota", &StatusError{Op: "send", Code: http.StatusTooManyRequests}, false, false},
		{"419 terminated", &StatusError{Op: "send", Code: 419}, false, false},
		{"cancelled", urlErr(context.Canceled), false, false},
		{"deadline", urlErr(context.DeadlineExceeded), false, false},
		{"encode error", fmt.Errorf("exchange send: encode message: %w", fmt.Errorf("json")), false, false},
	} {
		for _, dedupe := range []bool{true, false} {
			c := &Client{}
			c.dedupe.Store(dedupe)
			want := tc.plain
			if dedupe {
				want = tc.dedupe
			}
			if got := c.sendRetryable(tc.err); got != want {
				t.Errorf("%s (exchange de-duplicates: %v): retried %v, want %v", tc.name, dedupe, got, want)
			}
		}
	}
}

// TestDedupeAdvertisementComesFromTheExchange: the client believes the exchange
// de-duplicates while its own answers say so; a gateway's 502-504 (no header: the
// gateway speaks, not the exchange) does not make it forget, any other answer
// without the header does (the exchange was replaced by one that does not).
func TestDedupeAdvertisementComesFromTheExchange(t *testing.T) {
	var step atomic.Int64
	answers := []struct {
		code   int
		header bool
		want   bool
	}{
		{200, false, false}, {200, true, true}, {502, false, true}, {503, false, true}, {504, false, true},
		{404, true, true}, {500, false, false}, {403, true, true}, {200, false, false},
	}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a := answers[step.Load()]
		if a.header {
			w.Header().Set(DedupeHeader, "1")
		}
		w.WriteHeader(a.code)
		_, _ = io.WriteString(w, `{"status":"ACTIVE"}`)
	}))
	defer ts.Close()
	c, err := New(ts.URL, "tok")
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range answers {
		step.Store(int64(i))
		_, _ = c.Status(context.Background(), AgentID("r", "a"))
		if got := c.dedupe.Load(); got != a.want {
			t.Errorf("after answer %d (%d, header %v): de-duplicating %v, want %v", i, a.code, a.header, got, a.want)
		}
	}
}
