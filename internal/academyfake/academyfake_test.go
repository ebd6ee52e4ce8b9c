package academyfake_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/mosaic-hpc/mosaic/agent"
	"github.com/mosaic-hpc/mosaic/internal/academyfake"
	"github.com/mosaic-hpc/mosaic/internal/auth"
	"github.com/mosaic-hpc/mosaic/internal/globusfake"
)

// TestFrontDoor: the answers of academy/exchange/cloud/authenticate.py for each
// kind of Authorization header, and a live token of the exchange's audience let
// through to the protocol routes.
func TestFrontDoor(t *testing.T) {
	g := globusfake.New(t)
	g.AddClient("svc", "sec")
	x := academyfake.New(t, g, "")
	c := &auth.Client{BaseURL: g.URL, ClientID: "svc", ClientSecret: "sec"}
	toks, err := c.ClientCredentials(context.Background(), []string{auth.AcademyExchangeScope, auth.ComputeScope})
	if err != nil {
		t.Fatal(err)
	}
	good, compute := toks[auth.AcademyExchangeResourceServer].AccessToken, toks[auth.ComputeResourceServer].AccessToken
	body := `{"mailbox":"{\"uid\":\"6c67e2a4-0000-4000-8000-000000000001\",\"name\":null,\"role\":\"user\"}"}`
	for name, c := range map[string]struct {
		header []string
		code   int
		text   string
	}{
		"none":           {nil, 401, "missing authorization header"},
		"two headers":    {[]string{"Bearer " + good, "Bearer " + good}, 401, "missing authorization header"},
		"lower bearer":   {[]string{"bearer " + good}, 401, "malformed"},
		"three parts":    {[]string{"Bearer " + good + " x"}, 401, "malformed"},
		"unknown":        {[]string{"Bearer AgNope"}, 403, "expired or has been revoked"},
		"wrong audience": {[]string{"Bearer " + compute}, 403, "audience"},
		"good":           {[]string{"Bearer " + good}, 200, `"status":"MISSING"`},
	} {
		req, _ := http.NewRequest(http.MethodGet, x.URL+"/mailbox", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		for _, h := range c.header {
			req.Header.Add("Authorization", h)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		buf := make([]byte, 4096)
		n, _ := resp.Body.Read(buf)
		b.Write(buf[:n])
		resp.Body.Close()
		if v := resp.Header.Get(agent.DedupeHeader); v != "" {
			t.Errorf("%s: %s=%q: Academy's exchange does not de-duplicate sends", name, agent.DedupeHeader, v)
		}
		if resp.StatusCode != c.code || !strings.Contains(b.String(), c.text) {
			t.Errorf("%s: HTTP %d %q, want %d with %q", name, resp.StatusCode, b.String(), c.code, c.text)
		}
	}
	if g.Introspections.Load() == 0 {
		t.Error("the fake exchange never asked Globus Auth")
	}
	g.RevokeAll()
	req, _ := http.NewRequest(http.MethodGet, x.URL+"/mailbox", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+good)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 403 {
		t.Errorf("revoked token: HTTP %d, want 403", resp.StatusCode)
	}
}
