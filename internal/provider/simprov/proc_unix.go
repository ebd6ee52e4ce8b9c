//go:build unix

package simprov

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

// setProcessGroup puts the job in its own process group so kill reaches its children.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// kill ends the whole process group of the job.
func (pr *proc) kill() {
	if pr.cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-pr.cmd.Process.Pid, syscall.SIGKILL)
}

// killGroup ends process group pgid.
func killGroup(pgid int) {
	if pgid > 1 {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
}

// pidAlive reports whether a process with this pid exists (a zombie counts).
func pidAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// exitCode is the shell-style exit code: the status, or 128+signal.
func exitCode(ee *exec.ExitError) int {
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ee.ExitCode()
}

// killedBySignal reports whether Wait's error says the process was killed by a
// signal (Mosaic kills with SIGKILL) rather than exiting; a Wait that failed
// otherwise counts as killed too.
func killedBySignal(err error) bool {
	if err == nil {
		return false
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return true
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled()
}

// lockWorkDir takes an exclusive flock(2) on the system's work directory lock file,
// without waiting; ok is false when another provider (in this process or another)
// holds it.
func lockWorkDir(path string) (f *os.File, ok bool, err error) {
	f, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, false, err
	}
	for range 100 { // EINTR is retried, boundedly
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if errors.Is(err, syscall.EWOULDBLOCK) {
		f.Close()
		return nil, false, nil
	}
	if err != nil {
		f.Close()
		return nil, false, err
	}
	return f, true, nil
}
