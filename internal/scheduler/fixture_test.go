package scheduler

import (
	"fmt"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

var fixedNow = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func hours(h float64) model.Duration { return model.Duration(time.Duration(h * float64(time.Hour))) }

// gpuRec and cpuRec build records shaped like the six machines in
// /work/shared/notes/machines.md (public docs, 2026-11-30).
func gpuRec(system, part, acct, arch, gpu string, gpn, gmem, cores, memGB, nodes, freeGPUs, pending int, capH float64, excl bool, cf float64) model.ResourceRecord {
	idle := freeGPUs / max(gpn, 1)
	return model.ResourceRecord{
		Timestamp: fixedNow, Provider: "sim", Endpoint: "sim://" + system, System: system, Partition: part, Account: acct, Arch: arch,
		CPUCoresPerNode: cores, MemoryPerNodeGB: memGB, GPUModel: gpu, GPUsPerNode: gpn, GPUMemoryGB: gmem,
		Nodes:     model.NodeCounts{Idle: idle, Mixed: 0, Allocated: nodes - idle, Total: nodes},
		TotalGPUs: gpn * nodes, FreeGPUs: freeGPUs, TotalCores: cores * nodes, FreeCores: cores * idle,
		RunningJobs: nodes, PendingJobs: pending, WalltimeCap: hours(capH), MaxNodesPerJob: 0,
		Exclusive: excl, ChargeFactor: cf, ContainerRuntimes: []string{"apptainer"}, Health: model.HealthOK,
	}
}

func cpuRec(system, part, acct string, cores, memGB, nodes, idle, pending int, capH float64, excl bool, cf float64) model.ResourceRecord {
	return model.ResourceRecord{
		Timestamp: fixedNow, Provider: "sim", Endpoint: "sim://" + system, System: system, Partition: part, Account: acct, Arch: "x86_64",
		CPUCoresPerNode: cores, MemoryPerNodeGB: memGB,
		Nodes:      model.NodeCounts{Idle: idle, Allocated: nodes - idle, Total: nodes},
		TotalCores: cores * nodes, FreeCores: cores * idle, RunningJobs: nodes, PendingJobs: pending,
		WalltimeCap: hours(capH), Exclusive: excl, ChargeFactor: cf, ContainerRuntimes: []string{"apptainer"}, Health: model.HealthOK,
	}
}

// sixMachines is a fixed snapshot resembling Delta, DeltaAI, Anvil, Vista, Frontera and
// Lonestar6.
func sixMachines() *model.ResourceSnapshot {
	recs := []model.ResourceRecord{
		cpuRec("Delta@NCSA", "cpu", "bbka-delta-cpu", 128, 256, 132, 20, 40, 48, false, 1),
		gpuRec("Delta@NCSA", "gpuA100x4", "bbka-delta-gpu", "x86_64", "A100", 4, 40, 64, 256, 100, 6, 35, 48, false, 1),
		gpuRec("Delta@NCSA", "gpuA100x4-interactive", "bbka-delta-gpu", "x86_64", "A100", 4, 40, 64, 256, 100, 6, 2, 1, false, 2),
		gpuRec("Delta@NCSA", "gpuA40x4", "bbka-delta-gpu", "x86_64", "A40", 4, 48, 64, 256, 100, 40, 5, 48, false, 0.5),
		gpuRec("Delta@NCSA", "gpuMI100x8", "bbka-delta-gpu", "x86_64", "MI100", 8, 32, 128, 2048, 1, 8, 0, 48, false, 0.25),
		gpuRec("DeltaAI@NCSA", "ghx4", "bbka-dtai-gh", "aarch64", "H100", 4, 96, 288, 480, 114, 12, 60, 48, false, 1),
		cpuRec("Anvil@RCAC", "shared", "x-cis230001", 128, 256, 1000, 100, 300, 96, false, 1),
		gpuRec("Anvil@RCAC", "gpu", "x-cis230001-gpu", "x86_64", "A100", 4, 40, 128, 512, 16, 2, 12, 48, false, 1),
		gpuRec("Anvil@RCAC", "ai", "x-cis230001-ai", "x86_64", "H100", 4, 80, 96, 1024, 21, 16, 4, 48, false, 1),
		gpuRec("Vista@TACC", "gh", "CCR24001", "aarch64", "H100", 1, 96, 72, 116, 600, 40, 80, 48, true, 1),
		gpuRec("Frontera@TACC", "rtx", "CCR24001", "x86_64", "RTX5000", 4, 16, 16, 128, 90, 20, 3, 48, true, 3),
		cpuRec("Frontera@TACC", "normal", "CCR24001", 56, 192, 8368, 300, 900, 48, true, 1),
		gpuRec("Lonestar6@TACC", "gpu-a100", "CCR24001", "x86_64", "A100", 3, 40, 128, 256, 84, 12, 20, 48, true, 4),
		gpuRec("Lonestar6@TACC", "gpu-a100-dev", "CCR24001", "x86_64", "A100", 3, 40, 128, 256, 2, 3, 0, 2, true, 4),
		gpuRec("Lonestar6@TACC", "gpu-h100", "CCR24001", "x86_64", "H100", 2, 80, 96, 384, 4, 0, 6, 48, true, 6),
	}
	recs[12].MaxNodesPerJob, recs[12].MaxRunningPerUser, recs[12].MaxSubmitPerUser = 8, 8, 12
	recs[13].MaxNodesPerJob = 2
	recs[14].MaxNodesPerJob = 1
	recs[9].MaxNodesPerJob, recs[9].MaxRunningPerUser, recs[9].MaxSubmitPerUser = 64, 20, 40
	recs[10].MaxNodesPerJob = 16
	recs[8].Features = []string{"nvlink"}
	model.SortRecords(recs)
	snap := &model.ResourceSnapshot{TakenAt: fixedNow, Seq: 42, Records: recs}
	for _, s := range []string{"Anvil@RCAC", "Delta@NCSA", "DeltaAI@NCSA", "Frontera@TACC", "Lonestar6@TACC", "Vista@TACC"} {
		snap.Systems = append(snap.Systems, model.SystemHealth{System: s, Provider: "sim", Health: model.HealthOK, LastProbe: fixedNow, LastSuccess: fixedNow})
	}
	return snap
}

// a100Task asks for 1-4 A100 40 GB for 4-8 hours.
func a100Task() *model.Task {
	return &model.Task{
		ID: "t-a100", Name: "finetune-7b", Command: "python train.py",
		Envelope: model.Envelope{
			GPUs: model.IntRange{Min: 1, Max: 4}, CPUCores: model.IntRange{Min: 8, Max: 64},
			MemoryGB: model.IntRange{Min: 64, Max: 200}, Walltime: model.DurationRange{Min: hours(4), Max: hours(8)},
			Constraints: model.Constraints{GPUModels: []string{"A100"}, MinGPUMemoryGB: 40},
		},
	}
}

// bigSnapshot replicates the six-machine records into n partitions with varied load.
func bigSnapshot(n int) *model.ResourceSnapshot {
	base := sixMachines()
	snap := &model.ResourceSnapshot{TakenAt: base.TakenAt, Seq: 1, Systems: base.Systems}
	for i := 0; len(snap.Records) < n; i++ {
		for _, r := range base.Records {
			if len(snap.Records) == n {
				break
			}
			r.Partition = fmt.Sprintf("%s-%03d", r.Partition, i)
			if r.TotalGPUs > 0 {
				r.FreeGPUs = (i * 7) % (r.TotalGPUs + 1)
			}
			r.PendingJobs = (i * 13) % 97
			snap.Records = append(snap.Records, r)
		}
	}
	return snap
}
