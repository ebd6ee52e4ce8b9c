//go:build !unix

package scheduler

import "time"

func processCPU() time.Duration { return 0 }
