// Package hpc is the provider for real batch systems: a site catalog entry, a transport
// (this host or OpenSSH) and a dialect (Slurm or PBS) make a provider.Provider. It also
// offers read-only "look-around" helpers (Env, Exec, PutFile) for assistants that need
// to inspect a site before placing work there.
package hpc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/dialect"
	"github.com/mosaic-hpc/mosaic/internal/dialect/dialects"
	"github.com/mosaic-hpc/mosaic/internal/provider"
	"github.com/mosaic-hpc/mosaic/internal/site"
	"github.com/mosaic-hpc/mosaic/internal/transport"
	"github.com/mosaic-hpc/mosaic/internal/transport/connect"
	"github.com/mosaic-hpc/mosaic/internal/transport/globus"
)

// MaxIDsPerCall bounds how many job ids go into one status or cancel command line.
const MaxIDsPerCall = 500

// Provider is one HPC system reached through a transport.
type Provider struct {
	sys      site.System
	kind     string
	endpoint string
	tr       transport.Transport
	d        dialect.Dialect
	now      func() time.Time
	log      *slog.Logger

	protected []string        // the core's own files and directories (WithProtected)
	conn      connect.Options // how New builds the transport (WithLocalEnv, WithLimits, WithGlobus*)

	owners OwnerLookup // whose jobs are whose (WithOwners; identity.go)

	limitsOnly bool // the queue plan ignores predicted runtimes (WithRuntimePredictions)

	submitted *submissions // recent submissions, shared with the per-owner providers (submitted.go)

	mu           sync.Mutex
	subs         map[string]*Provider // per-owner providers (identity.go), built on first use
	user         string
	noAccounting bool // the dialect's primary status query failed with ErrFallback once
}

var (
	_ provider.Provider  = (*Provider)(nil)
	_ provider.TagFinder = (*Provider)(nil)
	_ provider.Closer    = (*Provider)(nil)

	_ provider.SubmissionExpecter = (*Provider)(nil)
)

// Option adjusts a Provider.
type Option func(*Provider)

// WithTransport is used instead of the transport New would build from the catalog
// (tests, wrappers, a campaign's own connection).
func WithTransport(t transport.Transport) Option { return func(p *Provider) { p.tr = t } }

// WithDialect is used instead of the dialect the catalog's dialect field names.
func WithDialect(d dialect.Dialect) Option { return func(p *Provider) { p.d = d } }

// WithLocalEnv adds environment variables to a kind-local transport (e.g. SLURM_CONF).
func WithLocalEnv(env ...string) Option {
	return func(p *Provider) { p.conn.LocalEnv = append(p.conn.LocalEnv, env...) }
}

// WithLimits sets per-call timeout and output cap of the catalog-built transport.
func WithLimits(lim transport.Limits) Option { return func(p *Provider) { p.conn.Limits = lim } }

// WithGlobusClient sets the Globus Compute client of a kind-globus transport; kind
// globus needs one (the core passes the one it built for all its providers).
func WithGlobusClient(c *globus.Client) Option { return func(p *Provider) { p.conn.Globus = c } }

// WithGlobusBreakers sets where a kind-globus transport gets its endpoint's circuit
// breaker (the core's set, shared by its providers and no one else's).
func WithGlobusBreakers(bs *globus.Breakers) Option {
	return func(p *Provider) { p.conn.Breakers = bs }
}

// WithProtected names the core's own files and directories (token, store, config
// and env files, ssh identity files), absolute paths on this host. On a local site
// look-around never reads them, nor searches a tree containing them. The core passes
// what it resolved from its configuration, which the process environment need not
// hold (--env-file, $XDG_CONFIG_HOME/mosaic/env).
func WithProtected(paths ...string) Option {
	return func(p *Provider) { p.protected = append(p.protected, paths...) }
}

// WithRuntimePredictions turns the queue plan's predicted runtimes on (the default)
// or off: off, every job is planned for its time limit, as the site's scheduler plans
// (estimates.go, applyPlan).
func WithRuntimePredictions(on bool) Option { return func(p *Provider) { p.limitsOnly = !on } }

// WithLogger sets the logger (default slog.Default()); the provider adds the system's
// name to every line itself, so l should not carry it.
func WithLogger(l *slog.Logger) Option { return func(p *Provider) { p.log = l } }

// New builds a provider for a catalog system of kind ssh, local or globus. Options
// are applied first; the transport is then built from the catalog entry by
// connect.New (unless WithTransport gave one), and the dialect by dialects.For
// (unless WithDialect did). Kind globus needs WithGlobusClient.
func New(sys site.System, opts ...Option) (*Provider, error) {
	p := &Provider{sys: sys, kind: sys.Kind, now: time.Now, log: slog.Default(), user: sys.User, submitted: &submissions{}}
	for _, o := range opts {
		o(p)
	}
	p.log = p.log.With("system", sys.Name) // every line names its system, once (the caller's logger does not)
	if !connect.Supports(sys.Kind) {
		return nil, fmt.Errorf("system %s: kind %q is not an HPC kind (want one of %s)", sys.Name, sys.Kind, strings.Join(connect.Kinds(), ", "))
	}
	p.endpoint = connect.Endpoint(sys)
	if p.tr == nil {
		if p.conn.Log == nil {
			p.conn.Log = p.log
		}
		tr, err := connect.New(sys, p.conn)
		if err != nil {
			return nil, err
		}
		p.tr = tr
	}
	if p.d == nil {
		d, err := dialects.For(sys)
		if err != nil {
			return nil, err
		}
		p.d = d
	}
	return p, nil
}

// System is the catalog name.
func (p *Provider) System() string { return p.sys.Name }

// Kind is ssh, local or globus.
func (p *Provider) Kind() string { return p.kind }

// Endpoint is the login host or Globus Compute endpoint id.
func (p *Provider) Endpoint() string { return p.endpoint }

// Transport returns the transport the provider runs its commands through.
func (p *Provider) Transport() transport.Transport { return p.tr }

// Dialect returns the provider's dialect.
func (p *Provider) Dialect() dialect.Dialect { return p.d }

// Close ends the SSH multiplexing master, if any.
func (p *Provider) Close() error {
	p.mu.Lock()
	subs := p.subs
	p.subs = nil
	p.mu.Unlock()
	var errs []error
	for _, q := range subs {
		errs = append(errs, q.Close())
	}
	if c, ok := p.tr.(interface{ Close() error }); ok {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

// run executes argv and converts the result for the dialect. Transport errors are
// returned wrapped with the system name.
func (p *Provider) run(ctx context.Context, argv []string, stdin io.Reader) (dialect.Output, error) {
	res, err := p.tr.Run(ctx, argv, stdin)
	if err != nil {
		return dialect.Output{}, fmt.Errorf("%s: %s: %w", p.sys.Name, argv[0], err)
	}
	return dialect.Output{Stdout: res.Stdout, Stderr: res.Stderr, ExitCode: res.ExitCode}, nil
}

// User returns the login user on the site, asking it once (`id -un`) if the catalog
// does not say.
func (p *Provider) User(ctx context.Context) (string, error) {
	p.mu.Lock()
	u := p.user
	p.mu.Unlock()
	if u != "" {
		return u, nil
	}
	out, err := p.run(ctx, []string{"id", "-un"}, nil)
	if err != nil {
		return "", err
	}
	if out.ExitCode != 0 {
		return "", fmt.Errorf("%s: id -un: %s", p.sys.Name, strings.TrimSpace(string(out.Stderr)))
	}
	u = strings.TrimSpace(string(out.Stdout))
	p.mu.Lock()
	p.user = u
	p.mu.Unlock()
	return u, nil
}

// workDir is the site directory for Mosaic's files.
func (p *Provider) workDir() (string, error) {
	if p.sys.WorkDir == "" {
		return "", fmt.Errorf("system %s has no workdir in the catalog; add `workdir: /path/you/can/write` to submit jobs", p.sys.Name)
	}
	if !path.IsAbs(p.sys.WorkDir) {
		return "", fmt.Errorf("system %s: workdir %q must be an absolute path", p.sys.Name, p.sys.WorkDir)
	}
	return path.Clean(p.sys.WorkDir), nil
}

// jobFiles are the site paths for a tag: <workdir>/mosaic/<tag>{<the dialect's
// ScriptExt>,.out,.err}.
func (p *Provider) jobFiles(tag string) (dialect.JobFiles, error) {
	wd, err := p.workDir()
	if err != nil {
		return dialect.JobFiles{}, err
	}
	if tag == "" || strings.ContainsAny(tag, "/\x00") || tag == "." || tag == ".." {
		return dialect.JobFiles{}, fmt.Errorf("job tag %q cannot be used as a file name", tag)
	}
	dir := path.Join(wd, "mosaic")
	return dialect.JobFiles{Script: path.Join(dir, tag+p.d.ScriptExt()), Stdout: path.Join(dir, tag+".out"), Stderr: path.Join(dir, tag+".err")}, nil
}

// upload writes data to an absolute site path, creating its directory. The shell
// snippet is constant; the paths travel as positional arguments.
func (p *Provider) upload(ctx context.Context, dst string, data []byte) error {
	out, err := p.run(ctx, []string{"sh", "-c", `umask 077 && mkdir -p "$1" && cat > "$2"`, "sh", path.Dir(dst), dst}, bytes.NewReader(data))
	if err != nil {
		return err
	}
	if out.ExitCode != 0 {
		// The login node's own failures (EAGAIN on fork, a full disk) classified as the
		// dialect's commands are: a busy login node is transient.
		return dialect.Mark(p.d, out, fmt.Errorf("%s: upload %s: %s", p.sys.Name, dst, strings.TrimSpace(string(out.Stderr))))
	}
	return nil
}

func chunks(ids []string, n int) [][]string {
	var out [][]string
	for len(ids) > n {
		out = append(out, ids[:n])
		ids = ids[n:]
	}
	if len(ids) > 0 {
		out = append(out, ids)
	}
	return out
}

// Version asks the site for its batch system's version (`sinfo --version`,
// `qstat --version`).
func (p *Provider) Version(ctx context.Context) (string, error) {
	out, err := p.run(ctx, p.d.VersionCommand(), nil)
	if err != nil {
		return "", err
	}
	if out.ExitCode != 0 {
		return "", fmt.Errorf("%s: %s: %s", p.sys.Name, strings.Join(p.d.VersionCommand(), " "), strings.TrimSpace(string(out.Stderr)))
	}
	v, err := p.d.ParseVersion(out.Stdout)
	if err != nil {
		return "", fmt.Errorf("%s: %w", p.sys.Name, err)
	}
	return v, nil
}
