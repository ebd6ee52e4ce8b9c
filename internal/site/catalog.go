package site

import (
	"slices"
	"strings"
)

// System finds a system by name, case-insensitively. It also accepts the short machine
// name ("delta") or the part of the name before "@", provided exactly one system matches
// that way.
func (c *Catalog) System(name string) (*System, bool) {
	if c == nil {
		return nil, false
	}
	n := strings.TrimSpace(name)
	for i := range c.Systems {
		if strings.EqualFold(c.Systems[i].Name, n) {
			return &c.Systems[i], true
		}
	}
	var found *System
	for i := range c.Systems {
		s := &c.Systems[i]
		short, _, _ := strings.Cut(s.Name, "@")
		if (s.Machine != "" && strings.EqualFold(s.Machine, n)) || strings.EqualFold(short, n) {
			if found != nil {
				return nil, false // ambiguous
			}
			found = s
		}
	}
	return found, found != nil
}

// PartitionByName finds a partition by exact name (Slurm partition names are case
// sensitive).
func (s *System) PartitionByName(name string) (*Partition, bool) {
	if s == nil {
		return nil, false
	}
	for i := range s.Partitions {
		if s.Partitions[i].Name == name {
			return &s.Partitions[i], true
		}
	}
	return nil, false
}

// AccountsFor lists the accounts usable on a partition: the partition's own accounts
// when it sets any, else the system's. An empty result means "the site's default
// account" (no -A). Unknown partitions get the system's accounts.
func (s *System) AccountsFor(partition string) []string {
	if s == nil {
		return nil
	}
	if p, ok := s.PartitionByName(partition); ok && len(p.Accounts) > 0 {
		return slices.Clone(p.Accounts)
	}
	return slices.Clone(s.Accounts)
}

// PartitionArch is the partition's architecture, falling back to the system's.
func (s *System) PartitionArch(p *Partition) string {
	if p != nil && p.Arch != "" {
		return p.Arch
	}
	return s.Arch
}

func cloneSystem(s System) System {
	s.Accounts = slices.Clone(s.Accounts)
	s.ContainerRuntimes = slices.Clone(s.ContainerRuntimes)
	s.Features = slices.Clone(s.Features)
	if s.SSH != nil {
		ssh := *s.SSH
		ssh.Options = slices.Clone(ssh.Options)
		s.SSH = &ssh
	}
	s.Partitions = slices.Clone(s.Partitions)
	for i := range s.Partitions {
		p := &s.Partitions[i]
		p.Accounts = slices.Clone(p.Accounts)
		p.Features = slices.Clone(p.Features)
	}
	if s.SimConfig != nil {
		sc := *s.SimConfig
		sc.Faults.Outages = slices.Clone(sc.Faults.Outages)
		sc.Faults.NodeFailures = slices.Clone(sc.Faults.NodeFailures)
		s.SimConfig = &sc
	}
	return s
}

// Clone returns a deep copy of the catalog.
func (c *Catalog) Clone() *Catalog {
	if c == nil {
		return nil
	}
	out := *c
	out.Warnings = slices.Clone(c.Warnings)
	out.Systems = make([]System, len(c.Systems))
	for i := range c.Systems {
		out.Systems[i] = cloneSystem(c.Systems[i])
	}
	return &out
}
