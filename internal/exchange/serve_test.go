package exchange

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestServeStandalone(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer(Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	tok, err := srv.IssueToken(context.Background(), "r")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	url := "http://" + ln.Addr().String()
	a := ent("a", RoleAgent)
	reg := `{"mailbox":` + jsonString(a.Encode()) + `}`
	if code, body, err := rawCall(http.DefaultClient, "POST", url+"/mailbox", tok, []byte(reg)); err != nil || code != 200 {
		t.Fatalf("register: %d %s %v", code, body, err)
	}
	// A listen stream without timeout is open when the server stops.
	stream := make(chan error, 1)
	go func() {
		_, _, err := rawCall(http.DefaultClient, "GET", url+"/mailbox/listen", tok, []byte(reg))
		stream <- err
	}()
	time.Sleep(150 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not stop")
	}
	select {
	case <-stream:
	case <-time.After(5 * time.Second):
		t.Fatal("listen stream not released at shutdown")
	}
	if _, err := net.DialTimeout("tcp", ln.Addr().String(), time.Second); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Errorf("listener still open: %v", err)
	}
}

func jsonString(s string) string {
	return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"`
}

// startServe runs srv.Serve on a loopback port until the test ends.
func startServe(t *testing.T, srv *Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-done })
	return ln.Addr().String()
}

// rawRequest writes head (and body) on a fresh connection and returns the
// status line of the answer, read within limit.
func rawRequest(t *testing.T, addr, head, body string, limit time.Duration) (string, time.Duration) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	if _, err := io.WriteString(c, head+body); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(limit))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return "no answer: " + err.Error(), time.Since(start)
	}
	return strings.TrimSpace(line), time.Since(start)
}

// TestServeLimits reproduces the exchange half of finding 6 of issue 14: a
// request whose body trickles in is held forever. Now bodies are read within
// BodyReadTimeout (408), unauthenticated requests are answered without
// reading their body, oversized headers are refused, and long polls and SSE
// streams still outlive the body deadline.
func TestServeLimits(t *testing.T) {
	srv := NewServer(Config{BodyReadTimeout: 300 * time.Millisecond, PingInterval: 100 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	tok, err := srv.IssueToken(context.Background(), "r")
	if err != nil {
		t.Fatal(err)
	}
	addr := startServe(t, srv)
	head := func(authz string) string {
		h := "POST /mailbox HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n"
		if authz != "" {
			h += "Authorization: " + authz + "\r\n"
		}
		return h + "\r\n"
	}
	// Authenticated slow body: 408 after the body deadline, not held.
	line, took := rawRequest(t, addr, head("Bearer "+tok), `{"mailbox":`, 5*time.Second)
	if !strings.Contains(line, " 408 ") || took > 3*time.Second {
		t.Errorf("slow body with a valid token: %q after %s, want 408 within ~300ms", line, took)
	}
	// Unauthenticated slow bodies, many at once: answered at once.
	var wg sync.WaitGroup
	lines := make([]string, 300)
	for i := range lines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lines[i], _ = rawRequest(t, addr, head(""), `{"mail`, 5*time.Second)
		}()
	}
	wg.Wait()
	for i, l := range lines {
		if !strings.Contains(l, " 401 ") {
			t.Fatalf("unauthenticated slow request %d: %q, want 401 at once", i, l)
		}
	}
	// Oversized headers: 431.
	line, _ = rawRequest(t, addr, "GET /discover HTTP/1.1\r\nHost: x\r\nX-Big: "+strings.Repeat("a", 2*MaxHeaderBytes)+"\r\n\r\n", "", 5*time.Second)
	if !strings.Contains(line, " 431 ") {
		t.Errorf("oversized header: %q, want 431", line)
	}
	// A long poll lasts past the body deadline.
	a := ent("a", RoleAgent)
	url := "http://" + addr
	reg := `{"mailbox":` + jsonString(a.Encode()) + `}`
	if code, body, err := rawCall(http.DefaultClient, "POST", url+"/mailbox", tok, []byte(reg)); err != nil || code != 200 {
		t.Fatalf("register: %d %s %v", code, body, err)
	}
	start := time.Now()
	code, body, err := rawCall(http.DefaultClient, "GET", url+"/message", tok, []byte(`{"mailbox":`+jsonString(a.Encode())+`,"timeout":1.2}`))
	if err != nil || code != 408 || time.Since(start) < time.Second {
		t.Errorf("long poll: %d %s %v after %s, want 408 after 1.2 s", code, body, err, time.Since(start))
	}
	start = time.Now()
	code, body, err = rawCall(http.DefaultClient, "GET", url+"/mailbox/listen", tok, []byte(`{"mailbox":`+jsonString(a.Encode())+`,"timeout":1}`))
	if err != nil || code != 200 || time.Since(start) < 900*time.Millisecond || !strings.Contains(string(body), ": ping") {
		t.Errorf("SSE stream: %d %q %v after %s, want pings for 1 s", code, body, err, time.Since(start))
	}
	hs := srv.HTTPServer()
	if hs.ReadHeaderTimeout == 0 || hs.IdleTimeout == 0 || hs.MaxHeaderBytes == 0 || hs.WriteTimeout != 0 || hs.ReadTimeout != 0 {
		t.Errorf("http.Server limits %+v: want header, idle and header-size limits, and no whole-request read/write timeout (long polls)", hs)
	}
}

// slowTokens is a Memory backend whose token lookups take a while (a busy
// shared Redis), to fill the authentication bound.
type slowTokens struct {
	*Memory
	delay time.Duration
}

func (s slowTokens) Token(ctx context.Context, hash string) (TokenInfo, bool, error) {
	time.Sleep(s.delay)
	return s.Memory.Token(ctx, hash)
}

// TestServePendingAuthBound: at most MaxPendingAuth requests are authenticated
// at once; the others are told to retry (503) instead of piling up.
func TestServePendingAuthBound(t *testing.T) {
	srv := NewServer(Config{Backend: slowTokens{NewMemory(), 500 * time.Millisecond}, MaxPendingAuth: 2,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	url := "http://" + startServe(t, srv)
	codes := make(chan int, 6)
	for range 6 {
		go func() {
			code, _, _ := rawCall(http.DefaultClient, "GET", url+"/discover", "not-a-token", []byte(`{}`))
			codes <- code
		}()
	}
	n := map[int]int{}
	for range 6 {
		n[<-codes]++
	}
	if n[403] != 2 || n[503] != 4 {
		t.Errorf("answers %v, want 2×403 (looked up) and 4×503 (bound reached)", n)
	}
}

// rawUnread sends head announcing a body it never sends and returns the status
// line of the answer and whether the server then closed the connection, both
// within limit.
func rawUnread(t *testing.T, addr, head string, limit time.Duration) (line string, closed bool) {
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
	line, err = br.ReadString('\n')
	if err != nil {
		return "no answer: " + err.Error(), false
	}
	_, err = io.Copy(io.Discard, br) // ends at EOF when the server closes
	return strings.TrimSpace(line), err == nil
}

// TestServeUnknownRoutesNotHeld: a request to an unknown route (404), with a
// wrong method (405) or to a path the mux would redirect is answered at once
// and its connection closed, its body never read: without credentials it
// would otherwise hold a connection while net/http read (discarded) up to
// 256 KiB of a trickled body, outside MaxPendingAuth and BodyReadTimeout.
func TestServeUnknownRoutesNotHeld(t *testing.T) {
	srv := NewServer(Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	addr := startServe(t, srv)
	for _, c := range []struct{ method, path, want string }{
		{"GET", "/nosuch", " 404 "},
		{"POST", "/nosuch", " 404 "},
		{"POST", "/message", " 405 "},
		{"PATCH", "/mailbox", " 405 "},
		{"POST", "/x/../mailbox", " 307 "},
		{"POST", "/mailbox", " 401 "}, // known route, no credential (refuse)
	} {
		head := c.method + " " + c.path + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n"
		start := time.Now()
		line, closed := rawUnread(t, addr, head, time.Second)
		if !strings.Contains(line, c.want) || !closed {
			t.Errorf("%s %s with an unsent body: %q, connection closed %v after %s; want%sat once and the connection closed",
				c.method, c.path, line, closed, time.Since(start).Round(time.Millisecond), c.want)
		}
	}
	// Known routes still keep their connection (keep-alive) for clients.
	tok, err := srv.IssueToken(context.Background(), "r")
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("GET", "http://"+addr+"/discover", strings.NewReader(`{}`))
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Close {
		t.Errorf("GET /discover: %d, close %v; want 200 on a kept connection", resp.StatusCode, resp.Close)
	}
}
