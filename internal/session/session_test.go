package session

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func TestLoginCodeIsOneTimeAndExpires(t *testing.T) {
	clk := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	s := NewSessions(clk.now)
	code := s.NewCode()
	id, ok := s.Redeem(code)
	if !ok || id == "" {
		t.Fatal("a fresh code must redeem")
	}
	if _, ok := s.Redeem(code); ok {
		t.Fatal("a code must redeem only once")
	}
	if _, ok := s.Lookup(id); !ok {
		t.Fatal("the session must be live")
	}
	late := s.NewCode()
	clk.t = clk.t.Add(CodeTTL + time.Second)
	if _, ok := s.Redeem(late); ok {
		t.Fatal("an expired code must not redeem")
	}
	clk.t = clk.t.Add(SessionTTL)
	if _, ok := s.Lookup(id); ok {
		t.Fatal("an expired session must not be live")
	}
}

func TestRedeemMalformed(t *testing.T) {
	s := NewSessions(nil)
	s.NewCode()
	for _, code := range []string{"", " ", "x", strings.Repeat("a", 43), strings.Repeat("a", 5000), "../../etc", "%00"} {
		if _, ok := s.Redeem(code); ok {
			t.Fatalf("code %q redeemed", code)
		}
	}
	for _, id := range []string{"", "x", strings.Repeat("b", 5000)} {
		if _, ok := s.Lookup(id); ok {
			t.Fatalf("session %q found", id)
		}
	}
}

func TestBounds(t *testing.T) {
	s := NewSessions(nil)
	first := s.NewCode()
	for i := 0; i < maxCodes+10; i++ {
		s.NewCode()
	}
	if len(s.codes) > maxCodes {
		t.Fatalf("%d codes kept, want at most %d", len(s.codes), maxCodes)
	}
	_ = first // may or may not have been evicted (equal expiry); the bound is what matters
	for i := 0; i < maxSession+10; i++ {
		s.Open()
	}
	if len(s.sessions) > maxSession {
		t.Fatalf("%d sessions kept, want at most %d", len(s.sessions), maxSession)
	}
}

func TestCookieName(t *testing.T) {
	for host, want := range map[string]string{
		"127.0.0.1:8642": "mosaic_session_8642",
		"[::1]:9000":     "mosaic_session_9000",
		"localhost":      "mosaic_session",
		"":               "mosaic_session",
	} {
		if got := CookieName(host); got != want {
			t.Errorf("CookieName(%q) = %q, want %q", host, got, want)
		}
	}
}

func TestCheckCSRF(t *testing.T) {
	sess := Session{CSRF: "secret"}
	cases := []struct {
		method, token, site string
		want                bool
	}{
		{"GET", "", "", true},
		{"HEAD", "", "cross-site", true},
		{"POST", "", "", false},
		{"POST", "wrong", "same-origin", false},
		{"POST", "secret", "same-origin", true},
		{"POST", "secret", "", true}, // older browsers send no Sec-Fetch-Site
		{"POST", "secret", "same-site", false},
		{"POST", "secret", "cross-site", false},
		{"DELETE", "secret", "none", false},
		{"PUT", "secret", "same-origin", true},
		{"PATCH", "", "same-origin", false},
	}
	for _, c := range cases {
		r := httptest.NewRequest(c.method, "/api/tasks", nil)
		if c.token != "" {
			r.Header.Set(CSRFHeader, c.token)
		}
		if c.site != "" {
			r.Header.Set("Sec-Fetch-Site", c.site)
		}
		if got := CheckCSRF(r, sess); got != c.want {
			t.Errorf("%s token=%q site=%q: got %v, want %v", c.method, c.token, c.site, got, c.want)
		}
	}
}

func TestFromRequest(t *testing.T) {
	s := NewSessions(nil)
	id := s.Open()
	r := httptest.NewRequest("GET", "/", nil)
	r.Host = "127.0.0.1:8642"
	r.AddCookie(&http.Cookie{Name: "mosaic_session_8642", Value: id})
	if _, _, ok := s.FromRequest(r); !ok {
		t.Fatal("the session cookie was not recognised")
	}
	r.Host = "127.0.0.1:8643"
	if _, _, ok := s.FromRequest(r); ok {
		t.Fatal("a cookie of another port must not authenticate")
	}
}

// FuzzRedeem: no input panics, and nothing but the minted code redeems.
func FuzzRedeem(f *testing.F) {
	f.Add("")
	f.Add("abc")
	f.Add(strings.Repeat("z", 300))
	f.Fuzz(func(t *testing.T, code string) {
		s := NewSessions(nil)
		real := s.NewCode()
		if code == real {
			return
		}
		if _, ok := s.Redeem(code); ok {
			t.Fatalf("%q redeemed", code)
		}
		if _, ok := s.Lookup(code); ok {
			t.Fatalf("%q is a session", code)
		}
		CookieName(code)
	})
}
