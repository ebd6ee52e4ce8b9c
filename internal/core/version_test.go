package core

import (
	"runtime/debug"
	"testing"
)

func TestResolveVersion(t *testing.T) {
	info := func(v string) func() (*debug.BuildInfo, bool) {
		return func() (*debug.BuildInfo, bool) { return &debug.BuildInfo{Main: debug.Module{Version: v}}, true }
	}
	none := func() (*debug.BuildInfo, bool) { return nil, false }
	for _, tc := range []struct {
		linked string
		info   func() (*debug.BuildInfo, bool)
		want   string
	}{
		{"v1.2.3", info("v9.9.9"), "v1.2.3"},                                          // -ldflags -X wins
		{"dev", info("v1.4.0"), "v1.4.0"},                                             // go install …@v1.4.0
		{"dev", info("v0.0.0-20261201-abcdef+dirty"), "v0.0.0-20261201-abcdef+dirty"}, // -buildvcs
		{"dev", info("(devel)"), "dev"},
		{"dev", info(""), "dev"},
		{"dev", none, "dev"},
		{"", none, "dev"},
	} {
		if got := resolveVersion(tc.linked, tc.info); got != tc.want {
			t.Errorf("resolveVersion(%q) = %q, want %q", tc.linked, got, tc.want)
		}
	}
}
