package model

import "strings"

// SplitList reads a comma-separated list as flags, query parameters and environment
// variables give it ("a100, h100,,"): items trimmed, empty items dropped, order kept;
// nil for an empty list.
func SplitList(s string) []string {
	var out []string
	for p := range strings.SplitSeq(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
