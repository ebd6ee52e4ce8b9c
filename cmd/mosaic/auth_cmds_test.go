package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/auth"
	"github.com/mosaic-hpc/mosaic/internal/globusfake"
	"github.com/mosaic-hpc/mosaic/internal/transport/globus"
)

func TestListEndpointsRecognisesMachines(t *testing.T) {
	f := globusfake.New(t)
	f.AddClient("svc", "secret")
	f.AddEndpoint(globusfake.Endpoint{ID: "4b116d3c-1703-4f8f-9f6f-39921e5864df", Name: "mosaic", Hostname: "gh-login01.delta.ncsa.illinois.edu"})
	f.AddEndpoint(globusfake.Endpoint{ID: "5c116d3c-1703-4f8f-9f6f-39921e5864df", Name: "mosaic-vista", Hostname: "login1.vista.tacc.utexas.edu"})
	f.AddEndpoint(globusfake.Endpoint{ID: "6d116d3c-1703-4f8f-9f6f-39921e5864df", Name: "laptop", Hostname: "laptop.local"})
	f.SetOnline("5c116d3c-1703-4f8f-9f6f-39921e5864df", false)
	env := map[string]string{auth.EnvServiceID: "svc", auth.EnvServiceSecret: "secret", auth.EnvAuthURL: f.URL}
	r := &auth.Resolver{Dir: t.TempDir(), Getenv: func(k string) string { return env[k] }}
	rep, err := listEndpoints(context.Background(), &globus.Client{BaseURL: f.URL, Tokens: r})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]endpointRow{}
	for _, e := range rep.Endpoints {
		got[e.Name] = e
	}
	if got["mosaic"].System != "DeltaAI@NCSA" || got["mosaic"].Status != "online" {
		t.Errorf("deltaai endpoint: %+v", got["mosaic"])
	}
	if got["mosaic-vista"].System != "Vista@TACC" || got["mosaic-vista"].Status != "offline" {
		t.Errorf("vista endpoint: %+v", got["mosaic-vista"])
	}
	if got["laptop"].System != "" {
		t.Errorf("laptop matched %s", got["laptop"].System)
	}
	missing := strings.Join(rep.Missing, ",")
	if strings.Contains(missing, "Vista") || strings.Contains(missing, "DeltaAI") || !strings.Contains(missing, "Delta@NCSA") || !strings.Contains(missing, "Frontera@TACC") {
		t.Errorf("missing: %v", rep.Missing)
	}
}

func TestPrintAuthStatusHasNoToken(t *testing.T) {
	var b bytes.Buffer
	st := auth.Status{Source: auth.SourceCLI, Identity: auth.Identity{Username: "u@example.org"}, Scopes: []string{auth.ComputeScope},
		ExpiresAt: time.Now().Add(time.Hour), Refreshable: true, File: "/x/cli-login.json"}
	if err := printAuthStatus(&b, st); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"cli-login", "u@example.org", auth.ComputeScope, "refreshable"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, b.String())
		}
	}
}
