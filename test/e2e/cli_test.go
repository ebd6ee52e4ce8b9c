package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestCLIConventions drives the built binary against a real core (the embedded
// simulated federation): --jq and nested --json, --wide, completion of task ids
// from the core, exit codes (127 for an unknown task, 125 with no core, 126 for a
// flag error with its --help hint), JSON errors under --json, and --wait-timeout's
// message that the task goes on.
func TestCLIConventions(t *testing.T) {
	e := newEnv(t)
	// No core yet: 125, and the error is JSON under --json.
	_, errOut, rc := e.run("tasks", "--json")
	var je struct {
		Error struct {
			Message string `json:"message"`
			Code    string `json:"code"`
			Exit    int    `json:"exit"`
		} `json:"error"`
	}
	if rc != exitMosaic || json.Unmarshal([]byte(errOut), &je) != nil || je.Error.Code != "no_core" || je.Error.Exit != exitMosaic {
		t.Fatalf("tasks --json with no core: exit %d, stderr %q; want %d and a JSON error", rc, errOut, exitMosaic)
	}
	e.serve("--tick", "1s", "--speed", "60")

	long := "a-task-name-much-longer-than-thirty-characters-" + strings.Repeat("x", 10)
	out, errOut, rc := e.run("submit", "--name", long, "--command", "sleep 300", "--cpus", "1", "--walltime", "30m", "--jq", ".task.id")
	id := strings.TrimSpace(out)
	if rc != 0 || !regexp.MustCompile(`^[a-z0-9]{4,}$`).MatchString(id) {
		t.Fatalf("submit --jq .task.id: exit %d, stdout %q, stderr %s", rc, out, errOut)
	}

	// Nested --json paths; --jq over the list.
	out, _, rc = e.run("task", id, "--json=name,attempts.system")
	var td struct {
		Name     string           `json:"name"`
		Attempts []map[string]any `json:"attempts"`
	}
	if rc != 0 || json.Unmarshal([]byte(out), &td) != nil || td.Name != long || len(td.Attempts) == 0 || len(td.Attempts[0]) != 1 || td.Attempts[0]["system"] == "" {
		t.Errorf("task --json=name,attempts.system: exit %d:\n%s", rc, out)
	}
	out, _, rc = e.run("tasks", "--jq", `.[] | select(.name | startswith("a-task")) | .id`)
	if rc != 0 || strings.TrimSpace(out) != id {
		t.Errorf("tasks --jq: exit %d, %q, want %s", rc, out, id)
	}

	// Names are cut in the table, whole with --wide or -o wide.
	out, _, _ = e.run("tasks")
	if strings.Contains(out, long) || !strings.Contains(out, long[:29]+"…") {
		t.Errorf("tasks does not cut a long name to 30 characters:\n%s", out)
	}
	for _, wide := range [][]string{{"--wide"}, {"-o", "wide"}} {
		if out, _, _ = e.run(append([]string{"tasks"}, wide...)...); !strings.Contains(out, long) {
			t.Errorf("tasks %v cuts the name:\n%s", wide, out)
		}
	}

	// Task ids complete from the running core.
	out, _, rc = e.run("__complete", "task", "")
	if rc != 0 || !strings.Contains(out, id+"\t") {
		t.Errorf("__complete task: exit %d:\n%s", rc, out)
	}
	if out, _, _ = e.run("__complete", "cancel", id[:2]); !strings.Contains(out, id) {
		t.Errorf("__complete cancel %s: %s", id[:2], out)
	}

	// --wait-timeout: the task goes on, and the message says how to follow it.
	start := time.Now()
	_, errOut, rc = e.run("submit", "--name", "slow", "--command", "sleep 300", "--cpus", "1", "--walltime", "30m", "--wait", "--wait-timeout", "2s")
	if rc != exitMosaic || !strings.Contains(errOut, "the task goes on; follow it with `mosaic logs -f ") || strings.Contains(errOut, "context deadline exceeded") {
		t.Errorf("--wait-timeout 2s: exit %d, stderr:\n%s", rc, errOut)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("--wait-timeout 2s took %s", d)
	}

	// Unknown task: 127; JSON error under --jq.
	_, errOut, rc = e.run("task", "nosuchtask")
	if rc != exitNotFound || !strings.HasPrefix(errOut, "mosaic: ") {
		t.Errorf("task nosuchtask: exit %d, stderr %q; want %d", rc, errOut, exitNotFound)
	}
	_, errOut, rc = e.run("task", "nosuchtask", "--jq", ".id")
	if rc != exitNotFound || json.Unmarshal([]byte(errOut), &je) != nil || je.Error.Code != "not_found" {
		t.Errorf("task nosuchtask --jq: exit %d, stderr %q", rc, errOut)
	}
	// A flag error: 126 and the hint.
	_, errOut, rc = e.run("submit", "--name", "x", "--gpus")
	if rc != exitUsage || !strings.HasSuffix(errOut, "Run 'mosaic submit --help' for usage.\n") {
		t.Errorf("submit --gpus (no value): exit %d, stderr %q", rc, errOut)
	}

	// Cancelled while waited for: 143.
	done := make(chan int, 1)
	go func() {
		_, _, rc := e.run("submit", "--name", "to-cancel", "--command", "sleep 300", "--cpus", "1", "--walltime", "30m", "--wait")
		done <- rc
	}()
	var victim string
	for i := 0; i < 100 && victim == ""; i++ { // 10 s
		out, _, _ = e.run("tasks", "--jq", `.[] | select(.name == "to-cancel") | .id`)
		victim = strings.TrimSpace(out)
		time.Sleep(100 * time.Millisecond)
	}
	if victim == "" {
		t.Fatal("the task to cancel never appeared")
	}
	if _, errOut, rc := e.run("cancel", victim); rc != 0 {
		t.Fatalf("cancel: %d %s", rc, errOut)
	}
	select {
	case rc := <-done:
		if rc != exitCancelled {
			t.Errorf("submit --wait of a cancelled task: exit %d, want %d", rc, exitCancelled)
		}
	case <-time.After(45 * time.Second):
		t.Error("submit --wait did not end after the cancel")
	}
	e.run("cancel", id)

	// doctor: --json, and a warning when the running core runs another catalog
	// than the one serve's lookup finds here.
	out, errOut, rc = e.run("doctor", "--jq", ".ok, .core_catalog")
	if rc != 0 || out != "true\nembedded simulated federation\n" {
		t.Errorf("doctor --jq: exit %d, %q %s", rc, out, errOut)
	}
	other := filepath.Join(t.TempDir(), "other.yaml")
	cat := "systems:\n  - name: Solo\n    kind: sim\n    machine: delta\n    partitions:\n      - {name: cpu, accounts: [demo]}\n    sim:\n      max_nodes: 4\n"
	if err := os.WriteFile(other, []byte(cat), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, rc = e.run("doctor", "--sites", other)
	if rc != 0 || !strings.Contains(out, "! the core at http://"+e.addr+" runs catalog embedded simulated federation, but serve's lookup here finds "+other) {
		t.Errorf("doctor --sites %s against a core on the embedded catalog: exit %d:\n%s%s", other, rc, out, errOut)
	}
}

// TestLogsFollow: logs -f prints a running job's stdout and stderr as they grow,
// each line once and in order, and ends (exit 0) when the task does.
func TestLogsFollow(t *testing.T) {
	e := newEnv(t)
	e.serve("--tick", "1s", "--speed", "60")
	out, errOut, rc := e.run("submit", "--name", "chatty", "--cpus", "1", "--walltime", "30m", "--jq", ".task.id",
		"--command", "for i in 1 2 3 4 5 6; do echo out-$i; echo err-$i >&2; sleep 1; done")
	id := strings.TrimSpace(out)
	if rc != 0 || id == "" {
		t.Fatalf("submit: exit %d %s", rc, errOut)
	}
	start := time.Now()
	out, errOut, rc = e.run("logs", "-f", id)
	var wantOut, wantErr string
	for i := 1; i <= 6; i++ {
		wantOut += fmt.Sprintf("out-%d\n", i)
		wantErr += fmt.Sprintf("err-%d\n", i)
	}
	if rc != 0 || out != wantOut || !strings.HasSuffix(errOut, wantErr) || strings.Count(errOut, "err-1\n") != 1 {
		t.Errorf("logs -f: exit %d, stdout %q, stderr %q; want every line once", rc, out, errOut)
	}
	if d := time.Since(start); d > 40*time.Second {
		t.Errorf("logs -f took %s to end after a 6 s job", d)
	}
	if _, errOut, rc = e.run("logs", "-f", id, "--json"); rc != exitUsage {
		t.Errorf("logs -f --json: exit %d %s, want %d", rc, errOut, exitUsage)
	}
}
