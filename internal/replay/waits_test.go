package replay

import (
	"context"
	"math"
	"path/filepath"
	"testing"

	"github.com/mosaic-hpc/mosaic/internal/sim"
)

// The replay feeds the mosaic policy's learner from its own started jobs, as the live
// core does from the store: on nasa-lublin the sites' estimates are pessimistic (jobs
// end before their walltime), and the corrected estimates the ranker used are closer
// to the observed waits than the sites' own. Without the learner (and for the other
// policies) the two columns are the same.
func TestReplayLearnsSiteEstimateErrors(t *testing.T) {
	fed, err := LoadFederation(filepath.Join("..", "..", "examples", "federations", "nasa-lublin.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	tr, err := sim.ReadSWF(filepath.Join(tracesDir(t), "lublin_256.swf.gz"))
	if err != nil {
		t.Fatal(err)
	}
	pols, _ := ParsePolicies("earliest-start,mosaic")
	rep, err := Compare(context.Background(), Options{Federation: fed, Trace: tr, Policies: pols, Seed: 1, Jobs: 1000})
	if err != nil {
		t.Fatal(err)
	}
	all := func(r *Result) (row int) {
		t.Helper()
		n := len(r.Calibration)
		if n < 2 || r.Calibration[n-1].System != "*" {
			t.Fatalf("%s: calibration %+v, want partitions and an all row", r.Policy, r.Calibration)
		}
		return n - 1
	}
	m := rep.Result(PolicyMosaic)
	a := m.Calibration[all(m)]
	if a.Jobs != m.Started || a.Waiting < 50 {
		t.Fatalf("mosaic: calibration of %d jobs (%d said wait), %d started", a.Jobs, a.Waiting, m.Started)
	}
	if a.Raw.P50 >= 0.7 {
		t.Errorf("site estimates p50 observed/predicted %.2f: expected clearly pessimistic on nasa-lublin", a.Raw.P50)
	}
	if !(a.Corrected.MAE < a.Raw.MAE-0.1) || !(math.Abs(math.Log(a.Corrected.P50)) < math.Abs(math.Log(a.Raw.P50))) || a.Corrected.Within2x <= a.Raw.Within2x {
		t.Errorf("learned correction no better calibrated than the sites': %+v", a)
	}
	es := rep.Result(PolicyEarliestStart)
	if e := es.Calibration[all(es)]; e.Raw != e.Corrected {
		t.Errorf("earliest-start has no learner, yet its corrected calibration differs: %+v", e)
	}

	off, err := Compare(context.Background(), Options{Federation: fed, Trace: tr, Policies: pols[1:], Seed: 1, Jobs: 1000, NoLearnedWaits: true})
	if err != nil {
		t.Fatal(err)
	}
	o := off.Results[0]
	if x := o.Calibration[all(o)]; x.Raw != x.Corrected {
		t.Errorf("NoLearnedWaits: corrected calibration differs from the sites': %+v", x)
	}
}
