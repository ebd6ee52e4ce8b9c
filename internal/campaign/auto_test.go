package campaign

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/site"
)

func TestResolveAuto(t *testing.T) {
	spec, err := Parse([]byte(`{
  "name": "c", "initial_agent": "a", "user_task": "hi",
  "agents": [
    {"name": "a", "command": ["true"], "allowed_peers": ["b"],
     "envelope": {"cpu_cores": {"min": 4}, "gpus": {"min": 1, "max": 2}, "walltime": {"min": "2h"}}},
    {"name": "b", "command": ["true"], "allowed_peers": ["a"]}
  ]}`), "c.jsonc")
	if err != nil {
		t.Fatal(err)
	}
	env := SliceEnvelope(spec, []string{"a", "b"}, DefaultAutoWalltime)
	if env.CPUCores.Min != 5 || env.GPUs.Min != 1 || env.GPUs.Max != 2 || env.Walltime.Min != model.Duration(2*time.Hour) || env.Nodes.Max != 1 {
		t.Fatalf("slice envelope %+v", env)
	}
	if e := SliceEnvelope(spec, []string{"b"}, DefaultAutoWalltime); e.CPUCores.Min != 1 || e.Walltime.Min != DefaultAutoWalltime {
		t.Fatalf("default slice envelope %+v", e)
	}
	cat, err := site.Parse("s.yaml", []byte("systems:\n  - name: alpha\n    kind: local\n"))
	if err != nil {
		t.Fatal(err)
	}
	sites := []SiteSpec{mustSpec(t, "auto;agents=a,b"), mustSpec(t, "beta:queue=cpu;walltime=00:10:00;agents=b")}
	var asked model.Envelope
	place := func(_ context.Context, _ string, e model.Envelope) (AutoPlacement, error) {
		asked = e
		return AutoPlacement{System: "alpha", Partition: "gpu", Account: "acct", Walltime: e.Walltime.Min}, nil
	}
	out, placed, err := ResolveAuto(context.Background(), spec, sites, cat, place, DefaultAutoWalltime)
	if err != nil {
		t.Fatal(err)
	}
	if len(placed) != 1 || out[0].Mode != ModeSubmit || out[0].Name != "alpha" || out[0].Queue != "gpu" || out[0].Account != "acct" ||
		out[0].Walltime != model.Duration(2*time.Hour) || strings.Join(out[0].Agents, ",") != "a,b" || out[1].Name != "beta" || asked.GPUs.Min != 1 {
		t.Fatalf("resolved %+v", out)
	}
	// A system outside the launch catalog, a placer error, and no placer are refused.
	far := func(context.Context, string, model.Envelope) (AutoPlacement, error) {
		return AutoPlacement{System: "gamma"}, nil
	}
	if _, _, err := ResolveAuto(context.Background(), spec, sites[:1], cat, far, DefaultAutoWalltime); err == nil || !strings.Contains(err.Error(), "gamma") {
		t.Fatalf("unknown system: %v", err)
	}
	bad := func(context.Context, string, model.Envelope) (AutoPlacement, error) {
		return AutoPlacement{}, errors.New("no feasible placement")
	}
	if _, _, err := ResolveAuto(context.Background(), spec, sites[:1], cat, bad, DefaultAutoWalltime); err == nil || !strings.Contains(err.Error(), "no feasible") {
		t.Fatalf("placer error: %v", err)
	}
	if _, _, err := ResolveAuto(context.Background(), spec, sites[:1], cat, nil, DefaultAutoWalltime); err == nil || !strings.Contains(err.Error(), "mosaic serve") {
		t.Fatalf("no placer: %v", err)
	}
}

func mustSpec(t *testing.T, raw string) SiteSpec {
	t.Helper()
	sp, err := ParseSiteSpec(raw)
	if err != nil {
		t.Fatal(err)
	}
	return sp
}
