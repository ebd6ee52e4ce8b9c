package main

import (
	"fmt"
	"math"
	"sort"
	"time"
)

// JobKey names one Slurm job the benchmark submitted (directly, or through Mosaic).
type JobKey struct {
	Cluster, JobID, Name string
}

// Submitted is one job of a stream as it was sent: when it arrived at the submitter
// (read just before sbatch or mosaic submit ran) and the Slurm jobs it became: one for
// sbatch -M, one per attempt that reached a site for Mosaic (a retried or moved task
// has several; the wait runs to the first start among them).
type Submitted struct {
	Job     Job
	Arrival time.Time
	Keys    []JobKey
}

// Result is one job's measured wait.
type Result struct {
	Job     Job
	Wait    time.Duration
	Cluster string // where it started
	Jobs    int    // Slurm jobs it became (more than 1: Mosaic moved or retried it)
	// Lag is from arrival to the first of its Slurm jobs' submit time: the submitter's
	// own cost (sbatch -M's will-run tests; Mosaic's CLI, decision and ssh), included in
	// Wait, before the job is in any queue.
	Lag time.Duration
}

// Wait is the time from arrival to start on one clock. sacct reports whole seconds
// (truncated), so the arrival is truncated too: floor(a+w)−floor(a) averages to the
// true wait w over uniformly spread arrivals and is never negative.
func Wait(arrival, start time.Time) time.Duration {
	return start.Truncate(time.Second).Sub(arrival.Truncate(time.Second))
}

// Waits looks every submitted job up in sacct's rows and returns its wait. A job
// missing from sacct, with another name than the one submitted, or never started is
// an error: the stream has not drained, or something else ran under that id.
func Waits(subs []Submitted, rows []SacctRow) ([]Result, error) {
	byKey := map[[2]string][]SacctRow{}
	for _, r := range rows {
		k := [2]string{r.Cluster, r.JobID}
		byKey[k] = append(byKey[k], r)
	}
	out := make([]Result, 0, len(subs))
	for _, s := range subs {
		if len(s.Keys) == 0 {
			return nil, fmt.Errorf("job %d: no Slurm job was submitted for it", s.Job.Index)
		}
		var first, firstSub *SacctRow
		for _, k := range s.Keys {
			cands := byKey[[2]string{k.Cluster, k.JobID}]
			var row *SacctRow
			for i := range cands {
				// Job ids repeat after a rig reset: the right row has our name and was
				// submitted after our arrival (sacct's second may be the one before).
				if cands[i].Name == k.Name && !cands[i].Submit.Before(s.Arrival.Truncate(time.Second)) {
					row = &cands[i]
					break
				}
			}
			if row == nil {
				return nil, fmt.Errorf("job %d: %s job %s (%s) is not in sacct's output since its arrival; wait for slurmdbd, or check the rig", s.Job.Index, k.Cluster, k.JobID, k.Name)
			}
			if row.Started() && (first == nil || row.Start.Before(first.Start)) {
				first = row
			}
			if firstSub == nil || row.Submit.Before(firstSub.Submit) {
				firstSub = row
			}
		}
		if first == nil {
			return nil, fmt.Errorf("job %d: none of its %d Slurm job(s) started (%s job %s: %s)", s.Job.Index, len(s.Keys), s.Keys[0].Cluster, s.Keys[0].JobID, byKey[[2]string{s.Keys[0].Cluster, s.Keys[0].JobID}][0].State)
		}
		out = append(out, Result{Job: s.Job, Wait: Wait(s.Arrival, first.Start), Cluster: first.Cluster, Jobs: len(s.Keys),
			Lag: Wait(s.Arrival, firstSub.Submit)})
	}
	return out, nil
}

// Summary is the statistics of one side of one stream.
type Summary struct {
	N         int
	Mean, P95 time.Duration
	Max       time.Duration
	MeanLag   time.Duration  // mean Result.Lag: the part of Mean spent before the queue
	PerSite   map[string]int // jobs started per cluster
	Moved     int            // jobs that became more than one Slurm job
}

// Summarize computes mean, p95 (nearest rank: the ⌈0.95·n⌉-th smallest) and max.
func Summarize(rs []Result) Summary {
	s := Summary{N: len(rs), PerSite: map[string]int{}}
	if len(rs) == 0 {
		return s
	}
	ws := make([]time.Duration, len(rs))
	var sum, lag time.Duration
	for i, r := range rs {
		ws[i] = r.Wait
		sum += r.Wait
		lag += r.Lag
		s.PerSite[r.Cluster]++
		if r.Jobs > 1 {
			s.Moved++
		}
	}
	sort.Slice(ws, func(i, j int) bool { return ws[i] < ws[j] })
	s.Mean = sum / time.Duration(len(ws))
	s.MeanLag = lag / time.Duration(len(ws))
	s.P95 = ws[int(math.Ceil(0.95*float64(len(ws))))-1]
	s.Max = ws[len(ws)-1]
	return s
}

// Ratio is a/b, or NaN when b is 0 (both sides waited nothing: no queue formed).
func Ratio(a, b time.Duration) float64 {
	if b == 0 {
		return math.NaN()
	}
	return float64(a) / float64(b)
}

// Foreign are jobs in sacct's rows that the benchmark did not submit and that ran
// while its stream did: other users of the shared rig, whose load makes the two sides'
// waits incomparable when it falls unevenly. GPUJobs held GPUs; GPUSeconds and
// CPUSeconds are their GPU and core time inside the window.
type Foreign struct {
	Jobs, GPUJobs          int
	GPUSeconds, CPUSeconds float64
	Names                  []string // up to 5 GPU jobs, cluster/name
}

// ForeignUse finds the jobs not in ours that ran during [from, to].
func ForeignUse(rows []SacctRow, ours map[[2]string]bool, from, to time.Time) Foreign {
	var f Foreign
	for _, r := range rows {
		if ours[[2]string{r.Cluster, r.JobID}] || !r.Started() {
			continue
		}
		end := r.End
		if end.IsZero() {
			end = to
		}
		a, b := maxTime(r.Start, from), minTime(end, to)
		if !b.After(a) {
			continue
		}
		f.Jobs++
		f.CPUSeconds += float64(r.CPUs) * b.Sub(a).Seconds()
		if r.GPUs > 0 {
			f.GPUJobs++
			f.GPUSeconds += float64(r.GPUs) * b.Sub(a).Seconds()
			if len(f.Names) < 5 {
				f.Names = append(f.Names, r.Cluster+"/"+r.Name)
			}
		}
	}
	return f
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
