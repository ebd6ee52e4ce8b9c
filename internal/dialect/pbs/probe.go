package pbs

import (
	"fmt"
	"sort"
	"strings"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

// Queue is one queue of `qstat -Q -f -F json`.
type Queue struct {
	Name        string
	Type        string // Execution | Route
	Enabled     bool
	Started     bool
	MaxWalltime model.Duration // 0 = none
	MaxNodes    int
	Queued      int
	Running     int
	Held        int
}

// ParseQueues reads `qstat -Q -f -F json`.
func ParseQueues(out []byte) ([]Queue, error) {
	doc, err := decode(out, "qstat -Q -f -F json")
	if err != nil {
		return nil, err
	}
	qs := obj(doc["Queue"])
	if _, ok := doc["Queue"]; ok && qs == nil {
		return nil, fmt.Errorf("qstat -Q -f -F json: \"Queue\" is not an object")
	}
	var res []Queue
	for name, v := range qs {
		q := obj(v)
		if q == nil {
			return nil, fmt.Errorf("qstat -Q -f -F json: queue %s is not an object", name)
		}
		r := Queue{Name: name, Type: str(q["queue_type"]), Enabled: str(q["enabled"]) == "True", Started: str(q["started"]) == "True"}
		if mx := obj(q["resources_max"]); mx != nil {
			if w := str(mx["walltime"]); w != "" {
				d, err := ParseWalltime(w)
				if err != nil {
					return nil, fmt.Errorf("queue %s: resources_max.%w", name, err)
				}
				r.MaxWalltime = d
			}
			r.MaxNodes = num(mx["nodect"])
		}
		for _, f := range strings.Fields(str(q["state_count"])) {
			k, v, _ := strings.Cut(f, ":")
			n := num(v)
			switch k {
			case "Queued", "Waiting", "Transit":
				r.Queued += n
			case "Held":
				r.Held += n
				r.Queued += n
			case "Running", "Exiting", "Begun":
				r.Running += n
			}
		}
		res = append(res, r)
	}
	sort.Slice(res, func(i, j int) bool { return res[i].Name < res[j].Name })
	return res, nil
}

// Node is one node (vnode) of `pbsnodes -a -F json`.
type Node struct {
	Name         string
	State        string
	Queue        string   // the node's queue attribute, if bound to one
	Qlist        []string // resources_available.Qlist, a common site convention
	CPUs         int
	AssignedCPUs int
	GPUs         int
	AssignedGPUs int
	MemoryBytes  int64
	GPUType      string
	Error        string // {"Error":"Unknown node "}
}

// ParseNodes reads `pbsnodes -a -F json`.
func ParseNodes(out []byte) ([]Node, error) {
	doc, err := decode(out, "pbsnodes -a -F json")
	if err != nil {
		return nil, err
	}
	ns := obj(doc["nodes"])
	if ns == nil {
		return nil, fmt.Errorf("pbsnodes -a -F json: no \"nodes\" object")
	}
	var res []Node
	for name, v := range ns {
		n := obj(v)
		if n == nil {
			return nil, fmt.Errorf("pbsnodes -a -F json: node %s is not an object", name)
		}
		r := Node{Name: name, State: str(n["state"]), Queue: str(n["queue"]), Error: strings.TrimSpace(str(n["Error"]))}
		av, as := obj(n["resources_available"]), obj(n["resources_assigned"])
		r.CPUs, r.GPUs = num(av["ncpus"]), num(av["ngpus"])
		r.AssignedCPUs, r.AssignedGPUs = num(as["ncpus"]), num(as["ngpus"])
		if r.CPUs == 0 {
			r.CPUs = num(n["pcpus"])
		}
		if m := str(av["mem"]); m != "" {
			if b, err := ParseSize(m); err == nil {
				r.MemoryBytes = b
			}
		}
		r.GPUType = str(av["gputype"])
		if ql := str(av["Qlist"]); ql != "" {
			r.Qlist = strings.Split(ql, ",")
		}
		res = append(res, r)
	}
	sort.Slice(res, func(i, j int) bool { return res[i].Name < res[j].Name })
	return res, nil
}

// nodeDown reports whether a node state set ("free", "job-busy", "down,offline", ...)
// excludes new work.
func nodeDown(state string) bool {
	for _, s := range strings.Split(state, ",") {
		switch strings.TrimSpace(s) {
		case "down", "offline", "state-unknown", "unresolvable", "Stale", "maintenance", "provisioning",
			"wait-provisioning", "initializing", "offline_by_mom", "sleep":
			return true
		}
	}
	return false
}

func nodeFull(state string) bool {
	for _, s := range strings.Split(state, ",") {
		switch strings.TrimSpace(s) {
		case "job-busy", "job-exclusive", "busy", "resv-exclusive":
			return true
		}
	}
	return false
}

// QueueRecords builds one record per execution or route queue. Nodes bound to a queue
// (node `queue` attribute or resources_available.Qlist) count for that queue; when no
// node is bound to any queue, every node counts for every queue.
func QueueRecords(queues []Queue, nodes []Node) []model.ResourceRecord {
	bound := false
	for _, n := range nodes {
		if n.Queue != "" || len(n.Qlist) > 0 {
			bound = true
			break
		}
	}
	var out []model.ResourceRecord
	for _, q := range queues {
		if q.Type != "Execution" && q.Type != "Route" {
			continue
		}
		r := model.ResourceRecord{Partition: q.Name, WalltimeCap: q.MaxWalltime, MaxNodesPerJob: q.MaxNodes,
			PendingJobs: q.Queued, RunningJobs: q.Running, Health: model.HealthOK}
		types := map[string]int{}
		for _, n := range nodes {
			if n.Error != "" {
				continue
			}
			if bound && n.Queue != q.Name && !contains(n.Qlist, q.Name) {
				continue
			}
			r.Nodes.Total++
			r.CPUCoresPerNode = max(r.CPUCoresPerNode, n.CPUs)
			r.GPUsPerNode = max(r.GPUsPerNode, n.GPUs)
			r.MemoryPerNodeGB = max(r.MemoryPerNodeGB, int(n.MemoryBytes>>30))
			r.TotalCores += n.CPUs
			r.TotalGPUs += n.GPUs
			if n.GPUType != "" {
				types[n.GPUType] += max(n.GPUs, 1)
			}
			switch {
			case nodeDown(n.State):
				r.Nodes.Down++
			case nodeFull(n.State):
				r.Nodes.Allocated++
			case n.AssignedCPUs == 0 && n.AssignedGPUs == 0:
				r.Nodes.Idle++
				r.FreeCores += n.CPUs
				r.FreeGPUs += n.GPUs
			default:
				r.Nodes.Mixed++
				r.FreeCores += max(n.CPUs-n.AssignedCPUs, 0)
				r.FreeGPUs += max(n.GPUs-n.AssignedGPUs, 0)
			}
		}
		best, bestN := "", 0
		for t, c := range types {
			if c > bestN || (c == bestN && t < best) {
				best, bestN = t, c
			}
		}
		r.GPUModel, r.GPUMemoryGB = model.RecordGPU(best) // "A100-80GB" → A100, 80 (the catalogue's names)
		switch {
		case !q.Enabled || !q.Started:
			r.Health = model.HealthDown
			r.LastError = "queue is not enabled or not started"
		case r.Nodes.Total > 0 && r.Nodes.Down == r.Nodes.Total:
			r.Health = model.HealthDown
			r.LastError = "all nodes are down or offline"
		case r.Nodes.Down > 0:
			r.Health = model.HealthDegraded
			r.LastError = fmt.Sprintf("%d of %d nodes down or offline", r.Nodes.Down, r.Nodes.Total)
		}
		out = append(out, r)
	}
	return out
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if strings.TrimSpace(y) == x {
			return true
		}
	}
	return false
}
