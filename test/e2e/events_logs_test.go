package e2e

import (
	"context"
	"encoding/json"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

type eventJSON struct {
	ID     int64  `json:"id"`
	TaskID string `json:"task_id"`
	Kind   string `json:"kind"`
}

// followProc is a running `mosaic events --follow --json`, decoded as it prints.
type followProc struct {
	cmd    *exec.Cmd
	stderr *syncBuffer
	mu     sync.Mutex
	events []eventJSON
	ended  chan struct{}
}

func startFollow(t *testing.T, e *env, args ...string) *followProc {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	cmd := exec.CommandContext(ctx, binary, append([]string{"events", "--follow", "--json"}, args...)...)
	cmd.Env = e.vars
	f := &followProc{cmd: cmd, stderr: &syncBuffer{}, ended: make(chan struct{})}
	cmd.Stderr = f.stderr
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(f.ended)
		dec := json.NewDecoder(pipe)
		for {
			var ev eventJSON
			if err := dec.Decode(&ev); err != nil {
				return
			}
			f.mu.Lock()
			f.events = append(f.events, ev)
			f.mu.Unlock()
		}
	}()
	t.Cleanup(func() { cancel(); cmd.Wait() })
	return f
}

func (f *followProc) seen() []eventJSON {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]eventJSON(nil), f.events...)
}

// waitFor waits until cond holds on the events printed so far.
func (f *followProc) waitFor(t *testing.T, what string, within time.Duration, cond func([]eventJSON) bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if cond(f.seen()) {
			return
		}
		select {
		case <-f.ended:
			t.Fatalf("events --follow ended while waiting for %s; stderr:\n%s", what, f.stderr.String())
		case <-time.After(200 * time.Millisecond):
		}
	}
	t.Fatalf("events --follow: no %s within %s; printed %+v; stderr:\n%s", what, within, f.seen(), f.stderr.String())
}

func hasTaskKind(task, kind string) func([]eventJSON) bool {
	return func(evs []eventJSON) bool {
		for _, e := range evs {
			if e.TaskID == task && e.Kind == kind {
				return true
			}
		}
		return false
	}
}

// TestLogsAndFollowSurviveRestart: on the simulated default, a task run with
// submit --wait (which returns when the task ends) keeps its logs across a restart of
// the core (kill -9, then serve again on the same store); `events --follow` started
// before the restart reconnects by itself and prints the events of a task submitted
// after it, every event exactly once, in id order. Before the change `logs` said
// "unknown job id" and the follow died with "unexpected EOF".
func TestLogsAndFollowSurviveRestart(t *testing.T) {
	e := newEnv(t)
	core := e.serve("--tick", "1s", "--speed", "60")

	out, errOut, rc := e.run("submit", "--name", "before", "--command", "echo out-before-restart; echo err-before-restart >&2",
		"--cpus", "1", "--walltime", "10m", "--wait")
	if rc != 0 || !strings.Contains(errOut, "succeeded") {
		t.Fatalf("submit --wait: rc=%d\n%s\n%s", rc, out, errOut)
	}
	before := strings.Fields(strings.TrimPrefix(out[strings.Index(out, "task "):], "task "))[0]
	if out, _, rc := e.run("logs", before); rc != 0 || !strings.Contains(out, "out-before-restart") {
		t.Fatalf("logs before the restart: %s", out)
	}

	f := startFollow(t, e)
	f.waitFor(t, "the latest events", 20*time.Second, hasTaskKind(before, "finished"))

	if err := core.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	core.Wait()
	e.serve("--tick", "1s", "--speed", "60")

	out, errOut, rc = e.run("logs", before)
	if rc != 0 || !strings.Contains(out, "out-before-restart") || !strings.Contains(out, "err-before-restart") {
		t.Fatalf("logs after the restart: rc=%d\n%s\n%s", rc, out, errOut)
	}
	out, _, rc = e.run("logs", before, "--json")
	var l struct {
		StdoutPath string `json:"stdout_path"`
		Host       string `json:"host"`
		Attempt    int    `json:"attempt"`
	}
	if rc != 0 || json.Unmarshal([]byte(out), &l) != nil || l.Host != "localhost" || l.Attempt != 1 || !strings.HasSuffix(l.StdoutPath, "/stdout") {
		t.Fatalf("logs --json after the restart: %s", out)
	}

	after := submitID(t, e, "--name", "after", "--command", "echo after", "--cpus", "1", "--walltime", "10m")
	f.waitFor(t, "the new task's finish", 60*time.Second, hasTaskKind(after, "finished"))
	evs := f.seen()
	for i := 1; i < len(evs); i++ {
		if evs[i].ID <= evs[i-1].ID {
			t.Fatalf("event %d printed after %d: out of order or twice:\n%+v", evs[i].ID, evs[i-1].ID, evs)
		}
	}
	if !hasTaskKind(after, "decision")(evs) || !hasTaskKind(after, "dispatch")(evs) {
		t.Fatalf("the new task's first events are missing: %+v", evs)
	}
	if !strings.Contains(f.stderr.String(), "reconnected") {
		t.Fatalf("follow did not say it reconnected:\n%s", f.stderr.String())
	}
	// Nothing lost: every event of the store after the first printed one was printed.
	out, _, _ = e.run("events", "--limit", "10000", "--json=id")
	var all []eventJSON
	if err := json.Unmarshal([]byte(out), &all); err != nil {
		t.Fatal(err)
	}
	printed := map[int64]bool{}
	for _, ev := range evs {
		printed[ev.ID] = true
	}
	last := evs[len(evs)-1].ID
	for _, ev := range all {
		if ev.ID > evs[0].ID && ev.ID <= last && !printed[ev.ID] {
			t.Fatalf("event %d (between %d and %d) was not printed", ev.ID, evs[0].ID, last)
		}
	}
}

// TestEventsNewestFirstAndPages: `mosaic events` lists the newest events first,
// --limit keeps the newest N, and the printed --before cursor pages back through
// older ones without overlap.
func TestEventsNewestFirstAndPages(t *testing.T) {
	e := newEnv(t)
	e.serve("--tick", "1s", "--speed", "60")
	for _, n := range []string{"one", "two"} {
		if _, errOut, rc := e.run("submit", "--name", n, "--command", "true", "--cpus", "1", "--walltime", "10m", "--wait"); rc != 0 {
			t.Fatalf("submit %s: %s", n, errOut)
		}
	}
	out, _, rc := e.run("events", "--limit", "10000", "--json=id")
	var all []eventJSON
	if rc != 0 || json.Unmarshal([]byte(out), &all) != nil || len(all) < 6 {
		t.Fatalf("events: %s", out)
	}
	for i := 1; i < len(all); i++ {
		if all[i].ID >= all[i-1].ID {
			t.Fatalf("not newest first: %+v", all)
		}
	}
	out, errOut, rc := e.run("events", "--limit", "3", "--json=id")
	var page []eventJSON
	if rc != 0 || json.Unmarshal([]byte(out), &page) != nil || len(page) != 3 || page[0].ID != all[0].ID {
		t.Fatalf("--limit 3 must be the newest three: %s", out)
	}
	want := "older events: mosaic events --before " + strconv.FormatInt(page[2].ID, 10) + " --limit 3"
	if !strings.Contains(errOut, want) {
		t.Fatalf("stderr %q, want %q", errOut, want)
	}
	out, _, rc = e.run("events", "--limit", "3", "--before", strconv.FormatInt(page[2].ID, 10), "--json=id")
	var older []eventJSON
	if rc != 0 || json.Unmarshal([]byte(out), &older) != nil || len(older) != 3 || older[0].ID != all[3].ID {
		t.Fatalf("--before: %s (want ids from %d)", out, all[3].ID)
	}
	out, _, rc = e.run("events", "--since", "1h", "--limit", "1")
	if rc != 0 || !strings.Contains(out, "TIME") {
		t.Fatalf("--since 1h: %s", out)
	}
	if _, errOut, rc := e.run("events", "--since", "yesterday"); rc == 0 || !strings.Contains(errOut, "since") {
		t.Fatalf("--since yesterday: %d %s", rc, errOut)
	}
}
