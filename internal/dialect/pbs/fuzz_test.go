package pbs

import (
	"path/filepath"
	"testing"
)

func seedAll(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.json")
	q, _ := filepath.Glob("testdata/quirks/*.json")
	for _, p := range append(files, q...) {
		f.Add(fixture(f, p[len("testdata/"):]))
	}
	f.Add([]byte(`{"Jobs":{"1.x":{"job_state":"F","Exit_status":"x"}}}`))
}

func FuzzParseJobs(f *testing.F) {
	seedAll(f)
	f.Fuzz(func(t *testing.T, b []byte) { _, _ = utc.ParseJobs(b) })
}

func FuzzParseQueues(f *testing.F) {
	seedAll(f)
	f.Fuzz(func(t *testing.T, b []byte) { _, _ = ParseQueues(b) })
}

func FuzzParseNodes(f *testing.F) {
	seedAll(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		ns, err := ParseNodes(b)
		if err == nil {
			for _, r := range QueueRecords([]Queue{{Name: "q", Type: "Execution", Enabled: true, Started: true}}, ns) {
				if r.FreeCores < 0 || r.FreeGPUs < 0 {
					t.Fatalf("negative free: %+v", r)
				}
			}
		}
	})
}

func FuzzRepair(f *testing.F) {
	seedAll(f)
	f.Fuzz(func(t *testing.T, b []byte) { _ = Repair(b) })
}
