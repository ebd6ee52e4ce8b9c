// Package connect builds the transport a catalog system names: the one place that
// turns a sites.yaml entry (kind, host, ssh options, endpoint) into a
// transport.Transport, shared by the hpc provider and the campaign launcher so both
// reach a site the same way (ssh options, identity, control path). Adding a transport
// is a package under internal/transport implementing transport.Transport and one case
// in New (plus its kind name in internal/site's catalog validation).
package connect

import (
	"fmt"
	"log/slog"

	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/site"
	"github.com/mosaic-hpc/mosaic/internal/transport"
	"github.com/mosaic-hpc/mosaic/internal/transport/globus"
)

// Options are what a transport needs beyond the catalog entry. Nothing here is read
// from the process environment: the caller (core.Open, a command) passes it in.
type Options struct {
	// Limits bound each call (timeout, output cap); zero values mean the defaults.
	Limits transport.Limits
	// LocalEnv is extra environment of a kind-local transport's commands (SLURM_CONF).
	LocalEnv []string
	// Globus is the Globus Compute client of a kind-globus transport (required for
	// that kind; one client per core, so the shell function is registered once).
	Globus *globus.Client
	// Breakers hand out kind-globus endpoints' circuit breakers (one set per core);
	// nil gives the transport a breaker of its own.
	Breakers *globus.Breakers
	// Log receives a globus transport's task ids and errors (never tokens).
	Log *slog.Logger
}

// Kinds are the catalog kinds New builds a transport for (every kind but sim).
func Kinds() []string { return []string{site.KindSSH, site.KindLocal, site.KindGlobus} }

// Supports reports whether New builds a transport for kind.
func Supports(kind string) bool {
	for _, k := range Kinds() {
		if k == kind {
			return true
		}
	}
	return false
}

// New builds the transport of a catalog system of kind ssh, local or globus.
func New(sys site.System, o Options) (transport.Transport, error) {
	switch sys.Kind {
	case site.KindSSH:
		if sys.Host == "" {
			return nil, fmt.Errorf("system %s: kind ssh needs host in sites.yaml (a hostname or ~/.ssh/config alias)", sys.Name)
		}
		s := &transport.SSH{Host: sys.Host, User: sys.User, Limits: o.Limits}
		if so := sys.SSH; so != nil {
			s.Port, s.IdentityFile, s.ProxyJump, s.ConfigFile, s.Options = so.Port, so.IdentityFile, so.ProxyJump, so.ConfigFile, so.Options
			if so.ConnectTimeout != "" {
				d, err := model.ParseDuration(so.ConnectTimeout)
				if err != nil {
					return nil, fmt.Errorf("system %s: ssh.connect_timeout: %w", sys.Name, err)
				}
				s.ConnectTimeout = d.D()
			}
		}
		return s, nil
	case site.KindLocal:
		return &transport.Local{Env: append([]string(nil), o.LocalEnv...), Limits: o.Limits}, nil
	case site.KindGlobus:
		if !globus.ValidEndpointID(sys.Endpoint) {
			return nil, fmt.Errorf("system %s: kind globus needs endpoint: <Globus Compute endpoint UUID>, got %q; `mosaic endpoints` lists yours", sys.Name, sys.Endpoint)
		}
		if o.Globus == nil {
			return nil, fmt.Errorf("system %s: kind globus needs a Globus Compute client; this program did not configure one (report it: the core builds one from MOSAIC_GLOBUS_COMPUTE_URL and your Globus sign-in)", sys.Name)
		}
		g := globus.New(sys.Endpoint, o.Globus)
		g.Limits, g.Log = o.Limits, o.Log
		if o.Breakers != nil {
			g.Breaker = o.Breakers.For(sys.Endpoint)
		}
		return g, nil
	}
	return nil, fmt.Errorf("system %s: kind %q is not an HPC kind (want ssh, local or globus)", sys.Name, sys.Kind)
}

// Endpoint names where a system's commands run, for messages and recorded output
// locations: user@host (or host) for ssh, localhost for local, the endpoint UUID for
// globus.
func Endpoint(sys site.System) string {
	switch sys.Kind {
	case site.KindSSH:
		if sys.User != "" {
			return sys.User + "@" + sys.Host
		}
		return sys.Host
	case site.KindLocal:
		return "localhost"
	}
	return sys.Endpoint
}
