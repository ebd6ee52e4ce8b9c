package site

import (
	"fmt"
	"sort"
	"strings"
)

// Placeholder is the account name init-sites writes where the user must fill in their
// allocation; loading a catalog that still has it gives a warning.
const Placeholder = "TODO-your-allocation"

// ScaffoldEntry asks for one system in a scaffolded catalog.
type ScaffoldEntry struct {
	Machine  string // known machine name (delta, anvil, …)
	Host     string // login host or ~/.ssh/config alias; "" = the machine's public login host
	User     string
	Kind     string // ssh (default), local or globus
	Endpoint string // Globus Compute endpoint UUID for kind globus
}

// ParseScaffoldArg reads "MACHINE", "MACHINE=HOST" or "MACHINE=USER@HOST".
func ParseScaffoldArg(arg string) (ScaffoldEntry, error) {
	m, host, _ := strings.Cut(strings.TrimSpace(arg), "=")
	e := ScaffoldEntry{Machine: strings.ToLower(strings.TrimSpace(m)), Kind: KindSSH}
	if _, ok := Known(e.Machine); !ok {
		return e, fmt.Errorf("%q: not a known machine; known: %s", m, strings.Join(KnownMachineNames(), ", "))
	}
	if u, h, ok := strings.Cut(host, "@"); ok {
		e.User, host = u, h
	}
	e.Host = strings.TrimSpace(host)
	return e, nil
}

// Scaffold writes a sites.yaml for the given machines: each entry starts from the
// machine's known shape, so only how it is reached and the accounts need filling in.
// Accounts are left as Placeholder.
func Scaffold(entries []ScaffoldEntry) ([]byte, error) {
	if len(entries) == 0 {
		return nil, fmt.Errorf("name at least one machine (%s), optionally as MACHINE=USER@HOST", strings.Join(KnownMachineNames(), ", "))
	}
	var b strings.Builder
	b.WriteString("# Mosaic site catalog, scaffolded by `mosaic init-sites`.\n")
	b.WriteString("# Fill in your allocations where it says " + Placeholder + ", then check with `mosaic preflight`.\n")
	b.WriteString("# Each system starts from its known machine shape (partitions, GPUs, wall caps); list\n")
	b.WriteString("# partitions here only to override them. Every field is documented in sites.example.yaml.\n")
	b.WriteString("systems:\n")
	seen := map[string]bool{}
	for _, e := range entries {
		k, ok := Known(e.Machine)
		if !ok {
			return nil, fmt.Errorf("%q: not a known machine", e.Machine)
		}
		if seen[k.Name] {
			return nil, fmt.Errorf("%s is named twice", k.Name)
		}
		seen[k.Name] = true
		kind := e.Kind
		if kind == "" {
			kind = KindSSH
		}
		fmt.Fprintf(&b, "  - name: %s\n    machine: %s\n    kind: %s\n", k.Name, e.Machine, kind)
		switch kind {
		case KindSSH:
			host := e.Host
			if host == "" {
				host = k.Host
			}
			fmt.Fprintf(&b, "    host: %s\n", host)
			if e.User != "" {
				fmt.Fprintf(&b, "    user: %s\n", e.User)
			}
		case KindGlobus:
			ep := e.Endpoint
			if ep == "" {
				ep = "TODO-endpoint-uuid"
			}
			fmt.Fprintf(&b, "    endpoint: %s\n", ep)
		}
		accounts := map[string]bool{}
		for _, p := range k.Partitions {
			for _, a := range p.Accounts {
				accounts[a] = true
			}
		}
		b.WriteString("    accounts: [" + Placeholder + "]\n")
		if len(accounts) > 0 {
			names := make([]string, 0, len(accounts))
			for a := range accounts {
				names = append(names, a)
			}
			sort.Strings(names)
			b.WriteString("    # this machine names accounts like: " + strings.Join(names, ", ") + "\n")
		}
		b.WriteString("    workdir: TODO-scratch-directory   # job scripts and outputs go here\n")
	}
	return []byte(b.String()), nil
}
