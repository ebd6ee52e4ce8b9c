package site

import (
	"slices"
	"strings"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

// Known machine shapes. Values come from the public user guides summarised in the
// project notes (machines.md, collected 2026-11-30 from stored copies; queue limits and
// charge rates change without notice — check `qlimits`, `sinfo -s` or
// `scontrol show partition` on the live system). A value the guides do not give is
// left zero (meaning "unknown") and says so in a comment. Kind is left empty: the
// catalog entry decides how the machine is reached.

// hour keeps the tables below short.
const hour = model.Duration(time.Hour)

func hours(n float64) model.Duration { return model.Duration(n * float64(time.Hour)) }

// knownMachines is keyed by short machine name; order is KnownMachines' order.
var knownMachines = []System{delta(), deltaAI(), anvil(), vista(), frontera(), lonestar6()}

// machineAliases are extra short names accepted by Known.
var machineAliases = map[string]string{"ls6": "lonestar6", "dtai": "deltaai", "delta-ai": "deltaai"}

// Delta @ NCSA.
// Sources: https://docs.ncsa.illinois.edu/systems/delta/en/latest/user_guide/architecture.html
// (repo ncsa/Delta_doc docs/source/user_guide/architecture.rst), running_jobs.rst
// (partition table), job_accounting.rst (charge factors, <proj>-delta-cpu/-gpu accounts),
// login.rst, containers.rst (Apptainer). Max nodes per job and per-user job limits are
// "TBD" in the guide: left 0 (unknown) except where a 3rd-party copy of the newer table
// (yluo29/CCR-DeltaAI-Notes Delta/DeltaAI.md) gives an interactive-queue cap.
// Node sharing is the default (not exclusive). Interactive and preempt partitions share
// the node pool of their base partition, so their node counts repeat it.
// The gpuH200x8 and gpuH200x8-interactive partitions are omitted: their node hardware,
// GPU memory and charge factor are known only from a 3rd-party source.
func delta() System {
	cpu := Partition{Nodes: 132, CPUCores: 128, MemoryGB: 256, MaxWalltime: 48 * hour, ChargeFactor: 1.0}
	a100x4 := Partition{Nodes: 100, CPUCores: 64, MemoryGB: 256, GPUs: 4, GPUModel: "A100", GPUMemoryGB: 40, MaxWalltime: 48 * hour, ChargeFactor: 1.0}
	a100x8 := Partition{Nodes: 6, CPUCores: 128, MemoryGB: 2048, GPUs: 8, GPUModel: "A100", GPUMemoryGB: 40, MaxWalltime: 48 * hour, ChargeFactor: 1.5}
	a40x4 := Partition{Nodes: 100, CPUCores: 64, MemoryGB: 256, GPUs: 4, GPUModel: "A40", GPUMemoryGB: 48, MaxWalltime: 48 * hour, ChargeFactor: 0.5}
	mi100 := Partition{Nodes: 1, CPUCores: 128, MemoryGB: 2048, GPUs: 8, GPUModel: "MI100", GPUMemoryGB: 32, MaxWalltime: 48 * hour, ChargeFactor: 0.25}
	return System{
		Name: "Delta@NCSA", Machine: "delta", Dialect: DialectSlurm,
		Host:              "login.delta.ncsa.illinois.edu", // round robin; password + Duo, SSH keys disabled for general use
		Arch:              ArchX86_64,
		ContainerRuntimes: []string{"apptainer"},
		Partitions: []Partition{
			named("cpu", cpu),
			// Wall time: 30 min per the guide (1 h in the 3rd-party copy); 4 nodes/job 3rd-party.
			variant("cpu-interactive", cpu, hours(0.5), 4, 2.0, "interactive"),
			variant("cpu-preempt", cpu, 48*hour, 0, 0.5, "preemptible"),
			named("gpuA100x4", a100x4), // the default partition
			variant("gpuA100x4-interactive", a100x4, 1*hour, 4, 2.0, "interactive"),
			variant("gpuA100x4-preempt", a100x4, 48*hour, 0, 0.5, "preemptible"),
			named("gpuA100x8", a100x8),
			variant("gpuA100x8-interactive", a100x8, 1*hour, 2, 3.0, "interactive"),
			named("gpuA40x4", a40x4),
			variant("gpuA40x4-interactive", a40x4, 1*hour, 4, 1.0, "interactive"),
			variant("gpuA40x4-preempt", a40x4, 48*hour, 0, 0.25, "preemptible"),
			named("gpuMI100x8", mi100),
			variant("gpuMI100x8-interactive", mi100, 1*hour, 0, 0.5, "interactive"),
		},
	}
}

// DeltaAI @ NCSA.
// Sources: https://docs.ncsa.illinois.edu/systems/deltaai/en/latest/user-guide/architecture.html
// (114 nodes, 4× GH200 per node), .../job-accounting.html (1 SU per GH200-hour,
// <proj>-dtai-gh accounts). Partition names, wall caps and the interactive node cap are
// 3rd-party (yluo29/CCR-DeltaAI-Notes Delta/DeltaAI.md), as is the login host
// dtai-login.delta.ncsa.illinois.edu (unconfirmed by the site). Apptainer is observed in
// public job scripts, not documented. Per-user limits: unknown (0). Nodes are shared.
// Each GH200 superchip's GPU is an H100 with 96 GB HBM3 (the guide says H100); a
// request for GH200 matches it through the GPU catalogue (H100-class on aarch64, see
// model.GPUMatches), and the "gh200" feature selects the superchip explicitly too.
func deltaAI() System {
	ghx4 := Partition{Nodes: 114, CPUCores: 288, MemoryGB: 480, GPUs: 4, GPUModel: "H100", GPUMemoryGB: 96,
		MaxWalltime: 48 * hour, ChargeFactor: 1.0, Features: []string{"gh200"}}
	return System{
		Name: "DeltaAI@NCSA", Machine: "deltaai", Dialect: DialectSlurm,
		Host:              "dtai-login.delta.ncsa.illinois.edu",
		Arch:              ArchAarch64,
		ContainerRuntimes: []string{"apptainer"},
		Partitions: []Partition{
			named("ghx4", ghx4), // max nodes per job "TBD" (3rd-party): 0
			variant("ghx4-interactive", ghx4, 2*hour, 4, 1.0, "interactive"),
		},
	}
}

// Anvil @ RCAC, Purdue.
// Sources: PurdueRCAC/RCAC-Docs docs/userguides/anvil/jobs.md (queue table, GPU caps,
// accounting), docs/userguides/anvil/architecture.md (node specs),
// docs/userguides/anvil/getting-started.md (anvil.rcac.purdue.edu, SSH keys only,
// usernames x-<ACCESS user>), docs/userguides/anvil/anvil-software.md (Apptainer).
// Queues share node pools: debug/wholenode/wide/shared all run on the 1000 regular
// nodes. Whether debug is shared is not stated: left non-exclusive. `shared` limits a
// user to 1280 running cores (not expressible here as a job count: 0). Users are also
// capped at 12 GPUs in use (32 per allocation) on gpu/ai: not expressible here. CPU, GPU
// and AI credits are separate allocations, so accounts are per partition type.
func anvil() System {
	regular := Partition{Nodes: 1000, CPUCores: 128, MemoryGB: 256}
	gpuNode := Partition{Nodes: 16, CPUCores: 128, MemoryGB: 512, GPUs: 4, GPUModel: "A100", GPUMemoryGB: 40}
	with := func(p Partition, name string, wall model.Duration, maxNodes, maxRun, maxSubmit int, excl bool, cf float64) Partition {
		p.Name, p.MaxWalltime, p.MaxNodesPerJob = name, wall, maxNodes
		p.MaxRunningPerUser, p.MaxSubmitPerUser, p.Exclusive, p.ChargeFactor = maxRun, maxSubmit, excl, cf
		return p
	}
	return System{
		Name: "Anvil@RCAC", Machine: "anvil", Dialect: DialectSlurm,
		Host:              "anvil.rcac.purdue.edu",
		Arch:              ArchX86_64,
		ContainerRuntimes: []string{"apptainer"},
		Partitions: []Partition{
			with(regular, "debug", 2*hour, 2, 1, 2, false, 1),
			// gpu-debug also caps a job at 2 GPUs (not expressible here).
			with(gpuNode, "gpu-debug", hours(0.5), 1, 1, 2, false, 1),
			with(regular, "wholenode", 96*hour, 16, 64, 2500, true, 1),
			with(regular, "wide", 12*hour, 56, 5, 10, true, 1),
			with(regular, "shared", 96*hour, 1, 0, 0, false, 1), // the default queue
			with(Partition{Nodes: 32, CPUCores: 128, MemoryGB: 1024}, "highmem", 48*hour, 1, 2, 4, false, 4),
			with(gpuNode, "gpu", 48*hour, 0, 0, 0, false, 1), // max nodes/job and per-user jobs: not given
			// ai: 2× Xeon Platinum 8468. Sharing is not stated for ai specifically; the
			// guide says "all GPU nodes are shared".
			with(Partition{Nodes: 21, CPUCores: 96, MemoryGB: 1024, GPUs: 4, GPUModel: "H100", GPUMemoryGB: 80},
				"ai", 48*hour, 0, 0, 0, false, 1),
		},
	}
}

// Vista @ TACC.
// Sources: https://docs.tacc.utexas.edu/hpc/vista/ (repo TACC/TACC-Docs docs/hpc/vista.md,
// "Last update: March 10, 2026", Table 4 queues), docs/include/vista-jobaccounting.md,
// docs/aiml/containers.md (Apptainer via `module load tacc-apptainer`, compute nodes only).
// Nodes are exclusive (charged whole). Charge factor is SUs per node-hour. Per-user node
// caps (gg 128, gh 192, gh-dev 8) are not expressible here. The gh GPU: the guide calls
// it "H200", but it is the Hopper GPU of a GH200 superchip with 96 GB HBM3 — an H100
// (an H200 has 141 GB HBM3e) — so it is recorded as H100 with feature "gh200". gh's
// memory is 116 GB per the table (the text says 120 GiB).
func vista() System {
	gh := Partition{Nodes: 600, CPUCores: 72, MemoryGB: 116, GPUs: 1, GPUModel: "H100", GPUMemoryGB: 96,
		Exclusive: true, Features: []string{"gh200"}}
	return System{
		Name: "Vista@TACC", Machine: "vista", Dialect: DialectSlurm,
		Host:              "vista.tacc.utexas.edu", // MFA required
		Arch:              ArchAarch64,
		ContainerRuntimes: []string{"apptainer"},
		Partitions: []Partition{
			{Name: "gg", Nodes: 256, CPUCores: 144, MemoryGB: 237, MaxWalltime: 48 * hour, MaxNodesPerJob: 32,
				MaxRunningPerUser: 20, MaxSubmitPerUser: 40, Exclusive: true, ChargeFactor: 0.33},
			limits(named("gh", gh), 48*hour, 64, 20, 40, 1),
			limits(named("gh-dev", gh), 2*hour, 8, 1, 3, 1),
		},
	}
}

// Frontera @ TACC.
// Sources: https://docs.tacc.utexas.edu/hpc/frontera/ (repo TACC/TACC-Docs
// docs/hpc/frontera.md, "Last update: September 5, 2025", Table 6 queues, Tables 1–3),
// docs/hpc/frontera/running.md, docs/include/frontera-jobaccounting.md,
// docs/aiml/containers.md (tacc-apptainer). Exclusive nodes; charge factor is SUs per
// node-hour. The table's "jobs per user" is recorded as max running per user; the
// machine-wide cap of 50 running / 200 pending jobs per user is not expressible here.
// Omitted: `large` (restricted, by ticket). Minimum nodes per job (small 1–2, normal
// 3–512) are not expressible here either.
// rtx nodes: the guide gives 2× Xeon E5-2620 v4 without a core count; 16 cores is from
// Intel's published spec of that CPU (8 cores each), not from the guide.
func frontera() System {
	clx := Partition{Nodes: 8368, CPUCores: 56, MemoryGB: 192, Exclusive: true}
	rtx := Partition{Nodes: 90, CPUCores: 16, MemoryGB: 128, GPUs: 4, GPUModel: "RTX5000", GPUMemoryGB: 16, Exclusive: true}
	flex := limits(named("flex", clx), 48*hour, 128, 15, 0, 0.8)
	flex.Features = []string{"preemptible"} // preemptible after 1 h
	return System{
		Name: "Frontera@TACC", Machine: "frontera", Dialect: DialectSlurm,
		Host:              "frontera.tacc.utexas.edu",
		Arch:              ArchX86_64,
		ContainerRuntimes: []string{"apptainer"},
		Partitions: []Partition{
			limits(named("development", clx), 2*hour, 40, 1, 0, 1),
			limits(named("small", clx), 48*hour, 2, 15, 0, 1),
			limits(named("normal", clx), 48*hour, 512, 75, 0, 1),
			flex,
			// nvdimm: 4× Xeon Platinum 8280M, 2.1 TB NVDIMM (+384 GB DDR4 as cache); 16 nodes.
			limits(named("nvdimm", Partition{Nodes: 16, CPUCores: 112, MemoryGB: 2100, Exclusive: true}), 48*hour, 4, 3, 0, 2),
			limits(named("rtx", rtx), 48*hour, 16, 12, 0, 3),
			limits(named("rtx-dev", rtx), 2*hour, 2, 1, 0, 3),
		},
	}
}

// Lonestar6 @ TACC.
// Sources: https://docs.tacc.utexas.edu/hpc/lonestar6/ (repo TACC/TACC-Docs
// docs/hpc/lonestar6.md, "Last update: July 9, 2025", Tables 1–2.5),
// docs/hpc/6lonestar/running.md (Table 5 queues), docs/include/lonestar6-jobaccounting.md.
// Exclusive nodes; charge factor is SUs per node-hour (stored guide dated July 2025; a
// 2026 3rd-party log quotes different GPU rates — check `qlimits`). The 560 CPU nodes
// are split as 24 development + 536 for normal. Omitted: `large` (restricted) and
// `gpu-a100-small` (virtual-node shape unknown). vm-small VMs are fractional nodes
// (16 cores of an EPYC 7763) and may share memory bandwidth.
func lonestar6() System {
	milan := Partition{CPUCores: 128, MemoryGB: 256, Exclusive: true}
	a100 := Partition{Nodes: 84, CPUCores: 128, MemoryGB: 256, GPUs: 3, GPUModel: "A100", GPUMemoryGB: 40, Exclusive: true}
	dev, normal := milan, milan
	dev.Nodes, normal.Nodes = 24, 536
	return System{
		Name: "Lonestar6@TACC", Machine: "lonestar6", Dialect: DialectSlurm,
		Host:              "ls6.tacc.utexas.edu",
		Arch:              ArchX86_64,
		ContainerRuntimes: []string{"apptainer"},
		Partitions: []Partition{
			limits(named("development", dev), 2*hour, 8, 1, 0, 1),
			limits(named("normal", normal), 48*hour, 64, 20, 0, 1),
			limits(named("vm-small", Partition{Nodes: 28, CPUCores: 16, MemoryGB: 32, Exclusive: true}), 48*hour, 1, 4, 0, 0.143),
			limits(named("gpu-a100", a100), 48*hour, 8, 8, 0, 4),
			limits(named("gpu-a100-dev", a100), 2*hour, 2, 1, 0, 4),
			// gpu-h100: 2× AMD EPYC 9454, H100 PCIe × 2.
			limits(named("gpu-h100", Partition{Nodes: 4, CPUCores: 96, MemoryGB: 384, GPUs: 2, GPUModel: "H100", GPUMemoryGB: 80, Exclusive: true}),
				48*hour, 1, 1, 0, 6),
		},
	}
}

func named(name string, p Partition) Partition {
	p.Name = name
	p.Features = slices.Clone(p.Features)
	return p
}

// variant is a partition on the same nodes as base with its own wall cap, node cap and
// charge factor, tagged with a feature ("interactive", "preemptible").
func variant(name string, base Partition, wall model.Duration, maxNodes int, cf float64, feature string) Partition {
	p := named(name, base)
	p.MaxWalltime, p.MaxNodesPerJob, p.ChargeFactor = wall, maxNodes, cf
	p.Features = append(p.Features, feature)
	return p
}

func limits(p Partition, wall model.Duration, maxNodes, maxRun, maxSubmit int, cf float64) Partition {
	p.MaxWalltime, p.MaxNodesPerJob, p.MaxRunningPerUser, p.MaxSubmitPerUser, p.ChargeFactor = wall, maxNodes, maxRun, maxSubmit, cf
	return p
}

// Known returns the built-in shape of a known machine by short name (delta, deltaai,
// anvil, vista, frontera, lonestar6; also ls6), or by system name (Delta@NCSA), case
// insensitively. The result is a deep copy the caller may modify. Kind is empty.
func Known(name string) (System, bool) {
	n := strings.ToLower(strings.TrimSpace(name))
	if a, ok := machineAliases[n]; ok {
		n = a
	}
	for i := range knownMachines {
		m := &knownMachines[i]
		if m.Machine == n || strings.EqualFold(m.Name, n) {
			return cloneSystem(*m), true
		}
	}
	return System{}, false
}

// KnownMachines returns deep copies of every known machine shape.
func KnownMachines() []System {
	out := make([]System, len(knownMachines))
	for i := range knownMachines {
		out[i] = cloneSystem(knownMachines[i])
	}
	return out
}

// KnownMachineNames lists the short names Known accepts (without aliases).
func KnownMachineNames() []string {
	out := make([]string, len(knownMachines))
	for i := range knownMachines {
		out[i] = knownMachines[i].Machine
	}
	return out
}
