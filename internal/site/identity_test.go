package site

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const usersCatalog = `systems:
  - name: alpha
    kind: ssh
    host: rig-alpha
    user: mosaic
    accounts: [shared-acct]
    ssh: {identity_file: keys/service}
    users:
      - {name: alice, user: alice, identity: keys/alice, account: proj-a}
      - {name: bob, accounts: [proj-b1, proj-b2]}
    partitions: [{name: cpu, nodes: 1, cpu_cores: 1, memory_gb: 1, accounts: [part-acct]}]
  - name: open
    kind: local
    default_identity: shared
    users:
      - {name: carol, account: proj-c}
    partitions: [{name: cpu, nodes: 1, cpu_cores: 1, memory_gb: 1, accounts: [x]}]
  - name: plain
    kind: local
    partitions: [{name: cpu, nodes: 1, cpu_cores: 1, memory_gb: 1, accounts: [x]}]
`

// TestIdentityFor: a user with an entry gets their login, key (relative to the
// catalog) and accounts; the laptop user always gets the system's own; a user without
// an entry gets the shared identity only where the catalog lends it (default: refuse
// when the system lists users, shared when it lists none).
func TestIdentityFor(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "sites.yaml")
	if err := os.WriteFile(p, []byte(usersCatalog), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	alpha, open, plain := &c.Systems[0], &c.Systems[1], &c.Systems[2]

	id, err := alpha.IdentityFor("alice")
	if err != nil || id.Shared || id.User != "alice" || id.IdentityFile != filepath.Join(dir, "keys", "alice") || strings.Join(id.Accounts, ",") != "proj-a" {
		t.Fatalf("alice on alpha: %+v %v", id, err)
	}
	as := alpha.WithIdentity(id)
	if as.User != "alice" || as.SSH.IdentityFile != id.IdentityFile || strings.Join(as.AccountsFor("cpu"), ",") != "proj-a" {
		t.Fatalf("alpha as alice: user %q key %q accounts %v", as.User, as.SSH.IdentityFile, as.AccountsFor("cpu"))
	}
	if alpha.User != "mosaic" || alpha.SSH.IdentityFile != filepath.Join(dir, "keys", "service") || alpha.AccountsFor("cpu")[0] != "part-acct" {
		t.Fatalf("WithIdentity changed the catalog's own system: %+v %+v", alpha, alpha.SSH)
	}
	if id, err := alpha.IdentityFor("bob"); err != nil || id.User != "" || strings.Join(id.Accounts, ",") != "proj-b1,proj-b2" {
		t.Fatalf("bob: %+v %v", id, err)
	}
	for _, u := range []string{"", "local"} {
		if id, err := alpha.IdentityFor(u); err != nil || !id.Shared {
			t.Fatalf("%q: %+v %v", u, id, err)
		}
	}
	if _, err := alpha.IdentityFor("dave"); !errors.Is(err, ErrNoIdentity) || !strings.Contains(err.Error(), "default_identity") {
		t.Fatalf("dave on alpha: %v, want ErrNoIdentity naming the setting", err)
	}
	if id, err := open.IdentityFor("dave"); err != nil || !id.Shared {
		t.Fatalf("dave on open (shared): %+v %v", id, err)
	}
	if id, err := plain.IdentityFor("dave"); err != nil || !id.Shared {
		t.Fatalf("dave on plain (no users): %+v %v", id, err)
	}
}

func TestUsersParseErrors(t *testing.T) {
	const head = "systems:\n  - name: a\n    kind: ssh\n    host: h\n    partitions: [{name: p, nodes: 1, cpu_cores: 1, memory_gb: 1, accounts: [x]}]\n"
	const local = "systems:\n  - name: a\n    kind: local\n    partitions: [{name: p, nodes: 1, cpu_cores: 1, memory_gb: 1, accounts: [x]}]\n"
	cases := []struct{ name, yaml, msg string }{
		{"bad policy", head + "    default_identity: lend\n", "must be shared or refuse"},
		{"bad user name", head + "    users: [{name: Alice, user: a}]\n", "invalid user name"},
		{"missing name", head + "    users: [{user: a}]\n", "invalid user name"},
		{"duplicate", head + "    users: [{name: a1, user: a}, {name: a1, user: b}]\n", "duplicate user"},
		{"local entry", head + "    users: [{name: local, user: a}]\n", "laptop token's user"},
		{"ssh login on local", local + "    users: [{name: a1, user: x}]\n", "ssh settings"},
		{"identity on local", local + "    users: [{name: a1, identity: k}]\n", "ssh settings"},
		{"login with space", head + "    users: [{name: a1, user: \"a b\"}]\n", "login name"},
		{"identity with newline", head + "    users: [{name: a1, identity: \"a\\nb\"}]\n", "identity"},
		{"bad account", head + "    users: [{name: a1, account: \"a b\"}]\n", "account"},
		{"unknown field", head + "    users: [{name: a1, identty: k}]\n", "identity"},
		{"not a list", head + "    users: {alice: {user: a}}\n", "users"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("t.yaml", []byte(c.yaml))
			if err == nil || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("err %v, want one containing %q", err, c.msg)
			}
		})
	}
}
