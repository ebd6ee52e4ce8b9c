package api

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mosaic-hpc/mosaic/internal/core"
	"github.com/mosaic-hpc/mosaic/internal/model"
)

// mcpReplica runs a team-mode replica whose /mcp (a token route, as in serve) echoes
// the caller it was served as.
func mcpReplica(t *testing.T, db string) (*httptest.Server, *core.Core) {
	t.Helper()
	return replicaWith(t, db, func(c *core.Core) Options {
		echo := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			cl := model.CallerOf(r.Context())
			json.NewEncoder(w).Encode(map[string]any{"caller": cl.Name, "admin": cl.Admin, "served_by": c.Leadership().Replica})
		})
		return Options{Token: "tok", TokenRoutes: map[string]http.Handler{"/mcp": echo}}
	})
}

// TestFollowerForwardsUnauthenticatedAsReceived: a request without any credential to
// a path the guard does not protect itself (/mcp, /exchange/*, /auth/callback) is
// forwarded exactly as received; the follower never adds the laptop token to it, so
// the leader refuses it (401) as it would refuse it directly.
func TestFollowerForwardsUnauthenticatedAsReceived(t *testing.T) {
	db := filepath.Join(t.TempDir(), "mosaic.db")
	lhs, leader := mcpReplica(t, db)
	waitRole(t, leader, "leader")
	fhs, follower := mcpReplica(t, db)
	waitRole(t, follower, "follower")
	if code, _, b := fwCall(t, "POST", lhs.URL+"/mcp", map[string]string{"Authorization": ""}, "{}"); code != http.StatusUnauthorized {
		t.Fatalf("leader, no credential: %d %s, want 401", code, b)
	}
	code, _, b := fwCall(t, "POST", fhs.URL+"/mcp", map[string]string{"Authorization": ""}, "{}")
	if code != http.StatusUnauthorized {
		t.Errorf("follower, no credential: %d %s, want the leader's 401 (the follower must not add a token)", code, b)
	}
	// With the token it still works through the follower.
	if code, _, b := fwCall(t, "POST", fhs.URL+"/mcp", nil, "{}"); code != http.StatusOK {
		t.Errorf("follower, with the token: %d %s, want 200", code, b)
	}
}

// TestForwardErrorKinds: a forward whose leader refuses the connection was not sent
// (connectFailed: the follower answers 503 with the no-leader marker, safe to retry
// anywhere); one the leader took and dropped without an answer was sent (a 502, never
// retried blindly).
func TestForwardErrorKinds(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + ln.Addr().String()
	ln.Close()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	req, _ := http.NewRequest("POST", down+"/api/tasks", strings.NewReader("{}"))
	_, err = tr.RoundTrip(req)
	if err == nil || !connectFailed(err) {
		t.Errorf("connection refused: %v, connectFailed false", err)
	}
	drop := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			c.Close() // took the request, died before answering
		}
	}))
	defer drop.Close()
	req, _ = http.NewRequest("POST", drop.URL+"/api/tasks", strings.NewReader("{}"))
	_, err = tr.RoundTrip(req)
	if err == nil || connectFailed(err) {
		t.Errorf("dropped after the request was sent: %v, connectFailed true", err)
	}
}
