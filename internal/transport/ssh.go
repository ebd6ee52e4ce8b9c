package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/errs"
	"github.com/mosaic-hpc/mosaic/internal/transport/shellquote"
)

// ErrConnection is wrapped (together with errs.ErrSiteDown) by errors meaning ssh
// could not reach or log in to the host (ssh exited 255).
var ErrConnection = errors.New("ssh connection failed")

// SSH runs commands on a remote host through the system `ssh` binary with connection
// multiplexing, so one authentication (keys, agent, MFA) serves many commands.
type SSH struct {
	// Host is the destination: a hostname or an alias from ~/.ssh/config.
	Host string
	// User, if set, is passed as -l.
	User string
	// Port, if non-zero, is passed as -p.
	Port int
	// IdentityFile, if set, is passed as -i.
	IdentityFile string
	// IdentitiesOnly offers only IdentityFile (-o IdentitiesOnly=yes), none of the
	// agent's keys or the ssh config's IdentityFiles: a per-user identity must not log
	// in with the service's key. NoAgent also stops asking the agent at all
	// (-o IdentityAgent=none), unless Options names an IdentityAgent.
	IdentitiesOnly bool
	NoAgent        bool
	// ProxyJump, if set, is passed as -J.
	ProxyJump string
	// ConfigFile, if set, is passed as -F (replacing ~/.ssh/config).
	ConfigFile string
	// ConnectTimeout bounds the TCP connect and handshake; 0 means 15s.
	ConnectTimeout time.Duration
	// Options are extra -o Key=Value options.
	Options []string
	// ControlDir holds the multiplexing sockets; it is created with mode 0700.
	// "" means DefaultControlDir().
	ControlDir string
	// Binary is the ssh client to run; "" means "ssh" from PATH.
	Binary string
	Limits
}

// DefaultControlDir is $XDG_RUNTIME_DIR/mosaic-ssh, or /tmp/mosaic-ssh-<uid>. It is short
// because Unix socket paths are limited to about 100 bytes.
func DefaultControlDir() string {
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" && len(d) < 40 {
		return filepath.Join(d, "mosaic-ssh")
	}
	return filepath.Join(os.TempDir(), "mosaic-ssh-"+strconv.Itoa(os.Getuid()))
}

func (s *SSH) controlDir() (string, error) {
	dir := s.ControlDir
	if dir == "" {
		dir = DefaultControlDir()
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("ssh control directory %s: %w", dir, err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return "", fmt.Errorf("ssh control directory %s: %w", dir, err)
	}
	if !fi.IsDir() || fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("ssh control directory %s must be a directory only you can access (mode 0700); fix it with chmod 700 or remove it", dir)
	}
	return dir, nil
}

// Args returns the ssh command line (without the binary) that runs argv remotely.
// The remote command is built with shellquote.Join only.
func (s *SSH) Args(argv []string) ([]string, error) {
	if s.Host == "" {
		return nil, errors.New("ssh transport: no host configured")
	}
	if strings.HasPrefix(s.Host, "-") {
		return nil, fmt.Errorf("ssh transport: host %q must not start with '-'", s.Host)
	}
	if len(argv) == 0 {
		return nil, errors.New("ssh transport: empty command")
	}
	dir, err := s.controlDir()
	if err != nil {
		return nil, err
	}
	a, err := s.options(nil,
		"-o", "ServerAliveInterval=15",
		"-o", "ControlMaster=auto",
		"-o", "ControlPersist=10m",
		"-o", "ControlPath="+filepath.Join(dir, "%C"))
	if err != nil {
		return nil, err
	}
	a = append(a, "--", s.Host, shellquote.Join(argv...))
	return a, nil
}

// Dedicated returns an ssh command for a dedicated, unmultiplexed session to the
// host with keepalives, for long-lived sessions Run cannot serve (an interactive -tt
// launcher, a -R tunnel). remote is the remote command line, already quoted with
// shellquote ("" for none, with -N); extra options come first, so that they win over
// the defaults (ssh keeps the first value of an option).
func (s *SSH) Dedicated(remote string, extra ...string) (*exec.Cmd, error) {
	if s.Host == "" || strings.HasPrefix(s.Host, "-") {
		return nil, fmt.Errorf("ssh transport: host %q is empty or starts with '-'", s.Host)
	}
	a, err := s.options(extra,
		"-o", "ServerAliveInterval=30",
		"-o", "ServerAliveCountMax=6",
		"-o", "ControlPath=none")
	if err != nil {
		return nil, err
	}
	a = append(a, "--", s.Host)
	if remote != "" {
		a = append(a, remote)
	}
	return exec.Command(s.binary(), a...), nil
}

// options is every ssh command line's options: the config file, extra, BatchMode and
// the connect timeout, session (the caller's keepalive and multiplexing options),
// then the host's port, identity, jump host, user and extra options.
func (s *SSH) options(extra []string, session ...string) ([]string, error) {
	ct := s.ConnectTimeout
	if ct <= 0 {
		ct = 15 * time.Second
	}
	secs := int((ct + time.Second - 1) / time.Second)
	var a []string
	if s.ConfigFile != "" {
		a = append(a, "-F", s.ConfigFile)
	}
	a = append(a, extra...)
	a = append(a, "-o", "BatchMode=yes", "-o", "ConnectTimeout="+strconv.Itoa(secs))
	a = append(a, session...)
	if s.Port != 0 {
		a = append(a, "-p", strconv.Itoa(s.Port))
	}
	if s.IdentityFile != "" {
		a = append(a, "-i", s.IdentityFile)
		if s.IdentitiesOnly {
			a = append(a, "-o", "IdentitiesOnly=yes")
		}
		if s.NoAgent && !hasOption(s.Options, "IdentityAgent") {
			a = append(a, "-o", "IdentityAgent=none")
		}
	}
	if s.ProxyJump != "" {
		a = append(a, "-J", s.ProxyJump)
	}
	if s.User != "" {
		a = append(a, "-l", s.User)
	}
	for _, o := range s.Options {
		if !strings.Contains(o, "=") && !strings.Contains(o, " ") {
			return nil, fmt.Errorf("ssh transport: option %q: want Key=Value", o)
		}
		a = append(a, "-o", o)
	}
	return a, nil
}

// hasOption reports whether opts (Key=Value) set key (case-insensitive, as ssh reads it).
func hasOption(opts []string, key string) bool {
	for _, o := range opts {
		k, _, _ := strings.Cut(o, "=")
		if strings.EqualFold(strings.TrimSpace(k), key) {
			return true
		}
	}
	return false
}

func (s *SSH) binary() string {
	if s.Binary != "" {
		return s.Binary
	}
	return "ssh"
}

// Run executes argv on the remote host. ssh's own failures (exit 255) are returned as
// errors wrapping ErrConnection and errs.ErrSiteDown (and errs.ErrOutcomeUnknown when
// the connection broke while the command ran), or errs.ErrNeedsLogin when
// authentication was refused.
func (s *SSH) Run(ctx context.Context, argv []string, stdin io.Reader) (Result, error) {
	args, err := s.Args(argv)
	if err != nil {
		return Result{}, err
	}
	res, err := runProcess(ctx, s.Limits, s.binary(), args, nil, "", stdin)
	if err != nil {
		return res, fmt.Errorf("ssh %s: %w", s.Host, err)
	}
	if res.ExitCode == 255 {
		return res, classifySSHFailure(s.Host, res)
	}
	return res, nil
}

// classifySSHFailure turns ssh's exit 255 into an error the collector understands.
func classifySSHFailure(host string, res Result) error {
	msg := res.Message()
	low := strings.ToLower(string(res.Stderr))
	switch {
	case strings.Contains(low, "permission denied"),
		strings.Contains(low, "too many authentication failures"),
		strings.Contains(low, "host key verification failed"),
		strings.Contains(low, "no more authentication methods"):
		return fmt.Errorf("ssh %s: %s: %w: log in once with `ssh %s` (keys, agent or MFA) and retry: %w",
			host, msg, errs.ErrNeedsLogin, host, ErrConnection)
	}
	err := fmt.Errorf("ssh %s: %s: %w: %w", host, msg, ErrConnection, errs.ErrSiteDown)
	if cutWhileRunning(low) {
		// The session was up and the command may have run: a submit may have queued
		// its job before the connection broke.
		return errs.Mark(err, errs.ErrOutcomeUnknown)
	}
	return err
}

// cutWhileRunning reports whether ssh's stderr says an established connection broke
// ("Connection to h closed by remote host.", "client_loop: send disconnect: Broken
// pipe", "Connection reset by peer", "Timeout, server h not responding."), as opposed
// to never reaching the host ("ssh: connect to host h port 22: Connection timed out",
// "Could not resolve hostname", "No route to host", "Connection refused").
func cutWhileRunning(low string) bool {
	for _, w := range []string{"connect to host", "could not resolve", "connection refused", "no route to host"} {
		if strings.Contains(low, w) {
			return false
		}
	}
	for _, w := range []string{"timed out", "connection reset", "broken pipe", "closed by remote host", "not responding"} {
		if strings.Contains(low, w) {
			return true
		}
	}
	return false
}

// Close stops the multiplexing master for this host, if one is running.
func (s *SSH) Close() error {
	args, err := s.Args([]string{"true"})
	if err != nil {
		return err
	}
	// Replace the trailing "-- host cmd" with "-O exit host".
	args = append(args[:len(args)-3], "-O", "exit", "--", s.Host)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := runProcess(ctx, Limits{Timeout: 10 * time.Second}, s.binary(), args, nil, "", nil)
	if err != nil {
		return fmt.Errorf("ssh -O exit %s: %w", s.Host, err)
	}
	if res.ExitCode != 0 && !strings.Contains(string(res.Stderr), "No such file") &&
		!strings.Contains(string(res.Stderr), "Control socket connect") {
		return fmt.Errorf("ssh -O exit %s: %s", s.Host, res.Message())
	}
	return nil
}
