package site

import (
	"math"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

// SmallestFirstNice is the nice order_own_jobs: smallest-first gives a job of size
// units (GPU-minutes, or core-minutes for a job without GPUs): step for each doubling
// above one (step 0 or less: DefaultOrderNiceStep), 0 for a size of one or less (or
// NaN), at most model.MaxNice. The provider submits with it and the rig benchmark's
// model (scripts/bench/rigplace) queues with it, so the two cannot drift apart.
func SmallestFirstNice(size float64, step int) int {
	if step <= 0 {
		step = DefaultOrderNiceStep
	}
	if !(size > 1) { // also NaN
		return 0
	}
	return min(int(math.Round(float64(step)*math.Log2(size))), model.MaxNice)
}
