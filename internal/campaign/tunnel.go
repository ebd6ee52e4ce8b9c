package campaign

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/transport/shellquote"
)

// Tunnel modes of LaunchOptions.Tunnel.
const (
	TunnelAuto   = "auto"   // when the login node cannot reach the launcher's exchange
	TunnelAlways = "always" // for every ssh site
	TunnelNever  = "never"
)

// siteTunnel lets a site's compute nodes reach the launcher's exchange: a
// reverse ssh forward to the login node on a port sshd picks (-R 0:...), and a
// relay on the login node listening on a free port of all its interfaces.
// No port is ever hard-coded.
type siteTunnel struct {
	fwd, relay *exec.Cmd
	relayIn    io.WriteCloser
	URL        string
}

var allocatedRe = regexp.MustCompile(`Allocated port (\d+) for remote forward`)
var relayRe = regexp.MustCompile(`relay: listening on (\S+):(\d+)`)

// openTunnel builds the tunnel from conn's login node to localAddr (HOST:PORT
// of the launcher's exchange).
func openTunnel(ctx context.Context, conn *siteConn, mosaicBin, localAddr string) (*siteTunnel, error) {
	return openTunnelOn(ctx, conn, mosaicBin, localAddr, "")
}

// openTunnelOn is openTunnel with the relay listening on relayListen ("" = a
// free port): `campaign resume` reopens a tunnel where the agents know it.
func openTunnelOn(ctx context.Context, conn *siteConn, mosaicBin, localAddr, relayListen string) (*siteTunnel, error) {
	if conn.ssh == nil {
		return nil, fmt.Errorf("site %s is this machine; it needs no tunnel", conn.sys.Name)
	}
	t := &siteTunnel{}
	var err error
	if t.fwd, err = conn.ssh.Dedicated("", "-N", "-o", "ExitOnForwardFailure=yes", "-o", "LogLevel=INFO", "-R", "0:"+localAddr); err != nil {
		return nil, fmt.Errorf("site %s: reverse tunnel: %w", conn.sys.Name, err)
	}
	t.fwd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	port, err := startAndMatch(ctx, t.fwd, true, allocatedRe)
	if err != nil {
		t.Close()
		return nil, fmt.Errorf("site %s: reverse tunnel from %s: %w", conn.sys.Name, conn.login(), err)
	}
	remotePort := port[1]
	relayArgv := []string{mosaicBin, "exchange", "relay", "--to", "127.0.0.1:" + remotePort}
	if relayListen != "" {
		relayArgv = append(relayArgv, "--listen", relayListen)
	}
	relay := shellquote.Join(relayArgv...)
	if t.relay, err = conn.ssh.Dedicated("exec "+relay, "-o", "LogLevel=ERROR"); err != nil {
		t.Close()
		return nil, fmt.Errorf("site %s: relay: %w", conn.sys.Name, err)
	}
	t.relay.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if t.relayIn, err = t.relay.StdinPipe(); err != nil {
		t.Close()
		return nil, err
	}
	m, err := startAndMatch(ctx, t.relay, false, relayRe)
	if err != nil {
		t.Close()
		return nil, fmt.Errorf("site %s: relay on %s (needs mosaic there): %w", conn.sys.Name, conn.login(), err)
	}
	t.URL = "http://" + net.JoinHostPort(m[1], m[2])
	return t, nil
}

// startAndMatch starts cmd and waits (up to 30 s) for a line of its stderr
// (or stdout) matching re; the rest of the stream is drained.
func startAndMatch(ctx context.Context, cmd *exec.Cmd, stderr bool, re *regexp.Regexp) ([]string, error) {
	var rd io.ReadCloser
	var err error
	if stderr {
		rd, err = cmd.StderrPipe()
	} else {
		rd, err = cmd.StdoutPipe()
	}
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	found := make(chan []string, 1)
	var seen []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(rd)
		sent := false
		for sc.Scan() {
			if !sent {
				if m := re.FindStringSubmatch(sc.Text()); m != nil {
					found <- m
					sent = true
					continue
				}
				if len(seen) < 20 {
					seen = append(seen, sc.Text())
				}
			}
		}
	}()
	select {
	case m := <-found:
		return m, nil
	case <-done:
		return nil, fmt.Errorf("ended before it was ready: %s", strings.Join(seen, " | "))
	case <-time.After(30 * time.Second):
		return nil, fmt.Errorf("not ready after 30s: %s", strings.Join(seen, " | "))
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Close ends the relay and the forward.
func (t *siteTunnel) Close() {
	if t.relayIn != nil {
		t.relayIn.Close()
	}
	for _, c := range []*exec.Cmd{t.relay, t.fwd} {
		if c != nil && c.Process != nil {
			_ = syscall.Kill(-c.Process.Pid, syscall.SIGTERM)
			done := make(chan struct{})
			go func() { _ = c.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
				<-done
			}
		}
	}
}

// loopbackURL reports whether u points at a loopback address.
func loopbackURL(u string) bool {
	p, err := url.Parse(u)
	if err != nil {
		return false
	}
	h := p.Hostname()
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// pingFrom asks the login node whether it reaches u (mosaic exchange ping).
func pingFrom(ctx context.Context, conn *siteConn, mosaicBin, u string) bool {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	res, err := conn.sh(ctx, `"$1" exchange ping --url "$2" >/dev/null 2>&1`, nil, mosaicBin, u)
	return err == nil && res.OK()
}
