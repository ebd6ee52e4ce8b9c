package site

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

// UserIdentity is how one Mosaic user's jobs reach a system: the accounts they may
// charge, the ssh login and identity file (kind ssh). Empty fields fall back to the
// system's own.
type UserIdentity struct {
	// Name is the Mosaic user name (`mosaic users list`).
	Name string `yaml:"name" json:"name"`
	// Account is one account to charge; Accounts several (the first is used when the
	// placement chose an account that is not theirs).
	Account  string   `yaml:"account,omitempty" json:"account,omitempty"`
	Accounts []string `yaml:"accounts,omitempty" json:"accounts,omitempty"`
	// User is the ssh login user (kind ssh).
	User string `yaml:"user,omitempty" json:"user,omitempty"`
	// Identity is the ssh identity file, passed as ssh -i (kind ssh); relative names
	// are relative to the catalog file.
	Identity string `yaml:"identity,omitempty" json:"identity,omitempty"`

	Line int `yaml:"-" json:"-"`
}

// Default identity policies (System.DefaultIdentity).
const (
	IdentityShared = "shared"
	IdentityRefuse = "refuse"
)

// ErrNoIdentity is wrapped by IdentityFor's error when the user has no identity on
// the system and the catalog refuses to lend them the shared one.
var ErrNoIdentity = errors.New("no site identity for this user")

// Identity is a resolved site identity.
type Identity struct {
	// Shared: the system's own identity (the laptop user, or a user without an entry
	// on a system whose default_identity is shared).
	Shared bool
	// Owner is the Mosaic user it is for.
	Owner string
	// User and IdentityFile override the system's ssh login and -i ("" = the system's).
	User, IdentityFile string
	// Accounts the user may charge (nil = the system's).
	Accounts []string
}

// accounts lists an entry's accounts: account first, then accounts.
func (u UserIdentity) accounts() []string {
	var out []string
	if u.Account != "" {
		out = append(out, u.Account)
	}
	for _, a := range u.Accounts {
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

// defaultIdentity is the effective policy for users without an entry.
func (s *System) defaultIdentity() string {
	if s.DefaultIdentity != "" {
		return strings.ToLower(s.DefaultIdentity)
	}
	if len(s.Users) > 0 {
		return IdentityRefuse
	}
	return IdentityShared
}

// IdentityFor resolves the identity user's jobs use on the system. The laptop user
// (model.LocalUser, or "") always has the system's own.
func (s *System) IdentityFor(user string) (Identity, error) {
	if user == "" || user == model.LocalUser {
		return Identity{Shared: true, Owner: model.LocalUser}, nil
	}
	for _, u := range s.Users {
		if u.Name == user {
			return Identity{Owner: user, User: u.User, IdentityFile: u.Identity, Accounts: u.accounts()}, nil
		}
	}
	if s.defaultIdentity() == IdentityShared {
		return Identity{Shared: true, Owner: user}, nil
	}
	return Identity{}, fmt.Errorf("%s has no site identity for user %s (no entry under users: in sites.yaml, and default_identity is refuse): "+
		"add `- {name: %s, user: …, identity: …, account: …}` under the system's users:, or set default_identity: shared to lend them the system's own: %w",
		s.Name, user, user, ErrNoIdentity)
}

// WithIdentity returns a copy of the system as id sees it: its ssh login, identity
// file and accounts (partition accounts are narrowed to the user's too).
func (s System) WithIdentity(id Identity) System {
	if id.Shared {
		return s
	}
	if id.User != "" {
		s.User = id.User
	}
	if id.IdentityFile != "" {
		ssh := SSH{}
		if s.SSH != nil {
			ssh = *s.SSH
		}
		ssh.IdentityFile = id.IdentityFile
		ssh.Options = slices.Clone(ssh.Options)
		s.SSH = &ssh
	}
	if len(id.Accounts) > 0 {
		s.Accounts = slices.Clone(id.Accounts)
		s.Partitions = slices.Clone(s.Partitions)
		for i := range s.Partitions {
			s.Partitions[i].Accounts = nil
		}
	}
	s.Users = nil
	return s
}

func validateUsers(s *System, kind, path string, rep *reporter) {
	switch strings.ToLower(s.DefaultIdentity) {
	case "", IdentityShared, IdentityRefuse:
	default:
		rep.errf(path+".default_identity", "must be shared or refuse, got %q", s.DefaultIdentity)
	}
	seen := map[string]int{}
	for i, u := range s.Users {
		p := fmt.Sprintf("%s.users[%d]", path, i)
		if err := model.CheckUserName(u.Name); err != nil {
			rep.errf(p+".name", "%v (the Mosaic user name, as in `mosaic users list`)", err)
		} else if prev, dup := seen[u.Name]; dup {
			rep.errf(p+".name", "duplicate user %q (also users[%d])", u.Name, prev)
		} else {
			seen[u.Name] = i
		}
		if u.Name == model.LocalUser {
			rep.errf(p+".name", "%q is the laptop token's user, which always uses the system's own identity; remove this entry", u.Name)
		}
		if kind != KindSSH && (u.User != "" || u.Identity != "") {
			rep.errf(p, "user and identity are ssh settings; this system is kind %s (only account/accounts apply)", kind)
		}
		if u.User != "" && !cleanName(u.User, "._-") {
			rep.errf(p+".user", "%q: a login name has letters, digits and . _ - only", u.User)
		}
		if err := model.CheckLine("identity", u.Identity, MaxPathChars); err != nil {
			rep.errf(p+".identity", "%v", err)
		}
		if u.Account != "" {
			validateAccounts([]string{u.Account}, p+".account", rep)
		}
		validateAccounts(u.Accounts, p+".accounts", rep)
		if u.User == "" && u.Identity == "" && len(u.accounts()) == 0 {
			rep.warnf(p, "user %s has no user, identity or account here: their jobs use the system's own identity", u.Name)
		}
	}
}

// MaxPathChars bounds a file name in the catalog.
const MaxPathChars = 4096
