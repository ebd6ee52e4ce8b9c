package globus_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/auth"
	"github.com/mosaic-hpc/mosaic/internal/errs"
	"github.com/mosaic-hpc/mosaic/internal/globusfake"
	"github.com/mosaic-hpc/mosaic/internal/transport"
	"github.com/mosaic-hpc/mosaic/internal/transport/globus"
	"github.com/mosaic-hpc/mosaic/internal/transport/rigenv"
)

const epID = "2f5b8a31-7c44-4d0e-9b1a-5e6f7a8b9c0d"

type rig struct {
	fake *globusfake.Server
	res  *auth.Resolver
	c    *globus.Client
	logs *bytes.Buffer
}

func newRig(t *testing.T) *rig {
	t.Helper()
	if err := globusfake.Python(); err != nil {
		rigenv.Missing(t, "the fake Globus Compute endpoint runs tasks with python3 (apt-get install python3): "+err.Error())
	}
	f := globusfake.New(t)
	f.AddClient("svc-client", "svc-secret")
	f.AddEndpoint(globusfake.Endpoint{ID: epID, Name: "mosaic", Hostname: "login1.delta.ncsa.illinois.edu"})
	env := map[string]string{auth.EnvServiceID: "svc-client", auth.EnvServiceSecret: "svc-secret", auth.EnvAuthURL: f.URL}
	logs := &bytes.Buffer{}
	log := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	r := &auth.Resolver{Dir: t.TempDir(), Getenv: func(k string) string { return env[k] }, Log: log}
	return &rig{fake: f, res: r, c: &globus.Client{BaseURL: f.URL, Tokens: r}, logs: logs}
}

func (r *rig) transport() *globus.Transport {
	tr := globus.New(epID, r.c)
	tr.Breaker = &globus.Breaker{}
	tr.Poll = globus.Backoff{Initial: 20 * time.Millisecond, Max: 100 * time.Millisecond}
	tr.PendingCheck = 300 * time.Millisecond
	tr.Log = slog.New(slog.NewJSONHandler(r.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	return tr
}

func TestRunDecodesResult(t *testing.T) {
	r := newRig(t)
	tr := r.transport()
	ctx := context.Background()
	res, err := tr.Run(ctx, []string{"sh", "-c", `cat; echo "to err" >&2; exit 3`, "sh"}, strings.NewReader("hello $HOME 'quoted'\n"))
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 3 || string(res.Stdout) != "hello $HOME 'quoted'\n" || string(res.Stderr) != "to err\n" {
		t.Fatalf("result: exit %d stdout %q stderr %q", res.ExitCode, res.Stdout, res.Stderr)
	}
	bin := []byte{0, 1, 2, 0xff, 0xfe, '\n'}
	res, err = tr.Run(ctx, []string{"cat"}, bytes.NewReader(bin))
	if err != nil || !bytes.Equal(res.Stdout, bin) || !res.OK() {
		t.Fatalf("binary round trip: %v %q", err, res.Stdout)
	}
	res, err = tr.Run(ctx, []string{"/no/such/program"}, nil)
	if err != nil || res.ExitCode != 127 || !strings.Contains(string(res.Stderr), "No such file") {
		t.Fatalf("missing program: %v %+v", err, res)
	}
	if n := r.fake.Submits.Load(); n != 3 {
		t.Errorf("submits %d, want 3", n)
	}
	if n := r.fake.BatchStatusCalls.Load(); n < 3 {
		t.Errorf("batch_status calls %d, want ≥3", n)
	}
}

func TestFunctionRegisteredOncePerHash(t *testing.T) {
	r := newRig(t)
	tr := r.transport()
	var wg sync.WaitGroup
	errs := make(chan error, 6)
	for range 6 {
		wg.Go(func() {
			_, err := tr.Run(context.Background(), []string{"true"}, nil)
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := r.fake.Registrations.Load(); n != 1 {
		t.Fatalf("function registered %d times for one content hash", n)
	}
	// Another transport sharing the client reuses the registration.
	tr2 := r.transport()
	if _, err := tr2.Run(context.Background(), []string{"true"}, nil); err != nil {
		t.Fatal(err)
	}
	if n := r.fake.Registrations.Load(); n != 1 {
		t.Fatalf("second transport re-registered (%d)", n)
	}
}

func TestEndpointOfflineOpensBreaker(t *testing.T) {
	r := newRig(t)
	tr := r.transport()
	r.fake.SetOnline(epID, false)
	_, err := tr.Run(context.Background(), []string{"true"}, nil)
	if !errors.Is(err, errs.ErrSiteDown) || !strings.Contains(err.Error(), "globus-compute-endpoint start") {
		t.Fatalf("offline endpoint: %v", err)
	}
	if !tr.Breaker.Open() {
		t.Fatal("breaker should be open")
	}
	calls := r.fake.StatusCalls.Load()
	_, err = tr.Run(context.Background(), []string{"true"}, nil)
	if !errors.Is(err, errs.ErrSiteDown) || !strings.Contains(err.Error(), "circuit open") {
		t.Fatalf("second call: %v", err)
	}
	if r.fake.StatusCalls.Load() != calls || r.fake.Submits.Load() != 0 {
		t.Fatal("an open breaker must short-circuit without calling the service")
	}
	r.fake.SetOnline(epID, true)
	tr.Breaker.Reset()
	if _, err := tr.Run(context.Background(), []string{"true"}, nil); err != nil {
		t.Fatalf("after the endpoint returned: %v", err)
	}
}

func TestEndpointGoesOfflineWhileWaiting(t *testing.T) {
	r := newRig(t)
	tr := r.transport()
	tr.StatusTTL = time.Hour
	if _, err := tr.Run(context.Background(), []string{"true"}, nil); err != nil {
		t.Fatal(err)
	}
	r.fake.SetOnline(epID, false) // tasks now wait for the endpoint
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := tr.Run(ctx, []string{"true"}, nil)
	if !errors.Is(err, errs.ErrSiteDown) {
		t.Fatalf("task waiting on an offline endpoint: %v", err)
	}
}

func TestOversizedOutputRefused(t *testing.T) {
	r := newRig(t)
	tr := r.transport()
	tr.MaxResult = 8 << 10
	_, err := tr.Run(context.Background(), []string{"head", "-c", "100000", "/dev/zero"}, nil)
	if !errors.Is(err, transport.ErrOutputTooLarge) {
		t.Fatalf("100 kB output with an 8 KiB result cap: %v", err)
	}
	if _, err := tr.Run(context.Background(), []string{"head", "-c", "1000", "/dev/zero"}, nil); err != nil {
		t.Fatalf("small output: %v", err)
	}
}

func TestTimeout(t *testing.T) {
	r := newRig(t)
	tr := r.transport()
	tr.Limits.Timeout = time.Second
	start := time.Now()
	_, err := tr.Run(context.Background(), []string{"sleep", "20"}, nil)
	if !errors.Is(err, transport.ErrTimeout) {
		t.Fatalf("want ErrTimeout, got %v", err)
	}
	if time.Since(start) > 10*time.Second {
		t.Fatal("timeout not enforced")
	}
	// The endpoint had the task: an sbatch in it may have queued a job, so the engine
	// must look the job up by tag rather than call the submit refused (and move the task
	// elsewhere) or resubmit blind.
	if !errors.Is(err, errs.ErrOutcomeUnknown) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a timeout after the task was submitted must say the outcome is unknown: %v", err)
	}
}

func TestRevokedGrantNeedsLogin(t *testing.T) {
	r := newRig(t)
	// A user's login (native app, refresh token) handed over in MOSAIC_GLOBUS_TOKENS.
	r.fake.AddClient("native", "")
	c := &auth.Client{BaseURL: r.fake.URL, ClientID: "native"}
	v := auth.NewVerifier()
	code, _, err := r.fake.Approve(c.AuthorizeURL(c.NativeRedirect(), auth.LoginScopes, "s", auth.Challenge(v), true))
	if err != nil {
		t.Fatal(err)
	}
	toks, err := c.ExchangeCode(context.Background(), code, c.NativeRedirect(), v)
	if err != nil {
		t.Fatal(err)
	}
	bundle, _ := json.Marshal(auth.Bundle{ClientID: "native", Tokens: toks})
	env := map[string]string{auth.EnvTokens: string(bundle), auth.EnvAuthURL: r.fake.URL}
	r.res.Getenv = func(k string) string { return env[k] }
	r.res.Invalidate()
	tr := r.transport()
	if _, err := tr.Run(context.Background(), []string{"true"}, nil); err != nil {
		t.Fatal(err)
	}
	r.fake.RevokeAll()
	_, err = tr.Run(context.Background(), []string{"true"}, nil)
	if !errors.Is(err, errs.ErrNeedsLogin) || !strings.Contains(err.Error(), "mosaic login") {
		t.Fatalf("revoked token: %v", err)
	}
	if errors.Is(err, errs.ErrSiteDown) {
		t.Fatal("a credentials problem is not a site outage")
	}
}

func TestNoTokensInLogs(t *testing.T) {
	r := newRig(t)
	tr := r.transport()
	if _, err := tr.Run(context.Background(), []string{"echo", "hi"}, nil); err != nil {
		t.Fatal(err)
	}
	r.fake.SetOnline(epID, false)
	_, _ = tr.Run(context.Background(), []string{"true"}, nil)
	if r.logs.Len() == 0 {
		t.Fatal("expected some log output to check")
	}
	minted := r.fake.Minted()
	if len(minted) == 0 {
		t.Fatal("no tokens minted")
	}
	for _, tok := range minted {
		if strings.Contains(r.logs.String(), tok) {
			t.Fatalf("a token appears in the logs:\n%s", r.logs.String())
		}
	}
}

func TestRunValidation(t *testing.T) {
	tr := globus.New("not-a-uuid", &globus.Client{})
	if _, err := tr.Run(context.Background(), []string{"true"}, nil); err == nil || !strings.Contains(err.Error(), "mosaic endpoints") {
		t.Fatalf("bad endpoint id: %v", err)
	}
	tr = globus.New(epID, &globus.Client{})
	if _, err := tr.Run(context.Background(), nil, nil); err == nil {
		t.Fatal("empty argv accepted")
	}
	tr.Breaker = &globus.Breaker{}
	if _, err := tr.Run(context.Background(), []string{"true"}, nil); !errors.Is(err, errs.ErrNeedsLogin) {
		t.Fatalf("no credentials: %v", err)
	}
}

func TestServiceIdentityRecoversAfter401(t *testing.T) {
	r := newRig(t)
	tr := r.transport()
	if _, err := tr.Run(context.Background(), []string{"true"}, nil); err != nil {
		t.Fatal(err)
	}
	r.fake.ExpireAccessTokens() // the service refuses the cached token
	// The 401 drops the cached token and the call is retried with a fresh grant.
	if _, err := tr.Run(context.Background(), []string{"true"}, nil); err != nil {
		t.Fatalf("after re-grant: %v", err)
	}
}
