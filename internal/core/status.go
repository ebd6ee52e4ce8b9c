package core

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

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
