package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/mosaic-hpc/mosaic/internal/sim"
)

var update = flag.Bool("update", false, "rewrite the golden replay files in testdata/")

// goldenResult is a Result with its per-job waits: what the golden file pins.
type goldenResult struct {
	*Result
	Waits []float64 `json:"waits_s"`
}

// TestReplayGolden pins every number of a 200-job, all-policy replay of nasa-lublin
// (seed 1): performance work on the replay and the simulator must not change results.
// The golden file was written by the code before that work (go test -run
// TestReplayGolden -update); a policy change that legitimately moves the numbers
// rewrites it the same way, and says so in its commit.
func TestReplayGolden(t *testing.T) {
	dir := tracesDir(t)
	t.Setenv(TracesEnv, dir)
	tr, err := sim.ReadSWF(filepath.Join(dir, "lublin_256.swf.gz"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := LoadFederation(filepath.Join("..", "..", "examples", "federations", "nasa-lublin.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	pols, err := ParsePolicies("all")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Compare(context.Background(), Options{Federation: f, Trace: tr, Policies: pols, Jobs: 200, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]goldenResult{}
	for _, r := range rep.Results {
		got[r.Policy] = goldenResult{r, r.Waits}
	}
	js, err := json.MarshalIndent(got, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	js = append(js, '\n')
	path := filepath.Join("testdata", "golden-nasa-lublin-200.json")
	if *update {
		if err := os.WriteFile(path, js, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (write it with go test -run TestReplayGolden -update)", err)
	}
	if !bytes.Equal(js, want) {
		var w map[string]goldenResult
		if err := json.Unmarshal(want, &w); err != nil {
			t.Fatal(err)
		}
		for name, g := range got {
			x, ok := w[name]
			if !ok {
				t.Errorf("policy %s is not in the golden file", name)
				continue
			}
			a, _ := json.Marshal(g)
			b, _ := json.Marshal(x)
			if !bytes.Equal(a, b) {
				t.Errorf("policy %s differs from the golden replay:\n got %s\nwant %s", name, a, b)
			}
		}
		if len(w) != len(got) {
			t.Errorf("%d policies, the golden file has %d", len(got), len(w))
		}
	}
}
