package scheduler

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s (run go test -update to create it): %v", path, err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file; if the change is intended run `go test ./internal/scheduler -run %s -update`\n--- got ---\n%s", path, t.Name(), got)
	}
}

// TestGoldenDecisionA100 places a "1-4 x A100 40 GB" task on the six-machine snapshot:
// several systems offer candidates and the rules exclude the others with reasons.
func TestGoldenDecisionA100(t *testing.T) {
	s := New(Options{Now: func() time.Time { return fixedNow }})
	d, err := s.Place(context.Background(), a100Task(), sixMachines(), PlaceOptions{})
	if err != nil {
		t.Fatalf("Place: %v", err)
	}
	var buf bytes.Buffer
	if err := d.Table(&buf); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "place_a100_table", buf.Bytes())
	js, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "place_a100_decision", append(js, '\n'))

	systems := map[string]bool{}
	for _, c := range d.Feasible() {
		systems[c.System] = true
	}
	if len(systems) < 3 {
		t.Errorf("want feasible candidates on at least 3 systems, got %v", systems)
	}
	for _, c := range d.Candidates {
		if len(c.Verdicts) < len(DefaultRules()) {
			t.Errorf("%s: %d verdicts, want every rule's", c.Key(), len(c.Verdicts))
		}
		if !c.Feasible && len(c.Failures()) == 0 {
			t.Errorf("%s infeasible without a failing verdict", c.Key())
		}
	}
}

// TestGoldenDecisionLLM shows the AI column and rationale when an LLM reorders.
func TestGoldenDecisionLLM(t *testing.T) {
	answer := `{"order":[{"id":"` + keyDelta + `","reason":"largest idle A100 pool; 4 GPUs now"},` +
		`{"id":"` + keyAnvil + `","reason":"starts soon but only 2 GPUs"},{"id":"` + keyLS6 + `","reason":"exclusive nodes at 4 SU per node-hour"}]}`
	s := New(Options{Now: func() time.Time { return fixedNow }, LLM: NewLLMRanker(stubClient{name: "anthropic/test-model", answer: answer})})
	d, err := s.Place(context.Background(), a100Task(), sixMachines(), PlaceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := d.Table(&buf); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "place_a100_llm_table", buf.Bytes())
}

// TestDecisionJSONRoundTrip: the trace decodes back with every verdict.
func TestDecisionJSONRoundTrip(t *testing.T) {
	d, err := New(Options{Now: func() time.Time { return fixedNow }}).Place(context.Background(), a100Task(), sixMachines(), PlaceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	var back Decision
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Candidates) != 15 || back.Chosen != d.Chosen || back.Spec == nil || back.Spec.GPUs != d.Spec.GPUs {
		t.Fatalf("round trip lost data: %d candidates, chosen %q", len(back.Candidates), back.Chosen)
	}
	for _, c := range back.Candidates {
		if len(c.Verdicts) != len(back.Rules) {
			t.Errorf("%s: %d verdicts, want %d", c.Key(), len(c.Verdicts), len(back.Rules))
		}
		for _, v := range c.Verdicts {
			if v.Reason == "" {
				t.Errorf("%s/%s: empty reason", c.Key(), v.Rule)
			}
		}
	}
}

// TestTableWithoutFeasible renders a decision that chose nothing.
func TestTableWithoutFeasible(t *testing.T) {
	task := a100Task()
	task.Envelope.Constraints.GPUModels = []string{"MI250X"}
	d, err := New(Options{Now: func() time.Time { return fixedNow }}).Place(context.Background(), task, sixMachines(), PlaceOptions{})
	if err == nil {
		t.Fatal("want no feasible placement")
	}
	var buf bytes.Buffer
	if err := d.Table(&buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if strings.Contains(out, "chosen:") || !strings.Contains(out, "MI250X") || strings.Count(out, "\n") < 16 {
		t.Errorf("table:\n%s", out)
	}
}
