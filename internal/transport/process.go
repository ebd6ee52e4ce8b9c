package transport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// capBuffers collects stdout and stderr under one shared byte budget. When the budget is
// exceeded it records the overflow and calls onOverflow once (which kills the process).
type capBuffers struct {
	mu         sync.Mutex
	left       int
	overflow   bool
	onOverflow func()
	out, err   bytes.Buffer
}

type capWriter struct {
	c   *capBuffers
	buf *bytes.Buffer
}

func (w capWriter) Write(p []byte) (int, error) {
	w.c.mu.Lock()
	defer w.c.mu.Unlock()
	if w.c.overflow {
		return len(p), nil // discard; the process is being killed
	}
	if len(p) > w.c.left {
		w.buf.Write(p[:w.c.left])
		w.c.left = 0
		w.c.overflow = true
		if w.c.onOverflow != nil {
			go w.c.onOverflow()
		}
		return len(p), nil
	}
	w.c.left -= len(p)
	w.buf.Write(p)
	return len(p), nil
}

// runProcess runs name+args in its own process group, killing the whole group when ctx
// ends, the timeout passes or the output cap is exceeded.
func runProcess(ctx context.Context, lim Limits, name string, args, env []string, dir string, stdin io.Reader) (Result, error) {
	if t := lim.timeout(); t > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, t)
		defer cancel()
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	bufs := &capBuffers{left: lim.maxOutput()}
	bufs.onOverflow = func() { cancel(ErrOutputTooLarge) }

	cmd := exec.Command(name, args...)
	cmd.Env = env
	cmd.Dir = dir
	cmd.Stdin = stdin
	cmd.Stdout = capWriter{bufs, &bufs.out}
	cmd.Stderr = capWriter{bufs, &bufs.err}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	dieWithParent(cmd.SysProcAttr)
	// If something outside the group keeps the pipes open after a kill, stop waiting for
	// them: an ssh ControlMaster holds the client's stdio (passed over the mux socket)
	// until the remote command ends.
	cmd.WaitDelay = 500 * time.Millisecond

	start := time.Now()
	if err := cmd.Start(); err != nil {
		return Result{}, fmt.Errorf("start %s: %w", name, err)
	}
	done := make(chan struct{})
	var killed atomic.Bool
	go func() {
		select {
		case <-ctx.Done():
			killed.Store(true)
			// Negative pid: the whole process group (ssh and anything it spawned locally).
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		case <-done:
		}
	}()
	werr := cmd.Wait()
	close(done)
	dur := time.Since(start)

	bufs.mu.Lock()
	res := Result{Stdout: bytes.Clone(bufs.out.Bytes()), Stderr: bytes.Clone(bufs.err.Bytes()), Duration: dur}
	overflow := bufs.overflow
	bufs.mu.Unlock()

	if overflow {
		return res, fmt.Errorf("%s: %w (%d bytes); narrow the query or raise the cap", name, ErrOutputTooLarge, lim.maxOutput())
	}
	if cerr := context.Cause(ctx); cerr != nil && killed.Load() {
		if errors.Is(cerr, context.DeadlineExceeded) {
			return res, fmt.Errorf("%s: %w after %s: %w", name, ErrTimeout, dur.Round(time.Millisecond), cerr)
		}
		return res, fmt.Errorf("%s: %w", name, cerr)
	}
	if werr != nil {
		var ee *exec.ExitError
		if errors.As(werr, &ee) {
			code := ee.ExitCode()
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				code = 128 + int(ws.Signal())
			}
			res.ExitCode = code
			return res, nil
		}
		if errors.Is(werr, exec.ErrWaitDelay) {
			return res, nil
		}
		return res, fmt.Errorf("%s: %w", name, werr)
	}
	return res, nil
}
