package site

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

var (
	kinds    = []string{KindSim, KindSSH, KindLocal, KindGlobus}
	dialects = []string{DialectSlurm, DialectPBS}
	uuidRe   = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)
)

// Validate checks every rule on an already-built catalog (for example one assembled in
// code) without changing it. It returns the warnings and, if any rule fails, Errors
// listing all failures. Lines come from System.Line and Partition.Line.
func Validate(c *Catalog) (warnings []string, err error) {
	if c == nil {
		return nil, &Error{File: "(catalog)", Msg: "no catalog"}
	}
	file := c.Path
	if file == "" {
		file = "(built-in catalog)"
	}
	rep := &reporter{file: file, lines: map[string]int{}}
	for i := range c.Systems {
		s := &c.Systems[i]
		if s.Line > 0 {
			rep.lines[fmt.Sprintf("systems[%d]", i)] = s.Line
		}
		for j := range s.Partitions {
			if l := s.Partitions[j].Line; l > 0 {
				rep.lines[fmt.Sprintf("systems[%d].partitions[%d]", i, j)] = l
			}
		}
	}
	validate(c, rep)
	return rep.warns, rep.err()
}

// validate applies every catalog rule, reporting all failures to rep.
func validate(c *Catalog, rep *reporter) {
	if !finiteAtLeast(c.Sim.Speed, 0) {
		rep.errf("sim.speed", "must be >= 0 (simulated seconds per real second; 0 = default 60), got %v", c.Sim.Speed)
	}
	if len(c.Systems) == 0 {
		rep.errf("systems", "at least one system is required (see sites.example.yaml)")
	}
	names := map[string]int{}
	for i := range c.Systems {
		s := &c.Systems[i]
		path := fmt.Sprintf("systems[%d]", i)
		if s.Name != "" {
			key := strings.ToLower(s.Name)
			if prev, dup := names[key]; dup {
				rep.errf(path+".name", "duplicate system name %q (also systems[%d]); names must be unique, ignoring case", s.Name, prev)
			} else {
				names[key] = i
			}
		}
		validateSystem(s, path, rep)
	}
}

func validateSystem(s *System, path string, rep *reporter) {
	switch {
	case s.Name == "":
		rep.errf(path+".name", "required (e.g. Delta@NCSA), or set machine: to a known machine to get its name")
	case !cleanName(s.Name, "@.-_+"):
		rep.errf(path+".name", "%q: use letters, digits and @ . - _ + only (no spaces or slashes)", s.Name)
	}
	if s.Machine != "" {
		if _, ok := Known(s.Machine); !ok {
			rep.errf(path+".machine", "unknown machine %q%s; known machines: %s", s.Machine, suggest(s.Machine, KnownMachineNames()), strings.Join(KnownMachineNames(), ", "))
		}
	}
	kind := strings.ToLower(s.Kind)
	switch {
	case s.Kind == "":
		rep.errf(path+".kind", "required: one of %s", strings.Join(kinds, ", "))
	case !slices.Contains(kinds, kind):
		rep.errf(path+".kind", "must be one of %s, got %q%s", strings.Join(kinds, ", "), s.Kind, suggest(s.Kind, kinds))
	}
	if d := strings.ToLower(s.Dialect); d != "" && !slices.Contains(dialects, d) {
		rep.errf(path+".dialect", "must be slurm or pbs, got %q%s", s.Dialect, suggest(s.Dialect, dialects))
	}
	switch o := strings.ToLower(s.OrderOwnJobs); {
	case o == "" || o == OrderSubmission:
	case o != OrderSmallestFirst:
		rep.errf(path+".order_own_jobs", "must be %s or %s, got %q%s", OrderSubmission, OrderSmallestFirst, s.OrderOwnJobs,
			suggest(s.OrderOwnJobs, []string{OrderSubmission, OrderSmallestFirst}))
	case strings.ToLower(s.Dialect) == DialectPBS:
		rep.errf(path+".order_own_jobs", "%s needs Slurm's --nice; PBS sites keep submission order (remove it or set dialect: slurm)", OrderSmallestFirst)
	case kind == KindSim:
		rep.errf(path+".order_own_jobs", "%s is for Slurm sites (ssh, local, globus); a simulated system's queue ignores nice", OrderSmallestFirst)
	}
	switch o := strings.ToLower(s.OrderOwnJobs); {
	case s.OrderNiceStep < 0 || s.OrderNiceStep > MaxOrderNiceStep:
		rep.errf(path+".order_nice_step", "must be 1 to %d (the nice per doubling of a job's size), got %d; leave it out for %d", MaxOrderNiceStep, s.OrderNiceStep, DefaultOrderNiceStep)
	case s.OrderNiceStep != 0 && o != OrderSmallestFirst:
		rep.errf(path+".order_nice_step", "applies only with order_own_jobs: %s (remove it or set that order)", OrderSmallestFirst)
	}
	switch kind {
	case KindSSH:
		if strings.TrimSpace(s.Host) == "" {
			rep.errf(path+".host", "required for kind ssh: the login host or an ~/.ssh/config alias")
		}
	case KindGlobus:
		switch {
		case s.Endpoint == "":
			rep.errf(path+".endpoint", "required for kind globus: the Globus Compute endpoint UUID (globus-compute-endpoint list)")
		case !uuidRe.MatchString(s.Endpoint):
			rep.errf(path+".endpoint", "must be a UUID like 4b116d3c-1703-4f8f-9f6f-39921e5864df, got %q", s.Endpoint)
		}
	}
	if s.Endpoint != "" && kind != KindGlobus && slices.Contains(kinds, kind) {
		rep.warnf(path+".endpoint", "ignored: endpoint is only used by kind globus")
	}
	if s.SSH != nil {
		if kind != KindSSH && slices.Contains(kinds, kind) {
			rep.errf(path+".ssh", "the ssh block is only for kind ssh (this system is kind %s)", kind)
		}
		validateSSH(s.SSH, path+".ssh", rep)
	}
	if s.SimConfig != nil && kind != KindSim && slices.Contains(kinds, kind) {
		rep.errf(path+".sim", "the sim block is only for kind sim (this system is kind %s)", kind)
	}
	if s.Arch != "" {
		if _, ok := CanonicalArch(s.Arch); !ok {
			rep.errf(path+".arch", "must be x86_64 or aarch64 (amd64/arm64 accepted), got %q", s.Arch)
		}
	}
	validateAccounts(s.Accounts, path+".accounts", rep)
	validateUsers(s, kind, path, rep)
	for j, r := range s.ContainerRuntimes {
		p := fmt.Sprintf("%s.container_runtimes[%d]", path, j)
		switch {
		case strings.TrimSpace(r) == "":
			rep.errf(p, "empty container runtime name")
		case !model.IsKnownContainerRuntime(r):
			rep.warnf(p, "unknown container runtime %q%s; known: %s", r, suggest(r, model.KnownContainerRuntimes), strings.Join(model.KnownContainerRuntimes, ", "))
		}
	}
	validateWords(s.Features, path+".features", rep)

	// A simulated system is only what the catalog says; a real one is probed, so its
	// partitions may be left out (they are discovered) or listed to add limits.
	if len(s.Partitions) == 0 && s.Kind == KindSim {
		rep.errf(path+".partitions", "at least one partition is required for a simulated system (or set machine: to a known machine to get its partitions)")
	}
	seen := map[string]int{}
	for j := range s.Partitions {
		p := &s.Partitions[j]
		pp := fmt.Sprintf("%s.partitions[%d]", path, j)
		if p.Name != "" {
			if prev, dup := seen[p.Name]; dup {
				rep.errf(pp+".name", "duplicate partition name %q (also partitions[%d])", p.Name, prev)
			} else {
				seen[p.Name] = j
			}
		}
		validatePartition(p, pp, rep)
		if kind == KindSim && len(s.AccountsFor(p.Name)) == 0 {
			rep.errf(pp+".accounts", "a simulated partition needs an account to charge: set accounts: on the system or the partition (e.g. [demo-%s])", shortName(s))
		}
	}
	if s.SimConfig != nil {
		validateSim(s, path+".sim", rep)
	}
}

func validateSSH(o *SSH, path string, rep *reporter) {
	if o.Port < 0 || o.Port > 65535 {
		rep.errf(path+".port", "must be 0–65535 (0 = ssh default), got %d", o.Port)
	}
	if o.ConnectTimeout != "" {
		if d, err := model.ParseDuration(o.ConnectTimeout); err != nil || d < 0 {
			rep.errf(path+".connect_timeout", "want a duration like 10s, got %q", o.ConnectTimeout)
		}
	}
	for k, opt := range o.Options {
		key, val, ok := strings.Cut(opt, "=")
		if !ok || strings.TrimSpace(key) == "" || strings.TrimSpace(val) == "" || strings.ContainsAny(key, " \t") {
			rep.errf(fmt.Sprintf("%s.options[%d]", path, k), "want Key=Value (passed as ssh -o Key=Value), got %q", opt)
		}
	}
}

func validatePartition(p *Partition, path string, rep *reporter) {
	switch {
	case p.Name == "":
		rep.errf(path+".name", "required: the Slurm partition or PBS queue name")
	case !cleanName(p.Name, "@.-_+"):
		rep.errf(path+".name", "%q: use letters, digits and @ . - _ + only", p.Name)
	}
	atLeast := func(field string, v, lo int, what string) {
		if v < lo {
			rep.errf(path+"."+field, "must be >= %d%s, got %d", lo, what, v)
		}
	}
	atLeast("nodes", p.Nodes, 1, "")
	atLeast("cpu_cores", p.CPUCores, 1, " (cores per node)")
	atLeast("memory_gb", p.MemoryGB, 1, " (GB per node)")
	atLeast("gpus", p.GPUs, 0, "")
	atLeast("gpu_memory_gb", p.GPUMemoryGB, 0, "")
	atLeast("max_nodes_per_job", p.MaxNodesPerJob, 0, " (0 = unknown)")
	atLeast("max_running_per_user", p.MaxRunningPerUser, 0, " (0 = unknown)")
	atLeast("max_submit_per_user", p.MaxSubmitPerUser, 0, " (0 = unknown)")
	if p.GPUs > 0 {
		if strings.TrimSpace(p.GPUModel) == "" {
			rep.errf(path+".gpu_model", "required when gpus > 0 (e.g. A100, H100, MI250X)")
		}
		if p.GPUMemoryGB <= 0 {
			rep.errf(path+".gpu_memory_gb", "must be > 0 when gpus > 0 (GB per GPU), got %d", p.GPUMemoryGB)
		}
	} else if p.GPUModel != "" && p.GPUs == 0 {
		rep.errf(path+".gpus", "gpu_model %q is set but gpus is 0; give the GPUs per node", p.GPUModel)
	}
	if p.GPUModel != "" {
		if _, ok := CanonicalGPUModel(p.GPUModel); !ok {
			rep.warnf(path+".gpu_model", "unknown GPU model %q%s; requests cannot name it (gpu_models takes catalogue models only), so only requests without a GPU model use it", p.GPUModel, suggest(squash(p.GPUModel), model.KnownGPUModels))
		}
	}
	if p.MaxWalltime < 0 {
		rep.errf(path+".max_walltime", "must be positive (or UNLIMITED), got %s", p.MaxWalltime)
	}
	if !finiteAtLeast(p.ChargeFactor, 0) {
		rep.errf(path+".charge_factor", "must be >= 0, got %v", p.ChargeFactor)
	}
	if p.Arch != "" {
		if _, ok := CanonicalArch(p.Arch); !ok {
			rep.errf(path+".arch", "must be x86_64 or aarch64 (amd64/arm64 accepted), got %q", p.Arch)
		}
	}
	validateAccounts(p.Accounts, path+".accounts", rep)
	validateWords(p.Features, path+".features", rep)
}

func validateSim(s *System, path string, rep *reporter) {
	sc := s.SimConfig
	if sc.MaxNodes < 0 {
		rep.errf(path+".max_nodes", "must be >= 0 (0 = default 64), got %d", sc.MaxNodes)
	}
	if u := sc.Load.Utilization; !finiteAtLeast(u, 0) || u > 1.5 {
		rep.errf(path+".load.utilization", "must be between 0 and 1.5 (0 = default 0.85), got %v", u)
	}
	if sc.Load.MeanRuntime < 0 {
		rep.errf(path+".load.mean_runtime", "must be >= 0, got %s", sc.Load.MeanRuntime)
	}
	f := &sc.Faults
	if p := f.JobFailureProb; !finiteAtLeast(p, 0) || p > 1 {
		rep.errf(path+".faults.job_failure_prob", "must be within [0,1], got %v", p)
	}
	for k, w := range f.Outages {
		wp := fmt.Sprintf("%s.faults.outages[%d]", path, k)
		if w.Start < 0 {
			rep.errf(wp+".start", "must be >= 0 (time after the simulation starts), got %s", w.Start)
		}
		if w.Duration <= 0 {
			rep.errf(wp+".duration", "must be > 0, got %s", w.Duration)
		}
	}
	for k, nf := range f.NodeFailures {
		np := fmt.Sprintf("%s.faults.node_failures[%d]", path, k)
		part, ok := s.PartitionByName(nf.Partition)
		switch {
		case nf.Partition == "":
			rep.errf(np+".partition", "required: which partition loses nodes")
		case !ok:
			rep.errf(np+".partition", "no partition %q on %s%s", nf.Partition, s.Name, suggest(nf.Partition, partitionNames(s)))
		}
		if nf.Nodes < 1 {
			rep.errf(np+".nodes", "must be >= 1, got %d", nf.Nodes)
		} else if ok && nf.Nodes > part.Nodes {
			rep.errf(np+".nodes", "partition %s has only %d nodes, got %d", part.Name, part.Nodes, nf.Nodes)
		}
		if nf.At < 0 {
			rep.errf(np+".at", "must be >= 0 (time after the simulation starts), got %s", nf.At)
		}
		if nf.Duration <= 0 {
			rep.errf(np+".duration", "must be > 0, got %s", nf.Duration)
		}
	}
}

func validateAccounts(accts []string, path string, rep *reporter) {
	for k, a := range accts {
		p := fmt.Sprintf("%s[%d]", path, k)
		switch {
		case strings.TrimSpace(a) == "":
			rep.errf(p, "empty account name; leave accounts out to use the site's default account")
		case strings.IndexFunc(a, unicode.IsSpace) >= 0 || strings.ContainsAny(a, "/,"):
			rep.errf(p, "account %q must not contain spaces, commas or slashes", a)
		case strings.Contains(strings.ToUpper(a), "TODO"):
			rep.warnf(p, "account %q is a placeholder: replace it with your allocation (sacctmgr show assoc user=$USER, or the site portal)", a)
		}
	}
}

func validateWords(ws []string, path string, rep *reporter) {
	for k, w := range ws {
		if strings.TrimSpace(w) == "" {
			rep.errf(fmt.Sprintf("%s[%d]", path, k), "empty entry")
		}
	}
}

func partitionNames(s *System) []string {
	out := make([]string, len(s.Partitions))
	for i := range s.Partitions {
		out[i] = s.Partitions[i].Name
	}
	return out
}

func shortName(s *System) string {
	if s.Machine != "" {
		return s.Machine
	}
	n, _, _ := strings.Cut(strings.ToLower(s.Name), "@")
	return n
}

func finiteAtLeast(v, lo float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) && v >= lo }

// cleanName reports whether s has only letters, digits and the given punctuation.
func cleanName(s, punct string) bool {
	for _, r := range s {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && !strings.ContainsRune(punct, r) {
			return false
		}
	}
	return true
}
