package campaign

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/site"
)

// fakeSSH runs the remote command locally, as sshd would hand it to the shell.
const fakeSSH = `#!/bin/sh
while [ $# -gt 0 ]; do case "$1" in -o|-p|-i|-l|-F|-J) shift 2;; --) shift; break;; -*) shift;; *) break;; esac; done
echo "$1" >> "$FAKE_SSH_HOSTS"
shift
exec sh -c "$*"
`

// fakeMosaic records its argv (one per line) and the token it was given, then
// waits to be stopped.
const fakeMosaic = `#!/bin/sh
printf '%s' "$MOSAIC_EXCHANGE_TOKEN" > "$FAKE_ARGS.token"
cat tokens > "$FAKE_ARGS.tokens"
printf '%s' "$FWD" > "$FAKE_ARGS.fwd"
for a in "$@"; do printf '%s\n' "$a"; done > "$FAKE_ARGS.tmp" && mv "$FAKE_ARGS.tmp" "$FAKE_ARGS"
trap 'kill $! 2>/dev/null; exit 143' TERM HUP
sleep 60 & wait
`

// TestAttachNestedSSHQuotingAndStop drives the attach backend's nested-ssh
// path (login -> compute) on this machine with a stand-in ssh, checking that
// awkward values survive both shell levels, the token travels by file, the
// log exists, and Stop leaves no process.
func TestAttachNestedSSHQuotingAndStop(t *testing.T) {
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for n, body := range map[string]string{"ssh": fakeSSH, "mosaic": fakeMosaic} {
		if err := os.WriteFile(filepath.Join(bin, n), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	argsFile := filepath.Join(tmp, "args")
	env := []string{"PATH=" + bin + ":" + os.Getenv("PATH"), "FAKE_SSH_HOSTS=" + filepath.Join(tmp, "hosts"), "FAKE_ARGS=" + argsFile}
	for _, e := range env {
		k, v, _ := strings.Cut(e, "=")
		t.Setenv(k, v)
	}
	// The launcher's own run token must not reach the site.
	t.Setenv("MOSAIC_EXCHANGE_TOKEN", "mxt_operator-secret")
	toks := SliceTokens("mxt_operator-secret", "q1", []string{"a", "b"})
	rd, err := CreateRunDir(filepath.Join(tmp, "runs"), RunState{RunID: "q1", Sites: []SiteState{{SiteSpec: SiteSpec{Name: "loc"}}}})
	if err != nil {
		t.Fatal(err)
	}
	awkward := `/tmp/it's a "campaign" $(rm -rf x) ;.jsonc`
	l := SiteLaunch{
		Spec:  SiteSpec{Name: "loc", Mode: ModeAttach, Host: "node-7", Agents: []string{"a", "b"}, WorkDir: filepath.Join(tmp, "work dir")},
		RunID: "q1", Campaign: awkward, MosaicBin: filepath.Join(bin, "mosaic"), Exchange: "http://127.0.0.1:1/x?y=1&z=2",
		Tokens: toks, Startup: time.Minute, SpawnArgs: []string{"--flag=a b"}, Forward: map[string]string{"FWD": "v`al'ue"},
		Dir: rd,
	}
	b, err := NewAttachBackend(site.System{Name: "loc", Kind: site.KindLocal}, l, env)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := context.Background()
	if err := b.Start(ctx); err != nil {
		t.Fatal(err)
	}
	var args []byte
	for i := 0; i < 200; i++ {
		if args, err = os.ReadFile(argsFile); err == nil && len(args) > 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	want := []string{"campaign", "spawn-site", "--campaign", awkward, "--run-id", "q1", "--site", "loc", "--agents", "a,b",
		"--exchange-url", "http://127.0.0.1:1/x?y=1&z=2", "--tokens-file", "tokens", "--startup-timeout", "60s", "--flag=a b"}
	if got := strings.Split(strings.TrimSuffix(string(args), "\n"), "\n"); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("spawn-site argv:\n got %q\nwant %q", got, want)
	}
	if tok, _ := os.ReadFile(argsFile + ".token"); string(tok) != "" {
		t.Errorf("MOSAIC_EXCHANGE_TOKEN on the compute side: %q, want none (each agent gets its own)", tok)
	}
	if got, _ := os.ReadFile(argsFile + ".tokens"); string(got) != "a "+toks["a"]+"\nb "+toks["b"]+"\n" || strings.Contains(string(got), "operator-secret") {
		t.Errorf("tokens file on the compute side: %q", got)
	}
	if fwd, _ := os.ReadFile(argsFile + ".fwd"); string(fwd) != "v`al'ue" {
		t.Errorf("forwarded env: %q", fwd)
	}
	if hosts, _ := os.ReadFile(filepath.Join(tmp, "hosts")); strings.TrimSpace(string(hosts)) != "node-7" {
		t.Errorf("nested ssh went to %q", hosts)
	}
	st := rd.State().Sites[0]
	logData, err := os.ReadFile(st.Log)
	if err != nil || !strings.Contains(string(logData), "attach from") || !strings.Contains(string(logData), "slice starting") {
		t.Errorf("site log %s: %q %v", st.Log, logData, err)
	}
	if fi, err := os.Stat(filepath.Join(st.RemoteDir, "tokens")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("tokens file on the site: %v", err)
	}
	if _, err := os.Stat(filepath.Join(st.RemoteDir, "token")); err == nil {
		t.Error("a run token file is on the site")
	}
	if s, fin, err := b.Poll(ctx); s != "running" || fin || err != nil {
		t.Errorf("Poll while running: %s %v %v", s, fin, err)
	}
	pidData, _ := os.ReadFile(filepath.Join(st.RemoteDir, "pid"))
	pid, _ := strconv.Atoi(strings.TrimSpace(string(pidData)))
	if pid == 0 || syscall.Kill(pid, 0) != nil {
		t.Fatalf("spawn-site pid %q not running", pidData)
	}
	if err := b.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100 && syscall.Kill(pid, 0) == nil; i++ {
		time.Sleep(50 * time.Millisecond)
	}
	if syscall.Kill(pid, 0) == nil && !zombie(pid) {
		t.Errorf("spawn-site (pid %d) still running after Stop", pid)
	}
}

func zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	f := strings.Fields(string(b))
	return len(f) > 2 && f[2] == "Z"
}
