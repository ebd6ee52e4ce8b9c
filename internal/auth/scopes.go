package auth

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// EnvExtraScopes names more scopes (space-separated) for `mosaic login` and the
// service identity to ask for, e.g. the scope of a self-hosted Academy exchange.
const EnvExtraScopes = "MOSAIC_GLOBUS_EXTRA_SCOPES"

// scopeURL is a Globus scope string "https://auth.globus.org/scopes/<resource
// server>/<name>" (globus-sdk scopes/builder.py: urn or URL forms; Mosaic uses
// the URL form only), optionally with dependent scopes in "[...]".
var scopeURL = regexp.MustCompile(`^https://auth\.globus\.org/scopes/([A-Za-z0-9._-]{1,128})/([A-Za-z0-9._:-]{1,128})(\[.*\])?$`)

// ResourceServerOf returns the resource server Globus Auth reports for a scope
// in its token responses: auth.globus.org for the OpenID scopes, funcx_service
// for Globus Compute's (its resource server has a name of its own), else the
// resource server part of the scope URL (for a client's own scope, the
// client id: academy/exchange/cloud/scopes.py). It fails on anything that is
// not a scope string.
func ResourceServerOf(scope string) (string, error) {
	switch scope {
	case "openid", "profile", "email":
		return AuthResourceServer, nil
	case ComputeScope:
		return ComputeResourceServer, nil
	}
	m := scopeURL.FindStringSubmatch(scope)
	if m == nil {
		return "", fmt.Errorf("%q is not a Globus scope (want https://auth.globus.org/scopes/RESOURCE_SERVER/NAME)", scope)
	}
	return m[1], nil
}

// loginScopes are LoginScopes plus those of MOSAIC_GLOBUS_EXTRA_SCOPES.
func (r *Resolver) loginScopes() []string {
	out := slices.Clone(LoginScopes)
	for _, s := range strings.Fields(r.getenv(EnvExtraScopes)) {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// ScopedToken returns a valid access token for scope from the credential
// chain (web session, MOSAIC_GLOBUS_TOKENS, service identity, CLI login), and
// where it came from. rs is the scope's resource server ("" = derived with
// ResourceServerOf). A service identity that has no token for it yet runs one
// client-credentials grant for that scope; the other sources must have been
// granted it, else the error (a *LoginError) says to sign in again.
func (r *Resolver) ScopedToken(ctx context.Context, scope, rs string) (Token, Source, error) {
	if rs == "" {
		var err error
		if rs, err = ResourceServerOf(scope); err != nil {
			return Token{}, "", err
		}
	}
	t, src, err := r.Token(ctx, rs)
	var le *LoginError
	if err == nil || src != SourceService || !errors.As(err, &le) {
		return t, src, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	b := r.service
	if b == nil {
		return Token{}, src, err
	}
	toks, gerr := r.client(b.ClientID, r.getenv(EnvServiceSecret)).ClientCredentials(ctx, []string{scope})
	if gerr != nil {
		return Token{}, src, needsLogin(SourceService, fmt.Errorf("client-credentials grant for %s: %w", scope, gerr))
	}
	nt, ok := toks[rs]
	if !ok || nt.AccessToken == "" {
		return Token{}, src, needsLogin(SourceService, fmt.Errorf("the client-credentials grant for %s returned no token for resource server %s; set exchange.resource_server in the campaign to the one Globus Auth reports", scope, rs))
	}
	b.Tokens[rs] = nt
	return nt, src, nil
}
