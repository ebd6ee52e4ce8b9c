package model

import (
	"slices"
	"testing"
)

func TestSplitList(t *testing.T) {
	for in, want := range map[string][]string{
		"": nil, ",, ,": nil, "a": {"a"}, " a100, h100,,": {"a100", "h100"}, "x,y,x": {"x", "y", "x"},
	} {
		if got := SplitList(in); !slices.Equal(got, want) {
			t.Errorf("SplitList(%q) = %q, want %q", in, got, want)
		}
	}
}
