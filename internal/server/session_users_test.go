package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	v1 "github.com/mosaic-hpc/mosaic/api/v1"
	"github.com/mosaic-hpc/mosaic/internal/api"
	"github.com/mosaic-hpc/mosaic/internal/core"
	"github.com/mosaic-hpc/mosaic/internal/core/coretest"
	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/server"
)

// usersUI is the composed server (with the web UI) over a real core with users alice
// (admin: no) and bob, and their tokens.
func usersUI(t *testing.T) (c *core.Core, hs *httptest.Server, tokens map[string]string, ids map[string]string) {
	t.Helper()
	c = coretest.Start(t, coretest.Options{})
	admin := model.WithCaller(context.Background(), model.LocalCaller())
	tokens, ids = map[string]string{}, map[string]string{}
	for _, u := range []string{"alice", "bob"} {
		if _, err := c.AddUser(admin, u, false); err != nil {
			t.Fatal(err)
		}
		tok, rec, err := c.CreateToken(admin, u, "")
		if err != nil {
			t.Fatal(err)
		}
		tokens[u], ids[u] = tok, rec.ID
	}
	srv, err := server.New(c, server.Options{Options: api.Options{Token: "tok"}})
	if err != nil {
		t.Fatal(err)
	}
	hs = httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	return c, hs, tokens, ids
}

// browser is an HTTP client with a cookie jar (a browser's session cookie).
func browser(t *testing.T) *http.Client {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar}
}

func get(t *testing.T, cl *http.Client, u, bearer string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest("GET", u, nil)
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := cl.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// loginURL mints a login URL with a bearer token.
func loginURL(t *testing.T, hs *httptest.Server, bearer string) string {
	t.Helper()
	req, _ := http.NewRequest("POST", hs.URL+"/api/session/login-url", nil)
	req.Header.Set("Authorization", "Bearer "+bearer)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var lu v1.LoginURL
	if err := json.NewDecoder(resp.Body).Decode(&lu); err != nil || resp.StatusCode != 200 {
		t.Fatalf("login-url: %d %v", resp.StatusCode, err)
	}
	return lu.URL
}

func whoami(t *testing.T, cl *http.Client, hs *httptest.Server) (int, v1.Whoami) {
	t.Helper()
	st, b := get(t, cl, hs.URL+"/api/whoami", "")
	var w v1.Whoami
	if st == 200 {
		if err := json.Unmarshal(b, &w); err != nil {
			t.Fatal(err)
		}
	}
	return st, w
}

// TestLoginURLSessionActsForItsMinter: a login link minted with bob's token opens a
// session that is bob (not the local admin): whoami says bob, admin routes answer 403;
// the laptop token's link is still the local admin; the minting is audited; and
// revoking bob's token ends his session at its next request.
func TestLoginURLSessionActsForItsMinter(t *testing.T) {
	c, hs, tokens, ids := usersUI(t)
	bob := browser(t)
	if st, _ := get(t, bob, loginURL(t, hs, tokens["bob"]), ""); st != 200 {
		t.Fatalf("redeeming bob's link: %d", st)
	}
	st, w := whoami(t, bob, hs)
	if st != 200 || w.Name != "bob" || w.Admin {
		t.Fatalf("bob's session is %d %+v, want bob, not admin", st, w)
	}
	if st, b := get(t, bob, hs.URL+"/api/users", ""); st != http.StatusForbidden {
		t.Fatalf("bob's session on an admin route: %d %s, want 403", st, b)
	}
	if st, b := get(t, bob, hs.URL+"/api/audit", ""); st != http.StatusForbidden {
		t.Fatalf("bob's session reading the audit log: %d %s, want 403", st, b)
	}

	local := browser(t)
	get(t, local, loginURL(t, hs, "tok"), "")
	if st, w := whoami(t, local, hs); st != 200 || w.Name != model.LocalUser || !w.Admin {
		t.Fatalf("the laptop link's session is %d %+v, want local admin", st, w)
	}
	all, err := c.Audit(model.WithCaller(context.Background(), model.LocalCaller()), core.AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	var es []core.AuditEntry
	for _, e := range all {
		if e.Action == "session.login-url" {
			es = append(es, e)
		}
	}
	if len(es) != 2 || es[1].User != "bob" || es[1].Target != ids["bob"] {
		t.Fatalf("login-url audit entries %+v, want bob's then local's", es)
	}

	admin := model.WithCaller(context.Background(), model.LocalCaller())
	if err := c.RevokeToken(admin, ids["bob"]); err != nil {
		t.Fatal(err)
	}
	if st, _ := whoami(t, bob, hs); st != http.StatusUnauthorized {
		t.Fatalf("bob's session after his token was revoked: %d, want 401", st)
	}
	if st, w := whoami(t, local, hs); st != 200 || w.Name != model.LocalUser {
		t.Fatalf("the local session after bob's revocation: %d %+v", st, w)
	}
}

// TestPastedUserTokenSession: a user token pasted into /login opens a session that is
// that user, and revoking the user ends it.
func TestPastedUserTokenSession(t *testing.T) {
	c, hs, tokens, _ := usersUI(t)
	alice := browser(t)
	resp, err := alice.PostForm(hs.URL+"/login", url.Values{"token": {tokens["alice"]}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if st, w := whoami(t, alice, hs); st != 200 || w.Name != "alice" || w.Admin {
		t.Fatalf("alice's pasted-token session is %d %+v, want alice", st, w)
	}
	if err := c.RevokeUser(model.WithCaller(context.Background(), model.LocalCaller()), "alice"); err != nil {
		t.Fatal(err)
	}
	if st, _ := whoami(t, alice, hs); st != http.StatusUnauthorized {
		t.Fatalf("alice's session after she was revoked: %d, want 401", st)
	}
	resp, err = browser(t).PostForm(hs.URL+"/login", url.Values{"token": {tokens["alice"]}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || strings.Contains(string(b), tokens["alice"]) {
		t.Fatalf("a revoked token pasted into /login: %d", resp.StatusCode)
	}
}
