package provider

import (
	"errors"
	"fmt"
	"testing"

	"github.com/mosaic-hpc/mosaic/internal/errs"
)

// TestSentinelsAreTheLeafValues: an error a transport wraps with errs.X matches
// provider.X and the other way round, so callers of either name keep working.
func TestSentinelsAreTheLeafValues(t *testing.T) {
	for _, tc := range []struct{ p, e error }{
		{ErrUnsupported, errs.ErrUnsupported}, {ErrSiteDown, errs.ErrSiteDown}, {ErrNeedsLogin, errs.ErrNeedsLogin},
		{ErrTransient, errs.ErrTransient}, {ErrOutcomeUnknown, errs.ErrOutcomeUnknown},
	} {
		if !errors.Is(fmt.Errorf("ssh x: %w", tc.e), tc.p) || !errors.Is(fmt.Errorf("x: %w", tc.p), tc.e) {
			t.Errorf("%v and %v are different values", tc.p, tc.e)
		}
	}
	if errors.Is(ErrSiteDown, errs.ErrNeedsLogin) {
		t.Fatal("distinct sentinels match")
	}
}
