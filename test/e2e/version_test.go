package e2e

import (
	"os/exec"
	"regexp"
	"testing"
)

// TestVersionFlag: `mosaic --version` prints one line, "mosaic <version>", and exits 0
// without needing a core.
func TestVersionFlag(t *testing.T) {
	out, err := exec.Command(binary, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("mosaic --version: %v\n%s", err, out)
	}
	if !regexp.MustCompile(`^mosaic \S+\n$`).Match(out) {
		t.Fatalf("mosaic --version printed %q, want one line \"mosaic <version>\"", out)
	}
}
