package shellquote

import (
	"bytes"
	"math/rand/v2"
	"os/exec"
	"strings"
	"testing"
)

// printArgs is a shell command that prints each following argument NUL-terminated.
var printArgs = []string{"printf", `%s\0`}

func splitNul(b []byte) []string {
	if len(b) == 0 {
		return nil
	}
	parts := strings.Split(string(b), "\x00")
	return parts[:len(parts)-1]
}

// viaShell runs `sh -c line` and returns what printf printed.
func viaShell(t *testing.T, line string) []string {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := exec.Command("sh", "-c", line)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("sh -c %q: %v (%s)", line, err, errb.String())
	}
	return splitNul(out.Bytes())
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestQuoteTable(t *testing.T) {
	cases := map[string]string{
		"":           "''",
		"abc":        "abc",
		"a b":        "'a b'",
		"it's":       `'it'\''s'`,
		"$HOME":      "'$HOME'",
		"=x":         "'=x'",
		"a=b":        "'a=b'",
		"-a=b":       "-a=b",
		"~":          "'~'",
		"--gres=gpu": "--gres=gpu",
		"a\nb":       "'a\nb'",
	}
	for in, want := range cases {
		if got := Quote(in); got != want {
			t.Errorf("Quote(%q) = %q, want %q", in, got, want)
		}
	}
}

const nasty = "'\"$`\\ \n\t*?[]{}()<>|&;#~!%=\x01\xff"

func randomArg(r *rand.Rand) string {
	n := r.IntN(24)
	var b strings.Builder
	for range n {
		switch r.IntN(4) {
		case 0:
			b.WriteByte(nasty[r.IntN(len(nasty))])
		case 1:
			b.WriteString([]string{"é", "日本", "🙂", "\u202e", "ß"}[r.IntN(5)])
		default:
			b.WriteByte(byte(1 + r.IntN(255))) // any byte but NUL (argv cannot hold NUL)
		}
	}
	return b.String()
}

// TestRoundTripOneLevel simulates ssh: the remote runs `$SHELL -c "<joined argv>"`.
func TestRoundTripOneLevel(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 300 {
		args := make([]string, 1+r.IntN(5))
		for j := range args {
			args[j] = randomArg(r)
		}
		got := viaShell(t, Join(append(append([]string{}, printArgs...), args...)...))
		if !equal(got, args) {
			t.Fatalf("case %d: sent %q, shell saw %q", i, args, got)
		}
	}
}

// TestRoundTripTwoLevels quotes a command that itself runs `sh -c <quoted command>`,
// as happens when a remote login shell runs `sh -c` (e.g. a wrapper or sudo).
// TestAssignmentNotCommand: a NAME=value argv[0] must run as a program name, not be
// taken for an environment assignment.
func TestAssignmentNotCommand(t *testing.T) {
	cmd := exec.Command("sh", "-c", Join("FOO=bar", "true"))
	if err := cmd.Run(); err == nil {
		t.Fatal("FOO=bar ran as an assignment; it must be looked up as a command and fail")
	}
}

func TestRoundTripTwoLevels(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 200 {
		args := make([]string, 1+r.IntN(4))
		for j := range args {
			args[j] = randomArg(r)
		}
		inner := Join(append(append([]string{}, printArgs...), args...)...)
		outer := Join("sh", "-c", inner)
		got := viaShell(t, outer)
		if !equal(got, args) {
			t.Fatalf("case %d: sent %q, inner shell saw %q", i, args, got)
		}
	}
}

func FuzzQuote(f *testing.F) {
	for _, s := range []string{"", "a", nasty, "it's", "\xff\xfe"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if strings.IndexByte(s, 0) >= 0 {
			t.Skip("argv cannot carry NUL")
		}
		q := Quote(s)
		// Unquote by the POSIX rules for the two forms Quote produces.
		if isSafe(s) && s != "" {
			if q != s {
				t.Fatalf("safe %q quoted to %q", s, q)
			}
			return
		}
		if !strings.HasPrefix(q, "'") || !strings.HasSuffix(q, "'") {
			t.Fatalf("Quote(%q) = %q is not single-quoted", s, q)
		}
		if un := strings.ReplaceAll(q[1:len(q)-1], `'\''`, "'"); un != s {
			t.Fatalf("Quote(%q) = %q unquotes to %q", s, q, un)
		}
	})
}
