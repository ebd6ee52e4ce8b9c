package hpc

import (
	"strings"
	"testing"
)

const bnd = "mosaic-estimate-0123456789abcdef0123456789abcdef"

func TestParseEstimateBatch(t *testing.T) {
	ok := "Last login: yesterday\n" +
		bnd + " /w/mosaic/a.sbatch\nsbatch: Job 4 to start at 2026-11-30T02:13:55 using 64 processors on nodes n1 in partition gpu\n" + bnd + " rc=0\n" +
		bnd + " /w/mosaic/b.sbatch\nsbatch: error: Requested node configuration is not available\n" + bnd + " rc=1\n" +
		bnd + " /w/mosaic/c.sbatch\n" + bnd + " rc=0"
	got, err := parseEstimateBatch([]byte(ok), bnd)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || !strings.Contains(string(got["/w/mosaic/a.sbatch"].out), "Job 4 to start") || got["/w/mosaic/a.sbatch"].rc != 0 ||
		got["/w/mosaic/b.sbatch"].rc != 1 || !strings.Contains(string(got["/w/mosaic/b.sbatch"].out), "node configuration") ||
		len(got["/w/mosaic/c.sbatch"].out) != 0 {
		t.Errorf("blocks %+v", got)
	}
	for _, tc := range []struct{ name, out, want string }{
		{"cut short", bnd + " /a\nsbatch: Job 4 to start", "no status line (cut short)"},
		{"no trailer before next header", bnd + " /a\n" + bnd + " /b\n" + bnd + " rc=0\n", "output of /a has no status line"},
		{"trailer without header", bnd + " rc=0\n", "without its script"},
		{"bad status", bnd + " /a\n" + bnd + " rc=x\n", `bad exit status "x"`},
		{"negative status", bnd + " /a\n" + bnd + " rc=-1\n", "bad exit status"},
		{"huge status", bnd + " /a\n" + bnd + " rc=99999999999999999999\n", "bad exit status"},
		{"header without path", bnd + " \n", "without a path"},
		{"repeated path", bnd + " /a\n" + bnd + " rc=0\n" + bnd + " /a\n" + bnd + " rc=0\n", "appears twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseEstimateBatch([]byte(tc.out), bnd)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
	// Another boundary's lines are output, not structure.
	got, err = parseEstimateBatch([]byte(bnd+" /a\nmosaic-estimate-ffff /x\n"+bnd+" rc=0\n"), bnd)
	if err != nil || len(got) != 1 || !strings.Contains(string(got["/a"].out), "ffff") {
		t.Errorf("foreign boundary: %+v %v", got, err)
	}
	if got, err := parseEstimateBatch(nil, bnd); err != nil || len(got) != 0 {
		t.Errorf("empty output: %v %v", got, err)
	}
}

func TestNewBoundaryIsRandom(t *testing.T) {
	a, err := newBoundary()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := newBoundary()
	if a == b || !strings.HasPrefix(a, "mosaic-estimate-") || len(a) != len("mosaic-estimate-")+32 {
		t.Errorf("boundaries %q %q", a, b)
	}
}

// FuzzParseEstimateBatch: any output parses or fails cleanly; every block's status is
// a valid exit code and its output never holds a structure line.
func FuzzParseEstimateBatch(f *testing.F) {
	f.Add([]byte(bnd + " /a\nsbatch: Job 4 to start at 2026-11-30T02:13:55\n" + bnd + " rc=0\n"))
	f.Add([]byte(bnd + " /a\n" + bnd + " rc=1"))
	f.Add([]byte("banner\n" + bnd + " rc=0\n"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, out []byte) {
		blocks, err := parseEstimateBatch(out, bnd)
		if err != nil {
			return
		}
		for p, b := range blocks {
			if p == "" || b.rc < 0 || b.rc > 255 {
				t.Fatalf("block %q %+v", p, b)
			}
			for _, l := range strings.Split(string(b.out), "\n") {
				if strings.HasPrefix(l, bnd+" ") {
					t.Fatalf("structure line %q inside block %q", l, p)
				}
			}
		}
	})
}
