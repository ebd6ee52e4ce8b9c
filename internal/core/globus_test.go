package core

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/auth"
	"github.com/mosaic-hpc/mosaic/internal/config"
	"github.com/mosaic-hpc/mosaic/internal/errs"
	"github.com/mosaic-hpc/mosaic/internal/globusfake"
	"github.com/mosaic-hpc/mosaic/internal/provider"
	"github.com/mosaic-hpc/mosaic/internal/provider/hpc"
	"github.com/mosaic-hpc/mosaic/internal/transport/globus"
)

// globusCore opens a core whose one system is Globus Compute endpoint ep, with its
// Globus settings (service URL, service identity, token directory) in getenv only.
func globusCore(t *testing.T, f *globusfake.Server, ep, id, secret string) (*Core, *globus.Transport) {
	t.Helper()
	dir := t.TempDir()
	sites := filepath.Join(dir, "sites.yaml")
	cat := "systems:\n  - name: G\n    kind: globus\n    endpoint: " + ep + "\n    accounts: [a]\n    workdir: /w\n"
	if err := os.WriteFile(sites, []byte(cat), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{globus.EnvComputeURL: f.URL, auth.EnvAuthURL: f.URL, auth.EnvServiceID: id, auth.EnvServiceSecret: secret,
		"XDG_CONFIG_HOME": filepath.Join(dir, "config")}
	c, err := Open(context.Background(), OpenOptions{Config: &config.Config{SitesFile: sites, DBPath: ":memory:"},
		Getenv: func(k string) string { return env[k] }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	for _, p := range c.collector.Providers() {
		if hp, ok := p.(*hpc.Provider); ok {
			if g, ok := hp.Transport().(*globus.Transport); ok {
				return c, g
			}
		}
	}
	t.Fatal("the core has no Globus Compute transport")
	return nil, nil
}

// TestTwoCoresDoNotShareGlobus: two cores in one process, configured for two Globus
// services with two identities, each reach their own service with their own tokens;
// an endpoint found offline by one core opens that core's breaker only, although
// both name the same endpoint id.
func TestTwoCoresDoNotShareGlobus(t *testing.T) {
	const ep = "4b116d3c-1703-4f8f-9f6f-39921e5864df"
	f1, f2 := globusfake.New(t), globusfake.New(t)
	f1.AddClient("svc-one", "secret-one")
	f2.AddClient("svc-two", "secret-two")
	for _, f := range []*globusfake.Server{f1, f2} {
		f.AddEndpoint(globusfake.Endpoint{ID: ep, Name: "mosaic", Hostname: "localhost"})
	}
	_, g1 := globusCore(t, f1, ep, "svc-one", "secret-one")
	_, g2 := globusCore(t, f2, ep, "svc-two", "secret-two")
	if g1.Client == g2.Client || g1.Client.BaseURL != f1.URL || g2.Client.BaseURL != f2.URL {
		t.Fatalf("clients: %p %s and %p %s", g1.Client, g1.Client.BaseURL, g2.Client, g2.Client.BaseURL)
	}
	if g1.Breaker == nil || g1.Breaker == g2.Breaker {
		t.Fatalf("breakers %p and %p: want one per core", g1.Breaker, g2.Breaker)
	}

	f1.SetOnline(ep, false)
	ctx := context.Background()
	if _, err := g1.Run(ctx, []string{"true"}, nil); !errors.Is(err, provider.ErrSiteDown) {
		t.Fatalf("core one, endpoint offline: %v", err)
	}
	if !g1.Breaker.Open() {
		t.Fatal("core one's breaker did not open")
	}
	if g2.Breaker.Open() {
		t.Fatal("core one's offline endpoint opened core two's breaker")
	}
	// Core two still asks its own service (its status call goes through): the
	// endpoint is online there.
	st, err := g2.Client.EndpointStatus(ctx, ep)
	if err != nil || st.Status != "online" {
		t.Fatalf("core two's endpoint status: %+v %v", st, err)
	}
	if len(f1.Minted()) == 0 || len(f2.Minted()) == 0 {
		t.Fatalf("tokens minted: service one %d, service two %d; each core must sign in to its own", len(f1.Minted()), len(f2.Minted()))
	}
	for _, a := range f1.Minted() {
		for _, b := range f2.Minted() {
			if a == b {
				t.Fatal("the two cores hold the same token")
			}
		}
	}
}

// TestExchangeBearer: the core's credential chain gives an Academy exchange's
// scope a token (a service identity here, by one more grant) with its expiry,
// and says what to run when there is no credential.
func TestExchangeBearer(t *testing.T) {
	f := globusfake.New(t)
	f.AddClient("svc", "sec")
	dir := t.TempDir()
	env := map[string]string{auth.EnvAuthURL: f.URL, auth.EnvServiceID: "svc", auth.EnvServiceSecret: "sec", "XDG_CONFIG_HOME": dir}
	g := NewGlobus(func(k string) string { return env[k] })
	tok, exp, err := g.ExchangeBearer(context.Background(), auth.AcademyExchangeScope, "")
	if err != nil || tok == "" || time.Until(exp) < 47*time.Hour {
		t.Fatalf("service identity: %q %v %v", tok, exp, err)
	}
	none := NewGlobus(func(k string) string { return map[string]string{auth.EnvAuthURL: f.URL, "XDG_CONFIG_HOME": dir}[k] })
	if _, _, err := none.ExchangeBearer(context.Background(), auth.AcademyExchangeScope, ""); !errors.Is(err, errs.ErrNeedsLogin) {
		t.Errorf("no credential: %v", err)
	}
}
