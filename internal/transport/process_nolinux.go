//go:build !linux

package transport

import "syscall"

// dieWithParent: only Linux has PR_SET_PDEATHSIG; elsewhere a killed core's child
// runs to its own end (bounded by the command's timeout on the site).
func dieWithParent(*syscall.SysProcAttr) {}
