package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRigSiteTools covers preflight, smoke, env, exec and put-file against the rig,
// including every refusal a user can run into.
func TestRigSiteTools(t *testing.T) {
	r := needRig(t)
	e := newEnv(t)
	sites := r.sites()

	out, errOut, rc := e.run("preflight", "--sites", sites)
	if rc != 0 || strings.Count(out, " ok ") < 4 {
		t.Fatalf("preflight rc=%d\n%s%s", rc, out, errOut)
	}
	out, errOut, rc = e.run("smoke", "beta", "--sites", sites, "--json")
	if rc != 0 {
		t.Fatalf("smoke rc=%d %s\n%s", rc, errOut, out)
	}
	var steps []struct {
		Step string
		OK   bool
	}
	json.Unmarshal([]byte(out), &steps)
	if len(steps) != 5 || !steps[4].OK || steps[4].Step != "gone" {
		t.Fatalf("smoke steps %s", out)
	}

	e.serve("--sites", sites, "--tick", "2s")
	out, errOut, rc = e.run("env", "alpha", "--json")
	if rc != 0 || !strings.Contains(out, `"workdir_exists": true`) {
		t.Fatalf("env rc=%d %s\n%s", rc, errOut, out)
	}
	out, _, rc = e.run("exec", "alpha", "sinfo -s")
	if rc != 0 || !strings.Contains(out, "PARTITION") {
		t.Fatalf("exec sinfo: rc=%d %s", rc, out)
	}
	for _, bad := range []struct{ cmd, want string }{
		{"cat /etc/passwd | head", "contains"},
		{"ls $(whoami)", "contains"},
		{"rm -rf /tmp/x", "not on the read-only allowlist"},
		{"/bin/ls", "not a path"},
		{"cat /root/.ssh/id_ed25519", "SSH keys"},
		{"printenv", "environment"},
		{"cat /proc/self/environ", "/proc"},
		{"grep -r -h -e . /root/.config", "outside the workdir"},
		{"tail -fn1 /var/log/syslog", "follow"},
		{"tail --foll x", "follow"},
	} {
		_, errOut, rc := e.run("exec", "alpha", bad.cmd)
		if rc == 0 || !strings.Contains(errOut, bad.want) {
			t.Errorf("exec %q: rc=%d, want refusal mentioning %q: %s", bad.cmd, rc, bad.want, errOut)
		}
	}

	// Over ssh the symlinks are resolved on the login node, in the same call.
	wdA := r.env.Get(t, "RIG_WORKDIR_ALPHA")
	sshLink := filepath.Join(wdA, "e2e-sshlink")
	os.Remove(sshLink)
	if err := os.Symlink("/root/.ssh", sshLink); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(sshLink)
	_, errOut, rc = e.run("exec", "alpha", "cat e2e-sshlink/config")
	if rc == 0 || !strings.Contains(errOut, "on the site") || !strings.Contains(errOut, ".ssh") {
		t.Errorf("exec through a symlink into ~/.ssh: rc=%d %s", rc, errOut)
	}

	small := filepath.Join(t.TempDir(), "in.txt")
	os.WriteFile(small, []byte("hello\n"), 0o600)
	out, errOut, rc = e.run("put-file", "alpha", small, "--to", "staged/in.txt")
	wd := r.env.Get(t, "RIG_WORKDIR_ALPHA")
	if rc != 0 || !strings.Contains(out, filepath.Join(wd, "staged/in.txt")) {
		t.Fatalf("put-file: rc=%d %s %s", rc, out, errOut)
	}
	if b, _ := os.ReadFile(filepath.Join(wd, "staged/in.txt")); string(b) != "hello\n" {
		t.Fatalf("staged content %q", b)
	}
	big := filepath.Join(t.TempDir(), "big.bin")
	os.WriteFile(big, make([]byte, 2<<20+1), 0o600)
	for _, bad := range []struct{ local, to, want string }{
		{small, "../escape.txt", ".."},
		{small, "/etc/mosaic-test", "outside"},
		{big, "big.bin", "2 MiB"},
	} {
		_, errOut, rc := e.run("put-file", "alpha", bad.local, "--to", bad.to)
		if rc == 0 || !strings.Contains(errOut, bad.want) {
			t.Errorf("put-file --to %s: rc=%d, want refusal mentioning %q: %s", bad.to, rc, bad.want, errOut)
		}
	}
	// A symlink inside the workdir pointing out of it is refused too.
	os.MkdirAll(wd, 0o755)
	link := filepath.Join(wd, "outlink")
	os.Remove(link)
	if err := os.Symlink("/etc", link); err == nil {
		defer os.Remove(link)
		_, errOut, rc := e.run("put-file", "alpha", small, "--to", "outlink/x")
		if rc == 0 || !strings.Contains(errOut, "outside") {
			t.Errorf("symlink escape: rc=%d %s", rc, errOut)
		}
	}
	// Look-around on a simulated system is refused with the reason.
	e2 := newEnv(t)
	e2.serve("--tick", "1s")
	_, errOut, rc = e2.run("env", "delta")
	if rc == 0 || !strings.Contains(errOut, "sim") {
		t.Errorf("env on a sim system: rc=%d %s", rc, errOut)
	}
}
