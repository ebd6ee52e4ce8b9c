package core

import (
	"context"
	"os"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/auth"
	"github.com/mosaic-hpc/mosaic/internal/transport/globus"
)

// Globus is one core's Globus Compute plumbing, built once from its configuration and
// passed down to every kind-globus provider: the credential resolver (the web
// sign-in, when served, shares it), one client (so the shell function is registered
// once per core), and one set of endpoint circuit breakers. Nothing of it is
// process-wide: two cores in one process never share a client, tokens or a breaker.
type Globus struct {
	Resolver *auth.Resolver
	Client   *globus.Client
	Breakers *globus.Breakers
}

// NewGlobus reads the Globus settings from getenv, once (nil: the process
// environment): MOSAIC_GLOBUS_COMPUTE_URL, the credential variables auth.Resolver
// documents, and XDG_CONFIG_HOME for the stored tokens.
func NewGlobus(getenv func(string) string) *Globus {
	if getenv == nil {
		getenv = os.Getenv
	}
	r := auth.NewResolver(getenv)
	return &Globus{Resolver: r, Client: globus.NewClient(getenv, r), Breakers: &globus.Breakers{}}
}

// ExchangeBearer returns a Globus access token for an exchange's scope (rs: its
// resource server, "" = the one in the scope's URL) from the credential chain:
// web session, MOSAIC_GLOBUS_TOKENS, service identity (one client-credentials
// grant for the scope), CLI login; refreshed when it is about to expire. It
// returns the token's expiry too (zero when unknown). The error says what to
// run when there is none.
func (g *Globus) ExchangeBearer(ctx context.Context, scope, rs string) (string, time.Time, error) {
	t, _, err := g.Resolver.ScopedToken(ctx, scope, rs)
	if err != nil {
		return "", time.Time{}, err
	}
	return t.AccessToken, t.Expiry(), nil
}
