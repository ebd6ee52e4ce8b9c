package globus

import (
	"errors"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/mosaic-hpc/mosaic/internal/transport"
	"github.com/mosaic-hpc/mosaic/internal/transport/rigenv"
)

func TestPackBuffersCountsCharacters(t *testing.T) {
	// Python len() counts code points: "é" is one character, two bytes.
	got := PackBuffers("11\n\"é\"", "ab")
	if got != "6\n11\n\"é\"2\nab" {
		t.Fatalf("PackBuffers = %q", got)
	}
	bufs, err := UnpackBuffers(got)
	if err != nil || len(bufs) != 2 || bufs[0] != "11\n\"é\"" || bufs[1] != "ab" {
		t.Fatalf("UnpackBuffers = %q, %v", bufs, err)
	}
}

func TestUnpackBuffersMalformed(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"5", "missing newline"},
		{"x\nabc", "invalid length"},
		{"-1\nabc", "non-negative"},
		{"10\nabc", "truncated"},
		{"3\nabc4\nab", "truncated"},
		{" 3\nabc", "invalid length"},
	} {
		if _, err := UnpackBuffers(tc.in); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("UnpackBuffers(%q) = %v, want error containing %q", tc.in, err, tc.want)
		}
	}
	if b, err := UnpackBuffers(""); err != nil || len(b) != 0 {
		t.Errorf("empty: %v %v", b, err)
	}
}

func TestDeserializeJSON(t *testing.T) {
	var v map[string]int
	if err := DeserializeJSON("11\n{\"a\": 1}", &v); err != nil || v["a"] != 1 {
		t.Fatalf("%v %v", v, err)
	}
	for _, in := range []string{"00\ngASVAAAA", "11\n{", "", "st\nabc", "11"} {
		if err := DeserializeJSON(in, &v); err == nil {
			t.Errorf("DeserializeJSON(%q) accepted", in)
		}
	}
	if err := DeserializeJSON("00\nabc", &v); !strings.Contains(err.Error(), "allowed_serializers") {
		t.Errorf("dill result error should say how to fix it: %v", err)
	}
}

func TestPureSourceRoundTrip(t *testing.T) {
	p := PureSource(FunctionName, FunctionSource)
	if !strings.HasPrefix(p, "st\n") {
		t.Fatal(p)
	}
	for _, line := range strings.Split(strings.TrimSuffix(p[3:], "\n"), "\n") {
		if len(line) > 76 {
			t.Fatalf("base64 line of %d characters; Python's codecs base64 wraps at 76", len(line))
		}
	}
	name, src, err := ParsePureSource(p)
	if err != nil || name != FunctionName || src != FunctionSource {
		t.Fatalf("round trip: %q %v", name, err)
	}
	// The older, un-encoded form is accepted too (concretes.py deserialize).
	if n, s, err := ParsePureSource("st\nf:def f(): pass"); err != nil || n != "f" || s != "def f(): pass" {
		t.Fatalf("plain form: %q %q %v", n, s, err)
	}
	for _, bad := range []string{"11\nx", "st\nnocolon", "st\n:src"} {
		if _, _, err := ParsePureSource(bad); err == nil {
			t.Errorf("ParsePureSource(%q) accepted", bad)
		}
	}
}

// TestPythonAgreesWithEncoding decodes Mosaic's payloads with the SDK's algorithm in
// real Python (serialize/utils.py unpack_buffers, concretes.py JSONData).
func TestPythonAgreesWithEncoding(t *testing.T) {
	rigenv.NeedTool(t, "python3", "apt-get install python3")
	p, err := TaskPayload([]any{[]string{"echo", "héllo ✓"}, "", 1.5, 100}, nil)
	if err != nil {
		t.Fatal(err)
	}
	script := `import json, sys
p = sys.stdin.read()
out = []
while p:
    d, b = p.split("\n", 1)
    n = int(d)
    out.append(b[:n]); p = b[n:]
a, k = out
print(json.dumps([json.loads(a[3:]), json.loads(k[3:])]))`
	cmd := exec.Command("python3", "-c", script)
	cmd.Stdin = strings.NewReader(p)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if strings.TrimSpace(string(out)) != `[[["echo", "h\u00e9llo \u2713"], "", 1.5, 100], {}]` {
		t.Fatalf("python decoded %s", out)
	}
}

func TestDecodeRefusesOversizedResult(t *testing.T) {
	tr := &Transport{Endpoint: "e", MaxResult: 1024}
	big := JSONDataID + `{"returncode": 0, "stdout": "` + strings.Repeat("A", 2000) + `", "stderr": "", "encoding": "base64"}`
	_, err := tr.decode(TaskStatus{TaskID: "t", Status: "success", Result: &big})
	if !errors.Is(err, ErrResultTooLarge) || !errors.Is(err, transport.ErrOutputTooLarge) {
		t.Fatalf("oversized result: %v", err)
	}
	exc := "Traceback...\nValueError: boom"
	_, err = tr.decode(TaskStatus{TaskID: "t", Status: "failed", Exception: &exc})
	if !errors.Is(err, ErrTaskFailed) || !strings.Contains(err.Error(), "ValueError: boom") {
		t.Fatalf("failed task: %v", err)
	}
	for _, bad := range []string{"11\n{\"stdout\": \"!!\", \"encoding\": \"base64\"}", "11\n[1]", "00\nxx"} {
		b := bad
		if _, err := tr.decode(TaskStatus{Status: "success", Result: &b}); err == nil {
			t.Errorf("decode(%q) accepted", bad)
		}
	}
}

func FuzzUnpackBuffers(f *testing.F) {
	f.Add("3\nabc2\nde")
	f.Add("1\né")
	f.Add("-1\n")
	f.Add("99999999999999999999\nx")
	f.Fuzz(func(t *testing.T, s string) {
		bufs, err := UnpackBuffers(s)
		if err != nil {
			return
		}
		again, err := UnpackBuffers(PackBuffers(bufs...))
		if err != nil || !slices.Equal(again, bufs) {
			t.Fatalf("repack of %q: %q, %v", bufs, again, err)
		}
	})
}

func FuzzDecodeResult(f *testing.F) {
	f.Add(`11\n{"returncode": 1, "stdout": "aGk=", "stderr": "", "encoding": "base64"}`)
	f.Add("11\n{}")
	f.Add("00\nabc")
	f.Fuzz(func(t *testing.T, s string) {
		tr := &Transport{Endpoint: "e", MaxResult: 1 << 16}
		res, err := tr.decode(TaskStatus{Status: "success", Result: &s})
		if err == nil && len(res.Stdout)+len(res.Stderr) > tr.maxOutput() {
			t.Fatalf("decoded more output than the cap")
		}
	})
}
