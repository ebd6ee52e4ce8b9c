// Package transport runs commands on a login node: on this host (Local) or through the
// system OpenSSH client (SSH), so that users' ~/.ssh/config, keys, agents, ProxyJump and
// multi-factor prompts handled by a ControlMaster keep working. Commands are argument
// vectors; the SSH transport turns them into one remote command line with
// shellquote.Join and nothing else.
package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// DefaultMaxOutput caps the bytes kept from one command's stdout plus stderr.
const DefaultMaxOutput = 8 << 20

// DefaultTimeout bounds one command when the caller's context has no earlier deadline.
const DefaultTimeout = 2 * time.Minute

// ErrOutputTooLarge is returned when a command writes more than the transport's output
// cap; the command is killed.
var ErrOutputTooLarge = errors.New("command output exceeds the transport's output cap")

// ErrTimeout is returned when a command outlives its per-call timeout; it is killed.
var ErrTimeout = errors.New("command timed out")

// Result is what one finished command produced. A non-zero ExitCode is a Result, not an
// error: the command ran and said no.
type Result struct {
	Stdout   []byte
	Stderr   []byte
	ExitCode int
	Duration time.Duration
}

// OK reports whether the command exited 0.
func (r Result) OK() bool { return r.ExitCode == 0 }

// Message returns the most useful one-line description of a failed command: the last
// non-empty line of stderr, else of stdout, else the exit code.
func (r Result) Message() string {
	for _, b := range [][]byte{r.Stderr, r.Stdout} {
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		for i := len(lines) - 1; i >= 0; i-- {
			if l := strings.TrimSpace(lines[i]); l != "" {
				return l
			}
		}
	}
	return fmt.Sprintf("exit status %d", r.ExitCode)
}

// Transport runs argv on a login node with optional stdin. Errors mean the command
// could not be run to completion: it could not start, the connection failed, it timed
// out (ErrTimeout), or it wrote too much (ErrOutputTooLarge).
type Transport interface {
	Run(ctx context.Context, argv []string, stdin io.Reader) (Result, error)
}

// Limits are the per-call bounds shared by all transports.
type Limits struct {
	// Timeout bounds one call; 0 means DefaultTimeout, negative means none beyond ctx.
	Timeout time.Duration
	// MaxOutput caps stdout+stderr bytes; 0 means DefaultMaxOutput.
	MaxOutput int
}

func (l Limits) timeout() time.Duration {
	if l.Timeout == 0 {
		return DefaultTimeout
	}
	return l.Timeout
}

func (l Limits) maxOutput() int {
	if l.MaxOutput <= 0 {
		return DefaultMaxOutput
	}
	return l.MaxOutput
}
