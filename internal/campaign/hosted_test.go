package campaign

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/agent"
	"github.com/mosaic-hpc/mosaic/internal/academyfake"
	"github.com/mosaic-hpc/mosaic/internal/auth"
	"github.com/mosaic-hpc/mosaic/internal/globusfake"
	"github.com/mosaic-hpc/mosaic/internal/model"
)

func TestExchangeTypeNames(t *testing.T) {
	for in, want := range map[string]string{"": "mosaic", "mosaic": "mosaic", "academy": "academy", "http": "academy", " HTTP ": "academy", "Academy": "academy"} {
		if got, err := NormalizeExchangeType(in); err != nil || got != want {
			t.Errorf("%q: %q %v, want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"redis", "hosted", "academy,http", "mosaic\x00"} {
		if _, err := NormalizeExchangeType(bad); err == nil || !strings.Contains(err.Error(), "use mosaic") {
			t.Errorf("%q accepted: %v", bad, err)
		}
	}
}

func TestApplyExchangeType(t *testing.T) {
	load := func(e model.ExchangeSettings) *Spec {
		s, err := Load(filepath.Join(exampleDir, "federated-chat.jsonc"))
		if err != nil {
			t.Fatal(err)
		}
		s.Exchange = e
		return s
	}
	// The flag wins over the file; the file's type is kept without a flag.
	s := load(model.ExchangeSettings{Type: "academy"})
	if err := ApplyExchangeType(s, ""); err != nil || !IsAcademy(s) {
		t.Errorf("file type academy: %v %q", err, s.Exchange.Type)
	}
	if err := ApplyExchangeType(s, "mosaic"); err != nil || IsAcademy(s) {
		t.Errorf("--exchange-type mosaic over the file's academy: %v %q", err, s.Exchange.Type)
	}
	s = load(model.ExchangeSettings{})
	if err := ApplyExchangeType(s, "http"); err != nil || s.Exchange.Type != model.ExchangeTypeAcademy {
		t.Errorf("--exchange-type http: %v %q", err, s.Exchange.Type)
	}
	if scope, rs := AcademyScope(s.Exchange); scope != auth.AcademyExchangeScope || rs != auth.AcademyExchangeResourceServer {
		t.Errorf("default scope %s rs %s", scope, rs)
	}
	if u := AcademyURL("", s.Exchange); u != "https://exchange.academy-agents.org/v1" {
		t.Errorf("default URL %s", u)
	}
	s = load(model.ExchangeSettings{Type: "academy", Scope: "https://auth.globus.org/scopes/0e5e1d3c-0000-4000-8000-000000000001/academy_exchange"})
	if err := ApplyExchangeType(s, ""); err != nil {
		t.Fatal(err)
	}
	if _, rs := AcademyScope(s.Exchange); rs != "0e5e1d3c-0000-4000-8000-000000000001" {
		t.Errorf("resource server of a custom scope: %s", rs)
	}
	for name, c := range map[string]struct {
		e    model.ExchangeSettings
		flag string
		want string
	}{
		"unknown type":            {model.ExchangeSettings{Type: "globus"}, "", "not known"},
		"unknown flag":            {model.ExchangeSettings{}, "nats", "not known"},
		"scope on mosaic":         {model.ExchangeSettings{Scope: auth.AcademyExchangeScope}, "", "academy only"},
		"resource server mosaic":  {model.ExchangeSettings{ResourceServer: "x"}, "", "academy only"},
		"redis on academy":        {model.ExchangeSettings{Type: "academy", Backend: "redis"}, "", "Mosaic's own exchange"},
		"scope not a URL":         {model.ExchangeSettings{Type: "academy", Scope: "academy_exchange"}, "", "not a Globus scope"},
		"resource server w/space": {model.ExchangeSettings{Type: "academy", ResourceServer: "a b"}, "", "not a Globus resource server"},
	} {
		if err := ApplyExchangeType(load(c.e), c.flag); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
}

func TestBearerTokensFile(t *testing.T) {
	text := FormatTokens(HostedTokens("AgQ1globus", []string{"b", "a"}), []string{"b", "a"})
	got, err := ParseBearerTokens(text)
	if err != nil || got["a"] != "AgQ1globus" || got["b"] != "AgQ1globus" || len(got) != 2 {
		t.Fatalf("round trip of %q: %v %v", text, got, err)
	}
	for name, bad := range map[string]string{
		"one field":       "a\n",
		"three fields":    "a tok extra\n",
		"agent token":     "a mxa_0123\n",
		"run token":       "a mxt_0123\n",
		"bad name":        "a/b tok\n",
		"twice":           "a tok\na tok\n",
		"control in tok":  "a to\x01k\n",
		"long token":      "a " + strings.Repeat("x", 5000) + "\n",
		"very long line":  "a " + strings.Repeat("x", 70<<10) + "\n",
		"non-ascii token": "a t\xc3\xa9k\n",
	} {
		if _, err := ParseBearerTokens(bad); err == nil {
			t.Errorf("%s: accepted", name)
		} else if strings.Contains(err.Error(), "0123") || strings.Contains(err.Error(), "xxxx") {
			t.Errorf("%s: the error shows the token: %v", name, err)
		}
	}
	p := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(p, []byte(text), 0o640); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadBearerTokensFile(p); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("group-readable tokens file: %v", err)
	}
	_ = os.Chmod(p, 0o600)
	if got, err := ReadBearerTokensFile(p); err != nil || got["a"] != "AgQ1globus" {
		t.Errorf("0600 file: %v %v", got, err)
	}
}

func FuzzParseBearerTokens(f *testing.F) {
	for _, s := range []string{"a tok\n", "# c\n\nb AgQ\n", "a mxa_1\n", "a b c\n", "a\x00 t\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		got, err := ParseBearerTokens(text)
		if err != nil {
			return
		}
		for n, tok := range got {
			if ValidateName(n) != nil || checkBearer(tok) != nil {
				t.Fatalf("accepted %q -> %q", n, tok)
			}
		}
	})
}

func TestAcademyBearer(t *testing.T) {
	s := &Spec{Campaign: model.Campaign{Exchange: model.ExchangeSettings{Type: "academy"}}}
	ctx := context.Background()
	var asked []string
	exp := time.Now().Add(48 * time.Hour)
	src := func(_ context.Context, scope, rs string) (string, time.Time, error) {
		asked = append(asked, scope, rs)
		return "AgChain", exp, nil
	}
	if tok, got, err := AcademyBearer(ctx, s, "", src); err != nil || tok != "AgChain" || !got.Equal(exp) || !slices.Equal(asked, []string{auth.AcademyExchangeScope, auth.AcademyExchangeResourceServer}) {
		t.Errorf("from the chain: %q %v (asked %v)", tok, err, asked)
	}
	if tok, _, err := AcademyBearer(ctx, s, "AgEnv", src); err != nil || tok != "AgEnv" {
		t.Errorf("explicit MOSAIC_EXCHANGE_TOKEN: %q %v", tok, err)
	}
	if _, _, err := AcademyBearer(ctx, s, "mxa_abc", src); err == nil || !strings.Contains(err.Error(), "Mosaic exchange token") || strings.Contains(err.Error(), "mxa_abc") {
		t.Errorf("a Mosaic agent token: %v", err)
	}
	login := &auth.LoginError{Action: "run `mosaic login`", Err: errors.New("none found")}
	if _, _, err := AcademyBearer(ctx, s, "", func(context.Context, string, string) (string, time.Time, error) { return "", time.Time{}, login }); err == nil ||
		!strings.Contains(err.Error(), "run `mosaic login`") || !errors.As(err, new(*auth.LoginError)) {
		t.Errorf("no credentials: %v", err)
	}
}

// academyRig is a fake Globus Auth, a fake hosted exchange behind it, and a
// token of the exchange's scope minted by a service identity.
type academyRig struct {
	g      *globusfake.Server
	x      *academyfake.Exchange
	bearer string
}

func newAcademyRig(t *testing.T) *academyRig {
	g := globusfake.New(t)
	g.AddClient("svc-client", "svc-secret")
	x := academyfake.New(t, g, "")
	c := &auth.Client{BaseURL: g.URL, ClientID: "svc-client", ClientSecret: "svc-secret"}
	toks, err := c.ClientCredentials(context.Background(), []string{auth.AcademyExchangeScope, auth.ComputeScope})
	if err != nil {
		t.Fatal(err)
	}
	tok := toks[auth.AcademyExchangeResourceServer]
	if tok.AccessToken == "" || toks[auth.ComputeResourceServer].AccessToken == "" {
		t.Fatalf("fake Globus Auth minted %v", toks)
	}
	return &academyRig{g: g, x: x, bearer: tok.AccessToken}
}

// TestLaunchAcademyExchange: a launch on an academy exchange hands every
// site the user's Globus token (never a derived one), tells spawn-site the
// type, keeps the token out of the run directory, the output and the job
// script, and bootstraps through the exchange's front door.
func TestLaunchAcademyExchange(t *testing.T) {
	ar := newAcademyRig(t)
	r := newLaunchRig(t, func(*scriptedBackend) {})
	if err := ApplyExchangeType(r.opts.Spec, "http"); err != nil {
		t.Fatal(err)
	}
	r.opts.ExchangeURL, r.opts.ExchangeToken, r.opts.AutoBootstrap = ar.x.URL, ar.bearer, true
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- Launch(ctx, r.opts) }()
	for i := 0; i < 500 && !strings.Contains(r.out.String(), "sent the user task"); i++ {
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	err := <-done
	out := r.out.String()
	if !strings.Contains(out, "all 2 sites ready") || !strings.Contains(out, "sent the user task to coordinator") {
		t.Fatalf("launch on the academy exchange: %v\n%s", err, out)
	}
	if strings.Contains(out, ar.bearer) {
		t.Errorf("the Globus token is in the launcher's output:\n%s", out)
	}
	for _, b := range r.backends {
		for _, a := range b.l.Spec.Agents {
			if b.l.Tokens[a] != ar.bearer {
				t.Errorf("site %s: agent %s got %q, want the Globus token", b.Site(), a, b.l.Tokens[a])
			}
		}
		if !slices.Contains(b.l.spawnArgv(), "--exchange-type=academy") || b.l.Exchange != ar.x.URL {
			t.Errorf("site %s: spawn-site %v on %s", b.Site(), b.l.spawnArgv(), b.l.Exchange)
		}
		if !strings.Contains(b.l.tokensFile(), ar.bearer) {
			t.Errorf("site %s: tokens file (0600, over stdin) lacks the token", b.Site())
		}
		if s := b.l.innerScript("/w", true, true, map[string]string{"X": "1"}); strings.Contains(s, ar.bearer) {
			t.Errorf("site %s: the job script holds the Globus token:\n%s", b.Site(), s)
		}
	}
	// The run directory keeps no copy of the user's token.
	err = filepath.WalkDir(r.opts.Root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err == nil && strings.Contains(string(data), ar.bearer) {
			t.Errorf("%s holds the Globus token", p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	// Every request passed the front door with the bearer; the bootstrap
	// reached the coordinator's deterministic mailbox.
	if ar.x.Refused.Load() != 0 || ar.x.Seen.Load() == 0 {
		t.Errorf("front door: %d refused, %d passed", ar.x.Refused.Load(), ar.x.Seen.Load())
	}
	recs, err := ar.x.Inner.TimelineContext(context.Background(), academyfake.Namespace)
	if err != nil || len(recs) != 1 || recs[0].Dest != "coordinator" || recs[0].DestUID != AgentUID("t1", "coordinator") {
		t.Errorf("timeline of the hosted exchange: %+v %v", recs, err)
	}
}

// TestLaunchAcademyRefusesBadBearer: a missing, unknown, expired or
// wrong-audience Globus token is refused before any site starts, with the
// command that fixes it and without the token.
func TestLaunchAcademyRefusesBadBearer(t *testing.T) {
	ar := newAcademyRig(t)
	c := &auth.Client{BaseURL: ar.g.URL, ClientID: "svc-client", ClientSecret: "svc-secret"}
	toks, err := c.ClientCredentials(context.Background(), []string{auth.ComputeScope})
	if err != nil {
		t.Fatal(err)
	}
	for name, tok := range map[string]string{
		"missing":        "",
		"unknown":        "AgUnknownToken123",
		"wrong audience": toks[auth.ComputeResourceServer].AccessToken,
		"agent token":    "mxa_0123456789",
	} {
		r := newLaunchRig(t, func(*scriptedBackend) {})
		if err := ApplyExchangeType(r.opts.Spec, "academy"); err != nil {
			t.Fatal(err)
		}
		r.opts.ExchangeURL, r.opts.ExchangeToken = ar.x.URL, tok
		err := Launch(context.Background(), r.opts)
		if err == nil || !strings.Contains(err.Error(), "mosaic login") || len(r.backends) != 0 {
			t.Errorf("%s token: %v (%d sites started)", name, err, len(r.backends))
			continue
		}
		if tok != "" && strings.Contains(err.Error(), tok) {
			t.Errorf("%s token: the error shows it: %v", name, err)
		}
	}
	if ar.x.Refused.Load() < 2 {
		t.Errorf("the exchange refused %d requests; want the unknown and wrong-audience tokens refused there", ar.x.Refused.Load())
	}
	// An expired token: refused by the exchange (Globus introspection says inactive).
	ar.g.ExpireAccessTokens()
	r := newLaunchRig(t, func(*scriptedBackend) {})
	_ = ApplyExchangeType(r.opts.Spec, "academy")
	r.opts.ExchangeURL, r.opts.ExchangeToken = ar.x.URL, ar.bearer
	if err := Launch(context.Background(), r.opts); err == nil || !strings.Contains(err.Error(), "HTTP 403") || !strings.Contains(err.Error(), "mosaic login") {
		t.Errorf("expired token: %v", err)
	}
}

func TestAcademyAuthError(t *testing.T) {
	s := &Spec{Campaign: model.Campaign{Exchange: model.ExchangeSettings{Type: "academy"}}}
	for name, c := range map[string]struct {
		err  error
		want string
	}{
		"missing":  {&agent.StatusError{Op: "status", Code: 401, Text: "Request headers are missing authorization header."}, "run `mosaic login`"},
		"expired":  {&agent.StatusError{Op: "status", Code: 403, Text: "Token is expired or has been revoked."}, "run `mosaic login`"},
		"audience": {&agent.StatusError{Op: "status", Code: 403, Text: `Token audience does not include "x".`}, "exchange.scope"},
		"owner":    {&agent.StatusError{Op: "status", Code: 403, Text: "Client does not have correct permissions."}, "run id nobody used"},
		"down":     {errors.New("connection refused"), "connection refused"},
	} {
		err := AcademyAuthError("https://x/v1", s, c.err)
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, c.err) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
	if AcademyAuthError("u", s, nil) != nil {
		t.Error("no error became one")
	}
}
