package e2e

import (
	"encoding/json"
	"strings"
	"testing"
)

// runAs runs a CLI command with MOSAIC_TOKEN set to token.
func (e *env) runAs(token string, args ...string) (string, string, int) {
	e.t.Helper()
	saved := e.vars
	e.vars = append(append([]string{}, saved...), "MOSAIC_TOKEN="+token)
	defer func() { e.vars = saved }()
	return e.run(args...)
}

// TestUsersTwoUsersCLI: the first admin is made offline (--local) before the server
// starts; --local is refused while the server holds the store; the admin adds two
// users over HTTP; alice's task is hers (bob is refused reading, cancelling and
// replanning it, and does not list it), the admin reads it; a revoked token stops
// working at once; the audit log says who did what and holds no token; the laptop
// token keeps working as the implicit admin.
func TestUsersTwoUsersCLI(t *testing.T) {
	e := newEnv(t)
	if out, errOut, rc := e.run("users", "add", "boss", "--admin", "--local"); rc != 0 || !strings.Contains(out, "added admin boss") {
		t.Fatalf("users add --local: rc=%d %s %s", rc, out, errOut)
	}
	out, errOut, rc := e.run("token", "create", "--user", "boss", "--label", "bootstrap", "--local", "--json")
	if rc != 0 {
		t.Fatalf("token create --local: rc=%d %s", rc, errOut)
	}
	var bossTok struct{ Token, ID, User string }
	if err := json.Unmarshal([]byte(out), &bossTok); err != nil || !strings.HasPrefix(bossTok.Token, "mos_") || bossTok.User != "boss" {
		t.Fatalf("token create --json: %v %s", err, out)
	}
	boss := bossTok.Token

	e.serve("--tick", "1s", "--speed", "60")
	if _, errOut, rc := e.run("users", "add", "x", "--local"); rc == 0 || !strings.Contains(errOut, "without --local") {
		t.Fatalf("users add --local with a server running: rc=%d %s", rc, errOut)
	}
	for _, u := range []string{"alice", "bob"} {
		if _, errOut, rc := e.runAs(boss, "users", "add", u); rc != 0 {
			t.Fatalf("users add %s: rc=%d %s", u, rc, errOut)
		}
	}
	tokenOf := func(user string) string {
		out, errOut, rc := e.runAs(boss, "token", "create", "--user", user)
		if rc != 0 || !strings.Contains(errOut, "shown this once") {
			t.Fatalf("token create --user %s: rc=%d %s", user, rc, errOut)
		}
		return strings.TrimSpace(out)
	}
	alice, bob := tokenOf("alice"), tokenOf("bob")

	out, errOut, rc = e.runAs(alice, "submit", "--name", "hers", "--command", "sleep 600", "--cpus", "1", "--walltime", "10m", "--json")
	if rc != 0 {
		t.Fatalf("alice submit: rc=%d %s", rc, errOut)
	}
	var sub struct {
		Task struct{ ID, Owner string }
	}
	if err := json.Unmarshal([]byte(out), &sub); err != nil || sub.Task.ID == "" || sub.Task.Owner != "alice" {
		t.Fatalf("submit --json: %v %s", err, out)
	}
	id := sub.Task.ID
	for _, args := range [][]string{{"task", id}, {"cancel", id}, {"replan", id}, {"logs", id}} {
		if _, errOut, rc := e.runAs(bob, args...); rc == 0 || !strings.Contains(errOut, "no task ") {
			t.Errorf("bob %v: rc=%d %s, want the refusal \"no task … of yours\"", args, rc, errOut)
		}
	}
	if out, errOut, rc := e.runAs(bob, "tasks", "--json"); rc != 0 || strings.Contains(out, id) || !strings.HasPrefix(strings.TrimSpace(out), "[") {
		t.Errorf("bob tasks --json: rc=%d, want 0 and a list without alice's task: %s %s", rc, out, errOut)
	}
	if _, errOut, rc := e.runAs(bob, "users", "list"); rc == 0 || !strings.Contains(errOut, "needs an admin") {
		t.Errorf("bob users list: rc=%d %s", rc, errOut)
	}
	if out, errOut, rc := e.runAs(boss, "task", id); rc != 0 || !strings.Contains(out, "hers") {
		t.Errorf("admin reads alice's task: rc=%d %s %s", rc, out, errOut)
	}
	if out, errOut, rc := e.run("tasks"); rc != 0 || !strings.Contains(out, id) {
		t.Errorf("the laptop token lists every task: rc=%d %s %s", rc, out, errOut)
	}
	if _, errOut, rc := e.runAs(alice, "cancel", id); rc != 0 {
		t.Errorf("alice cancels her task: rc=%d %s", rc, errOut)
	}

	// Revocation holds from the next request.
	out, _, _ = e.runAs(boss, "token", "list", "--user", "alice", "--json")
	var toks []struct{ ID string }
	if err := json.Unmarshal([]byte(out), &toks); err != nil || len(toks) != 1 {
		t.Fatalf("token list: %v %s", err, out)
	}
	if _, errOut, rc := e.runAs(boss, "token", "revoke", toks[0].ID); rc != 0 {
		t.Fatalf("token revoke: rc=%d %s", rc, errOut)
	}
	if _, errOut, rc := e.runAs(alice, "tasks"); rc == 0 || !strings.Contains(errOut, "refused the token") {
		t.Errorf("revoked token: rc=%d %s", rc, errOut)
	}

	out, errOut, rc = e.runAs(boss, "audit", "--json")
	if rc != 0 {
		t.Fatalf("audit: rc=%d %s", rc, errOut)
	}
	var audit struct {
		Entries []struct{ User, Action, Target string }
	}
	if err := json.Unmarshal([]byte(out), &audit); err != nil {
		t.Fatalf("audit --json: %v %s", err, out)
	}
	var lines []string
	for _, a := range audit.Entries {
		lines = append(lines, a.User+" "+a.Action+" "+a.Target)
	}
	got := strings.Join(lines, "\n")
	for _, want := range []string{"alice task.submit " + id, "alice task.cancel " + id, "boss token.revoke " + toks[0].ID, "boss user.add bob", "local user.add boss"} {
		if !strings.Contains(got, want) {
			t.Errorf("audit lacks %q:\n%s", want, got)
		}
	}
	for _, tok := range []string{boss, alice, bob, e.token()} {
		if strings.Contains(out, tok) {
			t.Fatalf("the audit log holds a token")
		}
	}
	if out, _, rc := e.runAs(boss, "users", "list"); rc != 0 || !strings.Contains(out, "local") || !strings.Contains(out, "alice") {
		t.Errorf("users list: %s", out)
	}
}
