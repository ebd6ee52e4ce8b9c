package globus

import (
	"encoding/base64"
	"strings"
	"testing"
)

// BenchmarkTaskPayload measures building one task payload (a 4 KiB sbatch script on stdin).
func BenchmarkTaskPayload(b *testing.B) {
	in := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("#SBATCH --x=y\n", 300)))
	argv := []string{"sh", "-c", `umask 077 && mkdir -p "$1" && cat > "$2"`, "sh", "/work/mosaic", "/work/mosaic/job.sbatch"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := TaskPayload([]any{argv, in, 120.0, 8 << 20}, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeResult measures decoding a 1 MiB squeue-sized result.
func BenchmarkDecodeResult(b *testing.B) {
	out := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("12345|RUNNING|cpu|1|00:10:00\n", 36000)))
	res := JSONDataID + `{"returncode": 0, "stdout": "` + out + `", "stderr": "", "encoding": "base64", "truncated": false}`
	tr := &Transport{Endpoint: "e"}
	b.SetBytes(int64(len(res)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tr.decode(TaskStatus{Status: "success", Result: &res}); err != nil {
			b.Fatal(err)
		}
	}
}
