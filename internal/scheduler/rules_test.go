package scheduler

import (
	"strings"
	"testing"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

type ruleCase struct {
	name   string
	env    func(*model.Envelope)
	rec    func(*model.ResourceRecord)
	req    func(*Request)
	health model.Health
	pass   bool
	reason string // substring of the verdict's reason
}

func baseEnv() model.Envelope {
	return model.Envelope{
		GPUs: model.IntRange{Min: 1, Max: 4}, CPUCores: model.IntRange{Min: 8, Max: 32},
		Walltime: model.DurationRange{Min: hours(4), Max: hours(8)},
	}
}

func baseRec() model.ResourceRecord {
	return gpuRec("Delta@NCSA", "gpuA100x4", "bbka-delta-gpu", "x86_64", "A100", 4, 40, 64, 256, 100, 8, 3, 48, false, 1)
}

func runRuleCases(t *testing.T, rule Rule, cases []ruleCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := baseEnv()
			if tc.env != nil {
				tc.env(&env)
			}
			env.Normalize()
			if err := env.Validate(); err != nil {
				t.Fatalf("test envelope invalid: %v", err)
			}
			rec := baseRec()
			if tc.rec != nil {
				tc.rec(&rec)
			}
			r := &Request{Task: &model.Task{ID: "t"}, Envelope: env, Now: fixedNow, explain: true}
			if tc.req != nil {
				tc.req(r)
			}
			c := &Candidate{System: rec.System, Partition: rec.Partition, Account: rec.Account, Record: &rec, SystemHealth: tc.health}
			v := rule.Check(r, c)
			if v.Pass != tc.pass {
				t.Fatalf("%s: pass=%v (%q), want %v", rule.Name(), v.Pass, v.Reason, tc.pass)
			}
			if v.Reason == "" {
				t.Fatalf("%s: empty reason", rule.Name())
			}
			if !strings.Contains(v.Reason, tc.reason) {
				t.Fatalf("%s: reason %q does not mention %q", rule.Name(), v.Reason, tc.reason)
			}
		})
	}
}

func TestRulePin(t *testing.T) {
	runRuleCases(t, PinRule{}, []ruleCase{
		{name: "no pin", pass: true, reason: "not pinned"},
		{name: "short system name", req: func(r *Request) { r.Target = &model.Target{System: "delta"} }, pass: true, reason: "pinned"},
		{name: "system and partition", req: func(r *Request) { r.Target = &model.Target{System: "Delta@NCSA", Partition: "gpuA100x4"} }, pass: true, reason: "pinned"},
		{name: "other system", req: func(r *Request) { r.Target = &model.Target{System: "Vista@TACC"} }, reason: "pinned to Vista@TACC"},
		{name: "other partition", req: func(r *Request) { r.Target = &model.Target{System: "delta", Partition: "gpuA40x4"} }, reason: "partition gpuA40x4"},
		{name: "DeltaAI is not Delta", rec: func(r *model.ResourceRecord) { r.System = "DeltaAI@NCSA" }, req: func(r *Request) { r.Target = &model.Target{System: "delta"} }, reason: "pinned to delta"},
	})
}

func TestRuleExclude(t *testing.T) {
	runRuleCases(t, ExcludeRule{}, []ruleCase{
		{name: "nothing excluded", pass: true, reason: "not excluded"},
		{name: "caller excludes", req: func(r *Request) { r.Exclude = []string{"Delta@NCSA"} }, reason: "excluded"},
		{name: "envelope avoids short name", env: func(e *model.Envelope) { e.Constraints.AvoidSystems = []string{"delta"} }, reason: "avoid_systems"},
		{name: "avoids another", env: func(e *model.Envelope) { e.Constraints.AvoidSystems = []string{"vista"} }, pass: true, reason: "not excluded"},
	})
}

func TestRuleHealth(t *testing.T) {
	runRuleCases(t, HealthRule{}, []ruleCase{
		{name: "ok", health: model.HealthOK, pass: true, reason: "ok"},
		{name: "degraded", health: model.HealthDegraded, pass: true, reason: "degraded"},
		{name: "needs login", health: model.HealthNeedsLogin, reason: "needs a login"},
		{name: "system down", health: model.HealthDown, reason: "is down"},
		{name: "partition down", rec: func(r *model.ResourceRecord) { r.Health, r.LastError = model.HealthDown, "sinfo timed out" }, reason: "sinfo timed out"},
		{name: "all nodes drained", rec: func(r *model.ResourceRecord) { r.Nodes.Down = r.Nodes.Total }, reason: "nodes are down"},
	})
}

func TestRuleAuth(t *testing.T) {
	runRuleCases(t, AuthRule{}, []ruleCase{
		{name: "account", pass: true, reason: "bbka-delta-gpu"},
		{name: "no account", rec: func(r *model.ResourceRecord) { r.Account = "" }, reason: "no account on Delta@NCSA"},
	})
}

func TestRuleArch(t *testing.T) {
	runRuleCases(t, ArchRule{}, []ruleCase{
		{name: "any", pass: true, reason: "any arch"},
		{name: "allowed", env: func(e *model.Envelope) { e.Constraints.Arch = []string{"amd64"} }, pass: true, reason: "x86_64"},
		{name: "wrong arch", env: func(e *model.Envelope) { e.Constraints.Arch = []string{"aarch64"} }, reason: "x86_64 is not in constraints.arch"},
		{name: "unknown arch", env: func(e *model.Envelope) { e.Constraints.Arch = []string{"aarch64"} }, rec: func(r *model.ResourceRecord) { r.Arch = "" }, reason: "unknown"},
	})
}

func TestRuleAccelerator(t *testing.T) {
	runRuleCases(t, AcceleratorRule{}, []ruleCase{
		{name: "gpu task gpu partition", pass: true, reason: "4xA100"},
		{name: "allowed model alias", env: func(e *model.Envelope) { e.Constraints.GPUModels = []string{"NVIDIA A100-SXM4-40GB"} }, pass: true, reason: "A100"},
		{name: "model not allowed", env: func(e *model.Envelope) { e.Constraints.GPUModels = []string{"H100"} }, reason: "A100 is not in constraints.gpu_models"},
		{name: "model avoided", env: func(e *model.Envelope) { e.Constraints.AvoidGPUModels = []string{"a100"} }, reason: "avoid_gpu_models"},
		{name: "cpu partition", rec: func(r *model.ResourceRecord) { r.GPUsPerNode, r.GPUModel = 0, "" }, reason: "no GPUs on this partition"},
		{name: "cpu task on gpu partition", env: func(e *model.Envelope) { e.GPUs = model.IntRange{} }, pass: true, reason: "ranked after CPU partitions"},
		{name: "cpu task cpu partition", env: func(e *model.Envelope) { e.GPUs = model.IntRange{} }, rec: func(r *model.ResourceRecord) { r.GPUsPerNode = 0 }, pass: true, reason: "CPU task"},
		{name: "optional gpus on cpu partition", env: func(e *model.Envelope) { e.GPUs = model.IntRange{Min: 0, Max: 2} }, rec: func(r *model.ResourceRecord) { r.GPUsPerNode = 0 }, pass: true, reason: "optional"},
		{name: "count unreachable", env: func(e *model.Envelope) { e.GPUs = model.IntRange{Min: 8, Max: 8} }, reason: "at most 4 GPUs reachable"},
		{name: "count reachable multi-node", env: func(e *model.Envelope) {
			e.GPUs, e.Nodes = model.IntRange{Min: 8, Max: 8}, model.IntRange{Min: 1, Max: 2}
		}, pass: true, reason: "per node"},
	})
}

func TestRuleGPUMemory(t *testing.T) {
	runRuleCases(t, GPUMemoryRule{}, []ruleCase{
		{name: "no minimum", pass: true, reason: "no minimum"},
		{name: "enough", env: func(e *model.Envelope) { e.Constraints.MinGPUMemoryGB = 40 }, pass: true, reason: "40 GB"},
		{name: "too small", env: func(e *model.Envelope) { e.Constraints.MinGPUMemoryGB = 80 }, reason: "40 GB per GPU < 80 GB"},
		{name: "unknown", env: func(e *model.Envelope) { e.Constraints.MinGPUMemoryGB = 16 }, rec: func(r *model.ResourceRecord) { r.GPUMemoryGB = 0 }, reason: "unknown"},
		{name: "cpu partition defers", env: func(e *model.Envelope) { e.Constraints.MinGPUMemoryGB = 16 }, rec: func(r *model.ResourceRecord) { r.GPUsPerNode = 0 }, pass: true, reason: "accelerator rule"},
	})
}

func TestRuleFeatures(t *testing.T) {
	runRuleCases(t, FeaturesRule{}, []ruleCase{
		{name: "none", pass: true, reason: "none required"},
		{name: "present", env: func(e *model.Envelope) { e.Constraints.Features = []string{"NVLink"} }, rec: func(r *model.ResourceRecord) { r.Features = []string{"nvlink", "ib"} }, pass: true, reason: "all required"},
		{name: "missing", env: func(e *model.Envelope) { e.Constraints.Features = []string{"nvlink"} }, reason: "feature nvlink"},
	})
}

func TestRuleContainer(t *testing.T) {
	img := func(rt string) func(*model.Envelope) {
		return func(e *model.Envelope) {
			e.Constraints.Container = &model.Container{Image: "docker://pytorch", Runtime: rt}
		}
	}
	runRuleCases(t, ContainerRule{}, []ruleCase{
		{name: "no container", pass: true, reason: "no container"},
		{name: "any runtime", env: img(""), pass: true, reason: "apptainer"},
		{name: "singularity on apptainer", env: img("singularity"), pass: true, reason: "apptainer"},
		{name: "singularity missing", env: img("singularity"), rec: func(r *model.ResourceRecord) { r.ContainerRuntimes = []string{"charliecloud"} }, reason: "runtime singularity is not available"},
		// The job script runs apptainer when the task names no runtime; a site with
		// only docker cannot run it (it used to pass with "docker").
		{name: "default needs apptainer", env: img(""), rec: func(r *model.ResourceRecord) { r.ContainerRuntimes = []string{"docker"} }, reason: "runtime apptainer is not available (have docker)"},
		{name: "no runtimes", env: img(""), rec: func(r *model.ResourceRecord) { r.ContainerRuntimes = nil }, reason: "no container runtime"},
	})
}

func TestRuleWalltime(t *testing.T) {
	runRuleCases(t, WalltimeRule{}, []ruleCase{
		{name: "within cap", pass: true, reason: "cap 48h"},
		{name: "no cap", rec: func(r *model.ResourceRecord) { r.WalltimeCap = 0 }, pass: true, reason: "no cap"},
		{name: "min over cap", env: func(e *model.Envelope) { e.Walltime = model.DurationRange{Min: hours(72), Max: hours(96)} }, reason: "partition allows 48h; walltime.min is 72h"},
		{name: "max over cap is fine", env: func(e *model.Envelope) { e.Walltime.Max = hours(96) }, pass: true, reason: "cap"},
	})
}

func TestRuleCapacity(t *testing.T) {
	runRuleCases(t, CapacityRule{}, []ruleCase{
		{name: "fits one node", pass: true, reason: "1 node"},
		{name: "too many cores for one node", env: func(e *model.Envelope) { e.CPUCores = model.IntRange{Min: 100, Max: 100} }, reason: "cpu_cores.min 100 needs 2 nodes"},
		{name: "cores spread over nodes", env: func(e *model.Envelope) {
			e.CPUCores, e.Nodes, e.GPUs = model.IntRange{Min: 100, Max: 100}, model.IntRange{Min: 1, Max: 2}, model.IntRange{Min: 2, Max: 4}
		}, pass: true, reason: "2 node"},
		{name: "memory", env: func(e *model.Envelope) { e.MemoryGB = model.IntRange{Min: 300, Max: 300} }, reason: "memory_gb.min 300"},
		{name: "nodes over partition max", env: func(e *model.Envelope) {
			e.Nodes = model.IntRange{Min: 4, Max: 4}
			e.GPUs = model.IntRange{Min: 4, Max: 16}
		},
			rec: func(r *model.ResourceRecord) { r.MaxNodesPerJob = 2 }, reason: "allows 2 nodes per job"},
		{name: "nodes over partition size", env: func(e *model.Envelope) {
			e.Nodes = model.IntRange{Min: 200, Max: 200}
			e.GPUs = model.IntRange{Min: 200, Max: 800}
		}, reason: "partition has 100 nodes"},
		{name: "gpus need more nodes than allowed", env: func(e *model.Envelope) { e.GPUs = model.IntRange{Min: 8, Max: 8} }, reason: "gpus.min 8 needs 2 nodes"},
	})
}

func TestRuleUserLimits(t *testing.T) {
	runRuleCases(t, UserLimitsRule{}, []ruleCase{
		{name: "unknown", pass: true, reason: "no limits known"},
		{name: "within", rec: func(r *model.ResourceRecord) { r.MaxSubmitPerUser, r.MyPendingJobs = 40, 3 }, pass: true, reason: "within"},
		{name: "submit limit", rec: func(r *model.ResourceRecord) { r.MaxSubmitPerUser, r.MyRunningJobs, r.MyPendingJobs = 40, 20, 20 }, reason: "submit limit is 40"},
		{name: "running limit waits", rec: func(r *model.ResourceRecord) { r.MaxRunningPerUser, r.MyRunningJobs = 2, 2 }, pass: true, reason: "will wait"},
	})
}

// TestDefaultRulesUniqueNames guards the trace: rule names identify verdict columns.
func TestDefaultRulesUniqueNames(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range DefaultRules() {
		if seen[r.Name()] || r.Name() == "" {
			t.Errorf("rule name %q empty or repeated", r.Name())
		}
		seen[r.Name()] = true
	}
}

// TestConstantRulesAgreeWithCheck: when a rule says its verdict is constant for a
// request, Check gives that verdict on every candidate.
func TestConstantRulesAgreeWithCheck(t *testing.T) {
	snap := sixMachines()
	tasks := []*model.Task{a100Task(), {ID: "cpu", Envelope: model.Envelope{CPUCores: model.IntRange{Min: 4}, Walltime: model.DurationRange{Min: hours(1)}}}}
	pinned := a100Task()
	pinned.Target = &model.Target{System: "delta"}
	tasks = append(tasks, pinned)
	for _, task := range tasks {
		r := &Request{Task: task, Envelope: task.Envelope, Target: task.Target, Now: fixedNow}
		r.Envelope.Normalize()
		for _, rule := range DefaultRules() {
			cr, ok := rule.(ConstantRule)
			if !ok {
				continue
			}
			pass, constant := cr.Constant(r)
			if !constant {
				continue
			}
			for i := range snap.Records {
				rec := &snap.Records[i]
				c := &Candidate{System: rec.System, Partition: rec.Partition, Account: rec.Account, Record: rec}
				if v := rule.Check(r, c); v.Pass != pass {
					t.Errorf("task %s rule %s: Constant says %v, Check on %s says %v", task.ID, rule.Name(), pass, c.Key(), v.Pass)
				}
			}
		}
	}
}
