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
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
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
			if dedupe {
				c.dedupe.Store(int64(15 * time.Minute))
			}
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
		header string
		want   time.Duration
	}{
		{200, "", 0}, {200, "900", 15 * time.Minute}, {502, "", 15 * time.Minute}, {503, "", 15 * time.Minute}, {504, "", 15 * time.Minute},
		{404, "60", time.Minute}, {500, "", 0}, {403, "1", 15 * time.Minute}, {200, "", 0}, {200, "30", 30 * time.Second},
		{200, "junk", 0},
	}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a := answers[step.Load()]
		if a.header != "" {
			w.Header().Set(DedupeHeader, a.header)
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
		if got := time.Duration(c.dedupe.Load()); got != a.want {
			t.Errorf("after answer %d (%d, header %q): de-duplication window %v, want %v", i, a.code, a.header, got, a.want)
		}
	}
}

// TestParseDedupeWindow: the header's value is the window in whole seconds; "1" is
// the fixed 15 minutes of earlier exchanges; anything malformed reads as no
// de-duplication (the safe side: no repeat where a send may have arrived).
func TestParseDedupeWindow(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
	}{
		{"900", 15 * time.Minute}, {"60", time.Minute}, {"2", 2 * time.Second}, {"1", 15 * time.Minute},
		{"", 0}, {"0", 0}, {"-5", 0}, {"+60", 0}, {"060", 0}, {"1.5", 0}, {"60s", 0}, {" 60", 0}, {"60 ", 0},
		{"yes", 0}, {"0x10", 0}, {"1e3", 0}, {"999999999999", maxDedupeWindow}, {"9999999999999999999999", 0},
		{strings.Repeat("9", 40), 0}, {"604800", maxDedupeWindow}, {"604801", maxDedupeWindow},
	} {
		if got := parseDedupeWindow(tc.in); got != tc.want {
			t.Errorf("parseDedupeWindow(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

// FuzzParseDedupeWindow: any header value gives 0 or a window within (1 s, 7 days].
//
//	go test -run='^$' -fuzz=FuzzParseDedupeWindow -fuzztime=30s ./agent
func FuzzParseDedupeWindow(f *testing.F) {
	for _, s := range []string{"900", "1", "", "0", "-1", "1e9", "99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		w := parseDedupeWindow(v)
		if w != 0 && (w < 2*time.Second || w > maxDedupeWindow) {
			t.Fatalf("parseDedupeWindow(%q) = %v", v, w)
		}
	})
}

// TestSendRuleStopsAtTheWindow: once an attempt failed where the exchange may have
// queued the message, Send repeats it only while the repeat starts within the
// window (less the margin) of that attempt — also after failures where a request
// cannot have arrived, since the first copy may be queued. Before any ambiguous
// failure, undelivered attempts are retried regardless of the window. (Before, an
// SDK with WithReconnect longer than the window repeated past it.)
func TestSendRuleStopsAtTheWindow(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	reset := &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
	c := &Client{}
	c.dedupe.Store(int64(time.Minute)) // margin 15 s: repeats until 45 s after
	r := &sendRule{c: c}
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	for i, st := range []struct {
		err           error
		attempt, next time.Duration
		want          bool
	}{
		{refused, 0, time.Second, true},
		{refused, 20 * time.Minute, 20*time.Minute + time.Second, true}, // nothing arrived yet: no window
		{reset, 30 * time.Minute, 30*time.Minute + time.Second, true},   // may have arrived: the window starts
		{reset, 30*time.Minute + 20*time.Second, 30*time.Minute + 30*time.Second, true},
		{refused, 30*time.Minute + 40*time.Second, 30*time.Minute + 44*time.Second, true},
		{refused, 30*time.Minute + 44*time.Second, 30*time.Minute + 45*time.Second, false}, // 45 s = window - margin
	} {
		if got := r.retryable(st.err, t0.Add(st.attempt), t0.Add(st.next)); got != st.want {
			t.Errorf("step %d (%v at %v): retry %v, want %v", i, st.err, st.attempt, got, st.want)
		}
	}
	if r.pastWindow != time.Minute {
		t.Errorf("the rule gave up without saying it was the window (%v)", r.pastWindow)
	}
	if got := dedupeMargin(15 * time.Minute); got != 30*time.Second {
		t.Errorf("margin of 15 min: %v", got)
	}
	if got := dedupeMargin(4 * time.Second); got != time.Second {
		t.Errorf("margin of 4 s: %v", got)
	}
}

// TestSendRefusesTheNilTag: Send never puts a message with the all-zero tag (the
// exchange refuses it, 400), and the SDK's constructors never make one.
func TestSendRefusesTheNilTag(t *testing.T) {
	var hits atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer ts.Close()
	c, err := New(ts.URL, "tok")
	if err != nil {
		t.Fatal(err)
	}
	a, b := AgentID("r", "a"), AgentID("r", "b")
	m := NewText(a, b, "x")
	m.Header.Tag = uuid.Nil
	if err := c.Send(context.Background(), m); err == nil || !strings.Contains(err.Error(), "nil tag") {
		t.Errorf("send with the nil tag: %v", err)
	}
	if hits.Load() != 0 {
		t.Errorf("the message was sent")
	}
	req := NewText(a, b, "x")
	reply, err := req.Reply(TextBody{Text: "y", Kind: TextKind})
	if err != nil {
		t.Fatal(err)
	}
	act, err := NewActionRequest(a, b, "add", []any{1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []Message{req, reply, act, NewCancel(a, b, req.Header.Tag)} {
		if m.Header.Tag == uuid.Nil {
			t.Errorf("%s built with the nil tag", m.BodyKind())
		}
	}
}
