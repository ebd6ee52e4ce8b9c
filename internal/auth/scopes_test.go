package auth_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/mosaic-hpc/mosaic/internal/auth"
	"github.com/mosaic-hpc/mosaic/internal/errs"
)

func TestResourceServerOf(t *testing.T) {
	for scope, want := range map[string]string{
		"openid":                  auth.AuthResourceServer,
		"email":                   auth.AuthResourceServer,
		auth.ComputeScope:         auth.ComputeResourceServer,
		auth.AcademyExchangeScope: auth.AcademyExchangeResourceServer,
		"https://auth.globus.org/scopes/0e5e1d3c-0000-4000-8000-000000000001/academy_exchange":                    "0e5e1d3c-0000-4000-8000-000000000001",
		"https://auth.globus.org/scopes/transfer.api.globus.org/all":                                              "transfer.api.globus.org",
		"https://auth.globus.org/scopes/abc/all[*https://auth.globus.org/scopes/def/data_access]":                 "abc",
		"https://auth.globus.org/scopes/ca1e2fbf-4e73-40a6-b2ab-c9458e5fcf99/academy_exchange:urn-like-suffix-ok": auth.AcademyExchangeResourceServer,
	} {
		if got, err := auth.ResourceServerOf(scope); err != nil || got != want {
			t.Errorf("%s: %q %v, want %q", scope, got, err, want)
		}
	}
	for _, bad := range []string{"", "academy_exchange", "http://auth.globus.org/scopes/x/all", "https://auth.globus.org/scopes//all",
		"https://auth.globus.org/scopes/x", "https://auth.globus.org/scopes/x/", "https://evil.example/scopes/x/all",
		"https://auth.globus.org/scopes/a b/all", "https://auth.globus.org/scopes/x/all extra", "https://auth.globus.org/scopes/x/y/z"} {
		if rs, err := auth.ResourceServerOf(bad); err == nil {
			t.Errorf("%q accepted as a scope (resource server %q)", bad, rs)
		}
	}
}

func FuzzResourceServerOf(f *testing.F) {
	for _, s := range []string{auth.ComputeScope, auth.AcademyExchangeScope, "openid", "https://auth.globus.org/scopes/x/y[z]", "https://auth.globus.org/scopes/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, scope string) {
		rs, err := auth.ResourceServerOf(scope)
		if err != nil {
			return
		}
		if rs == "" || strings.ContainsAny(rs, " /\t\n") {
			t.Fatalf("%q -> resource server %q", scope, rs)
		}
	})
}

// TestLoginAsksForTheAcademyExchange: `mosaic login` asks for Academy's
// exchange scope (and MOSAIC_GLOBUS_EXTRA_SCOPES), so that its token is in
// the CLI login for campaigns of exchange type academy.
func TestLoginAsksForTheAcademyExchange(t *testing.T) {
	fx := setup(t)
	const extra = "https://auth.globus.org/scopes/0e5e1d3c-0000-4000-8000-000000000001/academy_exchange"
	fx.env.set(auth.EnvExtraScopes, extra)
	fx.login(t)
	ctx := context.Background()
	for _, c := range []struct{ scope, rs string }{{auth.AcademyExchangeScope, ""}, {extra, ""}, {extra, "0e5e1d3c-0000-4000-8000-000000000001"}} {
		tok, src, err := fx.res.ScopedToken(ctx, c.scope, c.rs)
		if err != nil || src != auth.SourceCLI || !strings.HasPrefix(tok.AccessToken, "fake-at-") || tok.Scope != c.scope {
			t.Errorf("%s: %v from %s, %v", c.scope, tok, src, err)
		}
	}
	// A scope the login was not granted: the error says to sign in again.
	_, _, err := fx.res.ScopedToken(ctx, "https://auth.globus.org/scopes/ffffffff-0000-4000-8000-000000000009/academy_exchange", "")
	if !errors.Is(err, errs.ErrNeedsLogin) || !strings.Contains(err.Error(), "run `mosaic login`") {
		t.Errorf("ungranted scope: %v", err)
	}
	if _, _, err := fx.res.ScopedToken(ctx, "not-a-scope", ""); err == nil {
		t.Error("a malformed scope was accepted")
	}
}

// TestServiceIdentityGetsTheExchangeScope: a service identity (whose first
// grant is Globus Compute's) gets an exchange token by one more
// client-credentials grant for that scope, then reuses it.
func TestServiceIdentityGetsTheExchangeScope(t *testing.T) {
	fx := setup(t)
	fx.env.set(auth.EnvServiceID, svcID)
	fx.env.set(auth.EnvServiceSecret, svcSecret)
	ctx := context.Background()
	tok, src, err := fx.res.ScopedToken(ctx, auth.AcademyExchangeScope, "")
	if err != nil || src != auth.SourceService || tok.ResourceServer != auth.AcademyExchangeResourceServer || tok.AccessToken == "" {
		t.Fatalf("service identity: %v from %s, %v", tok, src, err)
	}
	n := len(fx.fake.Minted())
	again, _, err := fx.res.ScopedToken(ctx, auth.AcademyExchangeScope, "")
	if err != nil || again.AccessToken != tok.AccessToken || len(fx.fake.Minted()) != n {
		t.Errorf("second call: %v (minted %d more)", err, len(fx.fake.Minted())-n)
	}
	if c, _, err := fx.res.Token(ctx, auth.ComputeResourceServer); err != nil || c.AccessToken == "" {
		t.Errorf("the Compute token is still there: %v", err)
	}
	if strings.Contains(fx.logs.String(), tok.AccessToken) {
		t.Error("the exchange token is in the resolver's log")
	}
	// A wrong secret: a LoginError naming what to check, never the secret.
	fx.env.set(auth.EnvServiceSecret, "wrong-secret")
	fx.res.Invalidate()
	_, _, err = fx.res.ScopedToken(ctx, auth.AcademyExchangeScope, "")
	if !errors.Is(err, errs.ErrNeedsLogin) || strings.Contains(err.Error(), "wrong-secret") {
		t.Errorf("wrong secret: %v", err)
	}
}
