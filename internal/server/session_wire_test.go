package server_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	v1 "github.com/mosaic-hpc/mosaic/api/v1"
	"github.com/mosaic-hpc/mosaic/internal/session"
)

// strictly decodes a JSON answer into out, refusing a field out lacks, and checks
// that out encodes back to the same fields (nothing the wire type drops).
func strictly(t *testing.T, what string, body []byte, out any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(out); err != nil {
		t.Fatalf("%s: %v: %s", what, err, body)
	}
	var a, b map[string]any
	again, _ := json.Marshal(out)
	if json.Unmarshal(body, &a) != nil || json.Unmarshal(again, &b) != nil || len(a) != len(b) {
		t.Fatalf("%s: answered %s, the wire type writes %s", what, body, again)
	}
}

// TestSessionAnswersAreWireTypes: the /api/session endpoints the web UI reads answer
// exactly v1.Session and v1.LoginURL, for a browser session and for a bearer token.
// Before, they were a type of the web package and an untyped map.
func TestSessionAnswersAreWireTypes(t *testing.T) {
	sessions, h := uiServer(t)
	const host = "127.0.0.1:8642"
	id := sessions.Open()
	ck := &http.Cookie{Name: session.CookieName(host), Value: id}
	sess, ok := sessions.Lookup(id)
	if !ok {
		t.Fatal("the opened session is unknown")
	}

	do := func(method, path string, cookie bool) []byte {
		t.Helper()
		r := httptest.NewRequest(method, path, nil)
		r.Host = host
		if cookie {
			r.AddCookie(ck)
			if method == "POST" {
				r.Header.Set("Origin", "http://"+host)
				r.Header.Set(session.CSRFHeader, sess.CSRF)
			}
		} else {
			r.Header.Set("Authorization", "Bearer tok")
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			t.Fatalf("%s %s: %d %s", method, path, w.Code, w.Body.String())
		}
		return w.Body.Bytes()
	}

	var s v1.Session
	strictly(t, "cookie session", do("GET", "/api/session", true), &s)
	if s.Auth != "cookie" || s.CSRFToken != sess.CSRF || s.Expires == nil || s.Expires.Before(time.Now()) {
		t.Fatalf("cookie session: %+v, want auth cookie, its CSRF token and a future expiry", s)
	}
	var b v1.Session
	strictly(t, "bearer session", do("GET", "/api/session", false), &b)
	if b.Auth != "bearer" || b.CSRFToken != "" || b.Expires != nil {
		t.Fatalf("bearer session: %+v", b)
	}
	var l v1.LoginURL
	strictly(t, "login url", do("POST", "/api/session/login-url", true), &l)
	u, err := url.Parse(l.URL)
	if err != nil || u.Host != host || u.Path != "/login" || u.Query().Get("code") == "" {
		t.Fatalf("login url %q (%v)", l.URL, err)
	}
	if d, err := time.ParseDuration(l.ExpiresIn); err != nil || d != session.CodeTTL || !strings.Contains(l.ExpiresIn, "h") {
		t.Fatalf("expires_in %q (%v), want %s", l.ExpiresIn, err, session.CodeTTL)
	}
}
