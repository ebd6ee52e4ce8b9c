package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mosaic-hpc/mosaic/internal/globusfake"
)

// TestGlobusCommandsReadTheirEnvironment: `mosaic auth` and `mosaic endpoints` build
// their Globus client from the environment they are started with (there is no
// process-wide client any more): a fake Globus Auth + Compute service named by
// MOSAIC_GLOBUS_AUTH_URL / MOSAIC_GLOBUS_COMPUTE_URL and a service identity answer.
func TestGlobusCommandsReadTheirEnvironment(t *testing.T) {
	f := globusfake.New(t)
	f.AddClient("e2e-service", "e2e-secret")
	const ep = "4b116d3c-1703-4f8f-9f6f-39921e5864df"
	f.AddEndpoint(globusfake.Endpoint{ID: ep, Name: "mosaic", Hostname: "login.delta.ncsa.illinois.edu"})
	dir := t.TempDir()
	vars := append(without(os.Environ(), "XDG_CONFIG_HOME", "MOSAIC_GLOBUS_TOKENS", "GLOBUS_COMPUTE_CLIENT_ID", "GLOBUS_COMPUTE_CLIENT_SECRET"),
		"XDG_CONFIG_HOME="+filepath.Join(dir, "config"), "MOSAIC_GLOBUS_AUTH_URL="+f.URL, "MOSAIC_GLOBUS_COMPUTE_URL="+f.URL,
		"GLOBUS_COMPUTE_CLIENT_ID=e2e-service", "GLOBUS_COMPUTE_CLIENT_SECRET=e2e-secret")

	out, errOut, code := runIn(t, dir, vars, "endpoints", "--json")
	if code != 0 {
		t.Fatalf("mosaic endpoints: exit %d: %s", code, errOut)
	}
	var rep struct {
		Endpoints []struct {
			UUID, Name, Status, Hostname string
		} `json:"endpoints"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if len(rep.Endpoints) != 1 || rep.Endpoints[0].UUID != ep || rep.Endpoints[0].Status != "online" {
		t.Fatalf("endpoints from the fake service: %s", out)
	}

	out, errOut, code = runIn(t, dir, vars, "auth", "--json")
	if code != 0 {
		t.Fatalf("mosaic auth: exit %d: %s", code, errOut)
	}
	var st struct {
		Source   string `json:"source"`
		ClientID string `json:"client_id"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if st.ClientID != "e2e-service" || st.Source == "" {
		t.Fatalf("mosaic auth does not report the service identity of its environment: %s", out)
	}
	if len(f.Minted()) == 0 {
		t.Fatal("the fake Globus Auth minted no token: the commands did not sign in to the service of their environment")
	}
	for _, tok := range f.Minted() {
		if strings.Contains(out, tok) || strings.Contains(errOut, tok) {
			t.Fatal("mosaic auth printed a token")
		}
	}
}
