package main

import (
	"reflect"
	"testing"
	"time"
)

// TestStreamIsDeterministic: one seed is one stream, call after call; the first jobs
// of seed 1 are pinned, so a change to the generator (draw order, ranges, rounding)
// that would make old and new rig results incomparable fails here.
func TestStreamIsDeterministic(t *testing.T) {
	p := StreamParams{Jobs: 30, MeanGap: 6 * time.Second}
	a, err := Stream(1, p)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Stream(1, p)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("two streams of seed 1 differ")
	}
	// Seed 1 with a 2 s mean gap, as measured on the rig (docs/PLACEMENT.md "On real Slurm").
	small, _ := Stream(1, StreamParams{Jobs: 5, MeanGap: 2 * time.Second})
	want := []struct {
		at             time.Duration
		gpus, run, min int
	}{{0, 3, 28, 1}, {700 * time.Millisecond, 3, 34, 2}, {1900 * time.Millisecond, 2, 11, 1}, {2800 * time.Millisecond, 2, 19, 1}, {7500 * time.Millisecond, 4, 26, 1}}
	for i, w := range want {
		j := small[i]
		if j.Index != i || j.At != w.at || j.GPUs != w.gpus || j.Runtime != time.Duration(w.run)*time.Second || j.WallMinutes() != w.min {
			t.Errorf("seed 1 job %d = %+v, want at %s, %d GPUs, %d s, %d min", i, j, w.at, w.gpus, w.run, w.min)
		}
	}
	c, _ := Stream(2, p)
	if reflect.DeepEqual(a, c) {
		t.Fatal("seeds 1 and 2 give the same stream")
	}
	// A longer stream starts with the shorter one: jobs do not depend on --jobs.
	long, _ := Stream(1, StreamParams{Jobs: 60, MeanGap: 6 * time.Second})
	if !reflect.DeepEqual(long[:30], a) {
		t.Fatal("the first 30 jobs of a 60-job stream differ from the 30-job stream")
	}
}

// TestStreamShape: every job of many seeds is inside the ranges, arrivals do
// not go backwards, the walltime covers the runtime in whole minutes, and the mean gap
// is near the one asked for.
func TestStreamShape(t *testing.T) {
	var gaps time.Duration
	n := 0
	seenGPUs := map[int]bool{}
	for seed := uint64(1); seed <= 50; seed++ {
		js, err := Stream(seed, StreamParams{Jobs: 40, MeanGap: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if js[0].At != 0 {
			t.Fatalf("seed %d: first arrival at %s, want 0", seed, js[0].At)
		}
		for i, j := range js {
			seenGPUs[j.GPUs] = true
			if j.GPUs < 1 || j.GPUs > 4 || j.Runtime < 5*time.Second || j.Runtime > 40*time.Second || j.Runtime%time.Second != 0 {
				t.Fatalf("seed %d job %d out of range: %+v", seed, i, j)
			}
			if j.Walltime < j.Runtime || j.Walltime%time.Minute != 0 || j.WallMinutes() < 1 || j.WallMinutes() > 2 {
				t.Fatalf("seed %d job %d walltime %s for runtime %s", seed, i, j.Walltime, j.Runtime)
			}
			if j.CPUs() != 2*j.GPUs || j.MemGB() != 8*j.GPUs {
				t.Fatalf("seed %d job %d: %d CPUs, %d GB for %d GPUs", seed, i, j.CPUs(), j.MemGB(), j.GPUs)
			}
			if i > 0 {
				if j.At < js[i-1].At {
					t.Fatalf("seed %d: arrival %d before %d", seed, i, i-1)
				}
				gaps += j.At - js[i-1].At
				n++
			}
		}
	}
	if len(seenGPUs) != 4 {
		t.Fatalf("GPU counts seen: %v, want 1..4", seenGPUs)
	}
	if mean := gaps / time.Duration(n); mean < 4500*time.Millisecond || mean > 5500*time.Millisecond {
		t.Fatalf("mean gap %s over %d gaps, want about 5s", mean, n)
	}
}

func TestStreamRefusesBadParams(t *testing.T) {
	for _, p := range []StreamParams{{Jobs: 0, MeanGap: time.Second}, {Jobs: -3, MeanGap: time.Second}, {Jobs: 3, MeanGap: 0}, {Jobs: 3, MeanGap: -time.Second}} {
		if _, err := Stream(1, p); err == nil {
			t.Errorf("Stream(%+v) accepted", p)
		}
	}
}

func TestOfferedLoad(t *testing.T) {
	js := []Job{{At: 0, GPUs: 2, Runtime: 10 * time.Second}, {At: 10 * time.Second, GPUs: 4, Runtime: 20 * time.Second}}
	// 2·10 + 4·20 = 100 GPU·s over 10 s on 8 GPUs = 1.25
	if got := OfferedLoad(js, 8); got != 1.25 {
		t.Fatalf("load %v, want 1.25", got)
	}
	if OfferedLoad(js[:1], 8) != 0 || OfferedLoad(js, 0) != 0 {
		t.Fatal("degenerate loads should be 0")
	}
}
