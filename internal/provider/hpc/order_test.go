package hpc

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/site"
	"github.com/mosaic-hpc/mosaic/internal/transport"
)

func TestOrderNice(t *testing.T) {
	gpu := func(gpus int, wall time.Duration) model.JobSpec {
		return model.JobSpec{Nodes: 1, NTasks: 1, CPUsPerTask: 2 * max(gpus, 1), GPUs: gpus, Walltime: model.Duration(wall)}
	}
	cores := func(tasks, per int, wall time.Duration) model.JobSpec {
		return model.JobSpec{Nodes: 1, NTasks: tasks, CPUsPerTask: per, Walltime: model.Duration(wall)}
	}
	for _, tc := range []struct {
		name  string
		order string
		step  int
		spec  model.JobSpec
		want  int
	}{
		{"submission order: none", site.OrderSubmission, 0, gpu(4, time.Hour), 0},
		{"no order given: none", "", 0, gpu(4, time.Hour), 0},
		{"one GPU-minute: none", site.OrderSmallestFirst, 0, gpu(1, time.Minute), 0},
		{"two GPU-minutes: one step", site.OrderSmallestFirst, 0, gpu(1, 2*time.Minute), site.DefaultOrderNiceStep},
		{"the same size either way", site.OrderSmallestFirst, 0, gpu(2, time.Minute), site.DefaultOrderNiceStep},
		{"eight GPU-minutes: three steps", site.OrderSmallestFirst, 0, gpu(4, 2*time.Minute), 3 * site.DefaultOrderNiceStep},
		{"case does not matter", "Smallest-First", 0, gpu(4, 2*time.Minute), 3 * site.DefaultOrderNiceStep},
		{"no GPUs: core-minutes", site.OrderSmallestFirst, 0, cores(4, 4, time.Minute), 4 * site.DefaultOrderNiceStep},
		{"below one unit: none", site.OrderSmallestFirst, 0, gpu(1, 30*time.Second), 0},
		{"2^40 core-minutes: 40 steps", site.OrderSmallestFirst, 0, cores(1<<20, 1<<10, 1<<10*time.Minute), 40 * site.DefaultOrderNiceStep},
		{"a step of 4: 4 per doubling", site.OrderSmallestFirst, 4, gpu(4, 2*time.Minute), 12},
		{"a step of 1", site.OrderSmallestFirst, 1, gpu(4, 2*time.Minute), 3},
		{"a step of 5, rounded", site.OrderSmallestFirst, 5, gpu(3, time.Minute), 8}, // 5·log2(3) = 7.92
		{"a step without the order: none", site.OrderSubmission, 4, gpu(4, time.Hour), 0},
		{"a negative step: the default", site.OrderSmallestFirst, -3, gpu(1, 2*time.Minute), site.DefaultOrderNiceStep},
		{"the largest step is capped", site.OrderSmallestFirst, site.MaxOrderNiceStep, cores(1<<20, 1<<10, 1<<10*time.Minute), model.MaxNice},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := orderNice(tc.order, tc.step, tc.spec); got != tc.want {
				t.Errorf("nice %d, want %d", got, tc.want)
			}
		})
	}
	// Larger never gets a smaller nice.
	prev := 0
	for g := 1; g <= 64; g++ {
		n := orderNice(site.OrderSmallestFirst, 0, gpu(g, 10*time.Minute))
		if n < prev {
			t.Fatalf("%d GPUs: nice %d below %d GPUs' %d", g, n, g-1, prev)
		}
		prev = n
	}
}

// TestSubmitSmallestFirstNices: a site ordering smallest first submits a job with the
// nice of its size, and one in submission order without; a spec's own nice (it has no
// wire form, but a caller could set one) is replaced by the site's; the site's
// order_nice_step sets the step.
func TestSubmitSmallestFirstNices(t *testing.T) {
	for _, tc := range []struct {
		order string
		step  int
		want  string
	}{
		{site.OrderSmallestFirst, 0, "#SBATCH --nice=64\n"},
		{site.OrderSmallestFirst, 8, "#SBATCH --nice=16\n"},
		{site.OrderSubmission, 0, ""},
	} {
		sys := site.System{Name: "X", WorkDir: "/scratch/alice", OrderOwnJobs: tc.order, OrderNiceStep: tc.step}
		p, f := newFake(t, sys, func(argv []string) (transport.Result, error) {
			if argv[0] == "sbatch" {
				return transport.Result{Stdout: []byte("4242\n")}, nil
			}
			return transport.Result{}, nil
		})
		sp := model.JobSpec{Tag: "mosaic-t9-1", Partition: "gpu", Nodes: 1, GPUs: 2, Walltime: model.Duration(2 * time.Minute),
			Command: "true", Nice: 7}
		if _, err := p.Submit(context.Background(), sp); err != nil {
			t.Fatal(err)
		}
		got := f.stdins[0]
		if tc.want == "" {
			if strings.Contains(got, "--nice") {
				t.Errorf("%s: the script has a nice:\n%s", tc.order, got)
			}
		} else if !strings.Contains(got, tc.want) {
			t.Errorf("%s: the script lacks %q:\n%s", tc.order, tc.want, got)
		}
	}
}
