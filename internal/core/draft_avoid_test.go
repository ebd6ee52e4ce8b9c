package core

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/mosaic-hpc/mosaic/internal/site"
)

// TestDraftKeepsOnlyKnownAvoidedSystems: the drafter reads "avoid Frontera and Zeus"
// without knowing the federation; the core keeps the names its catalog has (spelled as
// the catalog spells them) and says which it ignored.
func TestDraftKeepsOnlyKnownAvoidedSystems(t *testing.T) {
	c := &Core{cat: &site.Catalog{Systems: []site.System{{Name: "Frontera@TACC"}, {Name: "Delta@NCSA"}}}}
	res, err := c.DraftEnvelope(context.Background(), "md", "CPU only, 16 cores, 1 hour, avoid Frontera and Zeus")
	if err != nil {
		t.Fatal(err)
	}
	env := res.Envelope
	if !slices.Equal(env.Constraints.AvoidSystems, []string{"Frontera@TACC"}) || !strings.Contains(env.Rationale, "ignored avoid Zeus (no such system)") {
		t.Errorf("avoid_systems %v, rationale %q", env.Constraints.AvoidSystems, env.Rationale)
	}
	if err := env.Validate(); err != nil {
		t.Errorf("invalid after filtering: %v", err)
	}
}
