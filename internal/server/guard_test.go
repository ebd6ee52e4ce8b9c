package server_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/mosaic-hpc/mosaic/internal/api"
	"github.com/mosaic-hpc/mosaic/internal/server"
	"github.com/mosaic-hpc/mosaic/internal/session"
)

// probePath is a stand-in /api route (a read answers 204, a POST 201) for the
// guard's decisions about browser sessions; no core is needed.
const probePath = "/api/guard-probe"

// uiServer is the composed server with the web UI and the probe route, and its
// session store.
func uiServer(t *testing.T) (*session.Sessions, *api.Server) {
	t.Helper()
	sessions := session.NewSessions(nil)
	probe := func(mux *http.ServeMux) {
		mux.HandleFunc("GET "+probePath, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) })
		mux.HandleFunc("POST "+probePath, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(201) })
	}
	h, err := server.New(nil, server.Options{Options: api.Options{Token: "tok", Sessions: sessions,
		Routes: []func(*http.ServeMux){probe}}})
	if err != nil {
		t.Fatal(err)
	}
	return sessions, h
}

// TestMCPRoutes: /mcp is behind the API token (bearer only) and the Host check, and
// answers initialize; the agent documents stay open.
func TestMCPRoutes(t *testing.T) {
	h, err := server.New(nil, server.Options{Options: api.Options{Token: "tok"}, Headless: true})
	if err != nil {
		t.Fatal(err)
	}
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	cases := []struct {
		name, method, path, auth, host string
		want                           int
		ctype, body                    string
	}{
		{"mcp without token", "POST", "/mcp", "", "127.0.0.1:8642", 401, "application/problem+json", "Bearer"},
		{"mcp wrong token", "POST", "/mcp", "Bearer nope", "127.0.0.1:8642", 401, "application/problem+json", "token"},
		{"mcp foreign host", "POST", "/mcp", "Bearer tok", "evil.example", 403, "", ""},
		{"mcp initialize", "POST", "/mcp", "Bearer tok", "127.0.0.1:8642", 200, "", `"name":"mosaic"`},
		{"skill", "GET", "/skill", "", "127.0.0.1:8642", 200, "text/markdown", "name: mosaic"},
		{"skill api", "GET", "/skill/api", "", "localhost", 200, "text/markdown", "### POST /api/tasks"},
		{"skill foreign host", "GET", "/skill", "", "evil.example", 403, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var r *http.Request
			if c.method == "POST" {
				r = httptest.NewRequest(c.method, c.path, strings.NewReader(init))
				r.Header.Set("Content-Type", "application/json")
				r.Header.Set("Accept", "application/json, text/event-stream")
			} else {
				r = httptest.NewRequest(c.method, c.path, nil)
			}
			r.Host = c.host
			if c.auth != "" {
				r.Header.Set("Authorization", c.auth)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != c.want {
				t.Fatalf("got %d, want %d: %s", w.Code, c.want, w.Body.String())
			}
			if c.ctype != "" && !strings.HasPrefix(w.Header().Get("Content-Type"), c.ctype) {
				t.Errorf("Content-Type %q, want %s", w.Header().Get("Content-Type"), c.ctype)
			}
			if !strings.Contains(w.Body.String(), c.body) {
				t.Errorf("body lacks %q: %.300s", c.body, w.Body.String())
			}
		})
	}
}

// TestCookieSessionAndCSRF covers the browser path: a one-time login code becomes an
// HttpOnly SameSite=Strict cookie; with it, reads pass, and state-changing calls pass
// only with the session's CSRF token from this origin. Without cookie or token, with a
// foreign Origin, or with another port's cookie, requests are refused.
func TestCookieSessionAndCSRF(t *testing.T) {
	sessions, h := uiServer(t)
	const host = "127.0.0.1:8642"

	// Redeem the login URL.
	u, err := url.Parse(h.LoginURL("http://" + host))
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
	sess, ok := sessions.Lookup(ck.Value)
	if !ok || !strings.Contains(w.Body.String(), sess.CSRF) {
		t.Fatalf("session answer lacks the CSRF token: %s", w.Body.String())
	}

	cases := []struct {
		name, method, path, host, origin, csrf, site string
		cookie                                       *http.Cookie
		bearer                                       bool
		want                                         int
	}{
		{"cookie read", "GET", probePath, host, "", "", "", ck, false, 204},
		{"no cookie no token", "GET", probePath, host, "", "", "", nil, false, 401},
		{"no cookie no token POST", "POST", probePath, host, "http://" + host, sess.CSRF, "", nil, false, 401},
		{"forged cookie", "GET", probePath, host, "", "", "", &http.Cookie{Name: ck.Name, Value: "forged"}, false, 401},
		{"other port's cookie", "GET", probePath, "127.0.0.1:9999", "", "", "", ck, false, 401},
		{"cookie POST without CSRF", "POST", probePath, host, "http://" + host, "", "same-origin", ck, false, 403},
		{"cookie POST wrong CSRF", "POST", probePath, host, "http://" + host, "nope", "same-origin", ck, false, 403},
		{"cookie POST with CSRF", "POST", probePath, host, "http://" + host, sess.CSRF, "same-origin", ck, false, 201},
		{"cookie POST cross-site fetch", "POST", probePath, host, "", sess.CSRF, "cross-site", ck, false, 403},
		{"cookie POST foreign origin", "POST", probePath, host, "https://evil.example", sess.CSRF, "", ck, false, 403},
		{"cookie GET foreign origin", "GET", probePath, host, "https://evil.example", "", "", ck, false, 403},
		{"bearer POST needs no CSRF", "POST", probePath, host, "", "", "", nil, true, 201},
		{"wrong bearer with good cookie", "GET", probePath, host, "", "", "", ck, false, 401},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest(c.method, c.path, strings.NewReader("{}"))
			r.Host = c.host
			if c.origin != "" {
				r.Header.Set("Origin", c.origin)
			}
			if c.csrf != "" {
				r.Header.Set(session.CSRFHeader, c.csrf)
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
	r.Header.Set(session.CSRFHeader, sess.CSRF)
	r.AddCookie(ck)
	w = httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != http.StatusNoContent {
		t.Fatalf("logout: %d %s", w.Code, w.Body.String())
	}
	r = httptest.NewRequest("GET", probePath, nil)
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
	_, h := uiServer(t)
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
		s, err := server.New(nil, server.Options{Options: api.Options{Token: "tok"}, Headless: headless})
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
