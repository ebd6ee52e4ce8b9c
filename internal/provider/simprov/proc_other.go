//go:build !unix

package simprov

import (
	"os"
	"os/exec"
)

func setProcessGroup(*exec.Cmd) {}

func (pr *proc) kill() {
	if pr.cmd.Process != nil {
		_ = pr.cmd.Process.Kill()
	}
}

func killGroup(int) {}

func pidAlive(int) bool { return false }

func exitCode(ee *exec.ExitError) int { return ee.ExitCode() }

// killedBySignal: no wait status to tell a kill from an exit; any failure counts
// as killed (the wrapper's exit status file, when written, says otherwise).
func killedBySignal(err error) bool { return err != nil }

// lockWorkDir: no flock(2) here; the work directory is not protected.
func lockWorkDir(path string) (*os.File, bool, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	return f, err == nil, err
}
