package api

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mosaic-hpc/mosaic/internal/session"
)

func TestHostAndOriginChecks(t *testing.T) {
	s := &Server{opts: Options{Token: "tok", AllowHosts: []string{"mosaic.lab.internal"}}, sessions: session.NewSessions(nil)}
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) })
	h := s.guard(ok)
	cases := []struct {
		name, path, host, origin, auth string
		want                           int
	}{
		{"loopback ip", "/healthz", "127.0.0.1:8642", "", "", 204},
		{"loopback other ip", "/healthz", "127.3.4.5:1", "", "", 204},
		{"localhost", "/healthz", "localhost:8642", "", "", 204},
		{"ipv6 loopback", "/healthz", "[::1]:8642", "", "", 204},
		{"sub.localhost", "/healthz", "app.localhost", "", "", 204},
		{"allow-listed", "/healthz", "mosaic.lab.internal:8642", "", "", 204},
		{"rebinding name", "/healthz", "evil.example", "", "", 403},
		{"rebinding with port", "/api/federation", "evil.example:8642", "", "Bearer tok", 403},
		{"lan ip", "/healthz", "192.168.1.5:8642", "", "", 403},
		{"empty host", "/healthz", "", "", "", 403},
		{"no token", "/api/federation", "127.0.0.1", "", "", 401},
		{"wrong token", "/api/federation", "127.0.0.1", "", "Bearer nope", 401},
		{"basic auth", "/api/federation", "127.0.0.1", "", "Basic dG9r", 401},
		{"token", "/api/federation", "127.0.0.1", "", "Bearer tok", 204},
		// RFC 7235 section 2.1: the auth-scheme is case-insensitive.
		{"lower-case scheme", "/api/federation", "127.0.0.1", "", "bearer tok", 204},
		{"upper-case scheme", "/api/federation", "127.0.0.1", "", "BEARER tok", 204},
		{"two spaces", "/api/federation", "127.0.0.1", "", "Bearer  tok", 204},
		{"no space", "/api/federation", "127.0.0.1", "", "Bearertok", 401},
		{"scheme only", "/api/federation", "127.0.0.1", "", "bearer", 401},
		{"other scheme", "/api/federation", "127.0.0.1", "", "Token tok", 401},
		{"same-origin", "/api/federation", "127.0.0.1:8642", "http://127.0.0.1:8642", "Bearer tok", 204},
		{"foreign origin", "/api/federation", "127.0.0.1:8642", "https://evil.example", "Bearer tok", 403},
		{"null origin", "/api/federation", "127.0.0.1:8642", "null", "Bearer tok", 403},
		{"file origin", "/healthz", "127.0.0.1:8642", "file://", "", 403},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", c.path, nil)
			r.Host = c.host
			if c.origin != "" {
				r.Header.Set("Origin", c.origin)
			}
			if c.auth != "" {
				r.Header.Set("Authorization", c.auth)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != c.want {
				t.Fatalf("got %d, want %d: %s", w.Code, c.want, w.Body.String())
			}
		})
	}
}

func TestNewRefusesEmptyToken(t *testing.T) {
	if _, err := New(nil, Options{}); err == nil {
		t.Fatal("an empty token must be refused")
	}
}

// TestUnauthenticatedLimits: a request without a valid credential gets a small body
// limit, Connection: close, and a place among at most MaxUnauth at once (the rest are
// answered 503 with Retry-After); requests with the token are never limited.
func TestUnauthenticatedLimits(t *testing.T) {
	s := &Server{opts: Options{Token: "tok", MaxUnauth: 2}, sessions: session.NewSessions(nil)}
	entered, release := make(chan struct{}, 8), make(chan struct{})
	h := s.guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/block":
			entered <- struct{}{}
			<-release
			w.WriteHeader(204)
		case "/read":
			n, err := io.Copy(io.Discard, r.Body)
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				w.WriteHeader(http.StatusRequestEntityTooLarge)
				return
			}
			if err != nil || n != 1<<20 {
				t.Errorf("read %d bytes: %v", n, err)
			}
			w.WriteHeader(200)
		default:
			w.WriteHeader(204)
		}
	}))
	do := func(method, path, auth string, body io.Reader) *httptest.ResponseRecorder {
		r := httptest.NewRequest(method, path, body)
		r.Host = "127.0.0.1:8642"
		if auth != "" {
			r.Header.Set("Authorization", auth)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	big := func() io.Reader { return strings.NewReader(strings.Repeat("x", 1<<20)) }

	if w := do("POST", "/read", "", big()); w.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("1 MiB body without a token: %d, want 413 (limit %d bytes)", w.Code, MaxUnauthBody)
	}
	if w := do("POST", "/read", "Bearer nope", big()); w.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("1 MiB body with a wrong token: %d, want 413", w.Code)
	}
	if w := do("POST", "/read", "bearer tok", big()); w.Code != 200 {
		t.Errorf("1 MiB body with the token: %d, want 200", w.Code)
	}
	if w := do("GET", "/healthz", "", nil); w.Header().Get("Connection") != "close" {
		t.Errorf("unauthenticated answer without Connection: close")
	}
	if w := do("GET", "/healthz", "Bearer tok", nil); w.Header().Get("Connection") != "" {
		t.Errorf("authenticated answer with Connection: %q", w.Header().Get("Connection"))
	}

	// Fill the two unauthenticated places.
	done := make(chan int, 2)
	for i := 0; i < 2; i++ {
		go func() { done <- do("GET", "/block", "", nil).Code }()
	}
	for i := 0; i < 2; i++ {
		<-entered
	}
	w := do("GET", "/healthz", "", nil)
	if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" {
		t.Errorf("third unauthenticated request: %d (Retry-After %q), want 503 with Retry-After", w.Code, w.Header().Get("Retry-After"))
	}
	if w := do("GET", "/api/federation", "", nil); w.Code != http.StatusServiceUnavailable {
		t.Errorf("unauthenticated /api call while full: %d, want 503", w.Code)
	}
	if w := do("GET", "/healthz", "Bearer tok", nil); w.Code != 204 {
		t.Errorf("request with the token while the unauthenticated places are full: %d, want 204", w.Code)
	}
	close(release)
	for i := 0; i < 2; i++ {
		if c := <-done; c != 204 {
			t.Errorf("held request: %d", c)
		}
	}
	if w := do("GET", "/healthz", "", nil); w.Code != 204 {
		t.Errorf("after the places are free: %d, want 204", w.Code)
	}
}
