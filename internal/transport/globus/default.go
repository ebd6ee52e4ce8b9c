package globus

import (
	"os"
	"sync"
	"time"

	"net/http"

	"github.com/mosaic-hpc/mosaic/internal/auth"
)

var (
	defaultOnce     sync.Once
	defaultClient   *Client
	defaultResolver *auth.Resolver
)

// DefaultClient is the process-wide Globus Compute client: base URL from
// MOSAIC_GLOBUS_COMPUTE_URL (default DefaultComputeURL) and credentials from
// DefaultResolver. Sharing it means the shell function is registered once per process.
func DefaultClient() *Client {
	defaultOnce.Do(func() {
		defaultResolver = auth.NewResolver(nil)
		base := os.Getenv(EnvComputeURL)
		if base == "" {
			base = DefaultComputeURL
		}
		defaultClient = &Client{BaseURL: base, Tokens: defaultResolver, HTTP: &http.Client{Timeout: time.Minute}}
	})
	return defaultClient
}

// DefaultResolver is the credential resolver behind DefaultClient (the lead's
// `mosaic serve` mounts auth.NewWebSignIn(DefaultResolver()) so both share state).
func DefaultResolver() *auth.Resolver {
	DefaultClient()
	return defaultResolver
}
