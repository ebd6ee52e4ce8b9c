package core

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/mosaic-hpc/mosaic/internal/provider"
	"github.com/mosaic-hpc/mosaic/internal/site"
)

// The providers the core builds name their system on every log line once: the core
// hands them its logger as it is, and each provider adds system=NAME itself (before,
// the core added it too, and every provider line carried it twice).
func TestProviderLogLinesNameTheirSystemOnce(t *testing.T) {
	cat, err := site.Parse("sites.yaml", []byte("sim:\n  workdir: "+t.TempDir()+"\nsystems:\n"+strings.ReplaceAll(clockSystem, "%s", "Alpha")))
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	// A standby core's simulated site logs, at Debug, that it leaves its work
	// directory to the leader.
	provs, err := buildProvidersWith(cat, log, nil, NewGlobus(nil), nil, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range provs {
		if c, ok := p.(provider.Closer); ok {
			defer c.Close()
		}
	}
	var n int
	for l := range strings.Lines(logs.String()) {
		n++
		if c := strings.Count(l, "system="); c != 1 {
			t.Errorf("a provider line names its system %d times, want once: %s", c, l)
		}
	}
	if n == 0 {
		t.Fatal("the simulated provider logged nothing at Debug; the test needs a line to read")
	}
}
