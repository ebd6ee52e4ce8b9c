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

// TestOutputLocationAndRead: Output names the files Submit writes into the script;
// ReadOutput tails them with one command each and needs no job lookup; both missing
// is ErrNoOutput; anything but Mosaic's own output files is refused unread.
func TestOutputLocationAndRead(t *testing.T) {
	ctx := context.Background()
	files := map[string]string{"/scratch/u/mosaic/mosaic-t1-1.out": "hello\n"}
	p, f := newFake(t, site.System{Name: "X@Y", WorkDir: "/scratch/u"}, func(argv []string) (transport.Result, error) {
		if len(argv) == 6 && argv[0] == "sh" {
			if body, ok := files[argv[4]]; ok {
				return transport.Result{Stdout: []byte("6\n" + body)}, nil
			}
			return transport.Result{}, nil // [ -e ] failed: no output
		}
		return transport.Result{ExitCode: 1, Stderr: []byte("unexpected command")}, nil
	})
	out, err := p.Output(model.JobSpec{Tag: "mosaic-t1-1"}, "77")
	if err != nil || out.Stdout != "/scratch/u/mosaic/mosaic-t1-1.out" || out.Stderr != "/scratch/u/mosaic/mosaic-t1-1.err" || out.Host != "localhost" {
		t.Fatalf("output %+v %v", out, err)
	}
	l, err := p.ReadOutput(ctx, out, 100)
	if err != nil || l.Stdout != "hello\n" || l.Stderr != "" || l.StdoutPath != out.Stdout {
		t.Fatalf("read %+v %v", l, err)
	}
	for _, c := range f.calls {
		if c[0] != "sh" {
			t.Fatalf("ReadOutput ran %v: it must not ask the scheduler", c)
		}
	}
	gone := model.JobOutput{Stdout: "/scratch/u/mosaic/mosaic-t2-1.out", Stderr: "/scratch/u/mosaic/mosaic-t2-1.err"}
	if _, err := p.ReadOutput(ctx, gone, 100); !errors.Is(err, provider.ErrNoOutput) {
		t.Fatalf("both files missing: %v", err)
	}

	calls := len(f.calls)
	for _, c := range []struct {
		name string
		out  model.JobOutput
	}{
		{"token file", model.JobOutput{Stdout: "/home/u/.config/mosaic/token", Stderr: "/scratch/u/mosaic/mosaic-t1-1.err"}},
		{"ssh key", model.JobOutput{Stdout: "/scratch/u/mosaic/mosaic-t1-1.out", Stderr: "/home/u/.ssh/id_ed25519"}},
		{"relative", model.JobOutput{Stdout: "mosaic/mosaic-t1-1.out", Stderr: "mosaic/mosaic-t1-1.err"}},
		{"dot-dot", model.JobOutput{Stdout: "/scratch/u/mosaic/../mosaic-t1-1.out", Stderr: "/scratch/u/mosaic/mosaic-t1-1.err"}},
		{"swapped", model.JobOutput{Stdout: "/scratch/u/mosaic/mosaic-t1-1.err", Stderr: "/scratch/u/mosaic/mosaic-t1-1.out"}},
		{"newline", model.JobOutput{Stdout: "/scratch/u/mosaic/mosaic-t1\n-1.out", Stderr: "/scratch/u/mosaic/mosaic-t1-1.err"}},
		{"empty", model.JobOutput{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := p.ReadOutput(ctx, c.out, 100); err == nil || !strings.Contains(err.Error(), "is not a Mosaic job output file") {
				t.Fatalf("want a refusal: %v", err)
			}
		})
	}
	if len(f.calls) != calls {
		t.Fatalf("a refused location reached the site: %v", f.calls[calls:])
	}
}
