package globus

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mosaic-hpc/mosaic/internal/transport/rigenv"
)

func TestSetupScript(t *testing.T) {
	s, err := SetupScript("mosaic")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`EP_NAME="mosaic"`, "max_workers_per_node: 1", "OMP_NUM_THREADS=1", "RAYON_NUM_THREADS=2",
		"TOKIO_WORKER_THREADS=2", "start --detach", "$HOME/.gce-venv", "MOSAIC_ENDPOINT_ID="} {
		if !strings.Contains(s, want) {
			t.Errorf("script lacks %q", want)
		}
	}
	if strings.Contains(s, "> \"$EP_DIR/config.yaml\"") {
		t.Error("script must never write config.yaml")
	}
	if _, err := exec.LookPath("bash"); err == nil {
		f := filepath.Join(t.TempDir(), "s.sh")
		_ = os.WriteFile(f, []byte(s), 0o600)
		if out, err := exec.Command("bash", "-n", f).CombinedOutput(); err != nil {
			t.Fatalf("bash -n: %v %s", err, out)
		}
	}
	for _, bad := range []string{"", "a b", "x;rm", "-x", "$(id)", strings.Repeat("a", 80)} {
		if _, err := SetupScript(bad); err == nil {
			t.Errorf("name %q accepted", bad)
		}
	}
}

// TestSetupScriptRerun runs the script against a stub globus-compute-endpoint: the
// first run configures and starts, a re-run keeps config.yaml, applies a changed
// template and restarts.
func TestSetupScriptRerun(t *testing.T) {
	rigenv.NeedTool(t, "bash", "apt-get install bash")
	home := t.TempDir()
	venv := filepath.Join(home, ".gce-venv")
	_ = os.MkdirAll(filepath.Join(venv, "bin"), 0o755)
	stub := `#!/bin/sh
echo "$@" >> "$HOME/calls"
case "$1" in
configure) mkdir -p "$HOME/.globus_compute/$2"; echo "user: config" > "$HOME/.globus_compute/$2/config.yaml";;
start) echo '{"endpoint_id": "4b116d3c-1703-4f8f-9f6f-39921e5864df"}' > "$HOME/.globus_compute/$3/endpoint.json"; touch "$HOME/running";;
stop) rm -f "$HOME/running";;
list) if [ -f "$HOME/running" ]; then echo "| 4b116d3c-1703-4f8f-9f6f-39921e5864df | Running | mosaic |"; fi;;
esac
`
	_ = os.WriteFile(filepath.Join(venv, "bin", "globus-compute-endpoint"), []byte(stub), 0o755)
	s, _ := SetupScript("mosaic")
	run := func(script string) string {
		cmd := exec.Command("bash", "-s")
		cmd.Stdin = strings.NewReader(script)
		cmd.Env = append(os.Environ(), "HOME="+home)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("script: %v\n%s", err, out)
		}
		return string(out)
	}
	out := run(s)
	if id, ok := ParseSetupOutput(out); !ok || id != "4b116d3c-1703-4f8f-9f6f-39921e5864df" {
		t.Fatalf("no endpoint id in output:\n%s", out)
	}
	cfg := filepath.Join(home, ".globus_compute", "mosaic", "config.yaml")
	_ = os.WriteFile(cfg, []byte("user: edited\n"), 0o600)
	out = run(s) // unchanged template: no restart
	calls, _ := os.ReadFile(filepath.Join(home, "calls"))
	if strings.Count(string(calls), "start") != 1 || strings.Contains(out, "applied") {
		t.Fatalf("re-run with the same template restarted or re-applied:\n%s\n%s", calls, out)
	}
	changed := strings.Replace(s, "idle_heartbeats_soft: 10", "idle_heartbeats_soft: 20", 1)
	out = run(changed)
	calls, _ = os.ReadFile(filepath.Join(home, "calls"))
	if !strings.Contains(out, "applied") || strings.Count(string(calls), "start") != 2 || !strings.Contains(string(calls), "stop mosaic") {
		t.Fatalf("changed template not applied with a restart:\n%s\n%s", out, calls)
	}
	if b, _ := os.ReadFile(cfg); string(b) != "user: edited\n" {
		t.Fatalf("config.yaml overwritten: %q", b)
	}
	if strings.Count(string(calls), "configure") != 1 {
		t.Fatalf("configured twice: %s", calls)
	}
}
