package replay

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/sim"
)

// Job is one federated user job: when it arrives, what it really runs for at full
// size, and the envelope a user would give Mosaic.
type Job struct {
	ID      string        `json:"id"`
	TraceID int64         `json:"trace_id"`
	Arrival time.Duration `json:"arrival"` // after Epoch
	// Runtime is the real run time at MaxCores; a job given fewer cores runs
	// Runtime × MaxCores / cores (its work is conserved).
	Runtime  time.Duration `json:"runtime"`
	Walltime time.Duration `json:"walltime"` // requested, at MaxCores
	MinCores int           `json:"min_cores"`
	MaxCores int           `json:"max_cores"`
}

// Moldable reports whether the job accepts fewer cores than its maximum.
func (j Job) Moldable() bool { return j.MinCores < j.MaxCores }

// Envelope is the job's envelope: cores [MinCores, MaxCores], walltime Walltime (its
// need at full size), any node count, objective earliest_start. rigid gives MinCores =
// MaxCores (what users submit today). A job given fewer cores needs proportionally
// longer; an envelope cannot couple size and time, so the replay stretches the
// walltime it submits itself (see shape). A walltime range here would be wrong both
// ways: sizing asks for walltime.max, which shape would stretch again.
func (j Job) Envelope(rigid bool) model.Envelope {
	lo := j.MinCores
	if rigid {
		lo = j.MaxCores
	}
	return model.Envelope{
		CPUCores:  model.IntRange{Min: lo, Max: j.MaxCores},
		Nodes:     model.IntRange{Min: 1, Max: j.MaxCores},
		Walltime:  model.DurationRange{Min: model.Duration(j.Walltime), Max: model.Duration(j.Walltime)},
		Objective: model.ObjEarliestStart,
		Source:    model.SourceUser,
	}
}

// JobOptions say how trace jobs become federated jobs.
type JobOptions struct {
	// N is how many jobs to take (0 = the whole trace).
	N int
	// Seed picks where in the trace the slice starts and pads unknown requested times.
	Seed int64
	// RefCores is the core count the trace machine is mapped onto (see SizeScale): a
	// trace job using share s of its machine asks for ceil(s × RefCores × SizeScale)
	// cores.
	RefCores int
	// SizeScale (0,1]; default 0.25: the trace machine maps onto a quarter of RefCores.
	SizeScale float64
	// Load is the offered load of the federated stream as a share of RefCores; the
	// trace's inter-arrival gaps are scaled to reach it. Default 0.3.
	Load float64
	// MaxWalltime clips requested times (and runtimes), normally to the home
	// system's longest walltime cap; 0 = no clipping.
	MaxWalltime time.Duration
	// Rigid turns moldability off (MinCores = MaxCores for every job).
	Rigid bool
}

// MoldableMinProcs: a trace job of at least this many processors is treated as
// moldable down to half its size (SWF carries no moldability; jobs of 8+ processors
// are the parallel ones, and half is the smallest size most codes are tuned for).
const MoldableMinProcs = 8

// DeriveJobs turns a slice of tr into federated jobs:
//
//   - the slice is N usable jobs (positive size and run time) starting at a seeded
//     offset, wrapping around the end of the trace;
//   - size: a trace job using share s of the trace machine (Trace.MachineSize) asks
//     for at most ceil(s × RefCores × SizeScale) cores; jobs of MoldableMinProcs or more
//     processors accept half of that (rounded up) as their minimum;
//   - requested time: the trace's requested time when known, else the run time padded
//     the way users pad (× a seeded factor in [1.1, 3], whole minutes), never below
//     the run time; both clipped to MaxWalltime;
//   - arrivals: the trace's submit gaps (wrap-arounds use the mean gap), scaled so
//     the stream's offered core-seconds per second are Load × RefCores.
func DeriveJobs(tr *sim.Trace, o JobOptions) ([]Job, error) {
	if o.RefCores < 1 {
		return nil, fmt.Errorf("derive jobs: reference core count must be at least 1, got %d", o.RefCores)
	}
	if o.SizeScale == 0 {
		o.SizeScale = 0.25
	}
	if o.Load == 0 {
		o.Load = 0.3
	}
	if o.SizeScale < 0 || o.SizeScale > 1 || math.IsNaN(o.SizeScale) {
		return nil, fmt.Errorf("derive jobs: size scale %v is outside (0, 1]", o.SizeScale)
	}
	if o.Load < 0 || o.Load > 10 || math.IsNaN(o.Load) {
		return nil, fmt.Errorf("derive jobs: load %v is outside (0, 10]", o.Load)
	}
	var usable []sim.SWFJob
	for _, j := range tr.Jobs {
		if j.Size() > 0 && j.Run > 0 && j.Submit >= 0 {
			usable = append(usable, j)
		}
	}
	if len(usable) < 2 {
		return nil, fmt.Errorf("derive jobs: the trace has %d usable jobs (need 2 with a size and a run time)", len(usable))
	}
	span := float64(usable[len(usable)-1].Submit - usable[0].Submit)
	if span <= 0 {
		return nil, fmt.Errorf("derive jobs: the trace spans no time (all jobs submitted at once)")
	}
	meanGap := span / float64(len(usable)-1)
	n := o.N
	if n <= 0 {
		n = len(usable)
	}
	rng := rand.New(rand.NewPCG(uint64(o.Seed), 0x6a0b5))
	off := rng.IntN(len(usable))
	machine := float64(tr.MachineSize())
	jobs := make([]Job, 0, n)
	var gaps []float64 // trace seconds before each job
	var work float64   // core-seconds
	for k := range n {
		i := (off + k) % len(usable)
		sj := usable[i]
		gap := 0.0
		if k > 0 {
			if i == 0 {
				gap = meanGap
			} else {
				gap = float64(max(sj.Submit-usable[i-1].Submit, 0))
			}
		}
		gaps = append(gaps, gap)
		share := min(float64(sj.Size())/machine, 1)
		hi := max(1, int(math.Ceil(share*float64(o.RefCores)*o.SizeScale-1e-9)))
		lo := hi
		if !o.Rigid && sj.Size() >= MoldableMinProcs && hi >= 2 {
			lo = (hi + 1) / 2
		}
		run := time.Duration(sj.Run) * time.Second
		var wall time.Duration
		if sj.ReqTime > 0 {
			wall = max(time.Duration(sj.ReqTime)*time.Second, run)
		} else {
			wall = time.Duration(float64(run) * (1.1 + 1.9*rng.Float64()))
		}
		wall = max((wall + time.Minute - 1).Truncate(time.Minute), time.Minute)
		if o.MaxWalltime > 0 && wall > o.MaxWalltime {
			wall = o.MaxWalltime
		}
		run = min(run, wall)
		jobs = append(jobs, Job{ID: fmt.Sprintf("j%d", k+1), TraceID: sj.ID, Runtime: run, Walltime: wall, MinCores: lo, MaxCores: hi})
		work += float64(hi) * run.Seconds()
	}
	var total float64
	for _, g := range gaps {
		total += g
	}
	// Offered load = work / (span' × RefCores) = Load  ⇒  span' = work / (Load × RefCores).
	scale := 1.0
	if total > 0 {
		scale = work / (o.Load * float64(o.RefCores)) / total
	}
	at := 0.0
	for k := range jobs {
		at += gaps[k] * scale
		jobs[k].Arrival = time.Duration(at * float64(time.Second)).Round(time.Second)
	}
	return jobs, nil
}

// systemMatches reports whether name ("Delta@NCSA", "delta") names system.
func systemMatches(name, system string) bool {
	if strings.EqualFold(name, system) {
		return true
	}
	short, _, _ := strings.Cut(system, "@")
	return strings.EqualFold(name, short)
}
