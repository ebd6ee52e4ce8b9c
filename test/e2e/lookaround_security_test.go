package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Fake keys in the core's environment. None may reach exec output, job logs or jobs.
var coreSecrets = map[string]string{
	"MOSAIC_LLM_API_KEY":   "sk-test-secret-llm",
	"GLOBUS_CLIENT_SECRET": "globus-test-secret",
	"ANTHROPIC_API_KEY":    "sk-ant-test-secret",
}

// withSecrets puts coreSecrets into e's environment, and points the LLM client at a
// loopback port nobody listens on, so nothing is ever called with them.
func withSecrets(t *testing.T, e *env) {
	t.Helper()
	for k, v := range coreSecrets {
		e.vars = append(e.vars, k+"="+v)
	}
	e.vars = append(e.vars, "MOSAIC_LLM_BASE_URL=http://"+freeAddr(t)+"/v1", "ANTHROPIC_BASE_URL=http://"+freeAddr(t))
}

func assertNoSecrets(t *testing.T, what, text string) {
	t.Helper()
	for k, v := range coreSecrets {
		if strings.Contains(text, v) {
			t.Errorf("%s shows %s's value:\n%s", what, k, text)
		}
	}
}

// TestSimJobEnvironmentClean: a job on the simulated federation, run by a core whose
// environment holds keys, prints its environment; the log has MOSAIC_JOB_ID and the
// task's own variables, none of the keys.
func TestSimJobEnvironmentClean(t *testing.T) {
	e := newEnv(t)
	withSecrets(t, e)
	e.serve("--tick", "1s")
	out, errOut, rc := e.run("submit", "--name", "envdump", "--command", "env", "--cpus", "1", "--walltime", "30m", "--wait")
	if rc != 0 {
		t.Fatalf("submit --wait: rc=%d %s %s", rc, out, errOut)
	}
	out, errOut, rc = e.run("tasks", "--json=id,name")
	var list []struct{ ID, Name string }
	if rc != 0 || json.Unmarshal([]byte(out), &list) != nil || len(list) != 1 {
		t.Fatalf("tasks: rc=%d %s %s", rc, out, errOut)
	}
	logs, errOut, rc := e.run("logs", list[0].ID)
	if rc != 0 || !strings.Contains(logs, "MOSAIC_JOB_ID=") || !strings.Contains(logs, "PATH=") {
		t.Fatalf("logs: rc=%d %s\n%s", rc, errOut, logs)
	}
	assertNoSecrets(t, "the job's environment", logs)
	if strings.Contains(logs, e.token()) {
		t.Errorf("the job's environment holds the API token:\n%s", logs)
	}
}

// localRigSites writes a sites file with the rig's alpha cluster as a kind-local
// system: Mosaic on the login node itself, Slurm found through SLURM_CONF.
func (r *rig) localSites() string {
	r.t.Helper()
	body := fmt.Sprintf("systems:\n  - name: alpha\n    kind: local\n    accounts: [%s]\n    workdir: %s\n",
		r.env.Get(r.t, "RIG_ACCOUNT"), r.env.Get(r.t, "RIG_WORKDIR_ALPHA"))
	p := filepath.Join(r.t.TempDir(), "sites.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		r.t.Fatal(err)
	}
	return p
}

// TestLocalSiteLookAroundSecrets: on a local site the core's own keys and token are
// on the same host. exec cannot print the environment, read /proc/*/environ (also
// through a symlink in the workdir), or grep the config directory; a Slurm job
// submitted from the core does not inherit its keys; put-file refusals are 4xx.
func TestLocalSiteLookAroundSecrets(t *testing.T) {
	r := needRig(t)
	e := newEnv(t)
	withSecrets(t, e)
	e.vars = append(e.vars, "SLURM_CONF="+r.env.Get(t, "SLURM_CONF_ALPHA"))
	e.serve("--sites", r.localSites(), "--tick", "2s")
	token := e.token()
	cfgDir := filepath.Dir(e.tokenPath())
	wd := r.env.Get(t, "RIG_WORKDIR_ALPHA")

	out, errOut, rc := e.run("exec", "alpha", "sinfo -s")
	if rc != 0 || !strings.Contains(out, "PARTITION") {
		t.Fatalf("exec sinfo on the local site: rc=%d %s %s", rc, out, errOut)
	}
	sub := filepath.Join(wd, fmt.Sprintf("e2e-sec-%d", time.Now().UnixNano()))
	if err := os.MkdirAll(filepath.Join(sub, "adir"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sub) })
	os.Symlink("/proc/self/environ", filepath.Join(sub, "envlink"))
	os.Symlink(cfgDir, filepath.Join(sub, "cfglink"))
	os.Symlink("/etc", filepath.Join(sub, "etclink"))
	for _, c := range []struct{ cmd, why string }{
		{"printenv", "environment"},
		{"printenv MOSAIC_LLM_API_KEY", "environment"},
		{"env", "environment"},
		{"cat /proc/self/environ", "/proc"},
		{"grep -r -h -e . " + cfgDir, "Mosaic's own token"},
		{"grep -r -h -e . " + filepath.Dir(cfgDir), "outside the workdir"},
		{"cat " + e.tokenPath(), "Mosaic"},
		{"cat " + filepath.Join(sub, "envlink"), "/proc"},
		{"cat " + filepath.Join(sub, "cfglink", "token"), "token"},
		{"ls " + filepath.Join(sub, "cfglink") + "/", "Mosaic"},
		{"grep -r . " + filepath.Join(sub, "etclink"), "outside the workdir"},
		{"tail -fn1 " + filepath.Join(sub, "x"), "follow"},
	} {
		out, errOut, rc := e.run("exec", "alpha", c.cmd)
		if rc == 0 || !strings.Contains(errOut, c.why) {
			t.Errorf("exec %q: rc=%d, want a refusal mentioning %q: %s", c.cmd, rc, c.why, errOut)
		}
		assertNoSecrets(t, "exec "+c.cmd, out+errOut)
		if strings.Contains(out+errOut, token) {
			t.Errorf("exec %q shows the API token", c.cmd)
		}
	}
	// Refusals are 4xx with the reason, over the API.
	post := func(path, body string) (int, string) {
		req, _ := http.NewRequest("POST", "http://"+e.addr+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		buf := make([]byte, 4096)
		for range 64 {
			n, err := resp.Body.Read(buf)
			b.Write(buf[:n])
			if err != nil {
				break
			}
		}
		return resp.StatusCode, b.String()
	}
	rel := strings.TrimPrefix(sub, wd+"/")
	for _, c := range []struct {
		path, body string
		code       int
		want       string
	}{
		{"/api/resources/alpha/exec", `{"command":"printenv"}`, 403, "environment"},
		{"/api/resources/alpha/exec", `{"command":"cat ` + filepath.Join(sub, "envlink") + `"}`, 403, "on the site"},
		{"/api/resources/alpha/exec", `{"command":"tail --bogus x"}`, 400, "not one Mosaic knows"},
		{"/api/resources/alpha/files", `{"path":"` + rel + `/adir","content":"x"}`, 409, "not a regular file"},
		{"/api/resources/alpha/files", `{"path":"` + rel + `/etclink/x","content":"x"}`, 403, "outside the workdir"},
		{"/api/resources/alpha/files", `{"path":"../x","content":"x"}`, 400, ".."},
		{"/api/resources/alpha/files", `{"path":"/etc/x","content":"x"}`, 403, "outside the workdir"},
	} {
		code, body := post(c.path, c.body)
		if code != c.code || !strings.Contains(body, c.want) {
			t.Errorf("POST %s %s: %d %s, want %d mentioning %q", c.path, c.body, code, body, c.code, c.want)
		}
		assertNoSecrets(t, "POST "+c.path, body)
	}

	// A job submitted by the core on the local site (sbatch --export=ALL) gets the
	// clean environment, not the core's keys.
	id := submitID(t, e, "--name", "envjob", "--command", "env", "--cpus", "1", "--walltime", "5m", "--target", "alpha")
	if st := e.waitTask(id, 90*time.Second, final); st.State != "succeeded" {
		t.Fatalf("job %s: %s %s", id, st.State, st.Reason)
	}
	logs, errOut, rc := e.run("logs", id)
	if rc != 0 || !strings.Contains(logs, "SLURM_JOB_ID") || !strings.Contains(logs, "PATH=") {
		t.Fatalf("logs of %s: rc=%d %s\n%s", id, rc, errOut, logs)
	}
	assertNoSecrets(t, "the local Slurm job's environment", logs)
}
