package globus

import (
	_ "embed"
	"fmt"
	"regexp"
	"strings"
)

//go:embed scripts/endpoint-setup.sh
var setupScript string

// DefaultEndpointName is the endpoint `mosaic endpoint-setup` creates.
const DefaultEndpointName = "mosaic"

var endpointNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// SetupScript returns the bash script that installs globus-compute-endpoint in a
// private venv (~/.gce-venv), configures an endpoint with one worker and pinned thread
// pools, starts it detached and prints its UUID (a MOSAIC_ENDPOINT_ID=<uuid> line).
func SetupScript(name string) (string, error) {
	if !endpointNameRE.MatchString(name) {
		return "", fmt.Errorf("endpoint name %q: use letters, digits, '.', '_' or '-'", name)
	}
	return strings.ReplaceAll(setupScript, "__EP_NAME__", name), nil
}

var setupIDRE = regexp.MustCompile(`(?m)^MOSAIC_ENDPOINT_ID=([0-9a-fA-F-]{36})\s*$`)

// ParseSetupOutput finds the endpoint UUID in the script's output.
func ParseSetupOutput(out string) (string, bool) {
	m := setupIDRE.FindStringSubmatch(out)
	if m == nil || !ValidEndpointID(m[1]) {
		return "", false
	}
	return m[1], true
}
