package campaign

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ParseAgentsSelection parses an --agents value such as "a, b,,c": segments are
// whitespace-trimmed and empty segments ignored. Duplicates are kept so that
// Slice can name them.
func ParseAgentsSelection(raw string) []string {
	var out []string
	for _, seg := range strings.Split(raw, ",") {
		if seg = strings.TrimSpace(seg); seg != "" {
			out = append(out, seg)
		}
	}
	return out
}

// Slice returns the spec restricted to the named agents, in the order given
// (that order decides which rank/process runs which agent, so it must be
// deterministic). It rejects an empty selection, duplicate names and names the
// campaign does not declare, naming each. InitialAgent and AllowedPeers are kept
// as written: in a federated launch they may name agents of another site, so
// validate a slice with Federated.
func (s *Spec) Slice(names []string) (*Spec, error) {
	if len(names) == 0 {
		return nil, fmt.Errorf("%s: empty agent selection; pass --agents with one or more of: %s", s.file(), strings.Join(s.Names(), ", "))
	}
	index := map[string]int{}
	for i, a := range s.Agents {
		if _, dup := index[a.Name]; !dup {
			index[a.Name] = i
		}
	}
	var unknown, dups []string
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			if !slices.Contains(dups, n) {
				dups = append(dups, n)
			}
			continue
		}
		seen[n] = true
		if _, ok := index[n]; !ok {
			unknown = append(unknown, n)
		}
	}
	var errs []error
	if len(unknown) > 0 {
		errs = append(errs, fmt.Errorf("%s: unknown agent(s) in selection: %s (declared: %s)", s.file(), strings.Join(unknown, ", "), strings.Join(s.Names(), ", ")))
	}
	if len(dups) > 0 {
		errs = append(errs, fmt.Errorf("%s: agent(s) selected more than once: %s", s.file(), strings.Join(dups, ", ")))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	out := &Spec{Campaign: s.Campaign, Path: s.Path, pos: s.pos}
	out.Agents = make([]modelAgent, 0, len(names))
	out.orig = make([]int, 0, len(names))
	for _, n := range names {
		i := index[n]
		out.Agents = append(out.Agents, cloneAgent(s.Agents[i]))
		out.orig = append(out.orig, s.origIndex(i))
	}
	return out, nil
}
