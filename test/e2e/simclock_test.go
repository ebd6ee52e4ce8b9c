package e2e

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestSimClockShown: on the simulated federation the speed-up is never hidden. `about`
// (and GET /api/about) says it, the dry-run footer gives the chosen walltime and wait in
// real time, and `mosaic task` gives each attempt's walltime and run time in both
// clocks. The dry run also shows the sizing defaults of issue 15: a GPU job without
// --cpus/--mem gets the node's share per GPU, and walltime is the envelope's maximum
// unless the rationale says why a shorter one starts sooner.
func TestSimClockShown(t *testing.T) {
	e := newEnv(t)
	e.serve("--tick", "1s", "--speed", "120")

	out, errOut, rc := e.run("about")
	if want := "simulated federation at 120× — 1h of walltime takes 30s real time"; rc != 0 || !strings.Contains(out, want) {
		t.Fatalf("about rc=%d %s: want %q in\n%s", rc, errOut, want, out)
	}
	out, _, _ = e.run("about", "--json")
	var about struct {
		Sim *struct {
			Speed   float64            `json:"speed"`
			Systems map[string]float64 `json:"systems"`
			Summary string             `json:"summary"`
		} `json:"sim"`
	}
	if err := json.Unmarshal([]byte(out), &about); err != nil || about.Sim == nil || about.Sim.Speed != 120 || len(about.Sim.Systems) != 6 {
		t.Fatalf("about --json: %v\n%s", err, out)
	}

	// Node shapes, to check the GPU share.
	out, _, rc = e.run("resources", "--json")
	if rc != 0 {
		t.Fatalf("resources: %s", out)
	}
	var snap struct {
		Records []struct {
			System, Partition string
			Cores             int  `json:"cpu_cores_per_node"`
			GPUs              int  `json:"gpus_per_node"`
			Exclusive         bool `json:"exclusive"`
		} `json:"records"`
	}
	if err := json.Unmarshal([]byte(out), &snap); err != nil || len(snap.Records) == 0 {
		t.Fatalf("resources --json: %v\n%.400s", err, out)
	}
	recs := snap.Records
	shape := map[string]int{}
	for _, r := range recs {
		if r.GPUs > 0 && !r.Exclusive {
			shape[r.System+"/"+r.Partition] = r.Cores / r.GPUs
		}
	}

	args := []string{"submit", "--name", "share", "--command", "true", "--gpus", "1", "--gpu-model", "A100", "--walltime", "2m..30m", "--dry-run"}
	out, errOut, rc = e.run(args...)
	if rc != 0 {
		t.Fatalf("dry run rc=%d %s\n%s", rc, errOut, out)
	}
	chosen := regexp.MustCompile(`(?m)^chosen: (\S+)/(\S+)/\S+$`).FindStringSubmatch(out)
	if chosen == nil {
		t.Fatalf("no chosen line:\n%s", out)
	}
	row := regexp.MustCompile(`(?m)^1\s+` + regexp.QuoteMeta(chosen[1]) + `\s+` + regexp.QuoteMeta(chosen[2]) + `\s+\S+\s+yes\s+1\s+1xA100\s+(\d+)\s+(\S+)\s+(\S+)\s+(\S+)\s+.*$`).FindStringSubmatch(out)
	if row == nil {
		t.Fatalf("no rank-1 row for %s/%s:\n%s", chosen[1], chosen[2], out)
	}
	if share, ok := shape[chosen[1]+"/"+chosen[2]]; ok && row[1] != fmt.Sprint(share) {
		t.Errorf("1 GPU without --cpus got %s cores/node, want the node's share %d:\n%s", row[1], share, out)
	}
	if row[2] == "default" {
		t.Errorf("1 GPU without --mem got the site default memory, want the node's share:\n%s", out)
	}
	wall := row[3]
	if wall != "00:30:00" && !strings.Contains(row[0], "instead of 30m") {
		t.Errorf("walltime %s: want the envelope's max 30m, or a reason for less:\n%s", wall, out)
	}
	if !strings.Contains(out, "run at 120× (1h of walltime takes 30s real time); walltimes and waits above are simulated") {
		t.Errorf("dry-run footer lacks the simulated clock:\n%s", out)
	}
	if wall == "00:30:00" && !strings.Contains(out, "at 120×: walltime 30m takes 15s real time, estimated wait ") {
		t.Errorf("dry-run footer lacks the chosen walltime in real time:\n%s", out)
	}

	// A real (simulated) run: walltime and run time in both clocks.
	id := submitID(t, e, "--name", "clock", "--command", "sleep 2", "--cpus", "1", "--walltime", "1h")
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		out, _, _ = e.run("task", id)
		if strings.Contains(out, "succeeded") && strings.Contains(out, " ran ") {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	m := regexp.MustCompile(`attempt 1 on \S+ at 120×: walltime 1h takes 30s real time; ran (\S+) real time = (\S+) simulated`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("task detail lacks the real-time equivalents:\n%s", out)
	}
	real, err1 := time.ParseDuration(m[1])
	sim, err2 := time.ParseDuration(m[2])
	if err1 != nil || err2 != nil || real < time.Second || real > 20*time.Second || sim < 110*real || sim > 130*real {
		t.Errorf("ran %s real = %s simulated: want about 2s real, 120× that simulated", m[1], m[2])
	}
}
