package api

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/mosaic-hpc/mosaic/internal/web"
)

func TestHostAndOriginChecks(t *testing.T) {
	s := &Server{opts: Options{Token: "tok", AllowHosts: []string{"mosaic.lab.internal"}}, sessions: web.NewSessions(nil)}
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

// TestCookieSessionAndCSRF covers the browser path: a one-time login code becomes an
// HttpOnly SameSite=Strict cookie; with it, reads pass, and state-changing calls pass
// only with the session's CSRF token from this origin. Without cookie or token, with a
// foreign Origin, or with another port's cookie, requests are refused.
func TestCookieSessionAndCSRF(t *testing.T) {
	s := &Server{opts: Options{Token: "tok"}, sessions: web.NewSessions(nil)}
	mux := http.NewServeMux()
	web.New(s.sessions, s.tokenOK).Register(mux)
	mux.HandleFunc("/api/federation", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) })
	mux.HandleFunc("POST /api/tasks", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(201) })
	h := s.guard(mux)
	const host = "127.0.0.1:8642"

	// Redeem the login URL.
	u, err := url.Parse(s.LoginURL("http://" + host))
	if err != nil || u.Path != "/login" || u.Query().Get("code") == "" {
		t.Fatalf("login URL %v (%v)", u, err)
	}
	r := httptest.NewRequest("GET", u.RequestURI(), nil)
	r.Host = host
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/" {
		t.Fatalf("login: %d %s", w.Code, w.Header().Get("Location"))
	}
	cookies := w.Result().Cookies()
	if len(cookies) != 1 {
		t.Fatalf("login set %d cookies", len(cookies))
	}
	ck := cookies[0]
	if !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Path != "/" || ck.Name != "mosaic_session_8642" {
		t.Fatalf("cookie %+v: want HttpOnly, SameSite=Strict, Path=/, named for the port", ck)
	}
	// The code is one-time.
	w = httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != http.StatusUnauthorized {
		t.Fatalf("second use of the code: %d, want 401", w.Code)
	}

	// The CSRF token comes from /api/session, with the cookie.
	r = httptest.NewRequest("GET", "/api/session", nil)
	r.Host = host
	r.AddCookie(ck)
	w = httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != 200 || !strings.Contains(w.Body.String(), `"auth":"cookie"`) {
		t.Fatalf("session: %d %s", w.Code, w.Body.String())
	}
	sess, ok := s.sessions.Lookup(ck.Value)
	if !ok || !strings.Contains(w.Body.String(), sess.CSRF) {
		t.Fatalf("session answer lacks the CSRF token: %s", w.Body.String())
	}

	cases := []struct {
		name, method, path, host, origin, csrf, site string
		cookie                                       *http.Cookie
		bearer                                       bool
		want                                         int
	}{
		{"cookie read", "GET", "/api/federation", host, "", "", "", ck, false, 204},
		{"no cookie no token", "GET", "/api/federation", host, "", "", "", nil, false, 401},
		{"no cookie no token POST", "POST", "/api/tasks", host, "http://" + host, sess.CSRF, "", nil, false, 401},
		{"forged cookie", "GET", "/api/federation", host, "", "", "", &http.Cookie{Name: ck.Name, Value: "forged"}, false, 401},
		{"other port's cookie", "GET", "/api/federation", "127.0.0.1:9999", "", "", "", ck, false, 401},
		{"cookie POST without CSRF", "POST", "/api/tasks", host, "http://" + host, "", "same-origin", ck, false, 403},
		{"cookie POST wrong CSRF", "POST", "/api/tasks", host, "http://" + host, "nope", "same-origin", ck, false, 403},
		{"cookie POST with CSRF", "POST", "/api/tasks", host, "http://" + host, sess.CSRF, "same-origin", ck, false, 201},
		{"cookie POST cross-site fetch", "POST", "/api/tasks", host, "", sess.CSRF, "cross-site", ck, false, 403},
		{"cookie POST foreign origin", "POST", "/api/tasks", host, "https://evil.example", sess.CSRF, "", ck, false, 403},
		{"cookie GET foreign origin", "GET", "/api/federation", host, "https://evil.example", "", "", ck, false, 403},
		{"bearer POST needs no CSRF", "POST", "/api/tasks", host, "", "", "", nil, true, 201},
		{"wrong bearer with good cookie", "GET", "/api/federation", host, "", "", "", ck, false, 401},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest(c.method, c.path, strings.NewReader("{}"))
			r.Host = c.host
			if c.origin != "" {
				r.Header.Set("Origin", c.origin)
			}
			if c.csrf != "" {
				r.Header.Set(web.CSRFHeader, c.csrf)
			}
			if c.site != "" {
				r.Header.Set("Sec-Fetch-Site", c.site)
			}
			if c.cookie != nil {
				r.AddCookie(c.cookie)
			}
			if c.bearer {
				r.Header.Set("Authorization", "Bearer tok")
			} else if c.name == "wrong bearer with good cookie" {
				r.Header.Set("Authorization", "Bearer nope")
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != c.want {
				t.Fatalf("got %d, want %d: %s", w.Code, c.want, w.Body.String())
			}
		})
	}

	// Logout ends the session.
	r = httptest.NewRequest("POST", "/api/session/logout", nil)
	r.Host = host
	r.Header.Set("Origin", "http://"+host)
	r.Header.Set(web.CSRFHeader, sess.CSRF)
	r.AddCookie(ck)
	w = httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != http.StatusNoContent {
		t.Fatalf("logout: %d %s", w.Code, w.Body.String())
	}
	r = httptest.NewRequest("GET", "/api/federation", nil)
	r.Host = host
	r.AddCookie(ck)
	w = httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != http.StatusUnauthorized {
		t.Fatalf("after logout: %d, want 401", w.Code)
	}
}

// TestLoginWithPastedToken covers the fallback sign-in form.
func TestLoginWithPastedToken(t *testing.T) {
	s := &Server{opts: Options{Token: "tok"}, sessions: web.NewSessions(nil)}
	mux := http.NewServeMux()
	web.New(s.sessions, s.tokenOK).Register(mux)
	h := s.guard(mux)
	for _, c := range []struct {
		name, token, origin string
		want                int
	}{
		{"right token", "tok", "http://127.0.0.1:8642", http.StatusSeeOther},
		{"wrong token", "nope", "http://127.0.0.1:8642", http.StatusUnauthorized},
		{"empty token", "", "http://127.0.0.1:8642", http.StatusUnauthorized},
		{"foreign origin", "tok", "https://evil.example", http.StatusForbidden},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/login", strings.NewReader(url.Values{"token": {c.token}}.Encode()))
			r.Host = "127.0.0.1:8642"
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			r.Header.Set("Origin", c.origin)
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != c.want {
				t.Fatalf("got %d, want %d", w.Code, c.want)
			}
			if got := len(w.Result().Cookies()) == 1; got != (c.want == http.StatusSeeOther) {
				t.Fatalf("cookie set = %v", got)
			}
		})
	}
}

func TestUIMountedUnlessHeadless(t *testing.T) {
	for _, headless := range []bool{false, true} {
		s, err := New(nil, Options{Token: "tok", Headless: headless})
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range []string{"/", "/login", "/ui/js/app.js"} {
			r := httptest.NewRequest("GET", path, nil)
			r.Host = "127.0.0.1:8642"
			w := httptest.NewRecorder()
			s.ServeHTTP(w, r)
			want := http.StatusOK
			if headless {
				want = http.StatusNotFound
			}
			if w.Code != want {
				t.Fatalf("headless=%v GET %s: %d, want %d", headless, path, w.Code, want)
			}
			if !headless && !strings.Contains(w.Header().Get("Content-Security-Policy"), "default-src 'self'") {
				t.Fatalf("GET %s without a strict CSP: %q", path, w.Header().Get("Content-Security-Policy"))
			}
		}
		// /docs stays in both modes.
		r := httptest.NewRequest("GET", "/docs", nil)
		r.Host = "127.0.0.1:8642"
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			t.Fatalf("headless=%v /docs: %d", headless, w.Code)
		}
	}
}

// TestUnauthenticatedLimits: a request without a valid credential gets a small body
// limit, Connection: close, and a place among at most MaxUnauth at once (the rest are
// answered 503 with Retry-After); requests with the token are never limited.
func TestUnauthenticatedLimits(t *testing.T) {
	s := &Server{opts: Options{Token: "tok", MaxUnauth: 2}, sessions: web.NewSessions(nil)}
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
