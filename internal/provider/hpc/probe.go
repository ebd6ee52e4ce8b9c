package hpc

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/dialect"
	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/site"
)

// Probe runs the dialect's probe commands (two calls for Slurm, three for PBS, plus `id -un`
// once per provider when the catalog has no user) and returns one record per
// (partition, account). When the catalog lists partitions, only those are reported,
// enriched with the catalog's limits.
func (p *Provider) Probe(ctx context.Context) ([]model.ResourceRecord, error) {
	start := p.now()
	user, err := p.User(ctx)
	if err != nil {
		return nil, err
	}
	var outs []dialect.Output
	for _, argv := range p.d.ProbeCommands() {
		out, err := p.run(ctx, argv, nil)
		if err != nil {
			return nil, err
		}
		outs = append(outs, out)
	}
	recs, err := p.d.ParseProbe(outs, user)
	if err != nil {
		return nil, fmt.Errorf("%s: probe: %w", p.sys.Name, err)
	}
	latency := time.Since(start).Milliseconds()
	return p.expand(recs, start, latency), nil
}

// expand fills identity fields, applies catalog partition settings and fans each
// partition out over its accounts.
func (p *Provider) expand(recs []model.ResourceRecord, ts time.Time, latencyMS int64) []model.ResourceRecord {
	catalog := map[string]site.Partition{}
	for _, cp := range p.sys.Partitions {
		catalog[cp.Name] = cp
	}
	var out []model.ResourceRecord
	for _, r := range recs {
		cp, listed := catalog[r.Partition]
		if len(catalog) > 0 && !listed {
			continue
		}
		r.Timestamp = ts
		r.Provider = p.kind
		r.Endpoint = p.endpoint
		r.System = p.sys.Name
		r.ProbeLatencyMS = latencyMS
		r.Arch = firstNonEmpty(cp.Arch, p.sys.Arch, "x86_64")
		r.ContainerRuntimes = slices.Clone(p.sys.ContainerRuntimes)
		for _, f := range append(slices.Clone(p.sys.Features), cp.Features...) {
			if !slices.Contains(r.Features, f) {
				r.Features = append(r.Features, f)
			}
		}
		if r.GPUModel != "" { // whatever the dialect reported, the catalogue's spelling
			var mem int
			if r.GPUModel, mem = model.RecordGPU(r.GPUModel); r.GPUMemoryGB == 0 {
				r.GPUMemoryGB = mem
			}
		}
		if listed {
			if r.GPUModel == "" || strings.EqualFold(r.GPUModel, cp.GPUModel) {
				r.GPUModel = firstNonEmpty(cp.GPUModel, r.GPUModel)
			}
			if r.GPUMemoryGB == 0 {
				r.GPUMemoryGB = cp.GPUMemoryGB
			}
			if cp.MaxWalltime > 0 && (r.WalltimeCap == 0 || cp.MaxWalltime < r.WalltimeCap) {
				r.WalltimeCap = cp.MaxWalltime
			}
			if cp.MaxNodesPerJob > 0 && (r.MaxNodesPerJob == 0 || cp.MaxNodesPerJob < r.MaxNodesPerJob) {
				r.MaxNodesPerJob = cp.MaxNodesPerJob
			}
			r.MaxRunningPerUser = cp.MaxRunningPerUser
			r.MaxSubmitPerUser = cp.MaxSubmitPerUser
			r.Exclusive = r.Exclusive || cp.Exclusive
			r.ChargeFactor = cp.ChargeFactor
		}
		accounts := p.sys.Accounts
		if listed && len(cp.Accounts) > 0 {
			accounts = cp.Accounts
		}
		if len(accounts) == 0 {
			accounts = []string{""}
		}
		for _, a := range accounts {
			rr := r
			rr.Account = a
			rr.Features = slices.Clone(r.Features)
			rr.ContainerRuntimes = slices.Clone(r.ContainerRuntimes)
			out = append(out, rr)
		}
	}
	model.SortRecords(out)
	return out
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}
