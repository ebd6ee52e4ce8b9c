package core

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/store"
)

// ErrForbidden marks a request the caller is not allowed to make: another user's
// task, or an admin action by a non-admin (403).
var ErrForbidden = errors.New("forbidden")

// ErrUnauthenticated marks a token that is not (or no longer) valid (401).
var ErrUnauthenticated = errors.New("unauthenticated")

// Authenticate returns the user of a presented user token (mos_…), read from the
// store on every call, so a revoked token or user is refused from the next request
// on. The error never repeats the token.
func (c *Core) Authenticate(ctx context.Context, tok string) (model.Caller, error) {
	caller, err := c.store.Authenticate(ctx, tok)
	if err != nil {
		return model.Caller{}, fmt.Errorf("%w: %w", ErrUnauthenticated, err)
	}
	return caller, nil
}

// Recheck confirms that the caller of ctx may still act: a caller that came in with
// a user token (TokenID set) is looked up again by that token, so a revoked token or
// user ends a browser session or a long stream (event stream, wait_task) at its next
// request or poll. The laptop token's caller and in-process callers (no TokenID)
// pass. It returns the fresh caller (admin rights may have changed too).
func (c *Core) Recheck(ctx context.Context) (model.Caller, error) {
	caller := model.CallerOf(ctx)
	if caller.TokenID == "" {
		return caller, nil
	}
	fresh, err := c.CallerByTokenID(ctx, caller.TokenID)
	if err != nil {
		return model.Caller{}, err
	}
	fresh.Remote = caller.Remote
	return fresh, nil
}

// CallerByTokenID returns the caller a user token stands for by its display id
// (mos_xxxxxxxx), refusing a revoked token or user (ErrUnauthenticated).
func (c *Core) CallerByTokenID(ctx context.Context, id string) (model.Caller, error) {
	caller, err := c.store.CallerByTokenID(ctx, id)
	if err != nil {
		return model.Caller{}, fmt.Errorf("%w: %w", ErrUnauthenticated, err)
	}
	return caller, nil
}

// noIdentity lists the systems where owner has no site identity (their catalog
// entry lists users:, owner is not among them, and default_identity lends them no
// shared one): placement leaves them out, so the user's tasks go where they may run.
func (c *Core) noIdentity(owner string) []string {
	var out []string
	for i := range c.cat.Systems {
		if _, err := c.cat.Systems[i].IdentityFor(owner); err != nil {
			out = append(out, c.cat.Systems[i].Name)
		}
	}
	return out
}

// Whoami is the caller of ctx.
func (c *Core) Whoami(ctx context.Context) model.Caller { return model.CallerOf(ctx) }

// checkOwner refuses a task the caller does not own (admins own everything).
func checkOwner(ctx context.Context, id, owner string) error {
	if model.CallerOf(ctx).Owns(owner) {
		return nil
	}
	return notYours(ctx, id)
}

// notYours is the refusal of a task id a non-admin caller does not own: the same
// answer (403, same words) whether another user owns it or no task has that id, so a
// user cannot learn which ids exist. Admins are told 404 for an unknown id.
func notYours(ctx context.Context, id string) error {
	caller := model.CallerOf(ctx)
	return fmt.Errorf("no task %s of yours: a user reads and acts on their own tasks only, and %s is not an admin "+
		"(`mosaic tasks` lists yours; ask an admin to act on another user's): %w", id, caller.Name, ErrForbidden)
}

// requireAdmin refuses a non-admin caller.
func requireAdmin(ctx context.Context, what string) error {
	caller := model.CallerOf(ctx)
	if caller.Admin {
		return nil
	}
	return fmt.Errorf("%s needs an admin, and %s is not one; ask an admin (`mosaic users list` shows who is): %w", what, caller.Name, ErrForbidden)
}

// audit records an action of the caller (after it happened; actions whose store write
// can carry it record it in the same transaction instead). A failure to record is
// logged, not returned: the action has already happened.
func (c *Core) audit(ctx context.Context, action, target, detail string) {
	caller := model.CallerOf(ctx)
	if err := c.store.AppendAudit(context.WithoutCancel(ctx), store.AuditEntry{User: caller.Name, Action: action, Target: target,
		Remote: caller.Remote, Detail: detail}); err != nil {
		c.log.Error("audit", "action", action, "target", target, "err", err)
	}
}

// RecordAudit records an action of the caller of ctx that a surface performs itself
// (minting a browser login link, signing in to the web UI).
func (c *Core) RecordAudit(ctx context.Context, action, target, detail string) {
	c.audit(ctx, action, target, detail)
}

func auditEntry(ctx context.Context, action, target string) *store.AuditEntry {
	caller := model.CallerOf(ctx)
	return &store.AuditEntry{User: caller.Name, Action: action, Target: target, Remote: caller.Remote}
}

// storeErr maps the store's user errors onto the core's classes.
func storeErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, store.ErrNotFound):
		return fmt.Errorf("%w: %w", err, ErrNotFound)
	case errors.Is(err, store.ErrExists):
		return fmt.Errorf("%w: %w", err, ErrBusy)
	case errors.Is(err, store.ErrBadName), errors.Is(err, store.ErrRevoked):
		return fmt.Errorf("%w: %w", err, ErrInvalid)
	}
	return err
}

// User is a user as the API shows it.
type User = store.User

// Token is a token's record as the API shows it (never the token).
type Token = store.Token

// AuditEntry is one line of the audit log.
type AuditEntry = store.AuditEntry

// AuditQuery filters the audit log.
type AuditQuery = store.AuditQuery

// MaxAuditPage is the largest page of the audit log (GET /api/audit?limit=).
const MaxAuditPage = store.MaxAuditPage

// EnsureLocalUser stores the implicit laptop admin (model.LocalUser) if missing, so
// that it shows in `mosaic users list` and owns the tasks stored before users existed.
func (c *Core) EnsureLocalUser(ctx context.Context) error {
	return c.store.EnsureUser(ctx, model.LocalUser, true)
}

// AddUser adds a user (admin only).
func (c *Core) AddUser(ctx context.Context, name string, admin bool) (*User, error) {
	if err := requireAdmin(ctx, "adding a user"); err != nil {
		return nil, err
	}
	a := auditEntry(ctx, "user.add", name)
	if admin {
		a.Detail = "admin"
	}
	u, err := c.store.AddUser(ctx, name, admin, a)
	return u, storeErr(err)
}

// Users lists every user (admin only).
func (c *Core) Users(ctx context.Context) ([]*User, error) {
	if err := requireAdmin(ctx, "listing users"); err != nil {
		return nil, err
	}
	us, err := c.store.Users(ctx)
	if us == nil {
		us = []*User{}
	}
	return us, storeErr(err)
}

// RevokeUser revokes a user and all their tokens (admin only); their next request
// is refused. The implicit local admin cannot be revoked (its token is the file's).
func (c *Core) RevokeUser(ctx context.Context, name string) error {
	if err := requireAdmin(ctx, "revoking a user"); err != nil {
		return err
	}
	if name == model.LocalUser {
		return fmt.Errorf("user %s is the laptop token's implicit admin and cannot be revoked; replace $XDG_CONFIG_HOME/mosaic/token "+
			"(delete it and restart `mosaic serve`, which writes a new one) to lock out its holder: %w", name, ErrInvalid)
	}
	return storeErr(c.store.RevokeUser(ctx, name, auditEntry(ctx, "user.revoke", name)))
}

// CreateToken makes a new API token for user (admin only). The token is returned
// once and never stored.
func (c *Core) CreateToken(ctx context.Context, user, label string) (string, *Token, error) {
	if err := requireAdmin(ctx, "creating a token"); err != nil {
		return "", nil, err
	}
	if err := model.CheckLine("label", label, 200); err != nil {
		return "", nil, fmt.Errorf("%w: %w", err, ErrInvalid)
	}
	if user == "" {
		user = model.CallerOf(ctx).Name
	}
	if user == model.LocalUser {
		if err := c.EnsureLocalUser(ctx); err != nil {
			return "", nil, err
		}
	}
	a := auditEntry(ctx, "token.create", "")
	a.Detail = "for " + user
	tok, t, err := c.store.CreateToken(ctx, user, label, a)
	if err != nil {
		return "", nil, storeErr(err)
	}
	return tok, t, nil
}

// Tokens lists tokens (admin only), of one user or ("") all.
func (c *Core) Tokens(ctx context.Context, user string) ([]*Token, error) {
	if err := requireAdmin(ctx, "listing tokens"); err != nil {
		return nil, err
	}
	ts, err := c.store.Tokens(ctx, user)
	if ts == nil {
		ts = []*Token{}
	}
	return ts, storeErr(err)
}

// RevokeToken revokes a token by its display id (admin only).
func (c *Core) RevokeToken(ctx context.Context, id string) error {
	if err := requireAdmin(ctx, "revoking a token"); err != nil {
		return err
	}
	owner, err := c.store.TokenOwner(ctx, id)
	if err != nil {
		return storeErr(err)
	}
	a := auditEntry(ctx, "token.revoke", id)
	a.Detail = "of " + owner
	return storeErr(c.store.RevokeToken(ctx, id, a))
}

// Audit reads the audit log, newest first (admin only).
func (c *Core) Audit(ctx context.Context, q AuditQuery) ([]AuditEntry, error) {
	if err := requireAdmin(ctx, "reading the audit log"); err != nil {
		return nil, err
	}
	es, err := c.store.Audit(ctx, q)
	if es == nil {
		es = []AuditEntry{}
	}
	return es, err
}

// OpenOffline opens the store at dbPath for managing users and tokens with no server
// running (`mosaic users add NAME --admin --local`, to make the first admin of a
// shared core). It takes the store's lease first, so it refuses, naming the holder,
// while a server owns the store: use the commands without --local against it then.
// Only the user, token and audit methods work on the core it returns; call close
// when done.
func OpenOffline(ctx context.Context, dbPath string) (c *Core, close func() error, err error) {
	if dbPath == "" || dbPath == ":memory:" {
		return nil, nil, fmt.Errorf("--local needs a database file (MOSAIC_DB); %q is none: %w", dbPath, ErrInvalid)
	}
	lease, err := acquireLease(ctx, dbPath, "")
	if err != nil {
		return nil, nil, fmt.Errorf("%w; a running server owns the store, so manage users through it: run the command without --local, with an admin token (MOSAIC_TOKEN)", err)
	}
	st, err := store.Open(ctx, dbPath)
	if err != nil {
		lease.Release()
		return nil, nil, fmt.Errorf("%w (set MOSAIC_DB to use another file)", err)
	}
	if err := st.EnsureUser(ctx, model.LocalUser, true); err != nil {
		st.Close()
		lease.Release()
		return nil, nil, err
	}
	c = &Core{store: st, log: slog.New(slog.DiscardHandler)}
	return c, func() error { return errors.Join(st.Close(), lease.Release()) }, nil
}
