//go:build unix

package scheduler

import (
	"syscall"
	"time"
)

// processCPU is the user+system CPU time of this process, so benchmarks can report
// throughput per CPU-second, which stays meaningful on a machine shared with other work.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
