package sim

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const traceDir = "../../../shared/traces"

// tracePath returns a shared trace or skips the test when the folder is absent.
func tracePath(tb testing.TB, name string) string {
	tb.Helper()
	p := filepath.Join(traceDir, name)
	if _, err := os.Stat(p); err != nil {
		tb.Skipf("trace %s not available (%v); the shared traces folder is outside the repository", p, err)
	}
	return p
}

const sampleSWF = `; Version: 2.2
; MaxNodes: 128
; MaxProcs: 256
; UnixStartTime: 749458803

    1        0     -1   1451  128     -1    -1   -1     -1    -1 -1   1   1  -1 -1 -1 -1 -1
    2     1460     5   3726  64     12.5    -1   64     7200    -1 1   1   1  -1 -1 -1 -1 -1
`

func TestParseSWF(t *testing.T) {
	tr, err := ParseSWF(strings.NewReader(sampleSWF))
	if err != nil {
		t.Fatal(err)
	}
	if tr.MaxNodes != 128 || tr.MaxProcs != 256 || tr.UnixStart != 749458803 {
		t.Fatalf("header: %+v", tr)
	}
	if len(tr.Jobs) != 2 {
		t.Fatalf("jobs: %d", len(tr.Jobs))
	}
	j := tr.Jobs[1]
	if j.ID != 2 || j.Submit != 1460 || j.Wait != 5 || j.Run != 3726 || j.Procs != 64 || j.AvgCPU != 12.5 ||
		j.ReqProcs != 64 || j.ReqTime != 7200 || j.Status != 1 || j.User != 1 || j.Exe != -1 {
		t.Fatalf("job 2: %+v", j)
	}
	if tr.MachineSize() != 256 {
		t.Fatalf("machine size %d", tr.MachineSize())
	}
}

func TestParseSWFGzip(t *testing.T) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write([]byte(sampleSWF))
	zw.Close()
	tr, err := ParseSWF(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Jobs) != 2 || tr.MaxNodes != 128 {
		t.Fatalf("gzip parse: %+v", tr)
	}
}

func TestParseSWFErrors(t *testing.T) {
	good := "1 0 -1 10 1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1"
	cases := []struct {
		name, in, want string
	}{
		{"too few fields", "; x\n1 0 -1 10 1\n", "swf line 2: want 18 whitespace-separated fields, got 5"},
		{"too many fields", good + " 7\n", "swf line 1: want 18 whitespace-separated fields, got 19"},
		{"non-numeric", good + "\n" + strings.Replace(good, " 10 ", " ten ", 1) + "\n", `swf line 2 field 4 (run time): "ten" is not a number`},
		{"NaN", strings.Replace(good, " 10 ", " NaN ", 1), `field 4 (run time): "NaN" is not a number`},
		{"huge", strings.Replace(good, " 10 ", " 1e300 ", 1), `field 4 (run time): "1e300" is out of range`},
		{"bad header", "; MaxNodes: lots\n", `swf line 1: header MaxNodes "lots" is not a non-negative integer`},
		{"bad start", "; UnixStartTime: x\n", `header UnixStartTime "x"`},
		{"long line", strings.Repeat("1", maxSWFLine+10), "longer than"},
		{"bad gzip", "\x1f\x8bnot gzip", "gzip header"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseSWF(strings.NewReader(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestParseSWFEmptyAndComments(t *testing.T) {
	tr, err := ParseSWF(strings.NewReader("; only: comments\n\n;;\n"))
	if err != nil || len(tr.Jobs) != 0 {
		t.Fatalf("got %v %v", tr, err)
	}
	if tr.MachineSize() != 1 {
		t.Fatalf("empty machine size %d", tr.MachineSize())
	}
}

func TestReadRealTraces(t *testing.T) {
	for _, tc := range []struct {
		file     string
		jobs     int
		maxNodes int
	}{
		{"NASA-iPSC-1993-3.1-cln.swf.gz", 18239, 128},
		{"lublin_256.swf.gz", 10000, 256},
	} {
		tr, err := ReadSWF(tracePath(t, tc.file))
		if err != nil {
			t.Fatal(err)
		}
		if len(tr.Jobs) != tc.jobs || tr.MaxNodes != tc.maxNodes {
			t.Fatalf("%s: %d jobs, MaxNodes %d; want %d, %d", tc.file, len(tr.Jobs), tr.MaxNodes, tc.jobs, tc.maxNodes)
		}
	}
}

func TestReadSWFMissing(t *testing.T) {
	_, err := ReadSWF(filepath.Join(t.TempDir(), "nope.swf"))
	if err == nil || !strings.Contains(err.Error(), "sim.load.trace") {
		t.Fatalf("error %v", err)
	}
}

func FuzzParseSWF(f *testing.F) {
	f.Add([]byte(sampleSWF))
	f.Add([]byte("1 0 -1 10 1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1"))
	f.Add([]byte("; MaxProcs: 12\n1 2 3\n"))
	f.Add([]byte("\x1f\x8b\x08\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := ParseSWF(bytes.NewReader(data))
		if err != nil {
			if tr != nil {
				t.Fatal("trace returned with an error")
			}
			return
		}
		if tr.MaxNodes < 0 || tr.MaxProcs < 0 || tr.MachineSize() < 1 {
			t.Fatalf("bad header values %+v", tr)
		}
	})
}
