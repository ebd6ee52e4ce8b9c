package e2e

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestIdleExplainsEmptyResult: `mosaic idle` with nothing matching says which filter
// removed everything, in text and in --json (explanation); a model the federation does
// not have is named as such, not "try fewer GPUs"; an unknown model is refused with the
// catalogue's names; GH200 finds only the aarch64 Grace-Hopper partitions.
func TestIdleExplainsEmptyResult(t *testing.T) {
	e := newEnv(t)
	e.serve("--tick", "1s", "--speed", "300")
	waitSnapshot(t, e)

	out, errOut, rc := e.run("idle", "--gpu-model", "B200")
	if rc != 0 || out != "" || !strings.Contains(errOut, "no partition in the federation has B200 GPUs (models here: A100, A40, H100") ||
		strings.Contains(errOut, "fewer GPUs") {
		t.Fatalf("idle --gpu-model B200: rc=%d stdout=%q stderr=%q", rc, out, errOut)
	}
	out, errOut, rc = e.run("idle", "--gpu-model", "B200", "--json")
	var res struct {
		Partitions  []json.RawMessage `json:"partitions"`
		Explanation string            `json:"explanation"`
	}
	if rc != 0 || json.Unmarshal([]byte(out), &res) != nil || len(res.Partitions) != 0 || !strings.Contains(res.Explanation, "has B200 GPUs") {
		t.Fatalf("idle --json: rc=%d stderr=%s out=%s", rc, errOut, out)
	}
	_, errOut, rc = e.run("idle", "--gpu-model", "B300")
	if rc == 0 || !strings.Contains(errOut, "unknown GPU model \"B300\"") || !strings.Contains(errOut, "GH200") {
		t.Fatalf("idle --gpu-model B300: rc=%d stderr=%s", rc, errOut)
	}
	out, errOut, rc = e.run("idle", "--gpu-model", "GH200", "--json")
	var gh struct {
		Partitions []struct {
			System, Arch string
		} `json:"partitions"`
	}
	if rc != 0 || json.Unmarshal([]byte(out), &gh) != nil {
		t.Fatalf("idle --gpu-model GH200: rc=%d stderr=%s", rc, errOut)
	}
	for _, p := range gh.Partitions {
		if p.Arch != "aarch64" {
			t.Errorf("GH200 listed an %s partition of %s", p.Arch, p.System)
		}
	}
}
