package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Job is one GPU job of a stream: it arrives At after the stream starts, asks for GPUs
// A100s (with CPUs and memory in proportion, so GPUs are the binding resource) and a
// walltime limit, and really runs for Runtime.
type Job struct {
	Index    int           // 0-based position in the stream
	At       time.Duration // arrival offset from the stream's start
	GPUs     int           // 1..4
	Runtime  time.Duration // 5..40 s, whole seconds
	Walltime time.Duration // the limit the user asks for: whole minutes, ≥ Runtime
}

// CPUs is the job's core request: 2 per GPU, far below the node's share (16), so the
// GPUs alone decide whether a job fits, also while other users of the shared rig run
// CPU jobs there (their 24-core test jobs would otherwise block 4-GPU jobs).
func (j Job) CPUs() int { return 2 * j.GPUs }

// MemGB is the job's memory request in GB: 8 per GPU (the node has 250 GB).
func (j Job) MemGB() int { return 8 * j.GPUs }

// WallMinutes is the walltime in whole minutes (Slurm's granularity).
func (j Job) WallMinutes() int { return int(j.Walltime / time.Minute) }

// StreamParams shapes a stream.
type StreamParams struct {
	Jobs    int           // number of jobs
	MeanGap time.Duration // mean of the exponential inter-arrival gap (Poisson arrivals)
}

// streamSalt keeps the stream's generator apart from any other use of the same seed.
const streamSalt = 0x6d6f73616963 // "mosaic"

// Stream generates the seeded job stream. It is a pure function of (seed, p): the
// generator is math/rand/v2's PCG, whose output is specified, and each job draws its
// values in a fixed order (gap, GPUs, runtime, walltime over-request), so one seed is
// one stream on every machine and Go version. The first job arrives at 0.
func Stream(seed uint64, p StreamParams) ([]Job, error) {
	if p.Jobs <= 0 {
		return nil, fmt.Errorf("stream: %d jobs: give --jobs 1 or more", p.Jobs)
	}
	if p.MeanGap <= 0 {
		return nil, fmt.Errorf("stream: mean gap %s: give --gap above 0 (e.g. 6s)", p.MeanGap)
	}
	r := rand.New(rand.NewPCG(seed, streamSalt))
	jobs := make([]Job, p.Jobs)
	var at time.Duration
	for i := range jobs {
		gap := time.Duration(r.ExpFloat64() * float64(p.MeanGap))
		if i == 0 {
			gap = 0
		}
		at += gap.Round(100 * time.Millisecond)
		gpus := 1 + r.IntN(4)
		runtime := time.Duration(5+r.IntN(36)) * time.Second
		// Users ask for more than they use: 1.5–3× the runtime, rounded up to minutes.
		over := 1.5 + 1.5*r.Float64()
		wall := time.Duration(math.Ceil(over*runtime.Minutes())) * time.Minute
		jobs[i] = Job{Index: i, At: at, GPUs: gpus, Runtime: runtime, Walltime: wall}
	}
	return jobs, nil
}

// GPUSeconds is the stream's total GPU work (Σ GPUs × runtime), in seconds.
func GPUSeconds(jobs []Job) float64 {
	var s float64
	for _, j := range jobs {
		s += float64(j.GPUs) * j.Runtime.Seconds()
	}
	return s
}

// OfferedLoad is the stream's GPU work over its arrival span, as a fraction of gpus
// GPUs: above 1 the queues must grow while jobs arrive.
func OfferedLoad(jobs []Job, gpus int) float64 {
	if len(jobs) < 2 || gpus <= 0 {
		return 0
	}
	span := jobs[len(jobs)-1].At.Seconds()
	if span <= 0 {
		return 0
	}
	return GPUSeconds(jobs) / (span * float64(gpus))
}
