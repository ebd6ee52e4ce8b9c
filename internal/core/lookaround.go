package core

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/mosaic-hpc/mosaic/internal/provider"
	"github.com/mosaic-hpc/mosaic/internal/provider/hpc"
)

// Look-around types, re-exported for surfaces.
type (
	SiteEnv    = hpc.SiteEnv
	ExecResult = hpc.ExecResult
	// RefusedError is a look-around request refused by Mosaic's policy or by the
	// site's own check; its Kind says which 4xx fits.
	RefusedError = hpc.RefusedError
	RefusalKind  = hpc.RefusalKind
)

// Refusal kinds (see hpc.RefusalKind).
const (
	RefusedInvalid   = hpc.RefusedInvalid
	RefusedForbidden = hpc.RefusedForbidden
	RefusedConflict  = hpc.RefusedConflict
	RefusedTooLarge  = hpc.RefusedTooLarge
)

// lookArounder is implemented by providers that can inspect a login node.
type lookArounder interface {
	Env(ctx context.Context) (hpc.SiteEnv, error)
	Exec(ctx context.Context, argv []string) (hpc.ExecResult, error)
	PutFile(ctx context.Context, name string, data []byte) (string, error)
}

func (c *Core) lookAround(ctx context.Context, system string) (lookArounder, string, error) {
	// Look-around runs commands on a login node under the core's own site identity,
	// not the caller's (docs/SECURITY.md, "Users and tokens"), so only an admin may.
	if err := requireAdmin(ctx, "look-around on a login node (env, exec, put-file), which runs under the core's site identity,"); err != nil {
		return nil, "", err
	}
	sys, ok := c.cat.System(system)
	if !ok {
		return nil, "", c.unknownSystem(system)
	}
	p, ok := c.collector.Provider(sys.Name)
	if !ok {
		return nil, "", c.unknownSystem(system)
	}
	la, ok := p.(lookArounder)
	if !ok {
		return nil, "", fmt.Errorf("%s is a %s system; look-around (env, exec, put-file) needs a login node reached over ssh or locally: %w",
			sys.Name, p.Kind(), ErrInvalid)
	}
	return la, sys.Name, nil
}

// SystemEnv probes a login node: host, workdir, python/torch, modules, containers, accounts.
func (c *Core) SystemEnv(ctx context.Context, system string) (*SiteEnv, error) {
	la, name, err := c.lookAround(ctx, system)
	if err != nil {
		return nil, err
	}
	c.audit(ctx, "site.env", name, "")
	env, err := la.Env(ctx)
	if err != nil {
		return nil, siteErr(ctx, name, err)
	}
	return &env, nil
}

// Exec runs one read-only look-around command (an allowlisted program, no shell) on a
// system's login node. The command line is split on whitespace. The provider decides
// by what the command can read (hpc.CheckExec, then the same rules on the site after
// resolving symlinks); a refusal is a *RefusedError wrapped with ErrInvalid.
func (c *Core) Exec(ctx context.Context, system, command string) (*ExecResult, error) {
	la, name, err := c.lookAround(ctx, system)
	if err != nil {
		return nil, err
	}
	argv := strings.Fields(command)
	if len(argv) == 0 {
		return nil, fmt.Errorf("%w: refused: empty command; give one, e.g. \"sinfo -s\"", ErrInvalid)
	}
	c.audit(ctx, "site.exec", name, clipDetail(strings.Join(argv, " ")))
	res, err := la.Exec(ctx, argv)
	if err != nil {
		if errors.Is(err, hpc.ErrRefused) {
			return nil, fmt.Errorf("%w: %s: %w", ErrInvalid, name, err)
		}
		return nil, siteErr(ctx, name, err)
	}
	return &res, nil
}

// PutFile stages a small file (at most 2 MiB) into the system's workdir.
func (c *Core) PutFile(ctx context.Context, system, name string, data []byte) (string, error) {
	la, sysName, err := c.lookAround(ctx, system)
	if err != nil {
		return "", err
	}
	if len(data) > hpc.MaxPutFile {
		return "", fmt.Errorf("%w: %w", ErrInvalid, &RefusedError{Kind: RefusedTooLarge,
			Reason: fmt.Sprintf("%d bytes is over the 2 MiB limit for put-file; stage large files with the site's transfer tools", len(data))})
	}
	c.audit(ctx, "site.put-file", sysName, clipDetail(fmt.Sprintf("%s (%d bytes)", name, len(data))))
	p, err := la.PutFile(ctx, name, data)
	if err != nil {
		// Refusals by Mosaic's checks and by the site's (symlinks out of the workdir,
		// a directory in the way) are typed, so surfaces answer 4xx with the reason.
		if errors.Is(err, hpc.ErrRefused) {
			return "", fmt.Errorf("%w: %w", ErrInvalid, err)
		}
		return "", siteErr(ctx, sysName, err)
	}
	return p, nil
}

// siteErr names the system in a provider's error and classifies it: unreachable
// (ErrSiteDown, and a briefly busy site, ErrTransient: 503), credentials refused
// (ErrNeedsLogin: 502), or any other failure of a site that was reached, marked
// ErrSiteFailed (502). An error after the caller's ctx ended is the caller's (a client
// that went away), not the site's: it stays unmarked.
func siteErr(ctx context.Context, system string, err error) error {
	switch {
	case errors.Is(err, provider.ErrSiteDown):
		return fmt.Errorf("%s: %w (the site is unreachable; check `mosaic status`)", system, err)
	case errors.Is(err, provider.ErrTransient), errors.Is(err, provider.ErrNeedsLogin), ctx.Err() != nil:
		return fmt.Errorf("%s: %w", system, err)
	}
	return fmt.Errorf("%s: %w (%w; check it with `mosaic status` and `mosaic env %s`)", system, err, ErrSiteFailed, system)
}

// clipDetail bounds an audit detail taken from a request to 300 characters of valid UTF-8.
func clipDetail(s string) string {
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return strings.ToValidUTF8(s, "?")
}
