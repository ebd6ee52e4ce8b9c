package simprov

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/provider"
	"github.com/mosaic-hpc/mosaic/internal/site"
)

var _ provider.BatchEstimator = (*Provider)(nil)

// A batch answers each spec as EstimateStart does, refusals per spec.
func TestEstimateStartsBatch(t *testing.T) {
	clk := newFakeClock()
	p := newProvider(t, testSystem(), Options{Clock: clk.Now, Configure: noLoad})
	for range 4 {
		submit(t, p, spec("cpu", "sleep 5", time.Hour))
	}
	bad := spec("cpu", "true", time.Hour)
	bad.Account = "other"
	specs := []model.JobSpec{spec("cpu", "true", time.Hour), spec("gpu", "true", time.Hour), bad, {Tag: "x"}}
	got, err := p.EstimateStarts(ctx, specs)
	if err != nil || len(got) != len(specs) {
		t.Fatalf("batch: %v %v", got, err)
	}
	for i, s := range specs[:2] {
		want, err := p.EstimateStart(ctx, s)
		if err != nil || got[i].Err != nil || !got[i].Start.Equal(want) {
			t.Errorf("spec %d: batch %v %v, single %v %v", i, got[i].Start, got[i].Err, want, err)
		}
	}
	if !got[0].Start.After(clk.Now()) {
		t.Errorf("the full cpu partition starts a new job at %v, want later than now", got[0].Start)
	}
	if got[2].Err == nil || !strings.Contains(got[2].Err.Error(), "Invalid account") {
		t.Errorf("refused spec: %v", got[2].Err)
	}
	if got[3].Err == nil {
		t.Error("invalid spec has no error")
	}
	if got, err := p.EstimateStarts(ctx, nil); err != nil || len(got) != 0 {
		t.Errorf("empty batch: %v %v", got, err)
	}
}

func TestEstimateStartsOutageFailsTheBatch(t *testing.T) {
	sys := testSystem()
	sys.SimConfig = &site.SimSystem{Faults: site.Faults{Outages: []site.Window{{Start: 0, Duration: hours(1)}}}}
	p := newProvider(t, sys, Options{Configure: noLoad})
	if _, err := p.EstimateStarts(ctx, []model.JobSpec{spec("cpu", "true", time.Hour)}); !errors.Is(err, provider.ErrSiteDown) {
		t.Fatalf("batch during an outage: %v, want ErrSiteDown", err)
	}
}
