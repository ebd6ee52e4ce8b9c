package api

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestHostAndOriginChecks(t *testing.T) {
	s := &Server{opts: Options{Token: "tok", AllowHosts: []string{"mosaic.lab.internal"}}}
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
