package pbs

import (
	"strings"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/dialect"
)

func TestParseQueuedStart(t *testing.T) {
	p := &PBS{Loc: time.UTC}
	doc := func(state, est string) string {
		e := ""
		if est != "" {
			e = `,"estimated":{"exec_vnode":"(vm:ncpus=1)","start_time":"` + est + `"}`
		}
		return `{"timestamp":1,"pbs_version":"2022.1.1","pbs_server":"vm","Jobs":{"42.vm":{"Job_Name":"mosaic-t-1","job_state":"` + state + `"` + e + `}}}`
	}
	for _, c := range []struct {
		name, out string
		exit      int
		want      time.Time
		err       string
	}{
		{name: "planned", out: doc("Q", "Tue Dec  1 15:04:05 2026"), want: time.Date(2026, 12, 1, 15, 4, 5, 0, time.UTC)},
		{name: "not planned", out: doc("Q", "")},
		{name: "running", out: doc("R", "Tue Dec  1 15:04:05 2026")},
		{name: "qstat failed", exit: 153, out: "", err: "failed"},
		{name: "empty", out: "", err: "empty output"},
		{name: "not json", out: "Job Id: 42.vm\n", err: "JSON"},
		{name: "no jobs", out: `{"Jobs":{}}`, err: "no job"},
		{name: "another job", out: strings.Replace(doc("Q", ""), "42.vm", "43.vm", 1), err: "another job"},
		{name: "bad time", out: doc("Q", "tomorrow"), err: "not a time"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := p.ParseQueuedStart("42.vm", dialect.Output{Stdout: []byte(c.out), Stderr: []byte("qstat: Unknown Job Id 42.vm"), ExitCode: c.exit})
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err %v, want one containing %q", err, c.err)
				}
				return
			}
			if err != nil || !got.Equal(c.want) {
				t.Fatalf("%v, %v; want %v", got, err, c.want)
			}
		})
	}
}

func FuzzParseQueuedStart(f *testing.F) {
	f.Add([]byte(`{"Jobs":{"42.vm":{"job_state":"Q","estimated":{"start_time":"Tue Dec  1 15:04:05 2026"}}}}`))
	f.Add([]byte(`{"Jobs":{}}`))
	f.Add([]byte("{"))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := (&PBS{Loc: time.UTC}).ParseQueuedStart("42.vm", dialect.Output{Stdout: b})
		if err != nil && !got.IsZero() {
			t.Fatalf("an error with a time: %v %v", got, err)
		}
	})
}
