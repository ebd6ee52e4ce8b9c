package api

import (
	"bufio"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// TestExchangeMountUnreadBodiesNotHeld: the core exempts /exchange/* from its
// own guard for strangers (the exchange has its own limits), so requests there
// that the exchange or the core refuses without reading the body — unknown
// route, wrong method, no credential, the /exchange redirect, a foreign Host —
// must be answered at once and their connection closed; otherwise net/http
// reads up to 256 KiB of a trickled body, without deadline, holding the core.
func TestExchangeMountUnreadBodiesNotHeld(t *testing.T) {
	// /exchange itself and unclean paths are the core's to answer, under its
	// stranger guard: answered at once, closed at UnauthTimeout at the latest.
	const unauth = 300 * time.Millisecond
	hs, _ := coreServer(t, Options{Token: "tok", UnauthTimeout: unauth})
	addr := hs.Listener.Addr().String()
	for _, c := range []struct{ method, path, host, want string }{
		{"POST", "/exchange/nosuch", addr, " 404 "},
		{"GET", "/exchange/nosuch", addr, " 404 "},
		{"POST", "/exchange/message", addr, " 405 "},
		{"POST", "/exchange/mailbox", addr, " 401 "},
		{"POST", "/exchange/mailbox", "evil.example", " 403 "},
		{"POST", "/exchange", addr, " 307 "},
		{"POST", "/exchange//mailbox", addr, " 307 "},
		{"POST", "/exchange/../exchange/mailbox", addr, " 307 "},
	} {
		start := time.Now()
		line, closed := unreadBody(t, addr, c.method+" "+c.path+" HTTP/1.1\r\nHost: "+c.host+
			"\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n", unauth+time.Second)
		if !strings.Contains(line, c.want) || !closed {
			t.Errorf("%s %s (Host %s) with an unsent body: %q, connection closed %v after %s; want%sat once and the connection closed",
				c.method, c.path, c.host, line, closed, time.Since(start).Round(time.Millisecond), c.want)
		}
	}
}

// unreadBody sends head announcing a body it never sends and returns the
// status line of the answer and whether the server then closed the
// connection, both within limit.
func unreadBody(t *testing.T, addr, head string, limit time.Duration) (string, bool) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, head); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(limit))
	br := bufio.NewReader(c)
	line, err := br.ReadString('\n')
	if err != nil {
		return "no answer: " + err.Error(), false
	}
	_, err = io.Copy(io.Discard, br)
	return strings.TrimSpace(line), err == nil
}
