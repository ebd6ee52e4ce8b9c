package transport

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/errs"
	"github.com/mosaic-hpc/mosaic/internal/transport/rigenv"
	"github.com/mosaic-hpc/mosaic/internal/transport/shellquote"
)

const nasty = "'\"$`\\ \n\t*?[]{}()<>|&;#~!%=\x01\xff"

func TestSSHArgs(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cm")
	s := &SSH{Host: "delta", User: "alice", Port: 2200, IdentityFile: "/k", ProxyJump: "bastion",
		ConfigFile: "/cfg", ConnectTimeout: 7 * time.Second, Options: []string{"Compression=yes"}, ControlDir: dir}
	args, err := s.Args([]string{"sbatch", "--parsable", "a b"})
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(args, " ")
	for _, want := range []string{"-F /cfg", "-o BatchMode=yes", "-o ConnectTimeout=7", "-o ServerAliveInterval=15",
		"-o ControlMaster=auto", "-o ControlPersist=10m", "-o ControlPath=" + dir + "/%C", "-p 2200", "-i /k",
		"-J bastion", "-l alice", "-o Compression=yes"} {
		if !strings.Contains(got, want) {
			t.Errorf("args %q lack %q", got, want)
		}
	}
	n := len(args)
	if args[n-3] != "--" || args[n-2] != "delta" || args[n-1] != "sbatch --parsable 'a b'" {
		t.Errorf("tail = %q", args[n-3:])
	}
	fi, err := os.Stat(dir)
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("control dir: %v %v", fi, err)
	}
	for _, bad := range []*SSH{{Host: ""}, {Host: "-oProxyCommand=x"}, {Host: "h", Options: []string{"junk"}}} {
		bad.ControlDir = dir
		if _, err := bad.Args([]string{"true"}); err == nil {
			t.Errorf("%+v: want error", bad)
		}
	}
	open := filepath.Join(t.TempDir(), "open")
	if err := os.Mkdir(open, 0o777); err != nil {
		t.Fatal(err)
	}
	_ = os.Chmod(open, 0o777)
	if _, err := (&SSH{Host: "h", ControlDir: open}).Args([]string{"true"}); err == nil {
		t.Error("want an error for a group/world-accessible control dir")
	}
}

// TestSSHConnectionRefused needs only the ssh client: port 1 on loopback refuses.
// TestSSHDedicated: a dedicated session has the host's options, keepalives and no
// multiplexing; the caller's options come before the defaults (ssh keeps the first).
func TestSSHDedicated(t *testing.T) {
	s := &SSH{Host: "delta", User: "alice", Port: 2200, IdentityFile: "/k", ProxyJump: "bastion",
		ConfigFile: "/cfg", ConnectTimeout: 1500 * time.Millisecond, Options: []string{"Compression=yes"}, Binary: "/usr/bin/ssh"}
	cmd, err := s.Dedicated("exec 'a b'", "-tt", "-o", "LogLevel=ERROR")
	if err != nil {
		t.Fatal(err)
	}
	if cmd.Path != "/usr/bin/ssh" {
		t.Errorf("binary %q", cmd.Path)
	}
	got := strings.Join(cmd.Args[1:], " ")
	want := "-F /cfg -tt -o LogLevel=ERROR -o BatchMode=yes -o ConnectTimeout=2 -o ServerAliveInterval=30 " +
		"-o ServerAliveCountMax=6 -o ControlPath=none -p 2200 -i /k -J bastion -l alice -o Compression=yes -- delta exec 'a b'"
	if got != want {
		t.Errorf("args\n got %s\nwant %s", got, want)
	}
	if cmd, err := (&SSH{Host: "h"}).Dedicated("", "-N"); err != nil || cmd.Args[len(cmd.Args)-1] != "h" {
		t.Errorf("no remote command: %v %v", cmd, err)
	}
	for _, bad := range []*SSH{{Host: ""}, {Host: "-oProxyCommand=x"}, {Host: "h", Options: []string{"junk"}}} {
		if _, err := bad.Dedicated("true"); err == nil {
			t.Errorf("%+v: want error", bad)
		}
	}
}

func TestSSHConnectionRefused(t *testing.T) {
	if _, err := os.Stat("/usr/bin/ssh"); err != nil {
		rigenv.Missing(t, "no OpenSSH client installed (apt-get install openssh-client)")
	}
	s := &SSH{Host: "127.0.0.1", Port: 1, ControlDir: filepath.Join(t.TempDir(), "cm"),
		ConfigFile: "/dev/null", ConnectTimeout: 3 * time.Second}
	_, err := s.Run(context.Background(), []string{"true"}, nil)
	if !errors.Is(err, errs.ErrSiteDown) || !errors.Is(err, ErrConnection) {
		t.Fatalf("want ErrSiteDown+ErrConnection, got %v", err)
	}
}

func TestClassifyNeedsLogin(t *testing.T) {
	err := classifySSHFailure("h", Result{ExitCode: 255, Stderr: []byte("root@h: Permission denied (publickey).\n")})
	if !errors.Is(err, errs.ErrNeedsLogin) || errors.Is(err, errs.ErrSiteDown) {
		t.Fatalf("got %v", err)
	}
}

// TestClassifyCutWhileRunning: an established session that broke may have run the
// command (outcome unknown); a host never reached did not.
func TestClassifyCutWhileRunning(t *testing.T) {
	for _, tc := range []struct {
		stderr  string
		unknown bool
	}{
		{"Connection to h closed by remote host.\n", true},
		{"client_loop: send disconnect: Broken pipe\n", true},
		{"Read from remote host h: Connection reset by peer\n", true},
		{"Timeout, server h not responding.\n", true},
		{"ssh: connect to host h port 22: Connection timed out\n", false},
		{"ssh: connect to host h port 22: Connection refused\n", false},
		{"ssh: Could not resolve hostname h: Name or service not known\n", false},
		{"ssh: connect to host h port 22: No route to host\n", false},
	} {
		err := classifySSHFailure("h", Result{ExitCode: 255, Stderr: []byte(tc.stderr)})
		if !errors.Is(err, errs.ErrSiteDown) || !errors.Is(err, ErrConnection) {
			t.Errorf("%q: want ErrSiteDown+ErrConnection, got %v", tc.stderr, err)
		}
		if got := errors.Is(err, errs.ErrOutcomeUnknown); got != tc.unknown {
			t.Errorf("%q: outcome unknown %v, want %v", tc.stderr, got, tc.unknown)
		}
	}
}

func rigSSH(t *testing.T) *SSH {
	env := rigenv.Require(t)
	s := &SSH{Host: env.Get(t, "RIG_SSH_HOST_ALPHA"), ConfigFile: env.Get(t, "RIG_SSH_CONFIG"),
		ControlDir: filepath.Join(os.TempDir(), "mosaic-ssh-test")}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// TestSSHRigRoundTrip sends random argv through the rig's real sshd and remote shell.
func TestSSHRigRoundTrip(t *testing.T) {
	s := rigSSH(t)
	r := rand.New(rand.NewPCG(7, 8))
	var args []string
	for range 40 {
		var b strings.Builder
		for range r.IntN(20) {
			b.WriteByte(byte(1 + r.IntN(255)))
		}
		args = append(args, b.String(), nasty, "", "it's", "$(echo pwned)", "`id`", "日本 🙂")
	}
	res, err := s.Run(context.Background(), append([]string{"printf", `%s\0`}, args...), nil)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("%v %+v", err, res)
	}
	parts := strings.Split(string(res.Stdout), "\x00")
	got := parts[:len(parts)-1]
	if len(got) != len(args) {
		t.Fatalf("sent %d args, got %d", len(args), len(got))
	}
	for i := range args {
		if got[i] != args[i] {
			t.Fatalf("arg %d: sent %q got %q", i, args[i], got[i])
		}
	}
}

func TestSSHRigStdinExitAndTimeout(t *testing.T) {
	s := rigSSH(t)
	dir := "/tmp/mosaic-rig/alpha/work/transport-test"
	path := dir + "/up load's.txt"
	res, err := s.Run(context.Background(), []string{"sh", "-c", `mkdir -p "$1" && cat > "$2" && cat "$2"; exit 4`, "sh", dir, path},
		strings.NewReader("line1\nline2 $x\n"))
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 4 || string(res.Stdout) != "line1\nline2 $x\n" {
		t.Fatalf("got exit %d stdout %q stderr %q", res.ExitCode, res.Stdout, res.Stderr)
	}
	s.Limits.Timeout = 500 * time.Millisecond
	_, err = s.Run(context.Background(), []string{"sleep", "10"}, nil)
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("want ErrTimeout, got %v", err)
	}
	// The multiplexed connection must still work after a killed client.
	s.Limits.Timeout = 0
	res, err = s.Run(context.Background(), []string{"echo", shellquote.Quote("x y")}, nil)
	if err != nil || strings.TrimSpace(string(res.Stdout)) != "'x y'" {
		t.Fatalf("after timeout: %v %q", err, res.Stdout)
	}
}
