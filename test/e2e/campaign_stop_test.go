package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRigCampaignStopFindsAnUnrecordedJob: the launcher died (SIGKILL) and the
// run directory lost alpha's job id and names no tasks store, as when the
// submit's answer was lost and the store cannot be opened. `campaign stop`
// must find alpha's queued job by its name and cancel it, not call the site
// stopped with the job still in the queue.
func TestRigCampaignStopFindsAnUnrecordedJob(t *testing.T) {
	r := needRig(t)
	e := newEnv(t)
	sites := r.sites()
	l, run, job, _ := launchAcrossClusters(t, r, e, "unrec", "--startup-timeout", "120s")
	l.waitFor("all 2 sites ready", 150*time.Second)
	_ = l.cmd.Process.Kill()
	_ = l.wait(30 * time.Second)
	prefix := "mosaic-c-" + run
	if len(r.queued("alpha", prefix)) == 0 {
		t.Fatalf("alpha's job is already gone after SIGKILL; the stop below would prove nothing")
	}
	path := filepath.Join(e.home, "state", "mosaic", "campaigns", run, "state.json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var st map[string]any
	if err := json.Unmarshal(data, &st); err != nil {
		t.Fatal(err)
	}
	delete(st, "tasks_store")
	sites0, _ := st["sites"].([]any)
	if len(sites0) == 0 {
		t.Fatalf("run directory without sites: %s", data)
	}
	alpha, _ := sites0[0].(map[string]any)
	if alpha["name"] != "alpha" || alpha["task_id"] == nil {
		t.Fatalf("run directory: alpha's task missing: %s", data)
	}
	delete(alpha, "submitted_job")
	if data, err = json.Marshal(st); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	so, se, code := e.run("campaign", "stop", run, "--sites", sites)
	if code != 0 {
		t.Fatalf("campaign stop: exit %d\n%s%s", code, so, se)
	}
	if !strings.Contains(se, "(found by its name "+prefix+"-alpha) cancelled") {
		t.Errorf("campaign stop did not find alpha's job by its name:\n%s", se)
	}
	left := leftOfRun(r, run, job, prefix)
	if len(left) > 0 {
		t.Errorf("left behind after campaign stop: %v\n%s", left, se)
	}
}
