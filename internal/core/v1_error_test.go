package core

import (
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/mosaic-hpc/mosaic/internal/errs"
)

// TestV1ErrorSiteFailures: a failure of a site is never a 500 — 503 when it cannot
// be reached or was briefly busy (also wrapped as a refused request, as a cancel
// wraps it), 502 when it refused Mosaic's credentials — and the message (which names
// the site) is kept; the request's own problems keep their 4xx.
func TestV1ErrorSiteFailures(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want int
	}{
		{fmt.Errorf("Gone: ssh 127.0.0.1: connection refused: %w", errs.ErrSiteDown), http.StatusServiceUnavailable},
		{fmt.Errorf("%w: Gone: %w", ErrInvalid, errs.ErrSiteDown), http.StatusServiceUnavailable},
		{errs.Mark(errors.New("Gone: sbatch: Resource temporarily unavailable"), errs.ErrTransient), http.StatusServiceUnavailable},
		{fmt.Errorf("Gone: %w", errs.ErrNeedsLogin), http.StatusBadGateway},
		{fmt.Errorf("system %q: %w", "Gone", ErrNotFound), http.StatusNotFound},
		{fmt.Errorf("%w: refused: empty command", ErrInvalid), http.StatusUnprocessableEntity},
		{errors.New("the store is closed"), http.StatusInternalServerError},
	} {
		e := V1Error(tc.err)
		if e.Status != tc.want || e.Detail != tc.err.Error() {
			t.Errorf("V1Error(%q) = %d %q, want %d with the message kept", tc.err, e.Status, e.Detail, tc.want)
		}
	}
}
