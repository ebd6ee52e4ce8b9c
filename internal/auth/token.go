// Package auth resolves Globus credentials for Mosaic: a web session (Sign in with
// Globus), a token bundle in MOSAIC_GLOBUS_TOKENS, a service identity
// (GLOBUS_COMPUTE_CLIENT_ID/_SECRET, client-credentials grant) or a cached CLI login
// (`mosaic login`, native-app flow with PKCE), in that order. Tokens are refreshed
// automatically; background callers never prompt, and missing or dead credentials
// produce errors wrapping errs.ErrNeedsLogin that say what to run.
//
// Wire formats follow globus/globus-sdk-python:
// src/globus_sdk/services/auth/client/base_login_client.py (token, revoke routes),
// src/globus_sdk/services/auth/flow_managers/native_app.py (authorize URL, PKCE),
// src/globus_sdk/services/auth/response/oauth.py (token response, other_tokens).
package auth

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"
)

// Globus resource servers and scopes.
const (
	// DefaultAuthURL is Globus Auth.
	DefaultAuthURL = "https://auth.globus.org"
	// ComputeScope is the Globus Compute scope (globus/globus-compute
	// compute_sdk/globus_compute_sdk/sdk/auth/scopes.py DEFAULT_SCOPE).
	ComputeScope = "https://auth.globus.org/scopes/facd7ccc-c5f4-42aa-916b-a0e270e2c2a9/all"
	// ComputeResourceServer is the resource server name Globus Auth reports for
	// ComputeScope (same file: resource_server="funcx_service").
	ComputeResourceServer = "funcx_service"
	// AuthResourceServer holds the OpenID scopes (userinfo).
	AuthResourceServer = "auth.globus.org"
	// AcademyExchangeResourceServer is the Globus Auth client id of Academy's
	// hosted exchange, its resource server (academy-agents/academy
	// academy/exchange/cloud/scopes.py DEFAULT_EXCHANGE_CLIENT_ID, the
	// resource_server of _AcademyExchangeScopes).
	AcademyExchangeResourceServer = "ca1e2fbf-4e73-40a6-b2ab-c9458e5fcf99"
	// AcademyExchangeScope is the scope HttpExchangeFactory asks Globus Auth
	// for (same file: f'https://auth.globus.org/scopes/{resource_server}/academy_exchange';
	// academy/exchange/cloud/login.py get_auth_headers requests it and sends
	// the access token as "Authorization: Bearer <token>").
	AcademyExchangeScope = "https://auth.globus.org/scopes/" + AcademyExchangeResourceServer + "/academy_exchange"
)

// LoginScopes are requested by `mosaic login` and web sign-in: identity for `mosaic
// auth`, Globus Compute, and Academy's hosted exchange (campaigns of exchange
// type academy). MOSAIC_GLOBUS_EXTRA_SCOPES adds more to `mosaic login`.
var LoginScopes = []string{"openid", "profile", "email", ComputeScope, AcademyExchangeScope}

// Token is one access token for one resource server. Its String, GoString and
// LogValue never show the secrets.
type Token struct {
	ResourceServer string `json:"resource_server"`
	AccessToken    string `json:"access_token"`
	RefreshToken   string `json:"refresh_token,omitempty"`
	Scope          string `json:"scope"`
	TokenType      string `json:"token_type,omitempty"`
	// ExpiresAt is Unix seconds (the SDK's expires_at_seconds); 0 means unknown.
	ExpiresAt int64 `json:"expires_at_seconds"`
}

// Expiry returns ExpiresAt as a time (zero when unknown).
func (t Token) Expiry() time.Time {
	if t.ExpiresAt == 0 {
		return time.Time{}
	}
	return time.Unix(t.ExpiresAt, 0).UTC()
}

// Expired reports whether the token expires within skew of now.
func (t Token) Expired(now time.Time, skew time.Duration) bool {
	return t.ExpiresAt != 0 && !now.Add(skew).Before(t.Expiry())
}

// Scopes splits Scope.
func (t Token) Scopes() []string { return strings.Fields(t.Scope) }

// String describes the token without its secrets.
func (t Token) String() string {
	return fmt.Sprintf("token(%s, scopes %q, expires %s, refreshable %t)", t.ResourceServer, t.Scope, t.Expiry().Format(time.RFC3339), t.RefreshToken != "")
}

// GoString is String, so %#v cannot leak the token either.
func (t Token) GoString() string { return t.String() }

// LogValue keeps secrets out of slog output.
func (t Token) LogValue() slog.Value {
	return slog.GroupValue(slog.String("resource_server", t.ResourceServer), slog.String("scope", t.Scope),
		slog.Time("expires", t.Expiry()), slog.Bool("refreshable", t.RefreshToken != ""))
}

// Identity is who a credential acts as (OIDC userinfo: sub, preferred_username).
type Identity struct {
	Sub      string `json:"sub,omitempty"`
	Username string `json:"preferred_username,omitempty"`
	Name     string `json:"name,omitempty"`
	Email    string `json:"email,omitempty"`
}

// String is the username, else the subject id.
func (i Identity) String() string {
	if i.Username != "" {
		return i.Username
	}
	return i.Sub
}

// Bundle is a set of tokens by resource server plus what is needed to refresh them.
type Bundle struct {
	// ClientID is the Globus Auth client that obtained the tokens (needed to refresh).
	ClientID string           `json:"client_id,omitempty"`
	Identity Identity         `json:"identity,omitzero"`
	Tokens   map[string]Token `json:"tokens"`
}

// String describes the bundle without secrets.
func (b *Bundle) String() string {
	if b == nil {
		return "bundle(nil)"
	}
	rs := make([]string, 0, len(b.Tokens))
	for k := range b.Tokens {
		rs = append(rs, k)
	}
	slices.Sort(rs)
	return fmt.Sprintf("bundle(client %s, identity %s, resource servers %v)", b.ClientID, b.Identity, rs)
}

// GoString is String.
func (b *Bundle) GoString() string { return b.String() }

// LogValue keeps secrets out of slog output.
func (b *Bundle) LogValue() slog.Value { return slog.StringValue(b.String()) }

// tokenResponse is Globus Auth's token response: the first token at top level, the
// others in other_tokens (globus_sdk/services/auth/response/oauth.py _init_rs_dict).
type tokenResponse struct {
	AccessToken    string          `json:"access_token"`
	RefreshToken   string          `json:"refresh_token"`
	Scope          string          `json:"scope"`
	ResourceServer string          `json:"resource_server"`
	TokenType      string          `json:"token_type"`
	ExpiresIn      int64           `json:"expires_in"`
	OtherTokens    []tokenResponse `json:"other_tokens"`
	// ExpiresAtSeconds appears in the SDK's by_resource_server form.
	ExpiresAtSeconds int64 `json:"expires_at_seconds"`
}

func (r tokenResponse) token(now time.Time) Token {
	t := Token{ResourceServer: r.ResourceServer, AccessToken: r.AccessToken, RefreshToken: r.RefreshToken,
		Scope: r.Scope, TokenType: r.TokenType, ExpiresAt: r.ExpiresAtSeconds}
	if t.ExpiresAt == 0 && r.ExpiresIn > 0 {
		t.ExpiresAt = now.Unix() + r.ExpiresIn
	}
	return t
}

// parseTokenResponse turns a token response body into tokens by resource server.
func parseTokenResponse(body []byte, now time.Time) (map[string]Token, error) {
	var r tokenResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("globus auth token response: %w", err)
	}
	out := map[string]Token{}
	for _, t := range append([]tokenResponse{r}, r.OtherTokens...) {
		if t.AccessToken == "" || t.ResourceServer == "" {
			return nil, fmt.Errorf("globus auth token response: a token without access_token or resource_server")
		}
		out[t.ResourceServer] = t.token(now)
	}
	return out, nil
}

// ParseBundle reads a token bundle in any of the forms people have at hand:
// Mosaic's own file format ({"tokens": {rs: token}}), a raw Globus Auth token response
// (access_token, resource_server, other_tokens), or the SDK's by_resource_server
// mapping ({rs: {access_token, expires_at_seconds, ...}}).
func ParseBundle(data []byte, now time.Time) (*Bundle, error) {
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(data, &probe); err != nil {
		return nil, fmt.Errorf("token bundle is not a JSON object: %w", err)
	}
	var b Bundle
	switch {
	case probe["tokens"] != nil:
		if err := json.Unmarshal(data, &b); err != nil {
			return nil, fmt.Errorf("token bundle: %w", err)
		}
	case probe["access_token"] != nil:
		toks, err := parseTokenResponse(data, now)
		if err != nil {
			return nil, err
		}
		b.Tokens = toks
		if c, ok := probe["client_id"]; ok {
			_ = json.Unmarshal(c, &b.ClientID)
		}
	default:
		var byRS map[string]tokenResponse
		if err := json.Unmarshal(data, &byRS); err != nil {
			return nil, fmt.Errorf("token bundle: want Mosaic's {\"tokens\": ...}, a Globus token response, or a by_resource_server map: %w", err)
		}
		b.Tokens = map[string]Token{}
		for rs, t := range byRS {
			if t.ResourceServer == "" {
				t.ResourceServer = rs
			}
			b.Tokens[rs] = t.token(now)
		}
	}
	if len(b.Tokens) == 0 {
		return nil, fmt.Errorf("token bundle holds no tokens")
	}
	for rs, t := range b.Tokens {
		if rs == "" {
			return nil, fmt.Errorf("token bundle: a token without a resource server name")
		}
		if t.AccessToken == "" && t.RefreshToken == "" {
			return nil, fmt.Errorf("token bundle: %s has neither access_token nor refresh_token", rs)
		}
		if t.ResourceServer != rs {
			t.ResourceServer = rs
			b.Tokens[rs] = t
		}
	}
	return &b, nil
}
