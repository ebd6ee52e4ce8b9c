package globus

import (
	"net/http"
	"os"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/auth"
)

// NewClient builds a Globus Compute client: base URL from getenv(EnvComputeURL)
// (default DefaultComputeURL; nil getenv reads the process environment) and
// credentials from r. There is no process-wide client: the core builds one for all
// its providers (so the shell function is registered once per core), a command
// builds its own.
func NewClient(getenv func(string) string, r *auth.Resolver) *Client {
	if getenv == nil {
		getenv = os.Getenv
	}
	base := getenv(EnvComputeURL)
	if base == "" {
		base = DefaultComputeURL
	}
	return &Client{BaseURL: base, Tokens: r, HTTP: &http.Client{Timeout: time.Minute}}
}
