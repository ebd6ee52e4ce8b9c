package slurm

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/dialect"
	"github.com/mosaic-hpc/mosaic/internal/model"
)

// Queue-aware start estimates.
//
// Slurm's will-run test (`sbatch --test-only`, and the choice `sbatch -M` makes with
// it) plans a new job against the running jobs only: the jobs already queued ahead of
// it are not counted. A cluster with one free GPU and a 4-GPU job waiting for the rest
// of the node answers "now" for a 1-GPU job of two minutes, which will in fact wait
// behind the 4-GPU job (backfill may not delay it). On a cluster where the user's own
// stream of jobs queues, that error is the largest one an estimate has, and it is not
// systematic (it depends on the queue at that moment), so learning a correction from
// history cannot remove it.
//
// PlanStarts plans each new job behind the queue instead, as Slurm's backfill does:
// every node's running jobs hold their cores and GPUs until their time limit; the
// queued jobs ahead, in priority order, each take the earliest slot where enough nodes
// of their partition have room for their whole time limit, and reserve those whole
// nodes from that start (Slurm's backfill keeps its future as node bitmaps: a job of
// lower priority may start on them before it only if its limit ends by then; a queued
// job that has started holds its share only); the new job then takes the earliest slot
// left, which may be a hole before a queued job's slot. PlanStartsPredicted does the
// same with the user's own jobs holding for their predicted runtimes (runtimes.go).
// The caller takes the later of the limits' plan and the site's own answer (which
// knows what the plan does not: reservations, limits, features, memory) and moves it
// earlier by what the prediction gains. docs/PLACEMENT.md ("On real Slurm") has the
// measurements.

// queueColumns are the squeue `-O` fields PlanQueueCommand prints: job id,
// partition(s), state, priority, start (actual for running jobs), time limit, nodes,
// CPUs, TRES per node (%b), node list (running jobs), user, reason (pending jobs),
// TRES per job (`--gpus N`), TRES per task (`--gpus-per-task`), tasks, the TRES a
// running job holds (a pending job's: what it asked for), and its nice (what its
// priority was lowered by: priority + nice is where it stands in line as submitted,
// see newJobPriority). `%b` alone shows only GPUs
// asked for per node; a job that asked with `--gpus N` would be planned without its
// GPUs. The TRES fields have no `--format` letter, and `-O` and `--format` do not mix,
// so the whole listing is `-O`.
var queueColumns = []string{"JobID", "Partition", "State", "PriorityLong", "StartTime", "TimeLimit",
	"NumNodes", "NumCPUs", "tres-per-node", "NodeList", "UserName", "Reason",
	"tres-per-job", "tres-per-task", "NumTasks", "tres-alloc", "Nice"}

// queueFormat is queueColumns as one `-O` argument. `Field:|` is size 0 with the
// suffix "|": squeue's _parse_long_token reads the size with strtol ("|" → 0) and
// print.c's _print_str prints a field of size 0 whole, neither padded nor cut (a field
// without ':' is padded to 20 characters and cut there). On the rig's 22.05.8 a
// 57-character tres-alloc and a 91-character reason print whole, and the twelve
// fields `--format=%i|%P|%T|%Q|%S|%l|%D|%C|%b|%N|%u|%r` printed before print the same
// bytes (testdata/squeue-plan-*.txt).
var queueFormat = func() string {
	cols := make([]string, len(queueColumns))
	for i, c := range queueColumns {
		cols[i] = c + ":|"
	}
	return strings.Join(cols, ",")
}()

var queueFields = len(queueColumns)

// PlanQueueCommand lists every running and queued job of the cluster with what planning
// needs, its times in UTC and Slurm's standard format (whatever the login node's zone
// or the user's SLURM_TIME_FORMAT). A site that hides other users' jobs (PrivateData=jobs) lists the user's own:
// the plan then counts those only.
func PlanQueueCommand() []string {
	return []string{"env", "TZ=UTC", "SLURM_TIME_FORMAT=standard", "squeue", "--noheader", "--all",
		"--states=PENDING,RUNNING,CONFIGURING,COMPLETING,SUSPENDED", "--Format=" + queueFormat}
}

// WhoAmICommand prints the site user's name (whose queued jobs tell a new job's
// priority; see PlanStarts).
func WhoAmICommand() []string { return []string{"id", "-un"} }

// QueuedJob is one line of PlanQueueCommand's output.
type QueuedJob struct {
	ID          string
	Partitions  []string
	Running     bool // running, configuring, completing or suspended: holds its nodes
	Priority    int64
	Start       time.Time     // a running job's start (zero for queued jobs)
	Limit       time.Duration // 0: unlimited
	Nodes       int
	CPUs        int
	GPUsPerNode int      // held (running) or asked for (queued) per node, however asked: jobGPUsPerNode
	NodeList    []string // a running job's nodes
	User        string
	Nice        int64 // what its priority was lowered by (squeue's Nice; negative: raised by an admin)
	// Eligible: a queued job that waits only for resources or priority (not held, not
	// waiting on a dependency or a begin time): only those can take a slot ahead.
	Eligible bool
}

// ParsePlanQueue reads PlanQueueCommand's output. A malformed line is an error naming it.
func ParsePlanQueue(out []byte, loc *time.Location) ([]QueuedJob, error) {
	var res []QueuedJob
	names := 0 // host names expanded so far: one budget for the whole listing
	for n, l := range lines(out) {
		// Every field ends in its '|' suffix: a line is queueFields fields, each with
		// its '|' (so an empty last field and a missing one are told apart).
		f := strings.Split(strings.TrimSuffix(l, "|"), "|")
		if !strings.HasSuffix(l, "|") || len(f) != queueFields {
			return nil, fmt.Errorf("squeue line %d: want %d fields each ending in '|' (squeue --Format=%s), got %q", n+1, queueFields, queueFormat, truncate(l))
		}
		for i := range f {
			f[i] = strings.TrimSpace(f[i])
		}
		j := QueuedJob{ID: f[0], User: f[10]}
		if j.ID == "" {
			return nil, fmt.Errorf("squeue line %d: empty job id in %q", n+1, truncate(l))
		}
		for _, p := range strings.Split(f[1], ",") {
			if p = strings.TrimSpace(p); p != "" {
				j.Partitions = append(j.Partitions, p)
			}
		}
		if len(j.Partitions) == 0 {
			return nil, fmt.Errorf("squeue line %d: job %s has no partition", n+1, j.ID)
		}
		switch strings.ToUpper(f[2]) {
		case "RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED":
			j.Running = true
		case "PENDING":
		default:
			return nil, fmt.Errorf("squeue line %d: job %s state %q: want PENDING, RUNNING, CONFIGURING, COMPLETING or SUSPENDED", n+1, j.ID, f[2])
		}
		pr, err := strconv.ParseInt(f[3], 10, 64)
		if err != nil || pr < 0 {
			return nil, fmt.Errorf("squeue line %d: job %s priority %q is not a non-negative number", n+1, j.ID, f[3])
		}
		j.Priority = pr
		if j.Nice, err = strconv.ParseInt(f[16], 10, 64); err != nil || j.Nice < -maxNice || j.Nice > maxNice {
			return nil, fmt.Errorf("squeue line %d: job %s nice %q is not a number from %d to %d", n+1, j.ID, f[16], -maxNice, maxNice)
		}
		lim, ok := parseLimit(f[5])
		if !ok {
			return nil, fmt.Errorf("squeue line %d: job %s time limit %q: want UNLIMITED or [D-]HH:MM:SS", n+1, j.ID, f[5])
		}
		j.Limit = lim.D()
		if j.Nodes, err = atoiField("nodes", f[6]); err != nil || j.Nodes < 1 {
			return nil, fmt.Errorf("squeue line %d: job %s: node count %q: want 1 or more", n+1, j.ID, f[6])
		}
		if j.CPUs, err = atoiField("CPUs", f[7]); err != nil {
			return nil, fmt.Errorf("squeue line %d: job %s: %w", n+1, j.ID, err)
		}
		if j.GPUsPerNode, err = jobGPUsPerNode(j.Running, j.Nodes, f[8], f[12], f[13], f[14], f[15]); err != nil {
			return nil, fmt.Errorf("squeue line %d: job %s: %w", n+1, j.ID, err)
		}
		if j.Running {
			if j.Start = parseTime(f[4], loc); j.Start.IsZero() {
				// Held "for ever" from now it would delay every estimate; not planned.
				return nil, fmt.Errorf("squeue line %d: running job %s has start %q, not a time like 2026-12-01T15:04:05", n+1, j.ID, truncate(f[4]))
			}
			if j.NodeList, err = ExpandHostlist(cleanNull(f[9])); err != nil {
				return nil, fmt.Errorf("squeue line %d: job %s: %w", n+1, j.ID, err)
			}
			if names += len(j.NodeList); names > maxHostlist {
				return nil, fmt.Errorf("squeue line %d: the running jobs' node lists name more than %d hosts in all", n+1, maxHostlist)
			}
		} else {
			j.Eligible = pr > 0 && eligibleReason(f[11])
		}
		res = append(res, j)
	}
	return res, nil
}

// eligibleReason reports whether a queued job with this pending reason waits only for
// resources or priority (Resources, Priority, None, and "Nodes required for job are
// DOWN, DRAINED or reserved for jobs in higher priority partitions", which Slurm 22.05
// gives a job whose node a queued job of another partition has reserved: seen on the
// rig for a gpuA100 job behind a cpu job on the same node; its nodes that are really
// down are not in the plan anyway): a job held, waiting on a dependency, a begin time,
// a reservation, or a limit of its user, account or QOS (QOSMaxJobsPerUserLimit,
// AssocGrp…Limit, …) does not take a slot ahead soon.
func eligibleReason(r string) bool {
	r = strings.ToLower(strings.ReplaceAll(strings.TrimSpace(r), "_", " "))
	switch r {
	case "", "none", "resources", "priority":
		return true
	}
	return strings.HasPrefix(r, "nodes required for job are down, drained or reserved")
}

// maxNice bounds a listed job's nice (Slurm's own range is ±2147483645; larger is a
// garbled listing).
const maxNice = 1 << 31

// maxTRESGPUs bounds the GPUs one TRES field, or a job's tasks × GPUs per task, may
// name: a larger count is a garbled listing, not a job.
const maxTRESGPUs = 1 << 20

// jobGPUsPerNode is the GPUs a job of the listing holds or asks for on each of its
// nodes, from its TRES fields (each is read strictly, used or not). A running job holds
// what tres-alloc says (gres/gpu=N over its nodes: ceil(N/nodes) each); a queued job
// (or a running one without tres-alloc) asks for tres-per-node (%b), else tres-per-job
// (`--gpus N`: ceil(N/nodes)), else tres-per-task × tasks (`--gpus-per-task`: ceil
// over its nodes), else what tres-alloc says it requested (`--gpus-per-socket`, say).
func jobGPUsPerNode(running bool, nodes int, perNode, perJob, perTask, tasks, alloc string) (int, error) {
	// The four fields in the order they are preferred for a queued job.
	fields := [4]struct{ what, s string }{{"per node", perNode}, {"per job", perJob}, {"per task", perTask}, {"allocated", alloc}}
	var gpus [4]int
	var named [4]bool
	for i, f := range fields {
		var err error
		if gpus[i], named[i], err = tresGPUs(f.s); err != nil {
			return 0, fmt.Errorf("TRES %s %q: %w", f.what, truncate(f.s), err)
		}
	}
	pn, pj, pt, al := gpus[0], gpus[1], gpus[2], gpus[3]
	nt := 1 // NumTasks N/A: not set, one task
	if cleanNull(tasks) != "" {
		var err error
		if nt, err = atoiField("task count", tasks); err != nil {
			return 0, err
		}
		nt = max(nt, 1)
	}
	switch {
	case running && cleanNull(alloc) != "":
		return ceilDiv(al, nodes), nil
	case named[0]:
		return pn, nil
	case named[1]:
		return ceilDiv(pj, nodes), nil
	case named[2]:
		if pt > 0 && nt > maxTRESGPUs/pt {
			return 0, fmt.Errorf("%d GPUs per task × %d tasks: more than %d GPUs", pt, nt, maxTRESGPUs)
		}
		return ceilDiv(pt*nt, nodes), nil
	case named[3]:
		return ceilDiv(al, nodes), nil
	}
	return 0, nil
}

// tresGPUs reads the GPUs a TRES or GRES list as squeue prints it names, and whether
// it names any: "gres:gpu:a100:4" and "gres:gpu:2" (22.05's tres-per-node, -job and
// -task), "gres/gpu=2" and "gres/gpu:a100=4" (tres-alloc, and later releases' tres-per-*),
// "cpu=2,mem=16G,node=1,billing=2,gres/gpu=1,gres/gpu:a100=1" (a job's TRES: the
// untyped gres/gpu is the total, the typed ones its breakdown, so they are not added
// to it), "gres:gpu:2,gres:mps:100" (other GRES are not GPUs), "N/A" or "(null)"
// (none). Strict: an empty item, an item that is not name=value or name:value, a GPU
// count that is not a whole number of at most 2^20, is an error.
func tresGPUs(s string) (int, bool, error) {
	s = cleanNull(s)
	if s == "" {
		return 0, false, nil
	}
	untyped, typed := 0, 0
	named, anyUntyped := false, false
	for _, it := range splitTopLevel(s) {
		it = strings.TrimSpace(it)
		if i := strings.IndexByte(it, '('); i >= 0 { // "gres:gpu:2(IDX:0-1)"
			if !strings.HasSuffix(it, ")") {
				return 0, false, fmt.Errorf("item %q: unbalanced parenthesis", truncate(it))
			}
			it = it[:i]
		}
		typ, count, isGPU, err := tresItem(it)
		if err != nil {
			return 0, false, err
		}
		if !isGPU {
			continue
		}
		named = true
		if typ == "" {
			anyUntyped = true
			untyped += count
		} else {
			typed += count
		}
		if untyped > maxTRESGPUs || typed > maxTRESGPUs {
			return 0, false, fmt.Errorf("more than %d GPUs", maxTRESGPUs)
		}
	}
	if anyUntyped {
		return untyped, named, nil
	}
	return typed, named, nil
}

// tresItem reads one item of a TRES or GRES list: "gres:NAME[:TYPE][:COUNT]" (COUNT
// 1 when absent), "gres/NAME[:TYPE]=COUNT", a bare "gpu[:TYPE][:COUNT]" (old %b), or
// any other TRES "name=value" / "name:value" (cpu=2, mem=16G, license/x=1: not GPUs).
func tresItem(it string) (typ string, count int, isGPU bool, err error) {
	if it == "" {
		return "", 0, false, errors.New("empty item")
	}
	switch {
	case strings.HasPrefix(it, "gres/"):
		key, val, ok := strings.Cut(it[len("gres/"):], "=")
		if !ok {
			return "", 0, false, fmt.Errorf("item %q: want gres/NAME[:TYPE]=COUNT", truncate(it))
		}
		name, typ, _ := strings.Cut(key, ":")
		if !tresName(name) || (typ != "" && !gresType(typ)) || val == "" {
			return "", 0, false, fmt.Errorf("item %q: want gres/NAME[:TYPE]=COUNT", truncate(it))
		}
		if name != "gpu" {
			return "", 0, false, nil
		}
		count, err = gpuCount(val)
		return typ, count, true, err
	case strings.HasPrefix(it, "gres:"), strings.HasPrefix(it, "gpu:"), it == "gpu":
		parts := strings.Split(strings.TrimPrefix(it, "gres:"), ":")
		if !tresName(parts[0]) {
			return "", 0, false, fmt.Errorf("item %q: want gres:NAME[:TYPE][:COUNT]", truncate(it))
		}
		rest := parts[1:]
		count = 1
		if k := len(rest) - 1; k >= 0 && allDigits(rest[k]) {
			if count, err = gpuCount(rest[k]); err != nil {
				return "", 0, false, fmt.Errorf("item %q: %w", truncate(it), err)
			}
			rest = rest[:k]
		}
		for _, t := range rest {
			if !gresType(t) {
				return "", 0, false, fmt.Errorf("item %q: want gres:NAME[:TYPE][:COUNT]", truncate(it))
			}
		}
		return strings.Join(rest, ":"), count, parts[0] == "gpu", nil
	}
	i := strings.IndexAny(it, "=:")
	if i <= 0 || !tresName(it[:i]) || i == len(it)-1 || strings.ContainsAny(it, " \t") {
		return "", 0, false, fmt.Errorf("item %q: want name=value (cpu=2, gres/gpu=1, gres:gpu:a100:1)", truncate(it))
	}
	return "", 0, false, nil
}

// gpuCount reads a GPU count: a whole number of at most maxTRESGPUs.
func gpuCount(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if !allDigits(s) || err != nil || n > maxTRESGPUs {
		return 0, fmt.Errorf("GPU count %q: want a whole number of at most %d", truncate(s), maxTRESGPUs)
	}
	return n, nil
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// tresName: a TRES or GRES name (cpu, mem, gpu, license/x, fs/disk, billing).
func tresName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.' || c == '/') {
			return false
		}
	}
	return true
}

// gresType: a GRES type (a100, nvidia_a100-sxm4-80gb, 3g.20gb), not led by a sign.
func gresType(s string) bool {
	return tresName(s) && !strings.ContainsRune(s, '/') && s[0] != '-'
}

// maxHostlist bounds one hostlist's expansion.
const maxHostlist = 65536

// ExpandHostlist expands a Slurm hostlist: "n1", "n[1-3,7]", "n[01-03]" (zero
// padding kept), "r[1-2]-n[1-2]" (every combination), comma-separated lists of those.
// An empty string is no host. Malformed brackets or ranges, and an expansion of more
// than 65,536 names, are errors.
func ExpandHostlist(s string) ([]string, error) {
	var out []string
	for _, item := range splitOutside(strings.TrimSpace(s), '[', ']') {
		if item = strings.TrimSpace(item); item == "" {
			continue
		}
		names, err := expandHost(item, maxHostlist-len(out))
		if err != nil {
			return nil, fmt.Errorf("hostlist %q: %w", truncate(s), err)
		}
		out = append(out, names...)
	}
	return out, nil
}

// splitOutside splits s on commas outside open…close pairs.
func splitOutside(s string, open, close byte) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case open:
			depth++
		case close:
			depth = max(depth-1, 0)
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

// expandHost expands one item with bracket groups into at most limit names.
func expandHost(item string, limit int) ([]string, error) {
	open := strings.IndexByte(item, '[')
	if open < 0 {
		if strings.ContainsRune(item, ']') {
			return nil, errors.New("']' without '['")
		}
		return []string{item}, nil
	}
	end := strings.IndexByte(item[open:], ']')
	if end < 0 {
		return nil, errors.New("'[' without ']'")
	}
	end += open
	prefix, body, rest := item[:open], item[open+1:end], item[end+1:]
	if strings.ContainsRune(prefix, ']') || strings.ContainsRune(body, '[') {
		return nil, errors.New("nested or unbalanced brackets")
	}
	tails, err := expandHost(rest, limit)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, r := range strings.Split(body, ",") {
		lo, hi, isRange := strings.Cut(r, "-")
		if !isRange {
			hi = lo
		}
		a, err1 := strconv.ParseUint(lo, 10, 32)
		b, err2 := strconv.ParseUint(hi, 10, 32)
		if lo == "" || hi == "" || err1 != nil || err2 != nil || b < a {
			return nil, fmt.Errorf("bad range %q: want N or N-M with N ≤ M", r)
		}
		width := 0
		if len(lo) > 1 && lo[0] == '0' {
			width = len(lo)
		}
		if b-a+1 > uint64(limit) {
			return nil, fmt.Errorf("more than %d host names", maxHostlist)
		}
		for v := a; v <= b; v++ {
			for _, t := range tails {
				if len(out) >= limit {
					return nil, fmt.Errorf("more than %d host names", maxHostlist)
				}
				out = append(out, fmt.Sprintf("%s%0*d%s", prefix, width, v, t))
			}
		}
	}
	return out, nil
}

// PlanRequest is one new job to plan: what one of its nodes needs, on how many nodes of
// which partition, for how long.
type PlanRequest struct {
	Partition   string
	Nodes       int
	CPUsPerNode int
	GPUsPerNode int
	Walltime    time.Duration // its time limit: what backfill fits into a hole
	// Runtime is how long it holds its share once started (0: Walltime); the plan with
	// predicted runtimes books a queued job for its prediction.
	Runtime time.Duration
	// Nice is what its priority is lowered by (the spec's --nice): it is planned
	// behind the jobs ahead of a new job at that lower priority.
	Nice int64
}

// RequestOf is the plan request for a job spec (as the sbatch script renders it).
func RequestOf(spec model.JobSpec) PlanRequest {
	nodes := max(spec.Nodes, 1)
	tasks := max(spec.NTasks, 1)
	cpus := tasks * max(spec.CPUsPerTask, 1)
	gpn := spec.GPUsPerNode
	if gpn == 0 && spec.GPUs > 0 {
		gpn = (spec.GPUs + nodes - 1) / nodes
	}
	return PlanRequest{Partition: spec.Partition, Nodes: nodes, CPUsPerNode: (cpus + nodes - 1) / nodes,
		GPUsPerNode: gpn, Walltime: spec.Walltime.D(), Nice: int64(spec.Nice)}
}

// Bounds of one plan: a larger plan is not made (the site's own answer stands), so a
// plan's cost stays small on any site.
const (
	MaxPlanQueued = 256  // queued jobs ahead planned (the highest priorities; the rest are not counted)
	MaxPlanNodes  = 256  // nodes one job may use (a larger partition is not planned)
	MaxPlanArea   = 1024 // nodes a plan covers in all (the requests' and the jobs' ahead)
	// maxPlanWork bounds the holds one plan looks at: about 0.25 s of CPU here to
	// reach it (a 200-node partition with 256 queued jobs ahead planned in 35 ms:
	// BenchmarkPlanLargeSitePlanOnly).
	maxPlanWork = 20_000_000
)

// planHorizon stands in for an unlimited time limit.
const planHorizon = 365 * 24 * time.Hour

// PlanStarts is the earliest start of each request behind the queue (the zero time:
// not planned — its partition is unknown or too large, it fits no node, or the plan
// is over its bounds). jobs is the queue (ParsePlanQueue), nodes the cluster's nodes
// (ParseSinfo), user the site user (WhoAmICommand). The jobs ahead of a new job are
// the eligible queued jobs whose priority is at least the new job's and that may use
// a node the requests may use; a new job has no age yet, so its priority is taken as
// the lowest of the user's own eligible queued jobs, and when the user has none every
// eligible queued job counts as ahead (the pessimistic side: the caller's learned
// correction measures how pessimistic). At most MaxPlanQueued jobs ahead are planned,
// the highest priorities first; running jobs are held only on the nodes the plan
// covers.
func PlanStarts(nodes []NodeLine, jobs []QueuedJob, user string, now time.Time, reqs []PlanRequest) []time.Time {
	return planGroups(reqs, func(rs []PlanRequest) []time.Time {
		out, _, _ := planQueue(nodes, jobs, user, now, rs, "", Runtimes{})
		return out
	})
}

// planGroups is plan's answers for reqs, planned in groups of one nice each (the jobs
// ahead of a request depend on its nice), in reqs' order.
func planGroups(reqs []PlanRequest, plan func([]PlanRequest) []time.Time) []time.Time {
	same := true
	for _, r := range reqs {
		same = same && r.Nice == reqs[0].Nice
	}
	if same {
		return plan(reqs)
	}
	out := make([]time.Time, len(reqs))
	done := make([]bool, len(reqs))
	for i := range reqs {
		if done[i] {
			continue
		}
		var idx []int
		var group []PlanRequest
		for k := i; k < len(reqs); k++ {
			if !done[k] && reqs[k].Nice == reqs[i].Nice {
				idx, group, done[k] = append(idx, k), append(group, reqs[k]), true
			}
		}
		for k, t := range plan(group) {
			out[idx[k]] = t
		}
	}
	return out
}

// PlanStartsPredicted is PlanStarts with the user's own jobs (running, queued, and the
// requests) ending after their predicted runtimes instead of their limits (rt; the
// zero Runtimes gives PlanStarts). A running job of the user's that has run past its
// prediction is planned to end after the same fraction of what is left of its limit.
// The plan is made again at each predicted end, on the limits, as the backfill
// scheduler does (simulateQueue); where that is too costly (a large site), the one
// plan made now, with the user's queued jobs booked for their predictions, is the
// answer.
func PlanStartsPredicted(nodes []NodeLine, jobs []QueuedJob, user string, now time.Time, reqs []PlanRequest, rt Runtimes) []time.Time {
	return planGroups(reqs, func(rs []PlanRequest) []time.Time {
		out, _, work := planQueue(nodes, jobs, user, now, rs, "", rt)
		if !rt.Known() {
			return out
		}
		if sim, _, ok := simulateQueue(nodes, jobs, user, now, rs, "", rt, work); ok {
			return sim
		}
		return out
	})
}

// PlanQueued is the start of the queued job id in the same plan (its own place in
// line among the jobs ahead), for its runtimes rt (the zero Runtimes: the limits, one
// plan; else simulated forward as PlanStartsPredicted is); the zero time when it is
// not planned (not listed, not eligible, over the bounds).
func PlanQueued(nodes []NodeLine, jobs []QueuedJob, user string, now time.Time, id string, rt Runtimes) time.Time {
	_, t, work := planQueue(nodes, jobs, user, now, nil, id, rt)
	if !rt.Known() {
		return t
	}
	if _, sim, ok := simulateQueue(nodes, jobs, user, now, nil, id, rt, work); ok {
		return sim
	}
	return t
}

// planQueue plans the queue and then reqs behind it (see PlanStarts), and gives the
// slot of the queued job own ("" for none) as well, and the span checks the plan took.
func planQueue(nodes []NodeLine, jobs []QueuedJob, user string, now time.Time, reqs []PlanRequest, own string, rt Runtimes) ([]time.Time, time.Time, int) {
	out := make([]time.Time, len(reqs))
	var ownSlot time.Time
	p := newPlan(nodes, now)
	sc, ok := p.scope(jobs, user, reqs, own)
	if !ok {
		return out, ownSlot, 0
	}
	runtime := sc.runtimes(user, rt)
	for i := range jobs {
		if j := &jobs[i]; j.Running {
			p.hold(j, now, sc.area, runtime(j))
		}
	}
	for k, j := range sc.ahead {
		req := PlanRequest{Nodes: j.Nodes, CPUsPerNode: ceilDiv(j.CPUs, j.Nodes), GPUsPerNode: j.GPUsPerNode, Walltime: j.Limit, Runtime: runtime(j)}
		t, chosen := p.earliest(sc.sets[k], req)
		if chosen != nil {
			p.take(chosen, t, req)
		}
		if j.ID == own {
			ownSlot = t
		}
	}
	for i, r := range reqs {
		set := p.nodesOf(r.Partition)
		if len(set) == 0 || len(set) > MaxPlanNodes {
			continue
		}
		if t, chosen := p.earliest(set, r); chosen != nil {
			out[i] = t
		}
	}
	if p.work > maxPlanWork {
		return make([]time.Time, len(reqs)), time.Time{}, p.work // over budget: a cut-short plan is no plan
	}
	return out, ownSlot, p.work
}

// scope is what one plan covers: the nodes (area) the requests, the queued job own and
// the jobs ahead may use, and the jobs ahead (queuedAhead, at most MaxPlanQueued) with
// each one's usable nodes.
type scope struct {
	area  map[*planNode]bool
	ahead []*QueuedJob
	sets  [][]*planNode
}

// scope selects what a plan of reqs (and of the queued job own, "" for none) covers;
// false: nothing to plan, or more than MaxPlanArea nodes.
func (p *plan) scope(jobs []QueuedJob, user string, reqs []PlanRequest, own string) (scope, bool) {
	sc := scope{area: map[*planNode]bool{}}
	addArea := func(parts ...string) {
		if set := p.nodesOf(parts...); len(set) <= MaxPlanNodes {
			for _, n := range set {
				sc.area[n] = true
			}
		}
	}
	for _, r := range reqs {
		addArea(r.Partition)
	}
	if own != "" {
		for i := range jobs {
			if jobs[i].ID == own && !jobs[i].Running {
				addArea(jobs[i].Partitions...)
			}
		}
	}
	if len(sc.area) == 0 {
		return sc, false
	}
	var nice int64 // one plan's requests share one nice (planGroups)
	if len(reqs) > 0 {
		nice = reqs[0].Nice
	}
	for _, j := range queuedAhead(jobs, user, nice) {
		set := p.nodesOf(j.Partitions...)
		if len(set) > MaxPlanNodes || !overlaps(set, sc.area) {
			continue
		}
		sc.ahead, sc.sets = append(sc.ahead, j), append(sc.sets, set)
		if len(sc.ahead) == MaxPlanQueued {
			break
		}
	}
	for _, set := range sc.sets {
		for _, n := range set {
			sc.area[n] = true
		}
	}
	return sc, len(sc.area) <= MaxPlanArea
}

// runtimes is how long each job runs in a plan: the user's own jobs for their
// predicted runtimes (rt; the zero Runtimes: their limits), others' for their limits.
func (scope) runtimes(user string, rt Runtimes) func(*QueuedJob) time.Duration {
	return func(j *QueuedJob) time.Duration {
		if j.User == user {
			return rt.Predict(j.Limit)
		}
		return j.Limit
	}
}

// overlaps reports whether any node of set is in area.
func overlaps(set []*planNode, area map[*planNode]bool) bool {
	for _, n := range set {
		if area[n] {
			return true
		}
	}
	return false
}

// queuedAhead are the eligible queued jobs counted ahead of a new job of user's
// submitted with nice, highest priority first (ties: lower job id, i.e. submitted
// first).
func queuedAhead(jobs []QueuedJob, user string, nice int64) []*QueuedJob {
	own := newJobPriority(jobs, user)
	if own >= 0 {
		own -= nice
	}
	var ahead []*QueuedJob
	for i := range jobs {
		if j := &jobs[i]; !j.Running && j.Eligible && j.Priority >= own {
			ahead = append(ahead, j)
		}
	}
	slices.SortStableFunc(ahead, func(a, b *QueuedJob) int {
		if c := cmp.Compare(b.Priority, a.Priority); c != 0 {
			return c
		}
		return compareJobIDs(a.ID, b.ID)
	})
	return ahead
}

// newJobPriority is the priority a new job of user's is taken to have before its own
// nice: the lowest of the user's eligible queued jobs as submitted (priority + nice: a
// new job has no age yet, and slurmctld's priority/basic counts down from the lowest
// priority before nice, job_mgr.c set_job_prio), or -1, below every job, when the user
// has none queued.
func newJobPriority(jobs []QueuedJob, user string) int64 {
	own := int64(-1)
	for i := range jobs {
		if j := &jobs[i]; !j.Running && j.Eligible && j.User == user {
			if p := max(j.Priority+j.Nice, 0); own < 0 || p < own {
				own = p
			}
		}
	}
	return own
}

// compareJobIDs orders numeric ids numerically (array and het job ids by their text).
func compareJobIDs(a, b string) int {
	x, errA := strconv.ParseUint(a, 10, 64)
	y, errB := strconv.ParseUint(b, 10, 64)
	if errA == nil && errB == nil {
		return cmp.Compare(x, y)
	}
	return strings.Compare(a, b)
}

func ceilDiv(a, b int) int {
	if b <= 0 {
		return a
	}
	return (a + b - 1) / b
}

// plan is the nodes' future use: per node its capacity and the intervals it is held.
type plan struct {
	now  time.Time
	work int // span checks made (maxPlanWork bounds them)
	// scratch is earliestOwn's list of a node's times, kept between calls.
	scratch []time.Time
	nodes   map[string]*planNode
	parts   map[string][]*planNode // partition → its usable nodes, by name
}

type planNode struct {
	name       string
	cpus, gpus int
	held       []span
	// reserved are the planned starts of the queued jobs placed on the node. Slurm's
	// backfill reserves whole nodes for a queued job (its node_space_map is a node
	// bitmap per time slot), so a job of lower priority may start on the node before
	// such a start only if its limit ends by then; once the queued job has started it
	// holds only its share.
	reserved []time.Time
}

// span is [from, to) holding cpus and gpus of a node.
type span struct {
	from, to   time.Time
	cpus, gpus int
}

func newPlan(nodes []NodeLine, now time.Time) *plan {
	p := &plan{now: now, nodes: map[string]*planNode{}, parts: map[string][]*planNode{}}
	for _, nl := range nodes {
		n := p.nodes[nl.Node]
		if n == nil {
			n = &planNode{name: nl.Node, cpus: nl.CPUs, gpus: nl.GPUs}
			p.nodes[nl.Node] = n
		}
		if ClassifyNodeState(nl.State) != NodeDown && nl.PartitionUp {
			p.parts[nl.Partition] = append(p.parts[nl.Partition], n)
		}
	}
	for _, ns := range p.parts {
		slices.SortFunc(ns, func(a, b *planNode) int { return strings.Compare(a.name, b.name) })
	}
	return p
}

// hold books a running job on its nodes until heldUntil.
func (p *plan) hold(j *QueuedJob, now time.Time, area map[*planNode]bool, runtime time.Duration) {
	end := heldUntil(j, now, runtime)
	cpn := ceilDiv(j.CPUs, max(len(j.NodeList), 1))
	for _, name := range j.NodeList {
		if n := p.nodes[name]; n != nil && area[n] {
			n.held = append(n.held, span{now, end, cpn, j.GPUsPerNode})
		}
	}
}

// heldUntil is when the running job j is planned to end: once it has run for runtime
// (its time limit, or its predicted runtime, no longer than the limit), at least a
// second from now (a job past its limit is ending). A job past a predicted runtime
// shorter than its limit is planned to end after the same fraction of what is left of
// its limit.
func heldUntil(j *QueuedJob, now time.Time, runtime time.Duration) time.Time {
	end := now.Add(planHorizon)
	if j.Limit > 0 && !j.Start.IsZero() {
		end = j.Start.Add(j.Limit)
		if runtime > 0 && runtime < j.Limit {
			if pe := j.Start.Add(runtime); pe.After(now) {
				end = pe
			} else if left := end.Sub(now); left > 0 {
				end = now.Add(time.Duration(float64(left) * float64(runtime) / float64(j.Limit)))
			}
		}
	}
	return later(end, now.Add(time.Second))
}

// nodesOf is the usable nodes of any of the partitions, each once, by name.
func (p *plan) nodesOf(parts ...string) []*planNode {
	if len(parts) == 1 {
		return p.parts[parts[0]]
	}
	seen := map[*planNode]bool{}
	var out []*planNode
	for _, pt := range parts {
		for _, n := range p.parts[pt] {
			if !seen[n] {
				seen[n] = true
				out = append(out, n)
			}
		}
	}
	slices.SortFunc(out, func(a, b *planNode) int { return strings.Compare(a.name, b.name) })
	return out
}

// earliest is the first time (now, or when some hold on the set ends or a queued job is
// planned to start) at which r.Nodes nodes of set each have room for r for its whole
// walltime, ending by every reserved start after it, and those nodes, the first such in
// set order (nil: it never fits: too big for the nodes, or the set is empty).
//
// Each node is looked at only at its own times first (now, its holds' ends, its
// reserved starts): a node that fits at some time t fits at the latest of its own times
// at or before t, because every hold begins at now or at a reserved start, so between
// two of a node's own times nothing on it begins or ends and moving the window earlier
// adds no use and no reserved start to it. So a one-node request starts at the least of
// the nodes' own earliest times (ties: the first node in set order), and a node whose
// own earliest time is after t cannot be chosen at t. This is the plan of checking every
// node at every time of the set, found with a fraction of the work (the
// TestEarliestIsTheExhaustiveSearch property test keeps the two equal).
func (p *plan) earliest(set []*planNode, r PlanRequest) (time.Time, []*planNode) {
	if r.Nodes < 1 || r.Nodes > len(set) {
		return time.Time{}, nil
	}
	d := r.Walltime
	if d <= 0 {
		d = planHorizon
	}
	first := make([]time.Time, len(set)) // each node's own earliest time; zero: never
	var firsts []time.Time
	for i, n := range set {
		t, ok := p.earliestOwn(n, d, r.CPUsPerNode, r.GPUsPerNode)
		if p.work > maxPlanWork {
			return time.Time{}, nil
		}
		if ok {
			first[i] = t
			firsts = append(firsts, t)
		}
	}
	if len(firsts) < r.Nodes {
		return time.Time{}, nil
	}
	if r.Nodes == 1 {
		best := -1
		for i := range set {
			if !first[i].IsZero() && (best < 0 || first[i].Before(first[best])) {
				best = i
			}
		}
		return first[best], []*planNode{set[best]}
	}
	// r.Nodes nodes fit together no sooner than the r.Nodes-th least own earliest time.
	slices.SortFunc(firsts, func(a, b time.Time) int { return a.Compare(b) })
	from := firsts[r.Nodes-1]
	times := []time.Time{from}
	for _, n := range set {
		times = n.appendTimes(times, from)
	}
	times = sortedTimes(times)
	chosen := make([]*planNode, 0, r.Nodes)
	for _, t := range times {
		chosen = chosen[:0]
		for i, n := range set {
			if first[i].IsZero() || first[i].After(t) {
				continue
			}
			if p.work > maxPlanWork {
				return time.Time{}, nil
			}
			if n.fits(t, t.Add(d), r.CPUsPerNode, r.GPUsPerNode, &p.work) {
				if chosen = append(chosen, n); len(chosen) == r.Nodes {
					return t, chosen
				}
			}
		}
	}
	return time.Time{}, nil
}

// appendTimes appends the node's own times after from: its holds' ends and its
// reserved starts.
func (n *planNode) appendTimes(dst []time.Time, from time.Time) []time.Time {
	for _, s := range n.held {
		if s.to.After(from) {
			dst = append(dst, s.to)
		}
	}
	for _, t := range n.reserved {
		if t.After(from) {
			dst = append(dst, t)
		}
	}
	return dst
}

// sortedTimes sorts times in place and drops repeats.
func sortedTimes(times []time.Time) []time.Time {
	slices.SortFunc(times, func(a, b time.Time) int { return a.Compare(b) })
	return slices.CompactFunc(times, func(a, b time.Time) bool { return a.Equal(b) })
}

// earliestOwn is the first of the node's own times (now, its holds' ends after now,
// its reserved starts after now) at which it has cpus and gpus free for d (see fits);
// false: at none of them, so at no time.
func (p *plan) earliestOwn(n *planNode, d time.Duration, cpus, gpus int) (time.Time, bool) {
	if cpus > n.cpus || gpus > n.gpus {
		return time.Time{}, false
	}
	now, work := p.now, &p.work
	times := sortedTimes(n.appendTimes(append(p.scratch[:0], now), now))
	defer func() { p.scratch = times[:0] }()
	for _, t := range times {
		if *work > maxPlanWork {
			return time.Time{}, false
		}
		if n.fits(t, t.Add(d), cpus, gpus, work) {
			return t, true
		}
	}
	return time.Time{}, false
}

// fits reports whether the node has cpus and gpus free throughout [from, to) and no
// queued job is planned to start on it within (from, to), adding the holds it looked
// at to *work.
func (n *planNode) fits(from, to time.Time, cpus, gpus int, work *int) bool {
	if cpus > n.cpus || gpus > n.gpus {
		return false
	}
	*work += len(n.reserved)
	for _, t := range n.reserved {
		if t.After(from) && t.Before(to) {
			return false
		}
	}
	// The use only rises where a hold begins: check at from and at each such start.
	*work += len(n.held)
	for _, at := range append([]time.Time{from}, n.startsWithin(from, to)...) {
		*work += len(n.held)
		c, g := 0, 0
		for _, s := range n.held {
			if !s.from.After(at) && s.to.After(at) {
				c, g = c+s.cpus, g+s.gpus
			}
		}
		if c+cpus > n.cpus || g+gpus > n.gpus {
			return false
		}
	}
	return true
}

func (n *planNode) startsWithin(from, to time.Time) []time.Time {
	var out []time.Time
	for _, s := range n.held {
		if s.from.After(from) && s.from.Before(to) {
			out = append(out, s.from)
		}
	}
	return out
}

// take books the queued job r on the chosen nodes from t, for its runtime, and
// reserves the nodes at t.
func (p *plan) take(chosen []*planNode, t time.Time, r PlanRequest) {
	d := cmp.Or(r.Runtime, r.Walltime)
	if d <= 0 {
		d = planHorizon
	}
	for _, n := range chosen {
		n.held = append(n.held, span{t, t.Add(d), r.CPUsPerNode, r.GPUsPerNode})
		n.reserved = append(n.reserved, t)
	}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

var _ dialect.QueuePlanner = (*Slurm)(nil)

// PlanOutputCap bounds what each plan command may print (the provider cuts its output
// there): a listing that reaches it is not planned, and the estimate batch's other
// output stays within the transport's limit.
const PlanOutputCap = 2 << 20

// PlanCommands implements dialect.QueuePlanner: the node listing, the queue, the
// site user's name and their recent jobs' runtimes.
func (p *Slurm) PlanCommands() ([][]string, int) {
	return [][]string{SinfoCommand(), PlanQueueCommand(), WhoAmICommand(), RuntimeHistoryCommand()}, PlanOutputCap
}

// planInput is what PlanCommands' outputs say.
type planInput struct {
	nodes []NodeLine
	jobs  []QueuedJob
	user  string
	rt    Runtimes
}

// readPlan reads PlanCommands' outputs. The runtime history is optional: a site
// without accounting, or a listing that cannot be read, plans on the limits alone.
func readPlan(outs []dialect.Output) (planInput, error) {
	var in planInput
	if len(outs) != 4 {
		return in, fmt.Errorf("slurm queue plan: want 4 outputs (sinfo, squeue, id, sacct), got %d", len(outs))
	}
	for i, name := range []string{"sinfo", "squeue", "id -un"} {
		if outs[i].ExitCode != 0 {
			return in, fmt.Errorf("slurm queue plan: %s failed: %s", name, lastLine(outs[i]))
		}
	}
	nodes, err := ParseSinfo(outs[0].Stdout)
	if err != nil {
		return in, fmt.Errorf("slurm queue plan: %w", err)
	}
	for i, name := range []string{"sinfo", "squeue"} {
		if len(outs[i].Stdout) >= PlanOutputCap {
			return in, fmt.Errorf("slurm queue plan: %s printed %d bytes or more (cut at the cap): not planned", name, PlanOutputCap)
		}
	}
	jobs, err := ParsePlanQueue(outs[1].Stdout, time.UTC) // PlanQueueCommand prints UTC
	if err != nil {
		return in, fmt.Errorf("slurm queue plan: %w", err)
	}
	user := ""
	if ls := lines(outs[2].Stdout); len(ls) == 1 {
		user = strings.TrimSpace(ls[0])
	}
	if user == "" || strings.ContainsAny(user, " \t|") {
		return in, fmt.Errorf("slurm queue plan: id -un printed %q, not one user name", truncate(string(outs[2].Stdout)))
	}
	in = planInput{nodes: nodes, jobs: jobs, user: user}
	if outs[3].ExitCode == 0 {
		if hist, err := ParseRuntimeHistory(outs[3].Stdout, len(outs[3].Stdout) >= PlanOutputCap); err == nil {
			in.rt = NewRuntimes(hist)
		}
	}
	return in, nil
}

// PlanStarts implements dialect.QueuePlanner on PlanCommands' outputs.
func (p *Slurm) PlanStarts(outs []dialect.Output, specs []model.JobSpec, submitted []dialect.Submitted, now time.Time) ([]dialect.PlannedStart, error) {
	in, err := readPlan(outs)
	if err != nil {
		return nil, err
	}
	listed := in.jobs
	in.jobs = withSubmitted(in.jobs, in.user, submitted)
	reqs := make([]PlanRequest, len(specs))
	for i := range specs {
		reqs[i] = RequestOf(specs[i])
	}
	res := make([]dialect.PlannedStart, len(specs))
	for i, t := range PlanStarts(in.nodes, in.jobs, in.user, now, reqs) {
		res[i].Limits = t
		if !t.IsZero() {
			// From the listing as squeue printed it: the will-run test ran before it,
			// and a submission recorded since is not in Slurm's answer.
			res[i].QueueAllowance, _ = WillRunQueueAllowance(in.nodes, listed, in.user, reqs[i].Partition, reqs[i].Nice)
		}
	}
	if in.rt.Known() {
		for i, t := range PlanStartsPredicted(in.nodes, in.jobs, in.user, now, reqs, in.rt) {
			res[i].Predicted = t
		}
	}
	return res, nil
}

// PlanQueued implements dialect.QueuePlanner: the queued job's own slot in the plan.
func (p *Slurm) PlanQueued(outs []dialect.Output, jobID string, now time.Time) (dialect.PlannedStart, error) {
	var res dialect.PlannedStart
	in, err := readPlan(outs)
	if err != nil {
		return res, err
	}
	res.Limits = PlanQueued(in.nodes, in.jobs, in.user, now, jobID, Runtimes{})
	if in.rt.Known() {
		res.Predicted = PlanQueued(in.nodes, in.jobs, in.user, now, jobID, in.rt)
	}
	return res, nil
}

// withSubmitted adds to the listed jobs the submitted ones it does not list, as
// eligible queued jobs of their user (the site user for Own ones) in line behind every
// job listed of their priority and ahead of a new request: at the priority of the
// user's lowest eligible queued job (where a new job's is taken; see PlanStarts), or
// the lowest there is when the user has none queued. Ids that are listed are there
// already (queued, or running on their nodes).
func withSubmitted(jobs []QueuedJob, user string, submitted []dialect.Submitted) []QueuedJob {
	if len(submitted) == 0 {
		return jobs
	}
	listed := make(map[string]bool, len(jobs))
	for i := range jobs {
		listed[jobs[i].ID] = true
	}
	base := newJobPriority(jobs, user)
	out := slices.Clip(jobs)
	for k, s := range submitted {
		if s.JobID != "" && listed[s.JobID] {
			continue
		}
		r := RequestOf(s.Spec)
		owner := "\x00another user of this core"
		if s.Own {
			owner = user
		}
		parts := []string{}
		for _, pt := range strings.Split(s.Spec.Partition, ",") {
			if pt = strings.TrimSpace(pt); pt != "" {
				parts = append(parts, pt)
			}
		}
		// Slurm lowers a job by its nice from where it would stand (newJobPriority).
		prio, nice := max(base, 1), int64(0)
		if base >= 0 && r.Nice > 0 {
			prio = max(base-r.Nice, 1)
			nice = max(base, 1) - prio
		}
		out = append(out, QueuedJob{ID: "~submitted-" + strconv.Itoa(k), Partitions: parts, Priority: prio,
			Limit: r.Walltime, Nodes: r.Nodes, CPUs: r.CPUsPerNode * r.Nodes, GPUsPerNode: r.GPUsPerNode,
			User: owner, Eligible: true, Nice: nice})
	}
	return out
}
