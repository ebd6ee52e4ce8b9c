//go:build !unix

package simprov

import "os/exec"

func setProcessGroup(*exec.Cmd) {}

func (pr *proc) kill() {
	if pr.cmd.Process != nil {
		_ = pr.cmd.Process.Kill()
	}
}

func exitCode(ee *exec.ExitError) int { return ee.ExitCode() }
