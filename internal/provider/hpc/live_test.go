package hpc

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/provider"
	"github.com/mosaic-hpc/mosaic/internal/site"
	"github.com/mosaic-hpc/mosaic/internal/transport"
)

// TestLiveStatusAsksTheControllerNotAccounting: LiveStatus reads squeue and scontrol
// (the controller's view) and never sacct, although accounting works: a job sacct
// would still list PENDING just after its cancel shows CANCELLED here. Unknown ids are
// absent; a failing squeue is an error; PBS (no listing beside its qstat) is
// ErrUnsupported.
func TestLiveStatusAsksTheControllerNotAccounting(t *testing.T) {
	squeueOut := "5|mosaic-a-1|CANCELLED|None|0:00|N/A|2026-11-30T03:44:44|(null)|2026-11-30T03:44:41|cpu|u\n" +
		"6|mosaic-b-1|RUNNING|None|0:03|2026-11-30T03:44:42|2026-11-30T04:44:42|n1|2026-11-30T03:44:41|cpu|u\n"
	cases := []struct {
		name    string
		answer  func([]string) (transport.Result, error)
		want    map[string]model.JobState
		wantErr string
	}{
		{name: "cancelled and running", answer: func(argv []string) (transport.Result, error) {
			switch argv[0] {
			case "squeue":
				return transport.Result{Stdout: []byte(squeueOut)}, nil
			case "scontrol":
				return transport.Result{Stdout: []byte("JobId=5 JobName=mosaic-a-1 JobState=CANCELLED ExitCode=0:0\n")}, nil
			}
			return transport.Result{ExitCode: 127}, nil
		}, want: map[string]model.JobState{"5": model.JobCancelled, "6": model.JobRunning}},
		{name: "none known", answer: func(argv []string) (transport.Result, error) {
			if argv[0] == "squeue" {
				return transport.Result{ExitCode: 1, Stderr: []byte("slurm_load_jobs error: Invalid job id specified\n")}, nil
			}
			return transport.Result{}, nil
		}, want: map[string]model.JobState{}},
		{name: "squeue fails", answer: func(argv []string) (transport.Result, error) {
			if argv[0] == "squeue" {
				return transport.Result{ExitCode: 1, Stderr: []byte("squeue: error: slurm_receive_msg: Socket timed out\n")}, nil
			}
			return transport.Result{}, nil
		}, wantErr: "squeue failed"},
		{name: "malformed squeue line", answer: func(argv []string) (transport.Result, error) {
			if argv[0] == "squeue" {
				return transport.Result{Stdout: []byte("5|mosaic-a-1|CANCELLED\n")}, nil
			}
			return transport.Result{}, nil
		}, wantErr: "squeue line 1"},
		{name: "transport down", answer: func([]string) (transport.Result, error) {
			return transport.Result{}, errors.Join(errors.New("ssh: connection refused"), provider.ErrSiteDown)
		}, wantErr: "connection refused"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, f := newFake(t, site.System{Name: "X"}, c.answer)
			got, err := p.LiveStatus(context.Background(), []string{"5", "6", "7"})
			for _, call := range f.calls {
				if call[0] == "sacct" {
					t.Fatalf("LiveStatus asked accounting: %q", call)
				}
			}
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err %v, want one containing %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(c.want) {
				t.Fatalf("%d jobs %+v, want %v", len(got), got, c.want)
			}
			for id, s := range c.want {
				if got[id].State != s {
					t.Errorf("job %s: %s, want %s", id, got[id].State, s)
				}
			}
		})
	}
	p, f := newFake(t, site.System{Name: "P", Dialect: site.DialectPBS}, func([]string) (transport.Result, error) { return transport.Result{}, nil })
	if _, err := p.LiveStatus(context.Background(), []string{"1.pbs"}); !errors.Is(err, provider.ErrUnsupported) || len(f.calls) != 0 {
		t.Fatalf("PBS: %v after %d calls, want ErrUnsupported and no call", err, len(f.calls))
	}
}
