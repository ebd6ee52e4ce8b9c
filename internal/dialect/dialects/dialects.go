// Package dialects builds the dialect a catalog system names. It is the one list of
// batch systems Mosaic speaks: adding one is a package under internal/dialect
// implementing dialect.Dialect (with its own table tests) and one entry in known.
package dialects

import (
	"fmt"
	"strings"

	"github.com/mosaic-hpc/mosaic/internal/dialect"
	"github.com/mosaic-hpc/mosaic/internal/dialect/pbs"
	"github.com/mosaic-hpc/mosaic/internal/dialect/slurm"
	"github.com/mosaic-hpc/mosaic/internal/site"
)

// known maps a catalog dialect name to its constructor. The first is the default
// (a system that names no dialect).
var known = []struct {
	name  string
	build func(sys site.System) dialect.Dialect
}{
	{site.DialectSlurm, func(sys site.System) dialect.Dialect { return &slurm.Slurm{EnvScript: sys.EnvScript} }},
	{site.DialectPBS, func(sys site.System) dialect.Dialect {
		d := &pbs.PBS{EnvScript: sys.EnvScript}
		for _, f := range sys.Features {
			if v, ok := strings.CutPrefix(f, "filesystems="); ok {
				d.Filesystems = v
			}
		}
		return d
	}},
}

// For builds the dialect of sys (its dialect field, case-insensitive; "" is slurm).
func For(sys site.System) (dialect.Dialect, error) {
	name := strings.ToLower(strings.TrimSpace(sys.Dialect))
	if name == "" {
		name = known[0].name
	}
	for _, k := range known {
		if k.name == name {
			return k.build(sys), nil
		}
	}
	return nil, fmt.Errorf("system %s: dialect %q: want one of %s", sys.Name, sys.Dialect, strings.Join(Names(), ", "))
}

// Names lists the dialects Mosaic speaks.
func Names() []string {
	out := make([]string, len(known))
	for i, k := range known {
		out[i] = k.name
	}
	return out
}

// All returns one dialect of each kind, built for an empty system, for what must know
// every dialect (the look-around policy hides every dialect's job scripts).
func All() []dialect.Dialect {
	out := make([]dialect.Dialect, len(known))
	for i, k := range known {
		out[i] = k.build(site.System{})
	}
	return out
}
