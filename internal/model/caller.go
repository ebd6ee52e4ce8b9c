package model

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// LocalUser is the implicit user of laptop mode: the holder of the token in
// $XDG_CONFIG_HOME/mosaic/token (and of the web sessions `mosaic serve` opens). It is
// an admin, and it owns every task stored before users existed (migration 0006).
const LocalUser = "local"

// Caller is who a request of the core acts for: an authenticated user (the API puts
// it in the request context) or, when no caller is in the context, the local admin
// (in-process callers: the CLI's offline commands, the engine, tests).
type Caller struct {
	// Name is the user name (LocalUser for the laptop token).
	Name string `json:"name"`
	// Admin users act on every user's work and manage users and tokens.
	Admin bool `json:"admin"`
	// TokenID is the display id of the token used (mos_xxxxxxxx), "" for the local
	// token or an in-process call. Never the token itself.
	TokenID string `json:"token_id,omitempty"`
	// Remote is the client address of the request (for the audit log), "" in process.
	Remote string `json:"remote,omitempty"`
}

// LocalCaller is the implicit local admin.
func LocalCaller() Caller { return Caller{Name: LocalUser, Admin: true} }

// Owns reports whether the caller may read and act on work owned by owner: its own,
// or anyone's for an admin.
func (c Caller) Owns(owner string) bool { return c.Admin || owner == c.Name }

type callerKey struct{}

// WithCaller returns ctx carrying c.
func WithCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerFrom returns the caller in ctx and whether one was set.
func CallerFrom(ctx context.Context) (Caller, bool) {
	c, ok := ctx.Value(callerKey{}).(Caller)
	return c, ok
}

// CallerOf returns the caller in ctx, or LocalCaller when none was set (an in-process
// call). Surfaces that serve remote clients always set one.
func CallerOf(ctx context.Context) Caller {
	if c, ok := CallerFrom(ctx); ok {
		return c
	}
	return LocalCaller()
}

// ErrBadUserName is wrapped by CheckUserName's errors.
var ErrBadUserName = errors.New("invalid user name")

// CheckUserName accepts 1 to 64 characters of a-z, 0-9, '.', '_' and '-', starting
// with a letter: a name that is safe in a file name, a log line and a Slurm --comment.
func CheckUserName(name string) error {
	if name == "" || len(name) > 64 {
		return fmt.Errorf("%w %q: want 1 to 64 characters", ErrBadUserName, clipName(name, 70))
	}
	if name[0] < 'a' || name[0] > 'z' {
		return fmt.Errorf("%w %q: it must start with a lower-case letter", ErrBadUserName, name)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return fmt.Errorf("%w %q: only a-z, 0-9, '.', '_' and '-' are allowed", ErrBadUserName, strings.ToValidUTF8(name, "?"))
		}
	}
	return nil
}

func clipName(s string, n int) string {
	if len(s) > n {
		return strings.ToValidUTF8(s[:n], "?") + "…"
	}
	return strings.ToValidUTF8(s, "?")
}
