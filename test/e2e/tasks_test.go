package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestTasksOnDemoFederation: dry run, submit --wait with exit codes, task/tasks/logs,
// events --follow (the SSE stream), cancel and replan on the simulated federation.
func TestTasksOnDemoFederation(t *testing.T) {
	e := newEnv(t)
	e.serve("--tick", "1s", "--speed", "60")

	out, errOut, rc := e.run("submit", "--name", "a100", "--command", "true", "--gpus", "1..4", "--gpu-mem", "40",
		"--gpu-model", "A100", "--walltime", "1h..4h", "--dry-run")
	if rc != 0 || !strings.Contains(out, "RANK") || !strings.Contains(out, "chosen:") || !strings.Contains(out, "accelerator:") {
		t.Fatalf("dry run rc=%d %s\n%s", rc, errOut, out)
	}
	systems := 0
	for _, s := range []string{"Delta@NCSA", "Anvil@RCAC", "Lonestar6@TACC"} {
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, s) && strings.Contains(l, " yes ") {
				systems++
				break
			}
		}
	}
	if systems < 2 {
		t.Fatalf("want feasible A100 candidates from several systems:\n%s", out)
	}

	// Follow the event stream while tasks run.
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	follow := exec.CommandContext(ctx, binary, "events", "--follow")
	follow.Env = e.vars
	pipe, _ := follow.StdoutPipe()
	if err := follow.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1000)
	go func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	time.Sleep(500 * time.Millisecond)

	out, errOut, rc = e.run("submit", "--name", "ok", "--command", "echo hello-from-mosaic", "--cpus", "2", "--walltime", "30m", "--wait")
	if rc != 0 {
		t.Fatalf("submit --wait of a good job: rc=%d %s %s", rc, out, errOut)
	}
	_, errOut, rc = e.run("submit", "--name", "bad", "--command", "exit 7", "--cpus", "2", "--walltime", "30m", "--wait")
	if rc != 7 || !strings.Contains(errOut, "code 7") {
		t.Fatalf("submit --wait must exit with the job's code 7, got %d: %s", rc, errOut)
	}
	saw := map[string]bool{}
	deadline := time.After(20 * time.Second)
	for !(saw["finished"] && saw["continuation"] && saw["failure"]) {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("event stream ended")
			}
			for _, k := range []string{"finished", "continuation", "failure", "dispatch"} {
				if strings.Contains(l, " "+k+" ") {
					saw[k] = true
				}
			}
		case <-deadline:
			t.Fatalf("events --follow did not show finished/continuation/failure: %v", saw)
		}
	}
	follow.Process.Kill()

	out, _, rc = e.run("tasks", "--json")
	var list []struct{ ID, Name, State string }
	if rc != 0 || json.Unmarshal([]byte(out), &list) != nil || len(list) != 2 {
		t.Fatalf("tasks: %s", out)
	}
	var okID string
	for _, x := range list {
		if x.Name == "ok" {
			okID = x.ID
		}
	}
	out, _, rc = e.run("logs", okID)
	if rc != 0 || !strings.Contains(out, "hello-from-mosaic") {
		t.Fatalf("logs: %s", out)
	}
	out, _, rc = e.run("tasks", "--state", "failed", "--json=id")
	if rc != 0 || strings.Count(out, `"id"`) != 1 {
		t.Fatalf("tasks --state failed: %s", out)
	}
	if _, errOut, rc := e.run("tasks", "--state", "bogus"); rc == 0 || !strings.Contains(errOut, "want pending") {
		t.Fatalf("bad state filter: %d %s", rc, errOut)
	}

	// Pinned, long task: replan --clear-target moves nothing that runs; cancel stops it.
	id := submitID(t, e, "--name", "pinned", "--command", "sleep 120", "--cpus", "1", "--walltime", "2h", "--target", "frontera:small")
	task := e.task(id)
	if task.Attempts[0].System != "Frontera@TACC" {
		t.Fatalf("pinned to %s", task.Attempts[0].System)
	}
	out, errOut, rc = e.run("cancel", id)
	if rc != 0 || !strings.Contains(out, "cancelled") {
		t.Fatalf("cancel: %d %s %s", rc, out, errOut)
	}
	if _, errOut, rc := e.run("cancel", id); rc == 0 || !strings.Contains(errOut, "already cancelled") {
		t.Fatalf("second cancel: %d %s", rc, errOut)
	}

	// Infeasible pins and bad envelopes are refused with the reason.
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"--gpus", "2", "--walltime", "1h", "--target", "frontera:normal"}, "accelerator"},
		{[]string{"--gpus", "4..2", "--walltime", "1h"}, "gpus"},
		{[]string{"--cpus", "1", "--walltime", "0s"}, "walltime"},
		{[]string{"--cpus", "1", "--walltime", "1h", "--gpu-model", "Z9000"}, "Z9000"},
		{[]string{"--cpus", "1", "--walltime", "1h", "--target", "nosuch"}, "known systems"},
	} {
		_, errOut, rc := e.run(append([]string{"submit", "--name", "x", "--command", "true"}, bad.args...)...)
		if rc == 0 || !strings.Contains(errOut, bad.want) {
			t.Errorf("submit %v: rc=%d, want an error mentioning %q: %s", bad.args, rc, bad.want, errOut)
		}
	}

	// Drafting.
	out, _, rc = e.run("envelope", "--name", "ft", "--description", "fine-tune a 7B model for about 6 hours on 4 GPUs", "--json")
	if rc != 0 || !strings.Contains(out, `"source": "heuristic"`) {
		t.Fatalf("envelope: %s", out)
	}
}
