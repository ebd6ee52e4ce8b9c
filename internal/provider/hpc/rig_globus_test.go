package hpc

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/auth"
	"github.com/mosaic-hpc/mosaic/internal/globusfake"
	"github.com/mosaic-hpc/mosaic/internal/provider"
	"github.com/mosaic-hpc/mosaic/internal/site"
	"github.com/mosaic-hpc/mosaic/internal/transport/globus"
	"github.com/mosaic-hpc/mosaic/internal/transport/rigenv"
)

// globusRig starts a fake Globus Auth + Compute service whose endpoint runs tasks on
// this host with env (e.g. SLURM_CONF of a rig cluster), and returns an endpoint id
// and a client signed in as a service identity.
func globusRig(t *testing.T, env ...string) (string, *globus.Client, *globusfake.Server) {
	t.Helper()
	if err := globusfake.Python(); err != nil {
		t.Fatalf("the fake Globus Compute endpoint runs tasks with python3 (apt-get install python3): %v", err)
	}
	f := globusfake.New(t)
	f.AddClient("rig-service", "rig-secret")
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	b[6], b[8] = b[6]&0x0f|0x40, b[8]&0x3f|0x80
	id := fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
	f.AddEndpoint(globusfake.Endpoint{ID: id, Name: "mosaic", Hostname: "localhost", Env: env})
	cfg := map[string]string{auth.EnvServiceID: "rig-service", auth.EnvServiceSecret: "rig-secret", auth.EnvAuthURL: f.URL}
	r := &auth.Resolver{Dir: t.TempDir(), Getenv: func(k string) string { return cfg[k] }}
	return id, &globus.Client{BaseURL: f.URL, Tokens: r}, f
}

// fastGlobusPolling polls the local fake more often than the real service deserves.
func fastGlobusPolling(p *Provider) {
	if g, ok := p.tr.(*globus.Transport); ok {
		g.Poll = globus.Backoff{Initial: 30 * time.Millisecond, Max: 300 * time.Millisecond}
	}
}

// TestRigGlobusBatchStatus: through Globus Compute, 20 jobs' status is still one
// remote command (one Globus task), with exit codes.
func TestRigGlobusBatchStatus(t *testing.T) {
	t.Parallel()
	p, ct := rigProvider(t, "alpha", "globus")
	ctx := context.Background()
	var ids []string
	for i := range 20 {
		id, err := p.Submit(ctx, spec(t, "gbatch", "cpu", fmt.Sprintf("exit %d", i%3), 5*time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	deadline := time.Now().Add(90 * time.Second)
	for {
		ct.reset()
		st, err := p.Status(ctx, ids)
		if err != nil {
			t.Fatal(err)
		}
		if n := ct.n.Load(); n != 1 {
			t.Fatalf("status of 20 jobs took %d remote calls (%v), want 1", n, ct.progs)
		}
		done := 0
		for i, id := range ids {
			if s, ok := st[id]; ok && s.State.Final() {
				done++
				if s.ExitCode != i%3 {
					t.Errorf("job %s: exit %d, want %d", id, s.ExitCode, i%3)
				}
			}
		}
		if done == len(ids) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d jobs finished", done, len(ids))
		}
		time.Sleep(time.Second)
	}
}

// TestRigGlobusEndpointOffline: an offline endpoint makes the probe fail as a site
// outage (the collector shows the system down) and opens the breaker.
func TestRigGlobusEndpointOffline(t *testing.T) {
	env := rigenv.Require(t)
	id, c, f := globusRig(t, "SLURM_CONF="+env.Get(t, "SLURM_CONF_BETA"))
	sys := site.System{Name: "beta@rig", Kind: site.KindGlobus, Endpoint: id, Dialect: site.DialectSlurm,
		Accounts: []string{env.Get(t, "RIG_ACCOUNT")}, WorkDir: env.Get(t, "RIG_WORKDIR_BETA")}
	p, err := New(sys, WithGlobusClient(c))
	if err != nil {
		t.Fatal(err)
	}
	if p.Kind() != "globus" || p.Endpoint() != id {
		t.Fatalf("kind %s endpoint %s", p.Kind(), p.Endpoint())
	}
	g := p.tr.(*globus.Transport)
	g.Breaker = &globus.Breaker{}
	recs, err := p.Probe(context.Background())
	if err != nil || len(recs) == 0 || recs[0].Provider != "globus" {
		t.Fatalf("online probe: %v %+v", err, recs)
	}
	g.StatusTTL = time.Nanosecond
	f.SetOnline(id, false)
	_, err = p.Probe(context.Background())
	if !errors.Is(err, provider.ErrSiteDown) {
		t.Fatalf("offline endpoint probe: %v", err)
	}
	if !g.Breaker.Open() {
		t.Fatal("breaker not open")
	}
}

func TestNewGlobusNeedsEndpointUUID(t *testing.T) {
	_, err := New(site.System{Name: "x", Kind: site.KindGlobus, Endpoint: "delta"})
	if err == nil || !strings.Contains(err.Error(), "mosaic endpoints") {
		t.Fatalf("bad endpoint accepted: %v", err)
	}
}

// TestGlobusNoCredentialsNeedsLogin: without any Globus credential the probe fails
// with provider.ErrNeedsLogin (health needs-login), not as a site outage, and says
// what to run.
func TestGlobusNoCredentialsNeedsLogin(t *testing.T) {
	r := &auth.Resolver{Dir: t.TempDir(), Getenv: func(string) string { return "" }}
	sys := site.System{Name: "delta", Kind: site.KindGlobus, Endpoint: "4b116d3c-1703-4f8f-9f6f-39921e5864df", Dialect: site.DialectSlurm}
	p, err := New(sys, WithGlobusClient(&globus.Client{BaseURL: "http://127.0.0.1:1", Tokens: r}))
	if err != nil {
		t.Fatal(err)
	}
	p.tr.(*globus.Transport).Breaker = &globus.Breaker{}
	_, err = p.Probe(context.Background())
	if !errors.Is(err, provider.ErrNeedsLogin) || errors.Is(err, provider.ErrSiteDown) || !strings.Contains(err.Error(), "mosaic login") {
		t.Fatalf("probe without credentials: %v", err)
	}
}
