package hpc

import (
	"context"
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
}
