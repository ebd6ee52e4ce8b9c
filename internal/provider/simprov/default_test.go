package simprov

import (
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/site"
)

// TestDefaultFederation builds every system of the embedded default catalog and
// checks that each probes with records for all its partitions, some of them busy.
func TestDefaultFederation(t *testing.T) {
	cat := site.Default()
	clk := newFakeClock()
	for _, sys := range cat.Systems {
		if sys.Kind != site.KindSim {
			continue
		}
		start := time.Now()
		p := newProvider(t, sys, Options{Clock: clk.Now})
		built := time.Since(start)
		recs, err := p.Probe(ctx)
		if err != nil {
			t.Fatalf("%s: %v", sys.Name, err)
		}
		busy, pending := 0, 0
		for _, r := range recs {
			if r.Nodes.Total == 0 || r.TotalCores == 0 || r.Account == "" || r.Health == "" {
				t.Errorf("%s/%s: incomplete record %+v", sys.Name, r.Partition, r)
			}
			if r.BusyFraction() > 0 {
				busy++
			}
			pending += r.PendingJobs
		}
		t.Logf("%s: %d records, %d busy, %d pending, built in %s", sys.Name, len(recs), busy, pending, built)
		if busy == 0 {
			t.Errorf("%s: nothing busy after warm-up", sys.Name)
		}
	}
}
