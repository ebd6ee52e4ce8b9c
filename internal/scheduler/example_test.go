package scheduler_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/scheduler"
	"github.com/mosaic-hpc/mosaic/internal/scheduler/llm"
)

func ExampleScheduler_Place() {
	// An LLM ranker when the environment configures one, heuristics otherwise.
	client, _ := llm.FromEnv(func(string) string { return "" }) // os.Getenv in production
	s := scheduler.New(scheduler.Options{LLM: scheduler.NewLLMRanker(client)})

	snap := &model.ResourceSnapshot{
		TakenAt: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC),
		Systems: []model.SystemHealth{{System: "Delta@NCSA", Health: model.HealthOK}},
		Records: []model.ResourceRecord{
			{System: "Delta@NCSA", Partition: "cpu", Account: "bbka-delta-cpu", Arch: "x86_64",
				CPUCoresPerNode: 128, MemoryPerNodeGB: 256, Nodes: model.NodeCounts{Idle: 10, Total: 132},
				TotalCores: 16896, FreeCores: 1280, WalltimeCap: model.Duration(48 * time.Hour), Health: model.HealthOK},
			{System: "Delta@NCSA", Partition: "gpuA100x4", Account: "bbka-delta-gpu", Arch: "x86_64",
				CPUCoresPerNode: 64, MemoryPerNodeGB: 256, GPUModel: "A100", GPUsPerNode: 4, GPUMemoryGB: 40,
				Nodes: model.NodeCounts{Idle: 1, Total: 100}, TotalGPUs: 400, FreeGPUs: 4,
				WalltimeCap: model.Duration(48 * time.Hour), Health: model.HealthOK},
		},
	}
	task := &model.Task{ID: "t1", Name: "train", Command: "python train.py", Envelope: model.Envelope{
		GPUs:     model.IntRange{Min: 1, Max: 4},
		Walltime: model.DurationRange{Min: model.Duration(2 * time.Hour)},
	}}
	d, err := s.Place(context.Background(), task, snap, scheduler.PlaceOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(s.ActiveRanker(), d.Mode, d.Chosen, d.Spec.GPUs, d.Spec.Walltime.Slurm())
	_ = d.Table(os.Stdout) // the `mosaic submit --dry-run` view
	// Output:
	// heuristic auto Delta@NCSA/gpuA100x4/bbka-delta-gpu 4 02:00:00
	// RANK  SYSTEM      PARTITION  ACCOUNT         OK   NODES  GPUS    CPUS/N  MEM/N  TIME      EST_WAIT   SCORE  AI  REASON
	// 1     Delta@NCSA  gpuA100x4  bbka-delta-gpu  yes  1      4xA100  64      256G   02:00:00  0s(queue)  1.000  -   largest size fitting the idle GPUs
	// -     Delta@NCSA  cpu        bbka-delta-cpu  no   -      -       -       -      -         -          -      -   accelerator: no GPUs on this partition; the task needs at least 1
	//
	// mode: auto   objective: earliest_start   ranker: heuristic
	// chosen: Delta@NCSA/gpuA100x4/bbka-delta-gpu
	// rationale: Delta@NCSA/gpuA100x4/bbka-delta-gpu: 1 node, 4× A100, 64 cores, 256 GB/node, 2h; estimated wait 0s (queue), 8.0 SU, score 1.000. Best of 1 feasible among 2 candidates for earliest_start by heuristic ranking.
}
