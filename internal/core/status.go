package core

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

// SimClock says how fast the simulated systems' clock runs against the wall clock.
// Walltimes, queue waits and estimates on a simulated system are in its time: at 60×
// a job asking for 1h is killed after about a minute of real time.
type SimClock struct {
	// Speed is simulated seconds per real second (when the simulated systems run at
	// different speeds, the fastest; Systems has each).
	Speed float64 `json:"speed"`
	// Systems maps each simulated system to its speed.
	Systems map[string]float64 `json:"systems"`
	// Summary is the sentence surfaces show, e.g. "simulated federation at 60× — 1h of
	// walltime takes 1m real time".
	Summary string `json:"summary"`
}

// speeder is implemented by providers whose clock runs faster than the wall clock.
type speeder interface{ Speed() float64 }

// SimClock reports the simulated systems' clock, or nil when no system is simulated.
func (c *Core) SimClock() *SimClock {
	var sc *SimClock
	for _, p := range c.collector.Providers() {
		s, ok := p.(speeder)
		if !ok || s.Speed() <= 0 {
			continue
		}
		if sc == nil {
			sc = &SimClock{Systems: map[string]float64{}}
		}
		sc.Systems[p.System()] = s.Speed()
		sc.Speed = max(sc.Speed, s.Speed())
	}
	if sc == nil {
		return nil
	}
	what := "simulated federation"
	if len(sc.Systems) < len(c.cat.Systems) {
		names := make([]string, 0, len(sc.Systems))
		for n := range sc.Systems {
			names = append(names, n)
		}
		sort.Strings(names)
		what = "simulated systems (" + strings.Join(names, ", ") + ")"
	}
	uniform := true
	for _, v := range sc.Systems {
		uniform = uniform && v == sc.Speed
	}
	at := "at " + SpeedText(sc.Speed)
	if !uniform {
		at = "at up to " + SpeedText(sc.Speed)
	}
	sc.Summary = what + " " + at + " — 1h of walltime takes " + RealTime(time.Hour, sc.Speed) + " real time"
	return sc
}

// siteTime turns t, a wall-clock time a provider reported for the future (a start
// estimate), into now plus the wait in the site's time: a simulated system answers in
// wall-clock time, but the scheduler compares waits in the site's time (its queue model,
// walltimes, max_queue_wait), so at 60× a 1m real wait is 1h. Other providers' times
// are returned as they are.
func siteTime(p any, now, t time.Time) time.Time {
	speed := speedOf(p)
	if speed == 1 || t.IsZero() || !t.After(now) {
		return t
	}
	const most = 30 * 24 * time.Hour // the scheduler caps waits far below this
	wait := min(t.Sub(now), most)
	return now.Add(time.Duration(min(float64(wait)*speed, float64(most))))
}

// speedOf is a provider's clock rate relative to the wall clock (the simulator's
// speed-up; 1 for real sites).
func speedOf(p any) float64 {
	if s, ok := p.(speeder); ok && s.Speed() > 0 {
		return s.Speed()
	}
	return 1
}

// SpeedText renders a speed-up factor: "60×", "2.5×".
func SpeedText(speed float64) string {
	return strconv.FormatFloat(speed, 'f', -1, 64) + "×"
}

// RealTime is how long simulated duration d takes on the wall clock at speed, rounded
// to what a person reads: "1m", "2m30s", "1.2s", "<1ms".
func RealTime(d time.Duration, speed float64) string {
	if speed <= 0 || math.IsInf(speed, 0) || math.IsNaN(speed) {
		return model.Duration(d).String()
	}
	r := time.Duration(float64(d) / speed)
	switch {
	case r <= 0 && d > 0, r > 0 && r < time.Millisecond:
		return "<1ms"
	case r < time.Second:
		return r.Round(time.Millisecond).String()
	case r < time.Minute:
		return strconv.FormatFloat(math.Round(r.Seconds()*10)/10, 'f', -1, 64) + "s"
	}
	return model.Duration(r.Round(time.Second)).String()
}

// StatusRow is one partition in the queue-status view.
type StatusRow struct {
	System      string           `json:"system"`
	Partition   string           `json:"partition"`
	Health      model.Health     `json:"health"`
	GPUModel    string           `json:"gpu_model,omitempty"`
	FreeGPUs    int              `json:"free_gpus"`
	TotalGPUs   int              `json:"total_gpus"`
	FreeCores   int              `json:"free_cores"`
	TotalCores  int              `json:"total_cores"`
	BusyPercent int              `json:"busy_percent"` // of the gating resource
	Nodes       model.NodeCounts `json:"nodes"`
	Running     int              `json:"running_jobs"`
	Pending     int              `json:"pending_jobs"`
	MyRunning   int              `json:"my_running_jobs"`
	MyPending   int              `json:"my_pending_jobs"`
	WalltimeCap model.Duration   `json:"walltime_cap"`
	Wait        string           `json:"wait"` // now | short | medium | long | unavailable
}

// Status is the queue-status view of the whole federation.
type Status struct {
	TakenAt time.Time            `json:"taken_at"`
	Systems []model.SystemHealth `json:"systems"`
	Rows    []StatusRow          `json:"partitions"`
}

// WaitHeuristic classifies how long a new small job would wait on a partition, from
// what a probe shows: free gating units and the pending-to-running ratio.
//
//	unavailable  the system is down or needs login
//	now          free units and nothing pending
//	short        free units and fewer pending than a quarter of running, or nothing pending
//	medium       pending at most equal to running
//	long         more pending than running
func WaitHeuristic(r *model.ResourceRecord) string {
	if !r.Health.Usable() {
		return "unavailable"
	}
	free, _ := r.FreeUnits()
	ratio := float64(r.PendingJobs) / float64(max(r.RunningJobs, 1))
	switch {
	case free > 0 && r.PendingJobs == 0:
		return "now"
	case r.PendingJobs == 0 || (free > 0 && ratio < 0.25):
		return "short"
	case ratio <= 1:
		return "medium"
	default:
		return "long"
	}
}

// Status builds the queue-status view.
func (c *Core) Status() (*Status, error) {
	snap, err := c.Federation()
	if err != nil {
		return nil, err
	}
	st := &Status{TakenAt: snap.TakenAt, Systems: snap.Systems, Rows: make([]StatusRow, 0, len(snap.Records))}
	seen := map[string]bool{}
	for i := range snap.Records {
		r := &snap.Records[i]
		// Accounts share a partition's queue; one row per partition.
		k := r.System + "/" + r.Partition
		if seen[k] {
			continue
		}
		seen[k] = true
		st.Rows = append(st.Rows, StatusRow{
			System: r.System, Partition: r.Partition, Health: r.Health, GPUModel: r.GPUModel,
			FreeGPUs: r.FreeGPUs, TotalGPUs: r.TotalGPUs, FreeCores: r.FreeCores, TotalCores: r.TotalCores,
			BusyPercent: int(r.BusyFraction()*100 + 0.5), Nodes: r.Nodes,
			Running: r.RunningJobs, Pending: r.PendingJobs, MyRunning: r.MyRunningJobs, MyPending: r.MyPendingJobs,
			WalltimeCap: r.WalltimeCap, Wait: WaitHeuristic(r),
		})
	}
	return st, nil
}

// Markdown writes the status as a Markdown document: one table per system.
func (s *Status) Markdown(w io.Writer) {
	fmt.Fprintf(w, "# Federation status — %s\n", s.TakenAt.UTC().Format("2006-01-02 15:04:05 UTC"))
	for _, sys := range s.Systems {
		fmt.Fprintf(w, "\n## %s (%s, %s", sys.System, sys.Provider, sys.Health)
		if sys.ProbeLatencyMS > 0 {
			fmt.Fprintf(w, ", probe %d ms", sys.ProbeLatencyMS)
		}
		fmt.Fprintln(w, ")")
		if sys.LastError != "" {
			fmt.Fprintf(w, "\n> %s\n", strings.ReplaceAll(sys.LastError, "\n", " "))
		}
		fmt.Fprintln(w, "\n| partition | gpu | free gpus | free cores | busy | nodes idle/mix/alloc/down | running | pending | mine run/pend | wall cap | wait |")
		fmt.Fprintln(w, "|---|---|--:|--:|--:|---|--:|--:|---|---|---|")
		for _, r := range s.Rows {
			if r.System != sys.System {
				continue
			}
			gpu, freeG := "—", "—"
			if r.TotalGPUs > 0 {
				gpu = r.GPUModel
				freeG = fmt.Sprintf("%d/%d", r.FreeGPUs, r.TotalGPUs)
			}
			wall := "unlimited"
			if r.WalltimeCap > 0 {
				wall = r.WalltimeCap.String()
			}
			fmt.Fprintf(w, "| %s | %s | %s | %d/%d | %d%% | %d/%d/%d/%d | %d | %d | %d/%d | %s | %s |\n",
				r.Partition, gpu, freeG, r.FreeCores, r.TotalCores, r.BusyPercent,
				r.Nodes.Idle, r.Nodes.Mixed, r.Nodes.Allocated, r.Nodes.Down,
				r.Running, r.Pending, r.MyRunning, r.MyPending, wall, r.Wait)
		}
	}
}
