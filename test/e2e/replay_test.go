package e2e

import (
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mosaic-hpc/mosaic/internal/transport/rigenv"
)

// sharedTraces is ../shared/traces beside the clone (CI) or $MOSAIC_TRACES.
func sharedTraces(t *testing.T) string {
	t.Helper()
	d := os.Getenv("MOSAIC_TRACES")
	if d == "" {
		d = filepath.Join(repoRoot(), "..", "shared", "traces")
	}
	if _, err := os.Stat(filepath.Join(d, "lublin_256.swf.gz")); err != nil {
		rigenv.Missing(t, "SWF traces not found in "+d+"; put the shared folder beside the clone or set MOSAIC_TRACES")
	}
	return d
}

// TestSimReplay runs `mosaic sim replay` on the three-site example federation: the
// table, --json and the SVG plot. No core is needed.
func TestSimReplay(t *testing.T) {
	traces := sharedTraces(t)
	e := newEnv(t)
	e.vars = append(e.vars, "MOSAIC_TRACES="+traces)
	fed := filepath.Join(repoRoot(), "examples", "federations", "nasa-lublin.yaml")
	trace := filepath.Join(traces, "lublin_256.swf.gz")
	plot := filepath.Join(e.home, "waits.svg")
	args := []string{"sim", "replay", "--federation", fed, "--trace", trace, "--policies", "home,earliest-start,mosaic", "--jobs", "80", "--seed", "3"}
	out, errOut, code := e.run(append(args, "--plot", plot)...)
	if code != 0 {
		t.Fatalf("exit %d: %s%s", code, out, errOut)
	}
	for _, want := range []string{"POLICY", "MEAN WAIT", "home", "earliest-start", "mosaic", "UTILISATION", "goal: mosaic mean wait"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	svg, err := os.ReadFile(plot)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		XMLName xml.Name
		Lines   []struct{} `xml:"polyline"`
	}
	if err := xml.Unmarshal(svg, &doc); err != nil || doc.XMLName.Local != "svg" || len(doc.Lines) != 4 {
		t.Errorf("plot is not an SVG with 4 curves (3 policies, the bound) (err %v, root %s, %d curves)", err, doc.XMLName.Local, len(doc.Lines))
	}
	js1, _, code := e.run(append(args, "--json")...)
	js2, _, _ := e.run(append(args, "--json")...)
	if code != 0 || js1 != js2 {
		t.Fatalf("--json not reproducible with the same seed (exit %d)", code)
	}
	var rep struct {
		Jobs    int `json:"jobs"`
		Results []struct {
			Policy   string  `json:"policy"`
			MeanWait float64 `json:"mean_wait_s"`
			Finished int     `json:"finished"`
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(js1), &rep); err != nil {
		t.Fatalf("--json output: %v\n%s", err, js1)
	}
	if rep.Jobs != 80 || len(rep.Results) != 3 || rep.Results[2].Policy != "mosaic" || rep.Results[2].Finished == 0 {
		t.Errorf("unexpected report: %+v", rep)
	}
	// Several seeds: means with 95% intervals, the ratios per seed, the goals; --json
	// carries every seed's report.
	sargs := []string{"sim", "replay", "--federation", fed, "--trace", trace, "--policies", "earliest-start,mosaic", "--jobs", "40", "--seeds", "1..3"}
	out, errOut, code = e.run(sargs...)
	if code != 0 {
		t.Fatalf("--seeds: exit %d: %s%s", code, out, errOut)
	}
	for _, want := range []string{"seeds 1..3 (3)", "MEAN WAIT ± 95%", "(bound)", "Student's t", "goal: on no seed a mean wait above 1.05×"} {
		if !strings.Contains(out, want) {
			t.Errorf("--seeds table lacks %q:\n%s", want, out)
		}
	}
	js, _, code := e.run(append(sargs, "--json")...)
	var sr struct {
		Seeds    []int64                `json:"seeds"`
		Reports  []struct{ Seed int64 } `json:"reports"`
		Policies []struct {
			Policy   string `json:"policy"`
			MeanWait struct {
				Mean, Low, High float64
			} `json:"mean_wait_s"`
		} `json:"policies"`
	}
	if err := json.Unmarshal([]byte(js), &sr); err != nil || code != 0 {
		t.Fatalf("--seeds --json: exit %d, %v\n%s", code, err, js)
	}
	if len(sr.Seeds) != 3 || len(sr.Reports) != 3 || sr.Reports[2].Seed != 3 || len(sr.Policies) != 2 ||
		sr.Policies[1].MeanWait.Low > sr.Policies[1].MeanWait.Mean {
		t.Errorf("--seeds --json: %+v", sr)
	}
	if _, errOut, code = e.run("sim", "replay", "--federation", fed, "--trace", trace, "--seeds", "5..1"); code == 0 || !strings.Contains(errOut, "runs backwards") {
		t.Errorf("--seeds 5..1: exit %d, stderr %q", code, errOut)
	}
	// Bad input: an unknown policy is a clear error with a non-zero exit.
	_, errOut, code = e.run("sim", "replay", "--federation", fed, "--trace", trace, "--policies", "fastest")
	if code == 0 || !strings.Contains(errOut, `unknown policy "fastest"`) {
		t.Errorf("unknown policy: exit %d, stderr %q", code, errOut)
	}
}

// TestSimReplayCalibration: --calibration prints, per partition, how the observed
// waits compare with the sites' estimates and with mosaic's learned correction, and
// the same numbers are in --json; --no-learned-waits makes the two columns equal.
func TestSimReplayCalibration(t *testing.T) {
	traces := sharedTraces(t)
	e := newEnv(t)
	fed := filepath.Join(repoRoot(), "examples", "federations", "nasa-lublin.yaml")
	args := []string{"sim", "replay", "--federation", fed, "--trace", filepath.Join(traces, "lublin_256.swf.gz"),
		"--policies", "mosaic", "--jobs", "1000", "--seed", "1"}
	out, errOut, code := e.run(append(args, "--calibration")...)
	if code != 0 {
		t.Fatalf("exit %d: %s%s", code, out, errOut)
	}
	for _, want := range []string{"SITE p10/p50/p90", "LEARNED p10/p50/p90", "mosaic  iPSC/batch", "mosaic  all"} {
		if !strings.Contains(out, want) {
			t.Errorf("calibration table lacks %q:\n%s", want, out)
		}
	}
	type quant struct {
		P50 float64 `json:"p50"`
		MAE float64 `json:"mean_abs_log_error"`
	}
	type row struct {
		System    string `json:"system"`
		Waiting   int    `json:"site_said_wait"`
		Site      quant  `json:"site_estimate"`
		Corrected quant  `json:"corrected"`
	}
	all := func(extra ...string) row {
		t.Helper()
		js, errOut, code := e.run(append(append(args, extra...), "--json")...)
		if code != 0 {
			t.Fatalf("--json exit %d: %s", code, errOut)
		}
		var rep struct {
			Results []struct {
				Calibration []row `json:"calibration"`
			} `json:"results"`
		}
		if err := json.Unmarshal([]byte(js), &rep); err != nil || len(rep.Results) != 1 || len(rep.Results[0].Calibration) == 0 {
			t.Fatalf("--json calibration: %v\n%s", err, js)
		}
		c := rep.Results[0].Calibration
		if last := c[len(c)-1]; last.System == "*" && last.Waiting > 0 {
			return last
		}
		t.Fatalf("no all row with waiting jobs: %+v", c)
		return row{}
	}
	on, off := all(), all("--no-learned-waits")
	if !(on.Corrected.MAE < on.Site.MAE) {
		t.Errorf("learned correction no better calibrated than the sites' estimates: %+v", on)
	}
	if off.Corrected != off.Site {
		t.Errorf("--no-learned-waits: corrected %+v differs from the sites' %+v", off.Corrected, off.Site)
	}
}
