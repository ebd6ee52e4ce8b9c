package core

import (
	"strings"
	"testing"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

func idleRec(sys, part, gpu string, gmem int, arch string, freeGPUs, pending int, h model.Health) model.ResourceRecord {
	r := model.ResourceRecord{System: sys, Partition: part, Arch: arch, Health: h, PendingJobs: pending, Provider: "sim",
		TotalCores: 64, FreeCores: 8}
	if gpu != "" {
		r.GPUModel, r.GPUMemoryGB, r.GPUsPerNode, r.TotalGPUs, r.FreeGPUs = gpu, gmem, 4, 16, freeGPUs
	}
	return r
}

// TestIdleExplainsEmptyResult: when nothing is idle, the explanation names the filter
// that removed the last partitions — a model the federation lacks is not "try fewer
// GPUs".
func TestIdleExplainsEmptyResult(t *testing.T) {
	ok := model.HealthOK
	recs := []model.ResourceRecord{
		idleRec("A@x", "a100", "A100", 40, "x86_64", 4, 2, ok),
		idleRec("A@x", "h100", "H100", 80, "x86_64", 0, 5, ok),
		idleRec("B@x", "h100", "H100", 80, "x86_64", 0, 1, ok),
		idleRec("C@x", "h100", "H100", 80, "x86_64", 0, 9, ok),
		idleRec("D@x", "mi", "MI250X", 128, "x86_64", 2, 0, model.HealthDown),
		idleRec("E@x", "gh", "H100", 96, "aarch64", 3, 0, ok),
		idleRec("F@x", "cpu", "", 0, "x86_64", 0, 0, ok),
	}
	c := &Core{}
	cases := []struct {
		f    IdleFilter
		want string // substring; "" = something matches
	}{
		{IdleFilter{GPUModel: "B200", MaxQueue: -1}, "no partition in the federation has B200 GPUs (models here: A100, H100, MI250X)"},
		{IdleFilter{GPUModel: "A100-80GB", MaxQueue: -1}, "no partition in the federation has A100-80GB GPUs"},
		{IdleFilter{GPUModel: "H100", Arch: "x86_64", GPUs: 1, MaxQueue: -1}, "all 3 H100 partitions are busy: 0 idle GPUs"},
		{IdleFilter{GPUModel: "A100", GPUs: 8, MaxQueue: -1}, "the 1 A100 partition has at most 4 idle GPUs in one partition; you asked for 8"},
		{IdleFilter{GPUModel: "MI250X", MaxQueue: -1}, "down or unreachable"},
		{IdleFilter{GPUModel: "H100", Arch: "aarch64", MaxQueue: -1}, ""},
		{IdleFilter{GPUModel: "GH200", MaxQueue: -1}, ""},
		{IdleFilter{GPUModel: "GH200", Arch: "x86_64", MaxQueue: -1}, "none of the 1 GH200 partition is x86_64 (archs here: aarch64)"},
		{IdleFilter{GPUMemGB: 200, MaxQueue: -1}, "the most is 128 GB per GPU"},
		{IdleFilter{GPUModel: "H100", Arch: "x86_64", MaxQueue: 0}, "more than 0 pending jobs (the shortest queue has 1)"},
		{IdleFilter{Provider: "globus", MaxQueue: -1}, `no partition is reached through provider "globus"`},
		{IdleFilter{Cores: 100, MaxQueue: -1}, "at most 8 idle cores"},
	}
	for _, tc := range cases {
		got, why := c.idleFilter(tc.f, recs)
		if tc.want == "" {
			if len(got) == 0 || why != "" {
				t.Errorf("%+v: %d records, explanation %q; want matches", tc.f, len(got), why)
			}
			continue
		}
		if len(got) != 0 || !strings.Contains(why, tc.want) {
			t.Errorf("%+v: %d records, explanation %q; want %q", tc.f, len(got), why, tc.want)
		}
		if strings.Contains(tc.want, "has B200") && strings.Contains(why, "fewer GPUs") {
			t.Errorf("missing model explained as too many GPUs: %q", why)
		}
	}
	if _, why := c.idleFilter(IdleFilter{MaxQueue: -1}, nil); !strings.Contains(why, "no partitions yet") {
		t.Errorf("empty federation: %q", why)
	}
}
