package campaign

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/site"
	"github.com/mosaic-hpc/mosaic/internal/transport"
	"github.com/mosaic-hpc/mosaic/internal/transport/connect"
	"github.com/mosaic-hpc/mosaic/internal/transport/shellquote"
)

// siteConn reaches a site's login node: short commands through the transport,
// and the long-lived attach session through its own ssh (no multiplexing, so
// that closing it hangs up the remote terminal and nothing lingers).
type siteConn struct {
	sys site.System
	tr  transport.Transport
	ssh *transport.SSH // nil for kind local
	env []string       // extra environment of local commands
}

// newSiteConn reaches sys with the transport connect.New builds for it, the same
// one (ssh options, identity, control path) the hpc provider of that system uses.
func newSiteConn(sys site.System, localEnv []string) (*siteConn, error) {
	if sys.Kind != site.KindSSH && sys.Kind != site.KindLocal {
		return nil, fmt.Errorf("site %s is of kind %q; campaigns launch on kind ssh or local sites", sys.Name, sys.Kind)
	}
	tr, err := connect.New(sys, connect.Options{LocalEnv: localEnv, Limits: transport.Limits{Timeout: 2 * time.Minute}})
	if err != nil {
		return nil, err
	}
	c := &siteConn{sys: sys, env: localEnv, tr: tr}
	c.ssh, _ = tr.(*transport.SSH)
	return c, nil
}

// login names the login node for messages.
func (c *siteConn) login() string { return connect.Endpoint(c.sys) }

// sh runs `sh -c script sh args...` on the login node.
func (c *siteConn) sh(ctx context.Context, script string, stdin io.Reader, args ...string) (transport.Result, error) {
	argv := append([]string{"sh", "-c", script, "sh"}, args...)
	res, err := c.tr.Run(ctx, argv, stdin)
	if err != nil {
		return res, fmt.Errorf("site %s (%s): %w", c.sys.Name, c.login(), err)
	}
	return res, nil
}

// tail returns the last n lines of a site file ("" if unreadable).
func (c *siteConn) tail(ctx context.Context, file string, n int) string {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	res, err := c.sh(ctx, `tail -n "$2" "$1" 2>/dev/null`, nil, file, strconv.Itoa(n))
	if err != nil {
		return "(could not read " + file + ": " + err.Error() + ")"
	}
	out := strings.TrimRight(string(res.Stdout), "\n")
	if out == "" {
		return "(" + file + " is empty)"
	}
	return out
}

// longCmd builds the command that runs script on the login node for as long as
// the slice lives: ssh -tt with keepalives (so that closing it hangs up the
// remote terminal), or bash in its own process group for kind local.
func (c *siteConn) longCmd(script string) (*exec.Cmd, error) {
	var cmd *exec.Cmd
	if c.ssh == nil {
		cmd = exec.Command("bash", "-c", script)
		cmd.Env = append(cmd.Environ(), c.env...)
	} else {
		var err error
		if cmd, err = c.ssh.Dedicated(shellquote.Join("bash", "-c", script), "-tt", "-o", "LogLevel=ERROR"); err != nil {
			return nil, fmt.Errorf("site %s: %w", c.sys.Name, err)
		}
	}
	// Own process group: a terminal's Ctrl-C reaches the launcher, which then
	// stops every site in order, instead of killing ssh behind its back.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd, nil
}

// Close ends the transport's multiplexing master, if any.
func (c *siteConn) Close() error {
	if cl, ok := c.tr.(interface{ Close() error }); ok {
		return cl.Close()
	}
	return nil
}
