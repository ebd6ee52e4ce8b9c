package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math/rand"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func postJSON(t *testing.T, url, token string, body any) (int, string) {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("POST", url, bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out)
}

// taskCount lists tasks with the CLI.
func (e *env) taskCount() int {
	e.t.Helper()
	out, errOut, rc := e.run("tasks", "--json")
	if rc != 0 {
		e.t.Fatalf("mosaic tasks: rc=%d %s", rc, errOut)
	}
	var ts []map[string]any
	if err := json.Unmarshal([]byte(out), &ts); err != nil {
		e.t.Fatalf("mosaic tasks --json: %v\n%s", err, out)
	}
	return len(ts)
}

// TestSubmitRefusesHostileInput is finding 7 end to end: an overflowing walltime, a
// length counted in bytes, NUL and control characters are refused by the CLI and the
// API, and nothing is stored.
func TestSubmitRefusesHostileInput(t *testing.T) {
	e := newEnv(t)
	e.serve("--tick", "1s")

	for _, wall := range []string{"213504d", "1h..213504d", "367d", "-1h"} {
		_, errOut, rc := e.run("submit", "--name", "w", "--command", "true", "--cpus", "2", "--walltime", wall)
		want := "over the 366-day limit"
		if strings.HasPrefix(wall, "-") {
			want = "negative"
		}
		if rc == 0 || !strings.Contains(errOut, want) {
			t.Errorf("submit --walltime %s: rc=%d, stderr %q; want a refusal saying %q", wall, rc, errOut, want)
		}
	}

	url, token := "http://"+e.addr+"/api/tasks", e.token()
	base := func() map[string]any {
		return map[string]any{"name": "n", "command": "true", "envelope": map[string]any{
			"cpu_cores": map[string]any{"min": 2}, "walltime": map[string]any{"min": "30m"}}}
	}
	env := func(m map[string]any) map[string]any { return m["envelope"].(map[string]any) }
	cases := []struct {
		name string
		mod  func(map[string]any)
		want string
	}{
		{"walltime overflow", func(m map[string]any) { env(m)["walltime"] = map[string]any{"min": "213504d"} }, `\"213504d\" is over the 366-day limit`},
		{"walltime over limit", func(m map[string]any) { env(m)["walltime"] = map[string]any{"min": "1h", "max": "400d"} }, "366-day limit"},
		{"name of 129 euro signs", func(m map[string]any) { m["name"] = strings.Repeat("€", 129) }, "name is 129 characters; at most 128"},
		{"name newline", func(m map[string]any) { m["name"] = "x\n#SBATCH --account=other" }, "newline"},
		{"name escape", func(m map[string]any) { m["name"] = "x\x1b[2J" }, "U+001B"},
		{"command NUL", func(m map[string]any) { m["command"] = "echo a\x00b" }, "NUL"},
		{"command C1", func(m map[string]any) { m["command"] = "echo \u009b" }, "U+009B"},
		{"script CR", func(m map[string]any) { delete(m, "command"); m["script"] = "#!/bin/bash\r\necho hi\r\n" }, "dos2unix"},
		{"description NUL", func(m map[string]any) { m["description"] = "a\x00" }, "NUL"},
		{"container image newline", func(m map[string]any) {
			env(m)["constraints"] = map[string]any{"container": map[string]any{"image": "x.sif\nid", "runtime": "apptainer"}}
		}, "constraints.container.image"},
		{"feature NUL", func(m map[string]any) { env(m)["constraints"] = map[string]any{"features": []string{"nvme\x00"}} }, "constraints.features"},
		{"target newline", func(m map[string]any) { m["target"] = "x\ny" }, "target"},
	}
	for _, tc := range cases {
		body := base()
		tc.mod(body)
		code, out := postJSON(t, url, token, body)
		if code < 400 || code >= 500 || !strings.Contains(out, tc.want) {
			t.Errorf("%s: %d %.300s; want a 4xx naming %q", tc.name, code, out, tc.want)
		}
	}
	if n := e.taskCount(); n != 0 {
		t.Fatalf("%d tasks stored from refused input", n)
	}

	// What is legitimate still passes: 43 "€" are 43 characters; newlines and tabs in
	// a command are fine.
	ok := base()
	ok["name"], ok["command"], ok["dry_run"] = strings.Repeat("€", 43), "for i in 1 2; do\n\techo $i\ndone", true
	if code, out := postJSON(t, url, token, ok); code != 200 {
		t.Errorf("43 euro signs and a multi-line command: %d %.300s", code, out)
	}
}

// TestSubmitJSONFieldsCheckedFirst is finding 7: `submit --json=nosuchfield` created
// the task and then failed on output, so a retry submitted it twice. Now the field list
// is checked before anything is sent.
func TestSubmitJSONFieldsCheckedFirst(t *testing.T) {
	e := newEnv(t)
	e.serve("--tick", "1s")
	for _, args := range [][]string{
		{"--json=nosuchfield"},
		{"--json=id,nosuchfield"},
		{"--wait", "--json=dry_run"}, // dry_run is a field of the submit result, not of the task --wait prints
	} {
		full := append([]string{"submit", "--name", "j", "--command", "true", "--cpus", "2", "--walltime", "30m"}, args...)
		_, errOut, rc := e.run(full...)
		if rc == 0 || !strings.Contains(errOut, "unknown JSON field") {
			t.Errorf("%v: rc=%d stderr %q", args, rc, errOut)
		}
	}
	if n := e.taskCount(); n != 0 {
		t.Fatalf("a submit with a bad --json created %d task(s)", n)
	}
	for _, cmd := range [][]string{{"cancel", "nosuchtask", "--json=nosuchfield"}, {"replan", "nosuchtask", "--json=nosuchfield"}} {
		_, errOut, rc := e.run(cmd...)
		if rc == 0 || !strings.Contains(errOut, "unknown JSON field") {
			t.Errorf("%v: rc=%d stderr %q (want the field refused before the core is asked)", cmd, rc, errOut)
		}
	}
	// A good field list still works and the task is created once.
	out, errOut, rc := e.run("submit", "--name", "j", "--command", "true", "--cpus", "2", "--walltime", "30m", "--json=task")
	if rc != 0 || !strings.Contains(out, `"task"`) {
		t.Fatalf("submit --json=task: rc=%d %s %s", rc, out, errOut)
	}
	if n := e.taskCount(); n != 1 {
		t.Fatalf("want 1 task, got %d", n)
	}
}

// serveExpectFailure runs `mosaic serve` and expects it to exit non-zero quickly.
func (e *env) serveExpectFailure(args ...string) string {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, append([]string{"serve", "--addr", e.addr}, args...)...)
	cmd.Env, cmd.Dir = e.vars, e.home
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		e.t.Fatalf("serve kept running over the bad store:\n%s", out)
	}
	if err == nil {
		e.t.Fatalf("serve exited 0 over the bad store:\n%s", out)
	}
	return string(out)
}

// TestServeRefusesDamagedStore is finding 8 end to end: a 0-byte or non-SQLite
// MOSAIC_DB is refused with its path and --fresh; with --fresh the core starts on an
// empty store and the old file is kept aside.
func TestServeRefusesDamagedStore(t *testing.T) {
	for _, kind := range []string{"empty", "random bytes"} {
		t.Run(kind, func(t *testing.T) {
			e := newEnv(t)
			db := filepath.Join(e.home, "state", "mosaic", "mosaic.db")
			if err := os.MkdirAll(filepath.Dir(db), 0o700); err != nil {
				t.Fatal(err)
			}
			content := []byte{}
			if kind == "random bytes" {
				content = make([]byte, 64<<10)
				rand.New(rand.NewSource(14)).Read(content)
			}
			if err := os.WriteFile(db, content, 0o600); err != nil {
				t.Fatal(err)
			}
			e.vars = append(e.vars, "MOSAIC_DB="+db)

			out := e.serveExpectFailure("--tick", "1s")
			for _, want := range []string{db, "mosaic serve --fresh", "backup"} {
				if !strings.Contains(out, want) {
					t.Errorf("serve output lacks %q:\n%s", want, out)
				}
			}
			if b, err := os.ReadFile(db); err != nil || !bytes.Equal(b, content) {
				t.Fatalf("the refused file was changed: %v", err)
			}

			e.serve("--tick", "1s", "--fresh")
			kept, _ := filepath.Glob(db + ".bad-*")
			if len(kept) != 1 {
				t.Fatalf("want the old file kept as %s.bad-<time>, found %v", db, kept)
			}
			if b, err := os.ReadFile(kept[0]); err != nil || !bytes.Equal(b, content) {
				t.Errorf("%s is not the old file byte for byte: %v", kept[0], err)
			}
			if n := e.taskCount(); n != 0 {
				t.Errorf("fresh store has %d tasks", n)
			}
			if fi, err := os.Stat(db); err != nil || fi.Size() == 0 {
				t.Errorf("no new store at %s: %v", db, err)
			}
		})
	}
}
