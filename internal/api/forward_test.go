package api

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "github.com/mosaic-hpc/mosaic/api/v1"
	"github.com/mosaic-hpc/mosaic/internal/core"
	"github.com/mosaic-hpc/mosaic/internal/core/coretest"
	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/session"
)

// replicaServer runs a team-mode replica on the store file db behind the real API on
// its own listener (its advertised URL), with an extra route that echoes what a
// request carried (to see what a forward sends).
func replicaServer(t *testing.T, db string) (*httptest.Server, *core.Core) {
	hs, c, _ := replicaServerSessions(t, db)
	return hs, c
}

func replicaServerSessions(t *testing.T, db string) (*httptest.Server, *core.Core, *session.Sessions) {
	t.Helper()
	sessions := session.NewSessions(nil)
	hs, c := replicaWith(t, db, func(c *core.Core) Options {
		return Options{Token: "tok", Sessions: sessions, Routes: []func(*http.ServeMux){func(mux *http.ServeMux) {
			mux.HandleFunc("GET /api/test-echo", func(w http.ResponseWriter, r *http.Request) {
				json.NewEncoder(w).Encode(map[string]string{"auth": r.Header.Get("Authorization"), "cookie": r.Header.Get("Cookie"),
					"forwarded_by": r.Header.Get(ForwardedHeader), "served_by": c.Leadership().Replica,
					"caller": model.CallerOf(r.Context()).Name, "on_behalf": r.Header.Get(OnBehalfHeader)})
			})
		}}}
	})
	return hs, c, sessions
}

// replicaWith runs a team-mode replica on the store file db behind the real API (with
// the options opts makes for its core) on its own listener, its advertised URL.
func replicaWith(t *testing.T, db string, opts func(*core.Core) Options) (*httptest.Server, *core.Core) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	c := coretest.Start(t, coretest.Options{SimSpeed: 60, DBPath: db, Replica: true, Advertise: url})
	srv, err := New(c, opts(c))
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewUnstartedServer(srv)
	hs.Listener.Close()
	hs.Listener = ln
	hs.Start()
	t.Cleanup(hs.Close)
	return hs, c
}

func waitRole(t *testing.T, c *core.Core, role string) {
	t.Helper()
	for range 200 { // 10 s
		// A follower counts once it has read the lease (it knows whom to forward to).
		if l := c.Leadership(); l.Role == role && (role != "follower" || l.Leader != "") {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("replica %s never became %s (is %+v)", c.Leadership().Replica, role, c.Leadership())
}

func fwCall(t *testing.T, method, url string, hdr map[string]string, body string) (int, http.Header, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, url, rd)
	req.Header.Set("Authorization", "Bearer tok")
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

const fwSubmitBody = `{"name":"fw","command":"true","envelope":{"cpu_cores":{"min":1,"max":1},"walltime":{"min":"10m","max":"10m"}}}`

// TestFollowerForwardsToLeaderWithCallersCredential: a follower serves store reads
// itself and forwards the rest to the leader with the caller's Authorization and the
// loop-guard header; a request already forwarded once is refused (503) rather than
// forwarded again; a wrong token is refused by the follower and never forwarded.
func TestFollowerForwardsToLeaderWithCallersCredential(t *testing.T) {
	db := filepath.Join(t.TempDir(), "mosaic.db")
	leaderHS, leader := replicaServer(t, db)
	waitRole(t, leader, "leader")
	followerHS, follower, followerSessions := replicaServerSessions(t, db)
	waitRole(t, follower, "follower")
	if l := follower.Leadership(); l.Leader != leaderHS.URL {
		t.Fatalf("follower knows leader %q, want %q", l.Leader, leaderHS.URL)
	}

	// Forwarded: the echo route answers on the leader with the caller's credential.
	code, _, b := fwCall(t, "GET", followerHS.URL+"/api/test-echo", nil, "")
	var echo map[string]string
	if code != 200 || json.Unmarshal(b, &echo) != nil {
		t.Fatalf("forwarded echo: %d %s", code, b)
	}
	if echo["served_by"] != leader.Leadership().Replica || echo["auth"] != "Bearer tok" || echo["forwarded_by"] != follower.Leadership().Replica {
		t.Fatalf("forward carried %+v, want the leader serving with the caller's Authorization and the follower's id", echo)
	}
	// A browser session is the follower's own: the forward carries the API token it
	// stands for instead, and not the cookie.
	sid := followerSessions.Open()
	host := strings.TrimPrefix(followerHS.URL, "http://")
	code, _, b = fwCall(t, "GET", followerHS.URL+"/api/test-echo", map[string]string{"Authorization": "", "Cookie": session.CookieName(host) + "=" + sid}, "")
	echo = nil
	if code != 200 || json.Unmarshal(b, &echo) != nil || echo["auth"] != "Bearer tok" || echo["cookie"] != "" || echo["served_by"] != leader.Leadership().Replica {
		t.Fatalf("session request forwarded as %d %s, want the leader serving it with the API token and no cookie", code, b)
	}
	// A forwarded request that reaches a follower is not forwarded again.
	code, hdr, b := fwCall(t, "GET", followerHS.URL+"/api/test-echo", map[string]string{ForwardedHeader: "some-replica"}, "")
	if code != http.StatusServiceUnavailable || hdr.Get("Retry-After") == "" || !bytes.Contains(b, []byte("already forwarded once")) {
		t.Fatalf("loop guard: %d %q %s, want 503 with Retry-After", code, hdr.Get("Retry-After"), b)
	}
	// A wrong token is refused by the follower itself.
	if code, _, _ := fwCall(t, "GET", followerHS.URL+"/api/test-echo", map[string]string{"Authorization": "Bearer wrong"}, ""); code != http.StatusUnauthorized {
		t.Fatalf("wrong token through the follower: %d, want 401", code)
	}
	// The follower itself never probed (only the leader does).
	if _, err := follower.Federation(); err == nil {
		t.Fatal("the follower has a federation snapshot of its own: it probed")
	}
	// The status table too (the guard answers it itself only on a leader).
	if code, _, b := fwCall(t, "GET", followerHS.URL+"/api/status?format=text", nil, ""); code != 200 || !bytes.Contains(b, []byte("Delta")) {
		t.Fatalf("status text through the follower: %d %.200s", code, b)
	}
	// The federation snapshot comes from the leader (the follower never probes).
	if code, _, b := fwCall(t, "GET", followerHS.URL+"/api/federation", nil, ""); code != 200 || !bytes.Contains(b, []byte(`"systems"`)) {
		t.Fatalf("federation through the follower: %d %.200s", code, b)
	}
	// A submission through the follower: the leader stores it; the same
	// Idempotency-Key again returns the same task (200), not a second one.
	key := map[string]string{"Idempotency-Key": "fw-key-1"}
	code, _, b = fwCall(t, "POST", followerHS.URL+"/api/tasks", key, fwSubmitBody)
	var first struct{ Task struct{ ID string } }
	if code != http.StatusCreated || json.Unmarshal(b, &first) != nil || first.Task.ID == "" {
		t.Fatalf("submit through the follower: %d %.300s", code, b)
	}
	code, _, b = fwCall(t, "POST", followerHS.URL+"/api/tasks", key, fwSubmitBody)
	var again struct{ Task struct{ ID string } }
	if code != http.StatusOK || json.Unmarshal(b, &again) != nil || again.Task.ID != first.Task.ID {
		t.Fatalf("retry with the same key: %d %.300s, want 200 with task %s", code, b, first.Task.ID)
	}
	code, _, b = fwCall(t, "POST", leaderHS.URL+"/api/tasks", map[string]string{"Idempotency-Key": "fw-key-2"}, fwSubmitBody)
	var other struct{ Task struct{ ID string } }
	if code != http.StatusCreated || json.Unmarshal(b, &other) != nil || other.Task.ID == first.Task.ID {
		t.Fatalf("another key: %d %.300s, want a new task", code, b)
	}
	// The follower reads the store itself: the task is there even with the leader's
	// HTTP server down.
	leaderHS.Close()
	if code, _, b := fwCall(t, "GET", followerHS.URL+"/api/tasks/"+first.Task.ID, nil, ""); code != 200 || !bytes.Contains(b, []byte(first.Task.ID)) {
		t.Fatalf("task detail on the follower with the leader unreachable: %d %.200s", code, b)
	}
	if code, _, b := fwCall(t, "GET", followerHS.URL+"/api/tasks", nil, ""); code != 200 || !bytes.Contains(b, []byte(other.Task.ID)) {
		t.Fatalf("task list on the follower: %d %.200s", code, b)
	}
	// What it must forward fails with 503 and Retry-After, saying why, marked as not
	// carried out (the connection was refused).
	code, hdr, b = fwCall(t, "POST", followerHS.URL+"/api/tasks", map[string]string{"Idempotency-Key": "fw-key-3"}, fwSubmitBody)
	if code != http.StatusServiceUnavailable || hdr.Get("Retry-After") == "" || hdr.Get(v1.NoLeaderHeader) != "1" || !bytes.Contains(b, []byte("could not connect to the leader")) {
		t.Fatalf("submit with the leader unreachable: %d %q %s", code, hdr.Get("Retry-After"), b)
	}
	// /healthz says who is who.
	_, _, b = fwCall(t, "GET", followerHS.URL+"/healthz", nil, "")
	var h map[string]any
	if json.Unmarshal(b, &h) != nil || h["role"] != "follower" || h["leader"] != leaderHS.URL || h["lease_token"] == nil {
		t.Fatalf("follower's healthz: %s", b)
	}
	// Metrics: the follower exports mosaic_leader 0 and the lease's token.
	_, _, b = fwCall(t, "GET", followerHS.URL+"/metrics", nil, "")
	for _, want := range []string{"mosaic_leader 0", "mosaic_lease_token 1", "mosaic_lease_renew_lag_seconds", "mosaic_leader_changes_total 0"} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("follower's metrics lack %q", want)
		}
	}
}

// TestFollowerTakesOverWhenLeaderCloses: when the leader gives the lease up, the
// follower leads (token 2) within two ticks and serves what it forwarded before.
func TestFollowerTakesOverWhenLeaderCloses(t *testing.T) {
	db := filepath.Join(t.TempDir(), "mosaic.db")
	_, leader := replicaServer(t, db)
	waitRole(t, leader, "leader")
	followerHS, follower := replicaServer(t, db)
	waitRole(t, follower, "follower")
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := leader.Close(); err != nil {
		t.Fatal(err)
	}
	waitRole(t, follower, "leader")
	t.Logf("takeover after the leader resigned: %s", time.Since(start).Round(time.Millisecond))
	if err := follower.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	code, _, b := fwCall(t, "POST", followerHS.URL+"/api/tasks", nil, fwSubmitBody)
	if code != http.StatusCreated {
		t.Fatalf("submit on the new leader: %d %.300s", code, b)
	}
	_, _, b = fwCall(t, "GET", followerHS.URL+"/metrics", nil, "")
	for _, want := range []string{"mosaic_leader 1", "mosaic_lease_token 2", "mosaic_leader_changes_total 1"} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("new leader's metrics lack %q:\n%s", want, grepLines(b, "mosaic_lea"))
		}
	}
}

func grepLines(b []byte, sub string) string {
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func TestLocalOnFollower(t *testing.T) {
	for _, c := range []struct {
		method, path string
		local        bool
	}{
		{"GET", "/", true},
		{"GET", "/ui/app.js", true},
		{"GET", "/healthz", true},
		{"GET", "/metrics", true},
		{"GET", "/openapi.json", true},
		{"GET", "/api/session", true},
		{"POST", "/api/session/logout", true},
		{"GET", "/api/tasks", true},
		{"GET", "/api/tasks/abc", true},
		{"GET", "/api/events", true},
		{"HEAD", "/api/tasks/abc", true},
		{"GET", "/api/tasks/abc/logs", false},
		{"GET", "/api/tasks/", false},
		{"GET", "/api/events/stream", false},
		{"POST", "/api/tasks", false},
		{"POST", "/api/tasks/abc/cancel", false},
		{"GET", "/api/federation", false},
		{"GET", "/api", false},
		{"POST", "/mcp", false},
		{"GET", "/exchange/x", false},
		{"GET", "/auth/login", false},
		{"DELETE", "/api/tasks/abc", false},
	} {
		r := httptest.NewRequest(c.method, c.path, nil)
		if got := localOnFollower(r); got != c.local {
			t.Errorf("%s %s: local=%v, want %v", c.method, c.path, got, c.local)
		}
	}
}

// TestFollowerForwardsAUsersSessionAsThatUser: a follower forwards a browser session
// with the replicas' API token (the leader does not know the session); a session a
// user's token opened must act for that user on the leader, never for the admin the
// API token stands for. The on-behalf header is honoured only with the API token on a
// forward, and a revoked token ends the forwarded session too.
func TestFollowerForwardsAUsersSessionAsThatUser(t *testing.T) {
	db := filepath.Join(t.TempDir(), "mosaic.db")
	leaderHS, leader := replicaServer(t, db)
	waitRole(t, leader, "leader")
	followerHS, follower, followerSessions := replicaServerSessions(t, db)
	waitRole(t, follower, "follower")
	ctx := context.Background()
	if _, err := leader.AddUser(ctx, "bob", false); err != nil {
		t.Fatal(err)
	}
	bobTok, tok, err := leader.CreateToken(ctx, "bob", "test")
	if err != nil {
		t.Fatal(err)
	}
	host := strings.TrimPrefix(followerHS.URL, "http://")
	sid := followerSessions.OpenFor(session.Owner{User: "bob", TokenID: tok.ID})
	echo := func(hdr map[string]string) (int, map[string]string) {
		t.Helper()
		code, _, b := fwCall(t, "GET", followerHS.URL+"/api/test-echo", hdr, "")
		var e map[string]string
		_ = json.Unmarshal(b, &e)
		return code, e
	}
	code, e := echo(map[string]string{"Authorization": "", "Cookie": session.CookieName(host) + "=" + sid})
	if code != 200 || e["caller"] != "bob" || e["on_behalf"] != tok.ID || e["served_by"] != leader.Leadership().Replica {
		t.Fatalf("bob's session forwarded: %d %+v, want the leader acting for bob", code, e)
	}
	// The header from anyone but a forwarding replica changes nothing: with bob's own
	// token it stays bob (the follower strips it; the leader would ignore it anyway).
	code, e = echo(map[string]string{"Authorization": "Bearer " + bobTok, OnBehalfHeader: "mos_whoever"})
	if code != 200 || e["caller"] != "bob" {
		t.Fatalf("bob's bearer with an on-behalf header: %d %+v, want bob", code, e)
	}
	// Directly at the leader with the API token but no forward header: ignored.
	code, _, b := fwCall(t, "GET", leaderHS.URL+"/api/test-echo", map[string]string{OnBehalfHeader: tok.ID}, "")
	if err := json.Unmarshal(b, &e); code != 200 || err != nil || e["caller"] != model.LocalUser {
		t.Fatalf("API token with an on-behalf header but no forward: %d %s, want local", code, b)
	}
	// Revoked: the forwarded session is refused (by the follower's own check first).
	if err := leader.RevokeToken(ctx, tok.ID); err != nil {
		t.Fatal(err)
	}
	if code, e := echo(map[string]string{"Authorization": "", "Cookie": session.CookieName(host) + "=" + sid}); code != http.StatusUnauthorized {
		t.Fatalf("revoked bob's session forwarded: %d %+v, want 401", code, e)
	}
}
