package auth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/errs"
)

// Source names where a credential came from.
type Source string

// Credential sources, in resolution order.
const (
	SourceWeb     Source = "web-session"
	SourceEnv     Source = "MOSAIC_GLOBUS_TOKENS"
	SourceService Source = "service-identity"
	SourceCLI     Source = "cli-login"
)

// Environment variables read by the resolver.
const (
	EnvTokens          = "MOSAIC_GLOBUS_TOKENS"
	EnvServiceID       = "GLOBUS_COMPUTE_CLIENT_ID"
	EnvServiceSecret   = "GLOBUS_COMPUTE_CLIENT_SECRET"
	EnvWebClientID     = "GLOBUS_CLIENT_ID"
	EnvWebClientSecret = "GLOBUS_CLIENT_SECRET"
	EnvNativeClientID  = "MOSAIC_GLOBUS_NATIVE_CLIENT_ID"
	EnvAuthURL         = "MOSAIC_GLOBUS_AUTH_URL"
	EnvPublicURL       = "MOSAIC_PUBLIC_URL"
)

// DefaultNativeClientID is the Globus Auth native-app client `mosaic login` uses when
// MOSAIC_GLOBUS_NATIVE_CLIENT_ID is unset. Empty until Mosaic registers one: users
// register a "thick client" at https://app.globus.org/settings/developers.
var DefaultNativeClientID = ""

// refreshSkew refreshes tokens this long before they expire.
const refreshSkew = time.Minute

// LoginError means the credentials are missing, expired or revoked. It wraps
// errs.ErrNeedsLogin (so the collector shows needs-login) and says what to run.
type LoginError struct {
	Source Source
	// Action is what the user should do, e.g. "run `mosaic login`".
	Action string
	Err    error
}

func (e *LoginError) Error() string {
	s := "Globus credentials"
	if e.Source != "" {
		s += " (" + string(e.Source) + ")"
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s + "; " + e.Action
}

// Unwrap returns ErrNeedsLogin and the cause.
func (e *LoginError) Unwrap() []error { return []error{errs.ErrNeedsLogin, e.Err} }

// Resolver finds the credential to use, refreshing it when needed. It never prompts.
// The zero value is not usable; build one with NewResolver.
type Resolver struct {
	// Dir holds cli-login.json and web-session.json (mode 0600).
	Dir string
	// Getenv reads configuration (os.Getenv by default).
	Getenv func(string) string
	// HTTP is used for Globus Auth calls (nil: 30s timeout client).
	HTTP *http.Client
	// Now is the clock.
	Now func() time.Time
	// Log receives refresh events (never tokens).
	Log *slog.Logger

	mu      sync.Mutex
	env     *Bundle // MOSAIC_GLOBUS_TOKENS after in-memory refreshes
	envRaw  string
	service *Bundle
}

// NewResolver builds a resolver reading getenv (nil: os.Getenv) with the default
// credentials directory.
func NewResolver(getenv func(string) string) *Resolver {
	if getenv == nil {
		getenv = os.Getenv
	}
	return &Resolver{Dir: DefaultDir(getenv), Getenv: getenv, Now: time.Now, Log: slog.Default()}
}

func (r *Resolver) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r *Resolver) log() *slog.Logger {
	if r.Log != nil {
		return r.Log
	}
	return slog.Default()
}

func (r *Resolver) getenv(k string) string {
	if r.Getenv == nil {
		return os.Getenv(k)
	}
	return strings.TrimSpace(r.Getenv(k))
}

// AuthURL is Globus Auth's base URL (MOSAIC_GLOBUS_AUTH_URL overrides it).
func (r *Resolver) AuthURL() string {
	if v := r.getenv(EnvAuthURL); v != "" {
		return v
	}
	return DefaultAuthURL
}

func (r *Resolver) client(id, secret string) *Client {
	return &Client{BaseURL: r.AuthURL(), ClientID: id, ClientSecret: secret, HTTP: r.HTTP, Now: r.Now}
}

// NativeClientID is the client `mosaic login` uses.
func (r *Resolver) NativeClientID() string {
	if v := r.getenv(EnvNativeClientID); v != "" {
		return v
	}
	return DefaultNativeClientID
}

func (r *Resolver) path(name string) string { return filepath.Join(r.Dir, name) }

// action returns what to tell the user for a source whose credential is dead.
func action(src Source) string {
	switch src {
	case SourceWeb:
		return "sign in again in the web UI (Sign in with Globus), or run `mosaic login`"
	case SourceEnv:
		return "export a fresh token bundle in MOSAIC_GLOBUS_TOKENS, or unset it and run `mosaic login`"
	case SourceService:
		return "check GLOBUS_COMPUTE_CLIENT_ID and GLOBUS_COMPUTE_CLIENT_SECRET, or unset them and run `mosaic login`"
	}
	return "run `mosaic login`"
}

func needsLogin(src Source, err error) error {
	return &LoginError{Source: src, Action: action(src), Err: err}
}

// errNoCredentials is the cause when no source is configured.
var errNoCredentials = errors.New("none found (no web session, MOSAIC_GLOBUS_TOKENS, service identity or CLI login)")

// load returns the first configured source's bundle.
func (r *Resolver) load(ctx context.Context) (Source, *Bundle, error) {
	now := r.now()
	if b, err := readBundle(r.path(WebSessionFile), now); !errors.Is(err, errNoFile) {
		if err != nil {
			return SourceWeb, nil, needsLogin(SourceWeb, err)
		}
		return SourceWeb, b, nil
	}
	if raw := r.getenv(EnvTokens); raw != "" {
		if r.env != nil && r.envRaw == raw {
			return SourceEnv, r.env, nil
		}
		data := []byte(raw)
		if name, ok := strings.CutPrefix(raw, "@"); ok {
			d, err := os.ReadFile(name)
			if err != nil {
				return SourceEnv, nil, needsLogin(SourceEnv, fmt.Errorf("MOSAIC_GLOBUS_TOKENS=@%s: %w", name, err))
			}
			data = d
		}
		b, err := ParseBundle(data, now)
		if err != nil {
			return SourceEnv, nil, needsLogin(SourceEnv, fmt.Errorf("MOSAIC_GLOBUS_TOKENS: %w", err))
		}
		r.env, r.envRaw = b, raw
		return SourceEnv, b, nil
	}
	if id, secret := r.getenv(EnvServiceID), r.getenv(EnvServiceSecret); id != "" || secret != "" {
		if id == "" || secret == "" {
			return SourceService, nil, needsLogin(SourceService, errors.New("set both GLOBUS_COMPUTE_CLIENT_ID and GLOBUS_COMPUTE_CLIENT_SECRET"))
		}
		if r.service != nil && r.service.ClientID == id {
			return SourceService, r.service, nil
		}
		b, err := r.serviceTokens(ctx, id, secret)
		if err != nil {
			return SourceService, nil, err
		}
		return SourceService, b, nil
	}
	b, err := readBundle(r.path(CLILoginFile), now)
	if errors.Is(err, errNoFile) {
		return "", nil, needsLogin("", errNoCredentials)
	}
	if err != nil {
		return SourceCLI, nil, needsLogin(SourceCLI, err)
	}
	return SourceCLI, b, nil
}

func (r *Resolver) serviceTokens(ctx context.Context, id, secret string) (*Bundle, error) {
	toks, err := r.client(id, secret).ClientCredentials(ctx, []string{ComputeScope})
	if err != nil {
		return nil, needsLogin(SourceService, err)
	}
	b := &Bundle{ClientID: id, Identity: Identity{Sub: id, Username: id + "@clients.auth.globus.org"}, Tokens: toks}
	r.service = b
	r.log().Debug("globus service identity token obtained", "client_id", id)
	return b, nil
}

// Token returns a valid token for a resource server and where it came from,
// refreshing it if it expires within a minute.
func (r *Resolver) Token(ctx context.Context, resourceServer string) (Token, Source, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	src, b, err := r.load(ctx)
	if err != nil {
		return Token{}, src, err
	}
	t, ok := b.Tokens[resourceServer]
	if !ok {
		return Token{}, src, needsLogin(src, fmt.Errorf("no token for %s in this credential (it was granted without that scope)", resourceServer))
	}
	if !t.Expired(r.now(), refreshSkew) && t.AccessToken != "" {
		return t, src, nil
	}
	t, err = r.refresh(ctx, src, b, t)
	return t, src, err
}

// AccessToken returns a Globus Compute access token (transport/globus TokenSource).
func (r *Resolver) AccessToken(ctx context.Context) (string, error) {
	t, _, err := r.Token(ctx, ComputeResourceServer)
	return t.AccessToken, err
}

// Invalidate forgets in-memory tokens, e.g. after a service answered 401, so the
// next call re-reads files and re-runs the client-credentials grant.
func (r *Resolver) Invalidate() {
	r.mu.Lock()
	r.service, r.env, r.envRaw = nil, nil, ""
	r.mu.Unlock()
}

// refresh renews t (caller holds r.mu) and stores the result where it came from.
func (r *Resolver) refresh(ctx context.Context, src Source, b *Bundle, t Token) (Token, error) {
	rs := t.ResourceServer
	if src == SourceService {
		nb, err := r.serviceTokens(ctx, b.ClientID, r.getenv(EnvServiceSecret))
		if err != nil {
			return Token{}, err
		}
		if nt, ok := nb.Tokens[rs]; ok {
			return nt, nil
		}
		return Token{}, needsLogin(src, fmt.Errorf("client-credentials grant returned no %s token", rs))
	}
	if t.RefreshToken == "" {
		return Token{}, needsLogin(src, fmt.Errorf("the %s token expired at %s and has no refresh token", rs, t.Expiry().Format(time.RFC3339)))
	}
	var c *Client
	switch src {
	case SourceWeb:
		c = r.client(r.getenv(EnvWebClientID), r.getenv(EnvWebClientSecret))
		if c.ClientID == "" || c.ClientSecret == "" {
			return Token{}, needsLogin(src, errors.New("GLOBUS_CLIENT_ID/GLOBUS_CLIENT_SECRET are needed to refresh the web session"))
		}
	default:
		id := b.ClientID
		if id == "" {
			id = r.NativeClientID()
		}
		if id == "" {
			return Token{}, needsLogin(src, fmt.Errorf("the %s token expired and the bundle names no client_id to refresh it with", rs))
		}
		c = r.client(id, "")
	}
	toks, err := c.Refresh(ctx, t.RefreshToken)
	if err != nil {
		if src == SourceWeb && errors.Is(err, errs.ErrNeedsLogin) {
			// A dead web session is signed out, so the UI shows its sign-in gate.
			_ = os.Remove(r.path(WebSessionFile))
		}
		return Token{}, needsLogin(src, fmt.Errorf("refreshing the %s token: %w", rs, err))
	}
	for k, nt := range toks {
		if nt.RefreshToken == "" {
			nt.RefreshToken = b.Tokens[k].RefreshToken
		}
		b.Tokens[k] = nt
	}
	nt, ok := b.Tokens[rs]
	if !ok || nt.AccessToken == "" {
		return Token{}, needsLogin(src, fmt.Errorf("refresh returned no %s token", rs))
	}
	switch src {
	case SourceWeb:
		err = writeBundle(r.path(WebSessionFile), b)
	case SourceCLI:
		err = writeBundle(r.path(CLILoginFile), b)
	}
	if err != nil {
		return Token{}, fmt.Errorf("storing refreshed Globus tokens: %w", err)
	}
	r.log().Info("globus token refreshed", "source", string(src), "resource_server", rs, "expires", nt.Expiry())
	return nt, nil
}

// Status is what `mosaic auth` shows: never a token.
type Status struct {
	Source      Source    `json:"source"`
	Identity    Identity  `json:"identity"`
	ClientID    string    `json:"client_id,omitempty"`
	Scopes      []string  `json:"scopes"`
	ExpiresAt   time.Time `json:"expires_at,omitzero"`
	Refreshable bool      `json:"refreshable"`
	File        string    `json:"file,omitempty"`
}

// Status resolves the credential in use (refreshing the Compute token if needed).
func (r *Resolver) Status(ctx context.Context) (Status, error) {
	t, src, err := r.Token(ctx, ComputeResourceServer)
	if err != nil {
		return Status{Source: src}, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	_, b, err := r.load(ctx)
	if err != nil {
		return Status{Source: src}, err
	}
	st := Status{Source: src, Identity: b.Identity, ClientID: b.ClientID, ExpiresAt: t.Expiry(), Refreshable: t.RefreshToken != "" || src == SourceService}
	for _, tok := range b.Tokens {
		st.Scopes = append(st.Scopes, tok.Scopes()...)
	}
	sort.Strings(st.Scopes)
	switch src {
	case SourceWeb:
		st.File = r.path(WebSessionFile)
	case SourceCLI:
		st.File = r.path(CLILoginFile)
	}
	return st, nil
}
