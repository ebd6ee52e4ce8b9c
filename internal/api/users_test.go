package api

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	v1 "github.com/mosaic-hpc/mosaic/api/v1"
	"github.com/mosaic-hpc/mosaic/internal/core"
	"github.com/mosaic-hpc/mosaic/internal/core/coretest"
	"github.com/mosaic-hpc/mosaic/internal/model"
)

// call makes one request with a bearer token and returns the status and body.
func call(t *testing.T, hs *httptest.Server, method, path, token string, body any) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, hs.URL+path, rd)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := hs.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func mustCall(t *testing.T, hs *httptest.Server, method, path, token string, body any, want int, out any) {
	t.Helper()
	st, b := call(t, hs, method, path, token, body)
	if st != want {
		t.Fatalf("%s %s: %d %s, want %d", method, path, st, b, want)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, b)
		}
	}
}

// newUserToken adds a user (as the laptop admin "tok") and returns a token of theirs.
func newUserToken(t *testing.T, hs *httptest.Server, name string, admin bool) v1.CreatedToken {
	t.Helper()
	mustCall(t, hs, "POST", "/api/users", "tok", v1.AddUserRequest{Name: name, Admin: admin}, http.StatusCreated, nil)
	var ct v1.CreatedToken
	mustCall(t, hs, "POST", "/api/tokens", "tok", v1.CreateTokenRequest{User: name, Label: "test"}, http.StatusCreated, &ct)
	return ct
}

var submitBody = map[string]any{"name": "own", "command": "sleep 600",
	"envelope": map[string]any{"cpu_cores": map[string]any{"min": 1, "max": 1}, "walltime": map[string]any{"min": "10m", "max": "10m"}}}

// TestOwnership403Matrix: alice's task is hers. Bob (another user) gets 403 reading,
// cancelling or replanning it, reading its logs or its events, and does not see it or
// its events listed; an admin user and the laptop admin act on it; alice reads it.
func TestOwnership403Matrix(t *testing.T) {
	hs, _ := coreServer(t, Options{Token: "tok"})
	alice := newUserToken(t, hs, "alice", false).Token
	bob := newUserToken(t, hs, "bob", false).Token
	carol := newUserToken(t, hs, "carol", true).Token

	var res v1.SubmitResult
	mustCall(t, hs, "POST", "/api/tasks", alice, submitBody, http.StatusCreated, &res)
	id := res.Task.ID
	if res.Task.Owner != "alice" {
		t.Fatalf("owner %q, want alice", res.Task.Owner)
	}
	var bobs v1.SubmitResult
	mustCall(t, hs, "POST", "/api/tasks", bob, submitBody, http.StatusCreated, &bobs)

	for _, c := range []struct{ method, path string }{
		{"GET", "/api/tasks/" + id},
		{"POST", "/api/tasks/" + id + "/cancel"},
		{"POST", "/api/tasks/" + id + "/replan"},
		{"GET", "/api/tasks/" + id + "/logs"},
		{"GET", "/api/events?task=" + id},
	} {
		st, b := call(t, hs, c.method, c.path, bob, nil)
		if st != http.StatusForbidden || !strings.Contains(string(b), "no task ") {
			t.Errorf("bob %s %s: %d %s, want 403 naming the reason", c.method, c.path, st, b)
		}
	}
	var list struct{ Tasks []v1.TaskSummary }
	mustCall(t, hs, "GET", "/api/tasks", bob, nil, 200, &list)
	if len(list.Tasks) != 1 || list.Tasks[0].ID != bobs.Task.ID {
		t.Errorf("bob lists %+v, want only his own task", list.Tasks)
	}
	var page v1.EventPage
	mustCall(t, hs, "GET", "/api/events?limit=1000", bob, nil, 200, &page)
	for _, e := range page.Events {
		if e.TaskID == id {
			t.Errorf("bob sees alice's event %+v", e)
		}
	}
	// The owner and the admins.
	mustCall(t, hs, "GET", "/api/tasks/"+id, alice, nil, 200, nil)
	mustCall(t, hs, "GET", "/api/tasks/"+id, "tok", nil, 200, nil)
	mustCall(t, hs, "GET", "/api/tasks", carol, nil, 200, &list)
	if len(list.Tasks) != 2 {
		t.Errorf("admin carol lists %d tasks, want 2", len(list.Tasks))
	}
	mustCall(t, hs, "GET", "/api/events?task="+id, carol, nil, 200, nil)
	mustCall(t, hs, "POST", "/api/tasks/"+id+"/cancel", carol, nil, 200, nil)

	var audit v1.AuditPage
	mustCall(t, hs, "GET", "/api/audit", "tok", nil, 200, &audit)
	var actions []string
	for _, e := range audit.Entries {
		actions = append(actions, e.User+":"+e.Action)
	}
	got := strings.Join(actions, ",")
	for _, want := range []string{"carol:task.cancel", "alice:task.submit", "bob:task.submit", "local:token.create", "local:user.add"} {
		if !strings.Contains(got, want) {
			t.Errorf("audit %s lacks %s", got, want)
		}
	}
	if strings.Contains(got, "bob:task.cancel") || strings.Contains(got, "bob:task.replan") {
		t.Errorf("refused actions were audited as done: %s", got)
	}
}

// TestNonAdminCannotManageUsers: a user without admin gets 403 for every user, token
// and audit route, for look-around (which runs under the core's site identity) and for
// the Globus sign-in (which sets the core's Globus identity).
func TestNonAdminCannotManageUsers(t *testing.T) {
	hs, _ := coreServer(t, Options{Token: "tok", SignIn: http.NotFoundHandler()})
	bob := newUserToken(t, hs, "bob", false).Token
	for _, c := range []struct {
		method, path string
		body         any
	}{
		{"GET", "/api/users", nil},
		{"POST", "/api/users", v1.AddUserRequest{Name: "mallory", Admin: true}},
		{"POST", "/api/users/bob/revoke", nil},
		{"GET", "/api/tokens", nil},
		{"POST", "/api/tokens", v1.CreateTokenRequest{User: "bob"}},
		{"POST", "/api/tokens/mos_abcdefgh/revoke", nil},
		{"GET", "/api/audit", nil},
		{"POST", "/api/resources/sim-a/exec", map[string]any{"command": "id"}},
		{"GET", "/auth/login", nil},
		{"GET", "/auth/status", nil},
	} {
		st, b := call(t, hs, c.method, c.path, bob, c.body)
		if st != http.StatusForbidden {
			t.Errorf("bob %s %s: %d %s, want 403", c.method, c.path, st, b)
		}
	}
	var who v1.Whoami
	mustCall(t, hs, "GET", "/api/whoami", bob, nil, 200, &who)
	if who.Name != "bob" || who.Admin || !strings.HasPrefix(who.TokenID, "mos_") {
		t.Fatalf("whoami %+v", who)
	}
	mustCall(t, hs, "GET", "/api/whoami", "tok", nil, 200, &who)
	if who.Name != "local" || !who.Admin {
		t.Fatalf("laptop whoami %+v", who)
	}
}

// TestRevokedToken401AtOnce: the very next request with a revoked token (or a token
// of a revoked user) is refused with 401; the audit log names the token's id, never
// the token.
func TestRevokedToken401AtOnce(t *testing.T) {
	hs, _ := coreServer(t, Options{Token: "tok"})
	a1 := newUserToken(t, hs, "alice", false)
	var a2 v1.CreatedToken
	mustCall(t, hs, "POST", "/api/tokens", "tok", v1.CreateTokenRequest{User: "alice"}, http.StatusCreated, &a2)
	mustCall(t, hs, "GET", "/api/whoami", a1.Token, nil, 200, nil)
	mustCall(t, hs, "POST", "/api/tokens/"+a1.ID+"/revoke", "tok", nil, http.StatusNoContent, nil)
	if st, b := call(t, hs, "GET", "/api/whoami", a1.Token, nil); st != http.StatusUnauthorized {
		t.Fatalf("revoked token: %d %s, want 401", st, b)
	}
	mustCall(t, hs, "GET", "/api/whoami", a2.Token, nil, 200, nil)
	mustCall(t, hs, "POST", "/api/users/alice/revoke", "tok", nil, http.StatusNoContent, nil)
	if st, b := call(t, hs, "GET", "/api/tasks", a2.Token, nil); st != http.StatusUnauthorized {
		t.Fatalf("token of a revoked user: %d %s, want 401", st, b)
	}
	// A malformed or unknown mos_ token is a 401 too.
	for _, bad := range []string{"mos_", "mos_abcdefgh_" + strings.Repeat("A", 43), a1.Token + "x"} {
		if st, _ := call(t, hs, "GET", "/api/whoami", bad, nil); st != http.StatusUnauthorized {
			t.Errorf("token %q: %d, want 401", bad, st)
		}
	}
	_, b := call(t, hs, "GET", "/api/audit", "tok", nil)
	if strings.Contains(string(b), a1.Token) || strings.Contains(string(b), a2.Token) {
		t.Fatalf("the audit log holds a token: %s", b)
	}
	if !strings.Contains(string(b), a1.ID) || !strings.Contains(string(b), "token.revoke") {
		t.Fatalf("the audit log lacks the revocation of %s: %s", a1.ID, b)
	}
	// The laptop admin cannot be revoked through the API (its token is the file's).
	if st, _ := call(t, hs, "POST", "/api/users/local/revoke", "tok", nil); st != http.StatusUnprocessableEntity {
		t.Errorf("revoke local: %d, want 422", st)
	}
}

// TestTokensNeverLogged: with debug logging on in the API and the core, creating,
// using, revoking and presenting revoked or mangled user tokens never writes a token's
// secret to the log (refusals name the token's display id only); nor do the answers
// of list, audit or whoami.
func TestTokensNeverLogged(t *testing.T) {
	var logs syncBuffer
	lg := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c := coretest.Start(t, coretest.Options{SimSpeed: 60, Logger: lg})
	srv, err := New(c, Options{Token: "tok", Logger: lg})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	ct := newUserToken(t, hs, "alice", false)
	secret := ct.Token[len(ct.ID)+1:]
	var bodies []string
	for _, c := range []struct{ method, path, token string }{
		{"GET", "/api/whoami", ct.Token},
		{"POST", "/api/tasks", ct.Token},
		{"GET", "/api/tokens", "tok"},
		{"POST", "/api/tokens/" + ct.ID + "/revoke", "tok"},
		{"GET", "/api/whoami", ct.Token},
		{"GET", "/api/whoami", ct.Token[:len(ct.Token)-1] + "x"},
		{"GET", "/api/whoami", ct.Token + "x"},
		{"GET", "/api/audit", "tok"},
	} {
		var body any
		if c.path == "/api/tasks" {
			body = submitBody
		}
		_, b := call(t, hs, c.method, c.path, c.token, body)
		bodies = append(bodies, string(b))
	}
	if !strings.Contains(logs.String(), ct.ID) {
		t.Fatalf("the refusals were not logged at all (the test would prove nothing):\n%s", logs.String())
	}
	if strings.Contains(logs.String(), secret) {
		t.Fatalf("a token's secret reached the log:\n%s", logs.String())
	}
	for _, b := range bodies {
		if strings.Contains(b, secret) {
			t.Fatalf("an answer repeats the token: %s", b)
		}
	}
}

// TestUnknownTaskIs403ForUsers: a non-admin asking about a task id that does not exist
// gets the same 403 (same words) as for another user's task, so ids do not leak; an
// admin gets 404.
func TestUnknownTaskIs403ForUsers(t *testing.T) {
	hs, _ := coreServer(t, Options{Token: "tok"})
	alice := newUserToken(t, hs, "alice", false).Token
	bob := newUserToken(t, hs, "bob", false).Token
	var res v1.SubmitResult
	mustCall(t, hs, "POST", "/api/tasks", alice, submitBody, http.StatusCreated, &res)
	id := res.Task.ID
	const unknown = "zzzzzzzz"
	for _, c := range []struct{ method, path string }{
		{"GET", "/api/tasks/%s"}, {"POST", "/api/tasks/%s/cancel"}, {"GET", "/api/tasks/%s/logs"}, {"GET", "/api/events?task=%s"},
	} {
		stOther, bOther := call(t, hs, c.method, strings.Replace(c.path, "%s", id, 1), bob, nil)
		stNone, bNone := call(t, hs, c.method, strings.Replace(c.path, "%s", unknown, 1), bob, nil)
		if stOther != http.StatusForbidden || stNone != http.StatusForbidden {
			t.Fatalf("%s %s: bob gets %d for alice's task and %d for an unknown id, want 403 for both", c.method, c.path, stOther, stNone)
		}
		if strings.ReplaceAll(string(bOther), id, "ID") != strings.ReplaceAll(string(bNone), unknown, "ID") {
			t.Fatalf("%s %s: the answers differ:\n%s\n%s", c.method, c.path, bOther, bNone)
		}
		if st, b := call(t, hs, c.method, strings.Replace(c.path, "%s", unknown, 1), "tok", nil); st != http.StatusNotFound {
			t.Fatalf("%s %s: the admin gets %d %s for an unknown id, want 404", c.method, c.path, st, b)
		}
	}
}

// TestAuditPagingAtMaxPage: a page of the largest size still says where the next one
// starts when there are more entries (the store answers one more than the page).
func TestAuditPagingAtMaxPage(t *testing.T) {
	hs, c := coreServer(t, Options{Token: "tok"})
	ctx := model.WithCaller(context.Background(), model.LocalCaller())
	for i := range core.MaxAuditPage + 5 {
		c.RecordAudit(ctx, "test.fill", strconv.Itoa(i), "")
	}
	var page v1.AuditPage
	mustCall(t, hs, "GET", "/api/audit?limit="+strconv.Itoa(core.MaxAuditPage), "tok", nil, 200, &page)
	if len(page.Entries) != core.MaxAuditPage || page.NextBefore == 0 {
		t.Fatalf("a full page of %d: %d entries, next_before %d; want the page and a next_before", core.MaxAuditPage, len(page.Entries), page.NextBefore)
	}
	var rest v1.AuditPage
	mustCall(t, hs, "GET", "/api/audit?limit="+strconv.Itoa(core.MaxAuditPage)+"&before="+strconv.FormatInt(page.NextBefore, 10), "tok", nil, 200, &rest)
	if len(rest.Entries) != 5 || rest.NextBefore != 0 {
		t.Fatalf("the last page: %d entries, next_before %d; want 5 and none", len(rest.Entries), rest.NextBefore)
	}
}
