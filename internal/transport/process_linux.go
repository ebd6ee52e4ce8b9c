package transport

import "syscall"

// dieWithParent makes the kernel SIGKILL the child when this process dies
// (PR_SET_PDEATHSIG): a team-mode leader killed with -9 must not leave an ssh running
// an sbatch that lands after the new leader's claim grace (docs/TEAM.md). The signal
// follows the death of the forking OS thread; the Go runtime does not end threads
// that are not locked, and none of ours is.
func dieWithParent(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
