package scheduler

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

// reflectJSON is the decision as encoding/json writes it by reflection.
func reflectJSON(t *testing.T, d *Decision) []byte {
	t.Helper()
	type plain Decision
	b, err := json.Marshal((*plain)(d))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func sameJSON(t *testing.T, what string, d *Decision) {
	t.Helper()
	d.Explain()
	want := reflectJSON(t, d)
	direct, err := d.MarshalJSON() // as the store calls it
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	viaJSON, err := json.Marshal(d) // as the API's encoder calls it (re-checks and re-escapes the bytes)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	for _, got := range [][]byte{direct, viaJSON} {
		diffJSON(t, what, got, want)
	}
}

func diffJSON(t *testing.T, what string, got, want []byte) {
	t.Helper()
	if !bytes.Equal(got, want) {
		i := 0
		for i < len(got) && i < len(want) && got[i] == want[i] {
			i++
		}
		lo := max(i-80, 0)
		t.Fatalf("%s: JSON differs from encoding/json at byte %d:\n got  %s\n want %s", what, i, got[lo:min(i+80, len(got))], want[lo:min(i+80, len(want))])
	}
}

// TestTraceJSONIsEncodingJSON: the trace's hand-written candidate encoding is byte for
// byte encoding/json's, on fixture and random federations, feasible or not, and on
// values that need escaping or exponent notation.
func TestTraceJSONIsEncodingJSON(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(6, 6))
	snaps := []*model.ResourceSnapshot{sixMachines(), bigSnapshot(300),
		{Records: variedRecords(rng), Systems: sixMachines().Systems},
		{Records: randomRecords(rng, 400), Systems: randomSystems(rng)}}
	n := 0
	for _, snap := range snaps {
		for _, r := range variedRequests(rng)[:20] {
			task := a100Task()
			task.Envelope, task.Target = r.Envelope, r.Target
			d, err := newTestScheduler(Options{}).Place(ctx, task, snap, PlaceOptions{Exclude: r.Exclude})
			if err != nil && !errors.Is(err, ErrNoFeasible) {
				continue
			}
			sameJSON(t, "placement", d)
			n++
		}
	}
	if n < 40 {
		t.Fatalf("only %d decisions compared", n)
	}

	d, err := newTestScheduler(Options{}).Place(ctx, a100Task(), sixMachines(), PlaceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d.Explain()
	c := d.Candidates[0]
	c.System, c.Partition, c.Account = `<a&b>"q"\`, "ünï\u2028code\x01", ""
	c.AIReason, c.AIRank, c.OverWait, c.WaitSource, c.WalltimeNote = "AI <says> so", 3, true, "site", "tab\there"
	c.Scores = Scores{Wait: 1e-7, Size: 1e21, Fit: math.Copysign(0, -1), Cost: 123456789.125, Total: 0.000001}
	c.CostSU = 2.5e-9
	c.Verdicts = append(c.Verdicts, Verdict{Rule: "x", Reason: string([]byte{0xff, 'a'})})
	d.Candidates[1].Verdicts = nil
	d.Candidates = append(d.Candidates, nil)
	sameJSON(t, "edited", d)

	d.Candidates[0].Scores.Total = math.NaN()
	if _, err := json.Marshal(d); err == nil {
		t.Fatal("a NaN score encoded; encoding/json refuses it")
	}
}
