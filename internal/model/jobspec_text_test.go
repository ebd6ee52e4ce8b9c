package model

import (
	"testing"
	"time"
)

func TestJobSpecSize(t *testing.T) {
	h := Duration(time.Hour)
	for _, c := range []struct {
		spec          JobSpec
		long, compact string
	}{
		{JobSpec{Nodes: 1, NTasks: 1, CPUsPerTask: 16, GPUs: 2, MemoryGB: 64, Walltime: 2 * h}, "1 node, 2 GPUs, 16 cores, 64 GB/node, 2h", "1n 2g 16c 02:00:00"},
		{JobSpec{Nodes: 2, NTasks: 2, CPUsPerTask: 64, GPUs: 8, GPUModel: "A100", MemoryGB: 256, Walltime: 12 * h}, "2 nodes, 8× A100, 128 cores, 256 GB/node, 12h", "2n 8g 128c 12:00:00"},
		{JobSpec{Nodes: 1, NTasks: 1, CPUsPerTask: 128, Walltime: h}, "1 node, 128 cores, 1h", "1n 128c 01:00:00"},
		{JobSpec{Nodes: 1, GPUs: 1, Walltime: Duration(90 * time.Minute)}, "1 node, 1 GPU, 1 core, 1h30m", "1n 1g 1c 01:30:00"},
	} {
		if got := c.spec.Size(); got != c.long {
			t.Errorf("Size() = %q, want %q", got, c.long)
		}
		if got := c.spec.SizeCompact(); got != c.compact {
			t.Errorf("SizeCompact() = %q, want %q", got, c.compact)
		}
	}
}
