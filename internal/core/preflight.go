package core

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/provider"
	"github.com/mosaic-hpc/mosaic/internal/site"
)

// Check is one step of a preflight: what was checked, how it went, and how to fix it.
type Check struct {
	System   string `json:"system,omitempty"`
	Step     string `json:"step"`
	Status   string `json:"status"` // ok | warn | fail
	Detail   string `json:"detail"`
	Fix      string `json:"fix,omitempty"`
	Duration string `json:"duration,omitempty"`
}

// Check statuses.
const (
	CheckOK   = "ok"
	CheckWarn = "warn"
	CheckFail = "fail"
)

type versioner interface {
	Version(ctx context.Context) (string, error)
}

// Preflight checks a catalog without starting the core: catalog completeness, then per
// system the transport and scheduler (a version query), and a timed probe round trip,
// warning when a probe takes longer than the tick.
func Preflight(ctx context.Context, cat *site.Catalog, tick time.Duration, log *slog.Logger) []Check {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var out []Check
	for _, w := range cat.Warnings {
		fix := "edit " + orDefault(cat.Path, "the sites file")
		if strings.Contains(w, site.Placeholder) {
			fix = "put your allocation's account name(s) in " + orDefault(cat.Path, "sites.yaml") + " (on Slurm sites: sacctmgr show assoc user=$USER)"
		}
		out = append(out, Check{Step: "catalog", Status: CheckWarn, Detail: w, Fix: fix})
	}
	for _, sys := range cat.Systems {
		if strings.HasPrefix(sys.WorkDir, "TODO") {
			out = append(out, Check{System: sys.Name, Step: "catalog", Status: CheckFail, Detail: "workdir is not set",
				Fix: "set workdir: to a scratch directory you own on " + sys.Name + " in " + orDefault(cat.Path, "sites.yaml")})
			continue
		}
		provs, err := buildProviders(&site.Catalog{Path: cat.Path, Sim: cat.Sim, Systems: []site.System{sys}}, log, nil)
		if err != nil {
			out = append(out, Check{System: sys.Name, Step: "provider", Status: CheckFail, Detail: err.Error(), Fix: "correct the system's entry in " + orDefault(cat.Path, "sites.yaml")})
			continue
		}
		p := provs[0]
		out = append(out, preflightSystem(ctx, p, sys, tick)...)
		if c, ok := p.(provider.Closer); ok {
			c.Close()
		}
	}
	return out
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func preflightSystem(ctx context.Context, p provider.Provider, sys site.System, tick time.Duration) []Check {
	var out []Check
	if v, ok := p.(versioner); ok {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		start := time.Now()
		ver, err := v.Version(cctx)
		cancel()
		c := Check{System: sys.Name, Step: "reach", Duration: time.Since(start).Round(time.Millisecond).String()}
		if err != nil {
			c.Status, c.Detail = CheckFail, err.Error()
			c.Fix = reachFix(sys, err)
			return append(out, c)
		}
		c.Status, c.Detail = CheckOK, fmt.Sprintf("%s answers: %s %s", p.Endpoint(), orDefault(sys.Dialect, "slurm"), ver)
		out = append(out, c)
	}
	cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	start := time.Now()
	recs, err := p.Probe(cctx)
	cancel()
	el := time.Since(start)
	c := Check{System: sys.Name, Step: "probe", Duration: el.Round(time.Millisecond).String()}
	switch {
	case err != nil:
		c.Status, c.Detail, c.Fix = CheckFail, err.Error(), reachFix(sys, err)
	case len(recs) == 0:
		c.Status, c.Detail = CheckFail, "the probe found no partitions"
		c.Fix = "check that the accounts in the catalog exist on " + sys.Name + " (sacctmgr show assoc user=$USER)"
	case tick > 0 && el > tick:
		c.Status = CheckWarn
		c.Detail = fmt.Sprintf("%d partition records, but the probe took %s, longer than the %s tick", len(recs), el.Round(time.Millisecond), tick)
		c.Fix = "raise the tick (mosaic serve --tick 2m, or MOSAIC_TICK)"
	default:
		parts := map[string]bool{}
		for _, r := range recs {
			parts[r.Partition] = true
		}
		names := make([]string, 0, len(parts))
		for n := range parts {
			names = append(names, n)
		}
		sort.Strings(names)
		c.Status, c.Detail = CheckOK, fmt.Sprintf("%d partitions: %s", len(names), strings.Join(names, ", "))
	}
	return append(out, c)
}

func reachFix(sys site.System, err error) string {
	switch {
	case errors.Is(err, provider.ErrNeedsLogin):
		if sys.Kind == site.KindGlobus {
			return "sign in: mosaic login"
		}
		return fmt.Sprintf("log in once interactively so ssh can reuse the connection: ssh %s true", hostOf(sys))
	case sys.Kind == site.KindSSH:
		return fmt.Sprintf("check that `ssh -o BatchMode=yes %s sinfo --version` works from this machine (keys, ~/.ssh/config, MFA)", hostOf(sys))
	case sys.Kind == site.KindLocal:
		return "run mosaic on the login node where sinfo/sbatch (or qstat/qsub) are on PATH"
	}
	return "check the system's entry in the catalog"
}

func hostOf(sys site.System) string {
	if sys.User != "" {
		return sys.User + "@" + sys.Host
	}
	return sys.Host
}

// SmokeStep is one step of a smoke test.
type SmokeStep struct {
	Step   string `json:"step"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

// Smoke submits a 1-CPU, 5-minute job to a system, checks the queue shows it, cancels it
// and checks that it is gone — the smallest proof that Mosaic can use the system.
func Smoke(ctx context.Context, cat *site.Catalog, system, partition string, log *slog.Logger) ([]SmokeStep, error) {
	sys, ok := cat.System(system)
	if !ok {
		return nil, fmt.Errorf("system %q is not in %s", system, orDefault(cat.Path, "the catalog"))
	}
	provs, err := buildProviders(&site.Catalog{Path: cat.Path, Sim: cat.Sim, Systems: []site.System{*sys}}, orDiscard(log), nil)
	if err != nil {
		return nil, err
	}
	p := provs[0]
	defer func() {
		if c, ok := p.(provider.Closer); ok {
			c.Close()
		}
	}()
	var steps []SmokeStep
	add := func(step string, ok bool, format string, a ...any) {
		steps = append(steps, SmokeStep{Step: step, OK: ok, Detail: fmt.Sprintf(format, a...)})
	}
	recs, err := p.Probe(ctx)
	if err != nil {
		add("probe", false, "%v", err)
		return steps, err
	}
	rec := pickSmokePartition(recs, partition)
	if rec == nil {
		err := fmt.Errorf("no partition %q on %s", partition, sys.Name)
		add("probe", false, "%v", err)
		return steps, err
	}
	add("probe", true, "%d partition records; using %s (account %s)", len(recs), rec.Partition, orDefault(rec.Account, "default"))
	b := make([]byte, 4)
	rand.Read(b)
	spec := model.JobSpec{Tag: "mosaic-smoke-" + hex.EncodeToString(b), Name: "mosaic smoke test", System: sys.Name, Partition: rec.Partition,
		Account: rec.Account, Nodes: 1, NTasks: 1, CPUsPerTask: 1, Walltime: model.Duration(5 * time.Minute), Command: "sleep 300"}
	id, err := p.Submit(ctx, spec)
	if err != nil {
		add("submit", false, "%v", err)
		return steps, err
	}
	add("submit", true, "job %s (%s)", id, spec.Tag)
	seen := false
	for i := 0; i < 60 && !seen; i++ {
		st, err := p.Status(ctx, []string{id})
		if err == nil {
			if s, ok := st[id]; ok && (s.State.Active() || s.State.Final()) {
				add("queue", true, "job %s is %s (%s)", id, s.State, s.RawState)
				seen = true
				break
			}
		}
		sleepCtx(ctx, time.Second)
	}
	if !seen {
		add("queue", false, "job %s never appeared in the queue within 60 s", id)
	}
	if err := p.Cancel(ctx, []string{id}); err != nil {
		add("cancel", false, "%v", err)
		return steps, err
	}
	add("cancel", true, "cancel of job %s requested", id)
	for i := 0; i < 60; i++ {
		st, err := p.Status(ctx, []string{id})
		if err == nil {
			s, ok := st[id]
			if !ok || s.State.Final() {
				state := "gone from the queue"
				if ok {
					state = string(s.State)
				}
				add("gone", true, "job %s %s", id, state)
				if !seen {
					return steps, fmt.Errorf("the job was never seen in the queue")
				}
				return steps, nil
			}
		}
		sleepCtx(ctx, time.Second)
	}
	add("gone", false, "job %s still active 60 s after the cancel", id)
	return steps, fmt.Errorf("job %s did not go away after cancel; check the queue on %s", id, sys.Name)
}

func pickSmokePartition(recs []model.ResourceRecord, want string) *model.ResourceRecord {
	var best *model.ResourceRecord
	for i := range recs {
		r := &recs[i]
		if want != "" {
			if r.Partition == want {
				return r
			}
			continue
		}
		// Prefer CPU partitions, then the shortest queue.
		if best == nil || (best.IsGPU() && !r.IsGPU()) || (best.IsGPU() == r.IsGPU() && r.PendingJobs < best.PendingJobs) {
			best = r
		}
	}
	return best
}

func sleepCtx(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

func orDiscard(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l
}

// LoadCatalog reads a sites file, or returns the embedded default when path is "".
func LoadCatalog(path string) (*site.Catalog, error) {
	if path == "" {
		return site.Default(), nil
	}
	return site.Load(path)
}
