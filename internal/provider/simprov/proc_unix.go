//go:build unix

package simprov

import (
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

// exitCode is the shell-style exit code: the status, or 128+signal.
func exitCode(ee *exec.ExitError) int {
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ee.ExitCode()
}
