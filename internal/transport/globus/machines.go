package globus

import (
	"strings"

	"github.com/mosaic-hpc/mosaic/internal/site"
)

// loginPrefixes are login-node name prefixes of known machines whose nodes share a
// domain with another machine (Delta and DeltaAI are both *.delta.ncsa.illinois.edu;
// DeltaAI's login nodes are gh-login0N per the project's seed notes).
var loginPrefixes = map[string][]string{
	"delta":   {"dt-login"},
	"deltaai": {"gh-login", "dtai-login"},
}

// MatchMachine recognises which known machine a login-node hostname belongs to: the
// catalog host itself, a node under it (login1.vista.tacc.utexas.edu), or a node in
// the same domain with that machine's login-node prefix.
func MatchMachine(hostname string, machines []site.System) (site.System, bool) {
	h := strings.TrimSuffix(strings.ToLower(strings.TrimSpace(hostname)), ".")
	if h == "" {
		return site.System{}, false
	}
	first, parent, _ := strings.Cut(h, ".")
	stem := strings.TrimRight(first, "0123456789")
	var generic []site.System
	for _, m := range machines {
		known := strings.ToLower(m.Host)
		if known == "" {
			continue
		}
		if h == known || strings.HasSuffix(h, "."+known) {
			return m, true
		}
		for _, p := range loginPrefixes[m.Machine] {
			if stem == p || strings.HasPrefix(first, p) {
				if _, kparent, _ := strings.Cut(known, "."); kparent == parent {
					return m, true
				}
			}
		}
		if kfirst, kparent, _ := strings.Cut(known, "."); kparent == parent && strings.Contains(kparent, ".") {
			if strings.TrimRight(kfirst, "0123456789") == stem {
				return m, true
			}
			if kfirst == "login" {
				generic = append(generic, m)
			}
		}
	}
	// A node of a shared domain whose prefix no machine claimed goes to the machine
	// with the generic "login." round-robin name.
	if len(generic) == 1 {
		return generic[0], true
	}
	return site.System{}, false
}
