package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/mosaic-hpc/mosaic/client"
	"github.com/mosaic-hpc/mosaic/internal/core"
	"github.com/mosaic-hpc/mosaic/internal/model"
)

// usersBackend is what the user, token and audit commands call: the running core
// over HTTP (*client.Client), or, with --local, the store opened directly.
type usersBackend interface {
	AddUser(ctx context.Context, name string, admin bool) (*client.User, error)
	Users(ctx context.Context) ([]client.User, error)
	RevokeUser(ctx context.Context, name string) error
	CreateToken(ctx context.Context, user, label string) (*client.CreatedToken, error)
	Tokens(ctx context.Context, user string) ([]client.Token, error)
	RevokeToken(ctx context.Context, id string) error
	Audit(ctx context.Context, user string, before int64, limit int) (*client.AuditPage, error)
}

// localFlagHelp explains --local on every command that has it.
const localFlagHelp = "open the store (MOSAIC_DB) directly instead of asking the running core, as the local admin: " +
	"to make the first admin of a shared core; refused while a server holds the store"

// openUsersBackend returns the backend and a function that releases it.
func openUsersBackend(ctx context.Context, local bool) (usersBackend, func(), error) {
	if !local {
		c, err := newClient()
		if err != nil {
			return nil, nil, err
		}
		return c, func() {}, nil
	}
	cfg, _, err := loadConfig()
	if err != nil {
		return nil, nil, err
	}
	c, closeFn, err := core.OpenOffline(ctx, cfg.DBPath)
	if err != nil {
		return nil, nil, err
	}
	return offlineUsers{c}, func() { _ = closeFn() }, nil
}

// offlineUsers is usersBackend on a store opened by this process (--local): it acts
// as the local admin, with the core's own checks and audit.
type offlineUsers struct{ c *core.Core }

// ctx makes the calls act as the local admin (named, for the audit log, "local").
func (o offlineUsers) ctx(ctx context.Context) context.Context {
	c := model.LocalCaller()
	c.Remote = "cli --local"
	return model.WithCaller(ctx, c)
}

func v1Err(err error) error {
	if err == nil {
		return nil
	}
	return core.V1Error(err)
}

func (o offlineUsers) AddUser(ctx context.Context, name string, admin bool) (*client.User, error) {
	u, err := o.c.AddUser(o.ctx(ctx), name, admin)
	if err != nil {
		return nil, v1Err(err)
	}
	v := core.V1User(u)
	return &v, nil
}

func (o offlineUsers) Users(ctx context.Context) ([]client.User, error) {
	us, err := o.c.Users(o.ctx(ctx))
	return core.V1Users(us), v1Err(err)
}

func (o offlineUsers) RevokeUser(ctx context.Context, name string) error {
	return v1Err(o.c.RevokeUser(o.ctx(ctx), name))
}

func (o offlineUsers) CreateToken(ctx context.Context, user, label string) (*client.CreatedToken, error) {
	tok, t, err := o.c.CreateToken(o.ctx(ctx), user, label)
	if err != nil {
		return nil, v1Err(err)
	}
	return core.V1CreatedToken(tok, t), nil
}

func (o offlineUsers) Tokens(ctx context.Context, user string) ([]client.Token, error) {
	ts, err := o.c.Tokens(o.ctx(ctx), user)
	return core.V1Tokens(ts), v1Err(err)
}

func (o offlineUsers) RevokeToken(ctx context.Context, id string) error {
	return v1Err(o.c.RevokeToken(o.ctx(ctx), id))
}

func (o offlineUsers) Audit(ctx context.Context, user string, before int64, limit int) (*client.AuditPage, error) {
	if limit <= 0 {
		limit = 200
	}
	es, err := o.c.Audit(o.ctx(ctx), core.AuditQuery{User: user, BeforeID: before, Limit: limit + 1})
	if err != nil {
		return nil, v1Err(err)
	}
	p := &client.AuditPage{}
	if len(es) > limit {
		es = es[:limit]
		p.NextBefore = es[limit-1].ID
	}
	p.Entries = core.V1Audit(es)
	return p, nil
}

// withUsersBackend runs fn with the backend --local selects.
func withUsersBackend(cmd *cobra.Command, local bool, fn func(usersBackend) error) error {
	b, release, err := openUsersBackend(cmd.Context(), local)
	if err != nil {
		return err
	}
	defer release()
	return fn(b)
}

func newUsersCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "users",
		Short: "Manage the users of a shared core (admin): add, list, revoke",
		Example: `  mosaic users list
  mosaic users add alice
  mosaic users add admin --admin --local`,
		Long: `A shared core (team mode) has users, each with their own API tokens; a user sees and
acts on their own tasks only, an admin on everyone's. The laptop token
($XDG_CONFIG_HOME/mosaic/token) is the implicit admin "local".

Make the first admin with no server running, then give them a token:

  mosaic users add alice --admin --local
  mosaic token create --user alice --local

With a server running, the same commands (without --local) need an admin token.`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newUsersAddCmd(), newUsersListCmd(), newUsersRevokeCmd())
	return cmd
}

func newUsersAddCmd() *cobra.Command {
	var j jsonFlag
	var admin, local bool
	cmd := &cobra.Command{
		Use:   "add NAME [--admin]",
		Short: "Add a user (a-z, 0-9, '.', '_', '-'); give them a token with `mosaic token create --user NAME`",
		Example: `  mosaic users add alice
  mosaic users add bob --admin
  mosaic users add admin --admin --local`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withUsersBackend(cmd, local, func(b usersBackend) error {
				u, err := b.AddUser(cmd.Context(), args[0], admin)
				if err != nil {
					return err
				}
				if j.set {
					return j.print(cmd.OutOrStdout(), u)
				}
				kind := "user"
				if u.Admin {
					kind = "admin"
				}
				fmt.Fprintf(cmd.OutOrStdout(), "added %s %s; make them a token with `mosaic token create --user %s`\n", kind, u.Name, u.Name)
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&admin, "admin", false, "an admin acts on every user's work and manages users and tokens")
	cmd.Flags().BoolVar(&local, "local", false, localFlagHelp)
	addJSONFlag(cmd, &j, client.User{})
	return cmd
}

func newUsersListCmd() *cobra.Command {
	var j jsonFlag
	var local bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List users",
		Example: `  mosaic users list
  mosaic users list --json
  mosaic users list --jq '.[] | select(.admin) | .name'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return withUsersBackend(cmd, local, func(b usersBackend) error {
				us, err := b.Users(cmd.Context())
				if err != nil {
					return err
				}
				if j.set {
					return j.print(cmd.OutOrStdout(), us)
				}
				tw := table(cmd.OutOrStdout())
				fmt.Fprintln(tw, "NAME\tADMIN\tCREATED\tREVOKED")
				for _, u := range us {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", u.Name, yesNo(u.Admin), shortTime(u.CreatedAt), dash(shortTime(u.RevokedAt)))
				}
				return tw.Flush()
			})
		},
	}
	cmd.Flags().BoolVar(&local, "local", false, localFlagHelp)
	addJSONFlag(cmd, &j, []client.User{})
	addWideFlag(cmd, &j)
	return cmd
}

func newUsersRevokeCmd() *cobra.Command {
	var local bool
	cmd := &cobra.Command{
		Use:     "revoke NAME",
		Short:   "Revoke a user and all their tokens: their next request is refused (their tasks stay)",
		Example: `  mosaic users revoke alice`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withUsersBackend(cmd, local, func(b usersBackend) error {
				if err := b.RevokeUser(cmd.Context(), args[0]); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "revoked user %s and every token of theirs\n", args[0])
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&local, "local", false, localFlagHelp)
	return cmd
}

func newAuditCmd() *cobra.Command {
	var j jsonFlag
	var local bool
	var user string
	var limit int
	var before int64
	cmd := &cobra.Command{
		Use:   "audit [--user NAME]",
		Short: "Who did what: submissions, cancels, replans, users and tokens (admin), newest first",
		Example: `  mosaic audit
  mosaic audit --user alice --json
  mosaic audit --jq '.entries[] | select(.action == "task.cancel") | .target'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return withUsersBackend(cmd, local, func(b usersBackend) error {
				p, err := b.Audit(cmd.Context(), user, before, limit)
				if err != nil {
					return err
				}
				if j.set {
					return j.print(cmd.OutOrStdout(), p)
				}
				tw := table(cmd.OutOrStdout())
				fmt.Fprintln(tw, "TIME\tUSER\tACTION\tTARGET\tFROM\tDETAIL")
				for _, e := range p.Entries {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", shortTime(e.Time), e.User, e.Action, dash(e.Target), dash(e.Remote), dash(oneLine(e.Detail, 60)))
				}
				if err := tw.Flush(); err != nil {
					return err
				}
				if p.NextBefore > 0 {
					fmt.Fprintf(cmd.ErrOrStderr(), "older entries: mosaic audit --before %d\n", p.NextBefore)
				}
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&user, "user", "", "only this user's actions")
	cmd.Flags().IntVar(&limit, "limit", 0, "at most this many (default 200)")
	cmd.Flags().Int64Var(&before, "before", 0, "only entries older than this id (the hint printed after a full page)")
	cmd.Flags().BoolVar(&local, "local", false, localFlagHelp)
	addJSONFlag(cmd, &j, client.AuditPage{})
	addWideFlag(cmd, &j)
	return cmd
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// shortTime is a local time for a table, "" for the zero time.
func shortTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.Local().Format("2006-01-02 15:04")
}

// errNoToken is returned by token create when the answer lacks the token.
var errNoToken = errors.New("the core's answer holds no token")
