package slurm

import (
	"strings"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/dialect"
)

func TestParseQueuedStart(t *testing.T) {
	p := &Slurm{Loc: time.UTC}
	for _, c := range []struct {
		name, out string
		exit      int
		want      time.Time
		err       string
	}{
		{name: "planned", out: "2026-12-01T15:04:05\n", want: time.Date(2026, 12, 1, 15, 4, 5, 0, time.UTC)},
		{name: "not planned yet", out: "N/A\n"},
		{name: "no longer pending", out: ""},
		{name: "blank lines", out: "\n  \n"},
		{name: "invalid id", exit: 1, out: "", err: "failed"},
		{name: "garbage", out: "soon\n", err: "not a start time"},
		{name: "date only", out: "2026-12-01\n", err: "not a start time"},
		{name: "two lines", out: "2026-12-01T15:04:05\n2026-12-01T16:04:05\n", err: "2 lines"},
		{name: "binary", out: "\x00\xff", err: "not a start time"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := p.ParseQueuedStart("42", dialect.Output{Stdout: []byte(c.out), Stderr: []byte("squeue: error: Invalid job id specified"), ExitCode: c.exit})
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
	if argv := strings.Join(p.QueuedStartCommand("42"), " "); argv != "squeue --start -h -o %S -j 42" {
		t.Fatalf("command %q", argv)
	}
}

func FuzzParseQueuedStart(f *testing.F) {
	f.Add([]byte("2026-12-01T15:04:05\n"), 0)
	f.Add([]byte("N/A"), 0)
	f.Add([]byte(""), 1)
	f.Fuzz(func(t *testing.T, b []byte, exit int) {
		got, err := (&Slurm{Loc: time.UTC}).ParseQueuedStart("1", dialect.Output{Stdout: b, ExitCode: exit})
		if err != nil && !got.IsZero() {
			t.Fatalf("an error with a time: %v %v", got, err)
		}
	})
}
