package auth_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/auth"
	"github.com/mosaic-hpc/mosaic/internal/errs"
	"github.com/mosaic-hpc/mosaic/internal/globusfake"
)

const (
	nativeID  = "0b1c2d3e-native-client"
	webID     = "web-confidential"
	webSecret = "web-secret-value"
	svcID     = "svc-client"
	svcSecret = "svc-secret-value"
)

type env struct {
	mu sync.Mutex
	m  map[string]string
}

func (e *env) get(k string) string { e.mu.Lock(); defer e.mu.Unlock(); return e.m[k] }
func (e *env) set(k, v string)     { e.mu.Lock(); defer e.mu.Unlock(); e.m[k] = v }

type fixture struct {
	fake *globusfake.Server
	env  *env
	res  *auth.Resolver
	logs *bytes.Buffer
}

func setup(t *testing.T) *fixture {
	t.Helper()
	f := globusfake.New(t)
	f.AddClient(nativeID, "")
	f.AddClient(webID, webSecret)
	f.AddClient(svcID, svcSecret)
	e := &env{m: map[string]string{auth.EnvAuthURL: f.URL, auth.EnvNativeClientID: nativeID}}
	logs := &bytes.Buffer{}
	r := &auth.Resolver{Dir: filepath.Join(t.TempDir(), "mosaic", "globus"), Getenv: e.get,
		Log: slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	return &fixture{fake: f, env: e, res: r, logs: logs}
}

// approver is stdout for Login: when the URL is printed it plays the user at the fake
// and "pastes" the code into stdin.
type approver struct {
	fake *globusfake.Server
	buf  bytes.Buffer
	code chan string
	done bool
}

var urlRE = regexp.MustCompile(`https?://\S+/v2/oauth2/authorize\S+`)

func (a *approver) Write(p []byte) (int, error) {
	a.buf.Write(p)
	if !a.done {
		if u := urlRE.FindString(a.buf.String()); u != "" {
			a.done = true
			code, _, err := a.fake.Approve(u)
			if err != nil {
				return 0, err
			}
			a.code <- code + "\n"
		}
	}
	return len(p), nil
}

type chanReader struct{ c chan string }

func (c chanReader) Read(p []byte) (int, error) {
	s, ok := <-c.c
	if !ok {
		return 0, io.EOF
	}
	return copy(p, s), nil
}

func (fx *fixture) login(t *testing.T) auth.Status {
	t.Helper()
	a := &approver{fake: fx.fake, code: make(chan string, 1)}
	st, err := fx.res.Login(context.Background(), chanReader{a.code}, a)
	if err != nil {
		t.Fatalf("login: %v\n%s", err, a.buf.String())
	}
	return st
}

// shift moves the resolver's clock forward.
func (fx *fixture) shift(d time.Duration) {
	fx.res.Now = func() time.Time { return time.Now().Add(d) }
}

func mode(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

func TestNoCredentialsSaysWhatToRun(t *testing.T) {
	fx := setup(t)
	_, err := fx.res.AccessToken(context.Background())
	if !errors.Is(err, errs.ErrNeedsLogin) || !strings.Contains(err.Error(), "run `mosaic login`") {
		t.Fatalf("no credentials: %v", err)
	}
}

func TestCLILoginAndStatus(t *testing.T) {
	fx := setup(t)
	st := fx.login(t)
	if st.Source != auth.SourceCLI || st.Identity.Username != "researcher@example.org" || st.ClientID != nativeID || !st.Refreshable {
		t.Fatalf("status after login: %+v", st)
	}
	if !strings.Contains(strings.Join(st.Scopes, " "), auth.ComputeScope) || st.ExpiresAt.Before(time.Now().Add(47*time.Hour)) {
		t.Fatalf("scopes/expiry: %+v", st)
	}
	if m := mode(t, filepath.Join(fx.res.Dir, auth.CLILoginFile)); m != 0o600 {
		t.Fatalf("token file mode %v, want 0600", m)
	}
	if m := mode(t, fx.res.Dir); m != 0o700 {
		t.Fatalf("credentials dir mode %v, want 0700", m)
	}
	tok, err := fx.res.AccessToken(context.Background())
	if err != nil || !strings.HasPrefix(tok, "fake-at-") {
		t.Fatalf("access token: %v", err)
	}
}

func TestResolutionOrder(t *testing.T) {
	fx := setup(t)
	ctx := context.Background()
	source := func() auth.Source {
		t.Helper()
		_, src, err := fx.res.Token(ctx, auth.ComputeResourceServer)
		if err != nil {
			t.Fatalf("resolve: %v", err)
		}
		return src
	}
	// 4. cached CLI login
	fx.login(t)
	if s := source(); s != auth.SourceCLI {
		t.Fatalf("with only a CLI login: %s", s)
	}
	// 3. service identity beats the CLI login
	fx.env.set(auth.EnvServiceID, svcID)
	fx.env.set(auth.EnvServiceSecret, svcSecret)
	if s := source(); s != auth.SourceService {
		t.Fatalf("with a service identity: %s", s)
	}
	st, err := fx.res.Status(ctx)
	if err != nil || st.Identity.Username != svcID+"@clients.auth.globus.org" {
		t.Fatalf("service status: %+v %v", st, err)
	}
	// 2. MOSAIC_GLOBUS_TOKENS (inline, then @file) beats the service identity
	resp := mintBundle(t, fx)
	fx.env.set(auth.EnvTokens, resp)
	if s := source(); s != auth.SourceEnv {
		t.Fatalf("with MOSAIC_GLOBUS_TOKENS inline: %s", s)
	}
	file := filepath.Join(t.TempDir(), "bundle.json")
	if err := os.WriteFile(file, []byte(resp), 0o600); err != nil {
		t.Fatal(err)
	}
	fx.env.set(auth.EnvTokens, "@"+file)
	if s := source(); s != auth.SourceEnv {
		t.Fatalf("with MOSAIC_GLOBUS_TOKENS=@file: %s", s)
	}
	// 1. a web session beats everything
	w := auth.NewWebSignIn(fx.res)
	if w != nil {
		t.Fatal("web sign-in should be off without GLOBUS_CLIENT_ID/SECRET")
	}
	fx.env.set(auth.EnvWebClientID, webID)
	fx.env.set(auth.EnvWebClientSecret, webSecret)
	w = auth.NewWebSignIn(fx.res)
	webSignIn(t, fx, w)
	if s := source(); s != auth.SourceWeb {
		t.Fatalf("with a web session: %s", s)
	}
	// Bad MOSAIC_GLOBUS_TOKENS says what to do.
	_ = os.Remove(filepath.Join(fx.res.Dir, auth.WebSessionFile))
	fx.env.set(auth.EnvTokens, "@/nonexistent/bundle.json")
	if _, _, err := fx.res.Token(ctx, auth.ComputeResourceServer); !errors.Is(err, errs.ErrNeedsLogin) || !strings.Contains(err.Error(), "MOSAIC_GLOBUS_TOKENS") {
		t.Fatalf("missing bundle file: %v", err)
	}
}

// mintBundle gets a raw Globus token response from the fake (a client-credentials
// grant), the shape users paste into MOSAIC_GLOBUS_TOKENS.
func mintBundle(t *testing.T, fx *fixture) string {
	t.Helper()
	form := url.Values{"grant_type": {"client_credentials"}, "scope": {auth.ComputeScope}}
	req, _ := http.NewRequest(http.MethodPost, fx.fake.URL+"/v2/oauth2/token", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(svcID, svcSecret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func TestRefreshOnExpiry(t *testing.T) {
	fx := setup(t)
	fx.login(t)
	fx.shift(48*time.Hour - 30*time.Second) // inside the one-minute refresh window
	path := filepath.Join(fx.res.Dir, auth.CLILoginFile)
	before, _ := os.ReadFile(path)
	tok, err := fx.res.AccessToken(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if n := fx.fake.Refreshes.Load(); n != 1 {
		t.Fatalf("refreshes %d, want 1", n)
	}
	after, _ := os.ReadFile(path)
	if bytes.Equal(before, after) || !bytes.Contains(after, []byte(tok)) {
		t.Fatal("refreshed token not stored")
	}
	if m := mode(t, path); m != 0o600 {
		t.Fatalf("mode after refresh %v", m)
	}
	// The refreshed token works at the service.
	req, _ := http.NewRequest(http.MethodGet, fx.fake.URL+"/v2/endpoints", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("refreshed token refused: %v %v", err, resp.Status)
	}
	resp.Body.Close()
}

func TestRevokedGrantMessage(t *testing.T) {
	fx := setup(t)
	fx.login(t)
	fx.shift(49 * time.Hour)
	fx.fake.RevokeAll()
	_, err := fx.res.AccessToken(context.Background())
	if !errors.Is(err, errs.ErrNeedsLogin) {
		t.Fatalf("revoked grant: %v", err)
	}
	msg := err.Error()
	if !strings.Contains(msg, "invalid_grant") || !strings.Contains(msg, "run `mosaic login`") {
		t.Fatalf("message should name the problem and the fix: %s", msg)
	}
}

func TestPKCEMismatchRefused(t *testing.T) {
	fx := setup(t)
	c := &auth.Client{BaseURL: fx.fake.URL, ClientID: nativeID}
	v := auth.NewVerifier()
	u := c.AuthorizeURL(c.NativeRedirect(), auth.LoginScopes, "s", auth.Challenge(v), true)
	code, _, err := fx.fake.Approve(u)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.ExchangeCode(context.Background(), code, c.NativeRedirect(), auth.NewVerifier())
	var ge *auth.GrantError
	if !errors.As(err, &ge) || ge.Code != "invalid_grant" || !errors.Is(err, errs.ErrNeedsLogin) {
		t.Fatalf("wrong verifier: %v", err)
	}
	if len(v) < 43 || !auth.VerifyChallenge(v, auth.Challenge(v)) || auth.VerifyChallenge(v+"x", auth.Challenge(v)) {
		t.Fatal("challenge helpers")
	}
}

// webSignIn runs the browser side of the web flow against the handler and the fake.
func webSignIn(t *testing.T, fx *fixture, w *auth.WebSignIn) {
	t.Helper()
	rec := httptest.NewRecorder()
	w.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/auth/login", nil))
	if rec.Code != http.StatusFound {
		t.Fatalf("/auth/login: %d", rec.Code)
	}
	loc := rec.Header().Get("Location")
	if !strings.Contains(loc, "code_challenge_method=S256") || !strings.Contains(loc, url.QueryEscape(w.RedirectURL())) {
		t.Fatalf("authorize URL: %s", loc)
	}
	code, state, err := fx.fake.Approve(loc)
	if err != nil {
		t.Fatal(err)
	}
	rec = httptest.NewRecorder()
	w.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/auth/callback?"+url.Values{"code": {code}, "state": {state}}.Encode(), nil))
	if rec.Code != http.StatusFound {
		t.Fatalf("/auth/callback: %d %s", rec.Code, rec.Body.String())
	}
}

func TestWebSignIn(t *testing.T) {
	fx := setup(t)
	fx.env.set(auth.EnvWebClientID, webID)
	fx.env.set(auth.EnvWebClientSecret, webSecret)
	w := auth.NewWebSignIn(fx.res)
	if w.RedirectURL() != "http://127.0.0.1:8642/auth/callback" {
		t.Fatalf("default redirect %s", w.RedirectURL())
	}
	if w.SignedIn() {
		t.Fatal("signed in before signing in")
	}
	// A callback with a state nobody started is refused.
	rec := httptest.NewRecorder()
	w.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/auth/login", nil))
	code, _, err := fx.fake.Approve(rec.Header().Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	rec = httptest.NewRecorder()
	w.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/auth/callback?code="+code+"&state=forged", nil))
	if rec.Code != http.StatusBadRequest || w.SignedIn() {
		t.Fatalf("state mismatch accepted: %d", rec.Code)
	}

	webSignIn(t, fx, w)
	if !w.SignedIn() {
		t.Fatal("not signed in after the callback")
	}
	path := filepath.Join(fx.res.Dir, auth.WebSessionFile)
	if m := mode(t, path); m != 0o600 {
		t.Fatalf("web session mode %v", m)
	}
	rec = httptest.NewRecorder()
	w.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/auth/status", nil))
	var st auth.WebStatus
	if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil || !st.SignedIn || st.Identity != "researcher@example.org" {
		t.Fatalf("status: %s %v", rec.Body.String(), err)
	}
	data, _ := os.ReadFile(path)
	var b auth.Bundle
	_ = json.Unmarshal(data, &b)
	at := b.Tokens[auth.ComputeResourceServer].AccessToken

	// A replayed callback (same code and state) is refused.
	rec = httptest.NewRecorder()
	w.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/auth/logout", nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Fatalf("GET /auth/logout: %d", rec.Code)
	}
	rec = httptest.NewRecorder()
	w.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/auth/logout", nil))
	if rec.Code != http.StatusSeeOther || w.SignedIn() {
		t.Fatalf("sign out: %d, signed in %v", rec.Code, w.SignedIn())
	}
	if !fx.fake.Revoked(at) {
		t.Fatal("sign out did not revoke the tokens")
	}
}

func TestWebPKCEVerifierBound(t *testing.T) {
	// The code from one sign-in cannot be redeemed with another sign-in's state
	// (each state carries its own PKCE verifier).
	fx := setup(t)
	fx.env.set(auth.EnvWebClientID, webID)
	fx.env.set(auth.EnvWebClientSecret, webSecret)
	w := auth.NewWebSignIn(fx.res)
	start := func() (string, string) {
		rec := httptest.NewRecorder()
		w.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/auth/login", nil))
		c, s, err := fx.fake.Approve(rec.Header().Get("Location"))
		if err != nil {
			t.Fatal(err)
		}
		return c, s
	}
	code1, _ := start()
	_, state2 := start()
	rec := httptest.NewRecorder()
	w.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/auth/callback?code="+code1+"&state="+state2, nil))
	if rec.Code != http.StatusBadRequest || w.SignedIn() || !strings.Contains(rec.Body.String(), "code_verifier") {
		t.Fatalf("cross-state code accepted: %d %s", rec.Code, rec.Body.String())
	}
}

func TestLogoutRevokesAndDeletes(t *testing.T) {
	fx := setup(t)
	fx.login(t)
	path := filepath.Join(fx.res.Dir, auth.CLILoginFile)
	data, _ := os.ReadFile(path)
	var b auth.Bundle
	_ = json.Unmarshal(data, &b)
	if err := fx.res.Logout(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatal("token file still there")
	}
	for _, tok := range b.Tokens {
		if !fx.fake.Revoked(tok.RefreshToken) || !fx.fake.Revoked(tok.AccessToken) {
			t.Fatalf("%s not revoked", tok.ResourceServer)
		}
	}
	if err := fx.res.Logout(context.Background()); err != nil {
		t.Fatalf("second logout: %v", err)
	}
}

func TestWorldReadableTokenFileRefused(t *testing.T) {
	fx := setup(t)
	fx.login(t)
	path := filepath.Join(fx.res.Dir, auth.CLILoginFile)
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := fx.res.AccessToken(context.Background())
	if !errors.Is(err, errs.ErrNeedsLogin) || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("world-readable file: %v", err)
	}
}

func TestNoTokenInLogsErrorsOrStatus(t *testing.T) {
	fx := setup(t)
	st := fx.login(t)
	fx.shift(49 * time.Hour)
	_, _ = fx.res.AccessToken(context.Background()) // refresh, logged
	b, _ := json.Marshal(st)
	var all strings.Builder
	all.Write(b)
	data, _ := os.ReadFile(filepath.Join(fx.res.Dir, auth.CLILoginFile))
	var bundle auth.Bundle
	_ = json.Unmarshal(data, &bundle)
	slog.New(slog.NewJSONHandler(fx.logs, nil)).Info("bundle", "b", &bundle, "t", bundle.Tokens[auth.ComputeResourceServer])
	fmt.Fprintf(&all, "%v %+v %#v %s", &bundle, bundle.Tokens[auth.ComputeResourceServer], bundle.Tokens[auth.ComputeResourceServer], &bundle)
	fx.fake.RevokeAll()
	fx.fake.ExpireAccessTokens()
	if _, err := fx.res.AccessToken(context.Background()); err != nil {
		all.WriteString(err.Error())
	}
	all.WriteString(fx.logs.String())
	if fx.logs.Len() == 0 {
		t.Fatal("no logs captured")
	}
	for _, tok := range fx.fake.Minted() {
		if strings.Contains(all.String(), tok) {
			t.Fatalf("token leaked into logs/errors/status:\n%s", all.String())
		}
	}
}
