package simprov

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/provider"
	"github.com/mosaic-hpc/mosaic/internal/site"
)

// TestOutputReadableAfterRestart: the output location of a finished job, recorded
// from the provider that ran it, is read by a new provider on the same work directory
// (a restarted core), through ReadOutput and through Logs by job id. Before the
// change the new provider answered "unknown job".
func TestOutputReadableAfterRestart(t *testing.T) {
	wd := t.TempDir()
	p1 := newProvider(t, testSystem(), Options{WorkDir: wd, Speed: 60, Tick: 20 * time.Millisecond, Configure: noLoad})
	p1.Start()
	id := submit(t, p1, spec("cpu", "echo out-before-restart; echo err-before-restart >&2", 10*time.Minute))
	if st := waitFinal(t, p1, id); st.State != model.JobSucceeded {
		t.Fatalf("status %+v", st)
	}
	out, err := p1.Output(model.JobSpec{}, id)
	if err != nil || out.Host != "localhost" || !strings.HasPrefix(out.Stdout, wd) {
		t.Fatalf("output location %+v %v", out, err)
	}
	if err := p1.Close(); err != nil {
		t.Fatal(err)
	}

	p2 := newProvider(t, testSystem(), Options{WorkDir: wd, Speed: 60, Configure: noLoad})
	l, err := p2.ReadOutput(ctx, out, 0)
	if err != nil || l.Stdout != "out-before-restart\n" || l.Stderr != "err-before-restart\n" {
		t.Fatalf("ReadOutput after restart: %+v %v", l, err)
	}
	if l, err := p2.Logs(ctx, id, 0); err != nil || l.Stdout != "out-before-restart\n" {
		t.Fatalf("Logs after restart: %+v %v", l, err)
	}

	// Files gone (a cleanup): ErrNoOutput, still naming the paths.
	if err := os.RemoveAll(filepath.Dir(out.Stdout)); err != nil {
		t.Fatal(err)
	}
	if l, err := p2.ReadOutput(ctx, out, 0); !errors.Is(err, provider.ErrNoOutput) || l.StdoutPath != out.Stdout {
		t.Fatalf("gone files: %+v %v", l, err)
	}
}

// TestReadOutputRefusesOtherFiles: a location that is not a job's stdout/stderr file
// is refused before anything is read.
func TestReadOutputRefusesOtherFiles(t *testing.T) {
	p := newProvider(t, testSystem(), Options{Configure: noLoad})
	secret := filepath.Join(t.TempDir(), "token")
	os.WriteFile(secret, []byte("s3cret"), 0o600)
	for _, c := range []struct {
		name string
		out  model.JobOutput
	}{
		{"other file", model.JobOutput{Stdout: secret, Stderr: "/x/stderr"}},
		{"relative", model.JobOutput{Stdout: "1/stdout", Stderr: "1/stderr"}},
		{"dot-dot", model.JobOutput{Stdout: "/x/1/../stdout", Stderr: "/x/1/stderr"}},
		{"swapped", model.JobOutput{Stdout: "/x/1/stderr", Stderr: "/x/1/stdout"}},
		{"empty", model.JobOutput{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			l, err := p.ReadOutput(ctx, c.out, 0)
			if err == nil || !strings.Contains(err.Error(), "is not a simulated job's") || strings.Contains(l.Stdout, "s3cret") {
				t.Fatalf("want a refusal, got %+v %v", l, err)
			}
		})
	}
}

// TestReadOutputDuringOutage: like a real site, the output cannot be read while the
// simulated system is down; the error says so (provider.ErrSiteDown).
func TestReadOutputDuringOutage(t *testing.T) {
	clk := newFakeClock()
	sys := testSystem()
	sys.SimConfig = &site.SimSystem{Faults: site.Faults{Outages: []site.Window{{Start: hours(1), Duration: hours(1)}}}}
	p := newProvider(t, sys, Options{Clock: clk.Now, Speed: 60, Configure: noLoad})
	out, _ := p.Output(model.JobSpec{}, "1234")
	if _, err := p.ReadOutput(ctx, out, 0); !errors.Is(err, provider.ErrNoOutput) {
		t.Fatalf("before the outage: %v", err)
	}
	clk.Add(90 * time.Second) // 90 simulated minutes at 60x: inside the outage
	if _, err := p.ReadOutput(ctx, out, 0); !errors.Is(err, provider.ErrSiteDown) {
		t.Fatalf("during the outage: %v", err)
	}
}
