package replay

import (
	"math"
	"slices"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/waits"
)

// SlowdownBound is the runtime floor of the bounded slowdown (10 s), so very short
// jobs do not dominate the mean.
const SlowdownBound = 10 * time.Second

// Result is one policy's metrics over one replay. Durations are seconds.
type Result struct {
	Policy string `json:"policy"`
	Jobs   int    `json:"jobs"`
	// Started and Finished count jobs; Unfinished did not finish within the horizon;
	// Failed ended other than COMPLETED (walltime, injected node failure).
	Started    int `json:"started"`
	Finished   int `json:"finished"`
	Unfinished int `json:"unfinished"`
	Failed     int `json:"failed"`
	// Rejected jobs fit nowhere the policy may place them, even on an empty federation.
	Rejected int `json:"rejected"`
	// Wait is first start − arrival (the decision tick's delay included).
	MeanWait float64 `json:"mean_wait_s"`
	P95Wait  float64 `json:"p95_wait_s"`
	MaxWait  float64 `json:"max_wait_s"`
	// MeanBSLD is the mean bounded slowdown max(1, (wait+run)/max(run, 10 s)).
	MeanBSLD float64 `json:"mean_bounded_slowdown"`
	// Makespan is the last end − the first arrival.
	Makespan float64 `json:"makespan_s"`
	// Migrations made by replanning; Shrunk jobs ran below their maximum size.
	Migrations int `json:"migrations"`
	Shrunk     int `json:"shrunk"`
	// Refused counts submissions a site refused (limits, outages); the job retried.
	Refused int `json:"refused"`
	// Utilisation is each system's time-averaged busy share of its modelled cores
	// (background and federated jobs), over the replay.
	Utilisation map[string]float64 `json:"utilisation"`
	// Placed counts federated jobs per system (where they last ran).
	Placed map[string]int `json:"placed"`
	// Outcomes is what happened to each job, in arrival order.
	Outcomes []Outcome `json:"-"`
	// Waits are the sorted waits (seconds) of the started jobs, for the CDF plot.
	Waits []float64 `json:"-"`
	// Calibration compares, per partition, the observed waits of the jobs placed on a
	// site estimate with that estimate and with its learned correction (see
	// WriteCalibration).
	Calibration []waits.CalibrationRow `json:"calibration,omitempty"`
}

func (r *runner) result() *Result {
	res := &Result{Policy: r.policy.Name(), Jobs: len(r.jobs), Utilisation: map[string]float64{}, Placed: map[string]int{},
		Refused: r.errs, Calibration: r.w.calib.Rows()}
	var first, last time.Time
	var bsld float64
	for i, js := range r.jobs {
		arr := Epoch.Add(js.Arrival)
		if i == 0 || arr.Before(first) {
			first = arr
		}
		res.Migrations += js.migrations
		oc := Outcome{ID: js.ID, Cores: js.cores, Migrations: js.migrations, Rejected: js.rejected, Wait: -1}
		if js.unit != nil {
			oc.System, oc.Partition = js.unit.sys.Name, js.unit.part.Name
		}
		if js.started {
			oc.Wait = js.start.Sub(arr)
		}
		res.Outcomes = append(res.Outcomes, oc)
		if js.unit != nil {
			res.Placed[js.unit.sys.Name]++
		}
		if js.cores > 0 && js.cores < js.MaxCores {
			res.Shrunk++
		}
		if js.rejected {
			res.Rejected++
		}
		if !js.started {
			continue
		}
		res.Started++
		wait := js.start.Sub(arr).Seconds()
		res.Waits = append(res.Waits, wait)
		if !js.done {
			continue
		}
		res.Finished++
		if js.end.After(last) {
			last = js.end
		}
		if js.endState != "COMPLETED" {
			res.Failed++
		}
		run := js.end.Sub(js.start).Seconds()
		bsld += max(1, (wait+run)/max(run, SlowdownBound.Seconds()))
	}
	res.Unfinished = res.Jobs - res.Finished - res.Rejected
	slices.Sort(res.Waits)
	if n := len(res.Waits); n > 0 {
		var sum float64
		for _, w := range res.Waits {
			sum += w
		}
		res.MeanWait = sum / float64(n)
		res.P95Wait = percentile(res.Waits, 0.95)
		res.MaxWait = res.Waits[n-1]
	}
	if res.Finished > 0 {
		res.MeanBSLD = bsld / float64(res.Finished)
		res.Makespan = last.Sub(first).Seconds()
	}
	type acc struct{ busy, cores float64 }
	per := map[string]*acc{}
	for _, u := range r.w.units {
		a := per[u.sys.Name]
		if a == nil {
			a = &acc{}
			per[u.sys.Name] = a
		}
		if u.sample > 0 {
			c := float64(u.cfg.Partitions[0].Nodes * u.cfg.Partitions[0].CoresPerNode)
			a.busy += u.busy / float64(u.sample) * c
			a.cores += c
		}
	}
	for name, a := range per {
		if a.cores > 0 {
			res.Utilisation[name] = round3(a.busy / a.cores)
		}
	}
	return res
}

// percentile is the nearest-rank percentile of sorted values.
func percentile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	k := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(k, 0), len(sorted)-1)]
}

func round3(f float64) float64 { return math.Round(f*1000) / 1000 }

// Outcome is one job's fate under one policy.
type Outcome struct {
	ID         string
	System     string // where it last was submitted ("" if never)
	Partition  string
	Cores      int
	Wait       time.Duration // -1 if it never started
	Migrations int
	Rejected   bool
}
