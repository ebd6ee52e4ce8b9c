package hpc

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRigLookAround: Env, Exec and PutFile through the rig's sshd.
func TestRigLookAround(t *testing.T) {
	t.Parallel()
	p, ct := rigProvider(t, "alpha", "ssh")
	ctx := context.Background()

	ct.reset()
	env, err := p.Env(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ct.n.Load() != 1 {
		t.Errorf("Env used %d remote calls, want 1", ct.n.Load())
	}
	if env.Host == "" || env.User != "root" || !env.WorkDirExists || !strings.HasPrefix(env.Python, "Python 3") {
		t.Errorf("env: %+v", env)
	}
	found := false
	for _, a := range env.Associations {
		found = found || strings.Contains(a, "rigacct")
	}
	if !found {
		t.Errorf("associations %q lack rigacct", env.Associations)
	}

	if v, err := p.Version(ctx); err != nil || !strings.HasPrefix(v, "2") {
		t.Errorf("version %q %v", v, err)
	}
	r, err := p.Exec(ctx, []string{"scontrol", "show", "partition", "gpuA100"})
	if err != nil || r.ExitCode != 0 || !strings.Contains(r.Stdout, "PartitionName=gpuA100") {
		t.Errorf("exec scontrol: %+v %v", r, err)
	}
	if _, err := p.Exec(ctx, []string{"scancel", "--user=root"}); err == nil || !strings.Contains(err.Error(), "allowlist") {
		t.Errorf("scancel must be refused: %v", err)
	}

	wd := p.sys.WorkDir
	dst, err := p.PutFile(ctx, "look/it's here.txt", []byte("payload $HOME\n"))
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(wd, "look", "it's here.txt")); err != nil || string(b) != "payload $HOME\n" || dst != wd+"/look/it's here.txt" {
		t.Errorf("put: %q %v %s", b, err, dst)
	}
	// A symlink inside the workdir that points outside must not be followed.
	outside := t.TempDir()
	link := filepath.Join(wd, "escape-link")
	_ = os.Remove(link)
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(link) })
	if _, err := p.PutFile(ctx, "escape-link/x.txt", []byte("x")); err == nil || !strings.Contains(err.Error(), "outside the workdir") {
		t.Errorf("symlink escape: %v", err)
	}
	if _, err := os.Stat(filepath.Join(outside, "x.txt")); err == nil {
		t.Error("file was written through the symlink")
	}
	if _, err := p.PutFile(ctx, "escape-link/new/deeper/x.txt", []byte("x")); err == nil {
		t.Error("symlink escape with missing subdirectories: want refusal")
	}
	if _, err := os.Stat(filepath.Join(outside, "new")); err == nil {
		t.Error("directories were created through the symlink")
	}
	fileLink := filepath.Join(wd, "file-link")
	_ = os.Remove(fileLink)
	if err := os.Symlink(filepath.Join(outside, "target"), fileLink); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(fileLink) })
	if _, err := p.PutFile(ctx, "file-link", []byte("x")); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("file symlink: %v", err)
	}
	if _, err := p.PutFile(ctx, "../x", []byte("x")); err == nil {
		t.Error("'..' must be refused")
	}
	// The site's refusals are typed, so the API answers 4xx with the reason.
	refusal := func(name string, kind RefusalKind, want string) {
		t.Helper()
		_, err := p.PutFile(ctx, name, []byte("x"))
		var re *RefusedError
		if !errors.As(err, &re) || re.Kind != kind || !strings.Contains(re.Reason, want) {
			t.Errorf("put %s: %v, want refusal kind %d mentioning %q", name, err, kind, want)
		}
	}
	refusal("escape-link/x.txt", RefusedForbidden, "outside the workdir")
	refusal("file-link", RefusedForbidden, "symbolic link")
	refusal("look", RefusedConflict, "not a regular file")
	refusal("../x", RefusedInvalid, "..")
}

// TestRigExecSecrets: the site-side half of the look-around policy, through the rig's
// sshd and on the local host. Symlinks inside the workdir are resolved on the site
// and refused when they lead to keys, tokens, /proc or out of the workdir; recursive
// grep inside the workdir skips token files; legitimate reads still work.
func TestRigExecSecrets(t *testing.T) {
	t.Setenv("MOSAIC_LLM_API_KEY", "sk-test-secret")
	t.Setenv("GLOBUS_CLIENT_SECRET", "globus-test-secret")
	for _, via := range []string{"ssh", "local"} {
		t.Run(via, func(t *testing.T) {
			p, _ := rigProvider(t, "alpha", via)
			ctx := context.Background()
			wd := filepath.Join(p.sys.WorkDir, "exec-"+via)
			os.RemoveAll(wd)
			if err := os.MkdirAll(filepath.Join(wd, "run"), 0o755); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(wd) })
			outside := t.TempDir()
			os.WriteFile(filepath.Join(outside, "api-token"), []byte("sk-outside-secret\n"), 0o600)
			os.WriteFile(filepath.Join(outside, "plain.txt"), []byte("plain outside\n"), 0o600)
			os.WriteFile(filepath.Join(wd, "run", "token"), []byte("needle-SECRET\n"), 0o600)
			os.WriteFile(filepath.Join(wd, "run", "notes.txt"), []byte("needle-notes\n"), 0o600)
			home, _ := os.UserHomeDir()
			links := map[string]string{
				"sshdir":    filepath.Join(home, ".ssh"),
				"innocent":  filepath.Join(outside, "api-token"),
				"env":       "/proc/self/environ",
				"etc":       "/etc",
				"outsidedr": outside,
			}
			for name, target := range links {
				if err := os.Symlink(target, filepath.Join(wd, name)); err != nil {
					t.Fatal(err)
				}
			}
			rel := "exec-" + via + "/"
			for _, c := range []struct{ cmd, why string }{
				{"cat " + rel + "sshdir/config", ".ssh"},
				{"ls " + rel + "sshdir", ".ssh"},
				{"cat " + rel + "innocent", "key, token or credential"},
				{"cat " + rel + "env", "/proc"},
				{"head -c 200 " + wd + "/env", "/proc"},
				{"grep -r root " + rel + "etc", "outside the workdir"},
				{"find " + rel + "outsidedr", "outside the workdir"},
				{"du -a " + rel + "outsidedr", "outside the workdir"},
			} {
				r, err := p.Exec(ctx, strings.Fields(c.cmd))
				var re *RefusedError
				if !errors.As(err, &re) || re.Kind != RefusedForbidden || !strings.Contains(err.Error(), c.why) || !strings.Contains(err.Error(), "on the site") {
					t.Errorf("%s: %+v %v, want a site refusal mentioning %q", c.cmd, r, err, c.why)
				}
				if strings.Contains(r.Stdout+r.Stderr, "secret") {
					t.Errorf("%s leaked: %+v", c.cmd, r)
				}
			}
			// Symlinks met inside a tree are not followed by grep -r, find, du or ls -R.
			if err := os.Symlink(filepath.Join(outside, "api-token"), filepath.Join(wd, "run", "keylink")); err != nil {
				t.Fatal(err)
			}
			r, err := p.Exec(ctx, []string{"grep", "-r", "-e", "needle", "-e", "sk-outside", rel + "run"})
			if err != nil || r.ExitCode != 0 || !strings.Contains(r.Stdout, "needle-notes") || strings.Contains(r.Stdout, "SECRET") || strings.Contains(r.Stdout, "sk-outside") {
				t.Errorf("grep -r inside the workdir: %+v %v (must find notes, skip the token file and the symlink)", r, err)
			}
			r, err = p.Exec(ctx, []string{"cat", rel + "run/notes.txt"})
			if err != nil || r.Stdout != "needle-notes\n" {
				t.Errorf("cat inside the workdir (relative to it): %+v %v", r, err)
			}
			r, err = p.Exec(ctx, []string{"find", rel, "-name", "notes.txt"})
			if err != nil || !strings.Contains(r.Stdout, "notes.txt") {
				t.Errorf("find inside the workdir: %+v %v", r, err)
			}
			r, err = p.Exec(ctx, []string{"tail", "-n1", filepath.Join(outside, "plain.txt")})
			if err != nil || r.Stdout != "plain outside\n" {
				t.Errorf("tail of a plain file outside the workdir: %+v %v", r, err)
			}
			r, err = p.Exec(ctx, []string{"sinfo", "-h", "-o", "%P"})
			if err != nil || r.ExitCode != 0 || !strings.Contains(r.Stdout, "gpuA100") {
				t.Errorf("sinfo: %+v %v", r, err)
			}
			for _, cmd := range []string{"printenv", "cat /proc/self/environ", "grep -r -h -e . " + home + "/.config", "tail -fn1 x"} {
				if _, err := p.Exec(ctx, strings.Fields(cmd)); !errors.Is(err, ErrRefused) {
					t.Errorf("%s: %v, want a refusal", cmd, err)
				}
			}
		})
	}
}
