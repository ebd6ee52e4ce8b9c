// Command rigplace compares where Slurm's own multi-cluster choice and a Mosaic core
// put the same seeded stream of GPU jobs on the real two-cluster rig
// (scripts/testrig/up.sh), and prints both sides' mean and p95 waits and their ratio.
//
// Per stream: (a) each job is sent with `sbatch -M alpha,beta` at its arrival time
// (Slurm submits to the cluster whose will-run test promises the earliest start);
// after both queues have drained, (b) the same jobs at the same relative arrival times
// go through `mosaic submit` to one `mosaic serve` whose catalog has the two clusters
// over ssh. Wait = the job's start in sacct (the first start among a Mosaic task's
// attempts) minus its arrival at the submitter, both read on this machine's clock.
//
// Run it through scripts/bench/rig-placement.sh, which brings the rig up and builds
// the binary; `go run ./scripts/bench/rigplace --help` lists the flags.
package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/site"
)

type config struct {
	jobs         int
	gap          time.Duration
	seed         uint64
	streams      int
	rigEnv       string
	mosaic       string
	tick         time.Duration
	out          string
	sides        string
	order        string
	niceStep     int
	drainTimeout time.Duration
	idleTimeout  time.Duration
	model        bool
}

func main() {
	var c config
	flag.IntVar(&c.jobs, "jobs", 30, "jobs per stream")
	flag.DurationVar(&c.gap, "gap", 6*time.Second, "mean gap between arrivals (Poisson)")
	flag.Uint64Var(&c.seed, "seed", 1, "seed of the first stream")
	flag.IntVar(&c.streams, "streams", 1, "streams to run: seeds seed, seed+1, …")
	flag.StringVar(&c.rigEnv, "rig-env", envOr("MOSAIC_RIG_ENV", "/tmp/mosaic-rig/rig.env"), "the rig's rig.env (written by scripts/testrig/up.sh)")
	flag.StringVar(&c.mosaic, "mosaic", "", "the mosaic binary (required; rig-placement.sh builds it)")
	flag.DurationVar(&c.tick, "tick", 2*time.Second, "probe interval of the Mosaic core (mosaic serve --tick)")
	flag.StringVar(&c.out, "out", "", "run directory for the core's state, logs and per-job results (default: a new one under /tmp)")
	flag.StringVar(&c.sides, "sides", "both", "both, sbatch or mosaic")
	flag.StringVar(&c.order, "order", "smallest-first", "the Mosaic side's order_own_jobs at both clusters: smallest-first or submission")
	flag.IntVar(&c.niceStep, "nice-step", site.DefaultOrderNiceStep, "smallest-first's order_nice_step at both clusters, and the model's")
	flag.DurationVar(&c.drainTimeout, "drain-timeout", 10*time.Minute, "give up on a side whose jobs have not all started and ended this long after the last arrival")
	flag.DurationVar(&c.idleTimeout, "idle-timeout", 3*time.Minute, "wait at most this long for the rig's GPUs to be free before a side (then run anyway, flagged)")
	flag.BoolVar(&c.model, "model", false, "run the offline model of the rig instead (no rig, no Mosaic: model.go), over the same streams")
	flag.Parse()
	if c.niceStep < 1 || c.niceStep > site.MaxOrderNiceStep {
		fmt.Fprintf(os.Stderr, "rigplace: --nice-step %d: want 1 to %d\n", c.niceStep, site.MaxOrderNiceStep)
		os.Exit(2)
	}
	if c.model {
		if err := runModel(os.Stdout, c); err != nil {
			fmt.Fprintln(os.Stderr, "rigplace:", err)
			os.Exit(1)
		}
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, c); err != nil {
		fmt.Fprintln(os.Stderr, "rigplace:", err)
		os.Exit(1)
	}
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// bench holds what one run shares between streams.
type bench struct {
	c        config
	rig      map[string]string
	clusters []string
	gpus     int // GPUs of the whole rig (one node per cluster)
	conf     string
	mosaic   *core // nil unless the Mosaic side runs
	csv      *csv.Writer
}

// side is one half of a stream's comparison.
type side struct {
	Name    string
	Results []Result
	Summary Summary
	Foreign Foreign
	// Restarted names the clusters whose slurmctld restarted during the side (another
	// user's test): jobs sent meanwhile could not go there.
	Restarted []string
	Elapsed   time.Duration
}

// Clean reports whether nothing of other rig users could have biased the side: no
// foreign GPU job ran and no controller restarted.
func (s *side) Clean() bool { return s != nil && s.Foreign.GPUJobs == 0 && len(s.Restarted) == 0 }

type streamResult struct {
	Seed     uint64
	Jobs     []Job
	Load     float64
	Sbatch   *side
	Mosaic   *side
	MeanRate float64 // mosaic mean / sbatch mean
	P95Rate  float64
}

func run(ctx context.Context, c config) error {
	if c.sides != "both" && c.sides != "sbatch" && c.sides != "mosaic" {
		return fmt.Errorf("--sides %q: give both, sbatch or mosaic", c.sides)
	}
	if c.order != "smallest-first" && c.order != "submission" {
		return fmt.Errorf("--order %q: give smallest-first or submission", c.order)
	}
	if c.streams < 1 {
		return fmt.Errorf("--streams %d: give 1 or more", c.streams)
	}
	text, err := os.ReadFile(c.rigEnv)
	if err != nil {
		return fmt.Errorf("read the rig's env file: %w; bring the rig up with scripts/testrig/up.sh", err)
	}
	rig, err := ParseEnvFile(string(text))
	if err != nil {
		return err
	}
	b := &bench{c: c, rig: rig, clusters: []string{"alpha", "beta"}}
	for _, k := range []string{"SLURM_CONF_ALPHA", "SLURM_CONF_BETA", "RIG_SSH_CONFIG", "RIG_ACCOUNT", "RIG_WORKDIR_ALPHA", "RIG_WORKDIR_BETA", "RIG_GPUS_PER_NODE", "RIG_GPU_TYPE"} {
		if rig[k] == "" {
			return fmt.Errorf("%s has no %s; rewrite it with scripts/testrig/up.sh", c.rigEnv, k)
		}
	}
	per, err := strconv.Atoi(rig["RIG_GPUS_PER_NODE"])
	if err != nil || per < 4 {
		return fmt.Errorf("%s: RIG_GPUS_PER_NODE=%q: the stream needs nodes of at least 4 GPUs", c.rigEnv, rig["RIG_GPUS_PER_NODE"])
	}
	b.gpus = per * len(b.clusters)
	b.conf = rig["SLURM_CONF_ALPHA"] // -M reaches both clusters through slurmdbd from either config
	if out, err := b.slurm(ctx, "sinfo", "-M", "alpha,beta", "-h", "-p", "gpuA100", "-o", "%R %D %G %t"); err != nil {
		return fmt.Errorf("the rig's Slurm does not answer (%w): %s; bring it up with scripts/testrig/up.sh", err, out)
	}
	if c.out == "" {
		if c.out, err = os.MkdirTemp("", "rigplace-"); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(c.out, 0o700); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(c.out, "jobs.csv"))
	if err != nil {
		return err
	}
	defer f.Close()
	b.csv = csv.NewWriter(f)
	_ = b.csv.Write([]string{"seed", "side", "job", "arrival_offset_s", "gpus", "runtime_s", "walltime_min", "wait_s", "cluster", "slurm_jobs", "submit_lag_s"})
	fmt.Printf("rigplace: %d stream(s) of %d GPU jobs (1-4 GPUs, 5-40 s, Poisson arrivals, mean gap %s) on %s (%d GPUs); run dir %s\n",
		c.streams, c.jobs, c.gap, strings.Join(b.clusters, "+"), b.gpus, c.out)

	if c.sides != "sbatch" {
		if c.mosaic == "" {
			return errors.New("--mosaic: give the mosaic binary (scripts/bench/rig-placement.sh builds one)")
		}
		b.mosaic, err = startCore(ctx, c, rig)
		if err != nil {
			return err
		}
		defer b.mosaic.stop()
		fmt.Printf("mosaic core: %s (tick %s, order_own_jobs %s, order_nice_step %d, catalog %s)\n", b.mosaic.url, c.tick, c.order, c.niceStep, b.mosaic.sites)
	}

	var results []streamResult
	for k := 0; k < c.streams; k++ {
		seed := c.seed + uint64(k)
		jobs, err := Stream(seed, StreamParams{Jobs: c.jobs, MeanGap: c.gap})
		if err != nil {
			return err
		}
		sr := streamResult{Seed: seed, Jobs: jobs, Load: OfferedLoad(jobs, b.gpus), MeanRate: math.NaN(), P95Rate: math.NaN()}
		fmt.Printf("\nstream %d/%d, seed %d: %d jobs over %s, %.0f GPU·s, offered load %.2f of %d GPUs\n",
			k+1, c.streams, seed, len(jobs), jobs[len(jobs)-1].At.Round(time.Second), GPUSeconds(jobs), sr.Load, b.gpus)
		if c.sides != "mosaic" {
			if sr.Sbatch, err = b.runSide(ctx, seed, jobs, "sbatch"); err != nil {
				return err
			}
			printSide("sbatch -M alpha,beta", sr.Sbatch)
		}
		if c.sides != "sbatch" {
			if sr.Mosaic, err = b.runSide(ctx, seed, jobs, "mosaic"); err != nil {
				return err
			}
			printSide(fmt.Sprintf("mosaic (ssh, tick %s)", c.tick), sr.Mosaic)
		}
		if sr.Sbatch != nil && sr.Mosaic != nil {
			sr.MeanRate = Ratio(sr.Mosaic.Summary.Mean, sr.Sbatch.Summary.Mean)
			sr.P95Rate = Ratio(sr.Mosaic.Summary.P95, sr.Sbatch.Summary.P95)
			fmt.Printf("  ratio mosaic/sbatch -M:  mean %.2f  p95 %.2f\n", sr.MeanRate, sr.P95Rate)
		}
		results = append(results, sr)
		b.csv.Flush()
	}
	printTable(results)
	js, _ := json.MarshalIndent(results, "", "  ")
	_ = os.WriteFile(filepath.Join(c.out, "results.json"), js, 0o600)
	fmt.Printf("per-job results: %s; summary: %s\n", filepath.Join(c.out, "jobs.csv"), filepath.Join(c.out, "results.json"))
	return b.csv.Error()
}

// runSide sends one stream through one submitter, waits for it to drain and measures
// the waits.
func (b *bench) runSide(ctx context.Context, seed uint64, jobs []Job, which string) (*side, error) {
	b.waitIdle(ctx)
	boots := b.bootTimes(ctx)
	prefix := fmt.Sprintf("rb%d-s%d-%s", time.Now().Unix()%100000, seed, which[:1])
	subs := make([]Submitted, len(jobs))
	ids := make([]string, len(jobs)) // Mosaic task ids
	errs := make([]error, len(jobs))
	t0 := time.Now()
	var wg sync.WaitGroup
	for i, j := range jobs {
		select {
		case <-ctx.Done():
			wg.Wait()
			b.cancelAll(which, subs, ids)
			return nil, ctx.Err()
		case <-time.After(time.Until(t0.Add(j.At))):
		}
		wg.Add(1)
		go func(i int, j Job) { // a slow submission never delays the next arrival
			defer wg.Done()
			name := fmt.Sprintf("%s-%02d", prefix, j.Index)
			subs[i].Job = j
			subs[i].Arrival = time.Now()
			if which == "sbatch" {
				id, cl, err := b.sbatch(ctx, name, j)
				subs[i].Keys, errs[i] = []JobKey{{Cluster: cl, JobID: id, Name: name}}, err
			} else {
				ids[i], errs[i] = b.mosaic.submit(ctx, name, j)
			}
		}(i, j)
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		b.cancelAll(which, subs, ids)
		return nil, fmt.Errorf("%s side of seed %d: %w", which, seed, err)
	}
	deadline := time.Now().Add(b.c.drainTimeout)
	if which == "sbatch" {
		if err := b.drainSlurm(ctx, prefix, deadline); err != nil {
			b.cancelAll(which, subs, ids)
			return nil, err
		}
	} else {
		if err := b.mosaic.drain(ctx, ids, deadline); err != nil {
			b.cancelAll(which, subs, ids)
			return nil, err
		}
		for i, id := range ids {
			t, err := b.mosaic.task(ctx, id)
			if err != nil {
				return nil, err
			}
			for _, a := range t.Attempts {
				if a.JobID != "" {
					subs[i].Keys = append(subs[i].Keys, JobKey{Cluster: a.System, JobID: a.JobID, Name: a.Tag})
				}
			}
		}
	}
	s := &side{Name: which, Elapsed: time.Since(t0)}
	// slurmdbd records starts asynchronously: ask until every job is there (bounded).
	var lastErr error
	for try := 0; try < 30; try++ {
		rows, err := b.sacct(ctx, t0.Add(-time.Minute))
		if err == nil {
			if s.Results, err = Waits(subs, rows); err == nil {
				ours := map[[2]string]bool{}
				end := t0
				for _, sb := range subs {
					for _, k := range sb.Keys {
						ours[[2]string{k.Cluster, k.JobID}] = true
					}
				}
				for _, r := range rows {
					if ours[[2]string{r.Cluster, r.JobID}] && r.End.After(end) {
						end = r.End
					}
				}
				s.Foreign = ForeignUse(rows, ours, t0, end)
				break
			}
		}
		lastErr = err
		if sleepCtx(ctx, time.Second) != nil {
			return nil, ctx.Err()
		}
	}
	if s.Results == nil {
		return nil, fmt.Errorf("%s side of seed %d: %w", which, seed, lastErr)
	}
	after := b.bootTimes(ctx)
	for _, c := range b.clusters {
		if boots[c] != after[c] {
			s.Restarted = append(s.Restarted, c)
		}
	}
	s.Summary = Summarize(s.Results)
	for _, r := range s.Results {
		_ = b.csv.Write([]string{strconv.FormatUint(seed, 10), which, strconv.Itoa(r.Job.Index),
			fmt.Sprintf("%.1f", r.Job.At.Seconds()), strconv.Itoa(r.Job.GPUs), strconv.Itoa(int(r.Job.Runtime.Seconds())),
			strconv.Itoa(r.Job.WallMinutes()), strconv.Itoa(int(r.Wait.Seconds())), r.Cluster, strconv.Itoa(r.Jobs), strconv.Itoa(int(r.Lag.Seconds()))})
	}
	return s, nil
}

func printSide(label string, s *side) {
	sites := []string{}
	for _, c := range []string{"alpha", "beta"} {
		sites = append(sites, fmt.Sprintf("%s %d", c, s.Summary.PerSite[c]))
	}
	fmt.Printf("  %-24s mean %6.1fs  p95 %5.0fs  max %5.0fs  (%s; moved %d; mean lag to the first submit %.1fs; took %s)\n", label,
		s.Summary.Mean.Seconds(), s.Summary.P95.Seconds(), s.Summary.Max.Seconds(), strings.Join(sites, ", "), s.Summary.Moved,
		s.Summary.MeanLag.Seconds(), s.Elapsed.Round(time.Second))
	if s.Foreign.GPUJobs > 0 {
		fmt.Printf("  %-24s WARNING: %d GPU job(s) of other rig users ran meanwhile (%.0f GPU·s, e.g. %s): this side's waits include their load\n",
			"", s.Foreign.GPUJobs, s.Foreign.GPUSeconds, strings.Join(s.Foreign.Names, ", "))
	}
	if len(s.Restarted) > 0 {
		fmt.Printf("  %-24s WARNING: slurmctld of %s restarted meanwhile (another rig user's test): jobs sent then could not go there\n", "", strings.Join(s.Restarted, ", "))
	}
	if s.Foreign.Jobs > s.Foreign.GPUJobs {
		fmt.Printf("  %-24s note: %d CPU-only job(s) of other rig users ran meanwhile (foreign jobs' core·s: %.0f; the stream asks 2 cores per GPU, so cores rarely decide)\n",
			"", s.Foreign.Jobs-s.Foreign.GPUJobs, s.Foreign.CPUSeconds)
	}
}

func printTable(rs []streamResult) {
	if len(rs) == 0 {
		return
	}
	fmt.Printf("\n%-6s %-5s %-5s %-17s %-17s %-10s %-10s %-14s %s\n", "seed", "jobs", "load", "sbatch-M mean/p95", "mosaic mean/p95", "ratio mean", "ratio p95", "foreign GPU·s", "clean")
	type acc struct {
		sumM, sumP, sbM, moM float64
		n                    int
	}
	var all, clean acc
	for _, r := range rs {
		sb, mo := "-", "-"
		fg := 0.0
		if r.Sbatch != nil {
			sb = fmt.Sprintf("%.1fs / %.0fs", r.Sbatch.Summary.Mean.Seconds(), r.Sbatch.Summary.P95.Seconds())
			fg += r.Sbatch.Foreign.GPUSeconds
		}
		if r.Mosaic != nil {
			mo = fmt.Sprintf("%.1fs / %.0fs", r.Mosaic.Summary.Mean.Seconds(), r.Mosaic.Summary.P95.Seconds())
			fg += r.Mosaic.Foreign.GPUSeconds
		}
		ok := r.Sbatch.Clean() && r.Mosaic.Clean()
		fmt.Printf("%-6d %-5d %-5.2f %-17s %-17s %-10s %-10s %-14.0f %s\n", r.Seed, len(r.Jobs), r.Load, sb, mo, fmtRatio(r.MeanRate), fmtRatio(r.P95Rate), fg, map[bool]string{true: "yes", false: "no"}[ok])
		if r.Sbatch != nil && r.Mosaic != nil && !math.IsNaN(r.MeanRate) && !math.IsNaN(r.P95Rate) {
			for _, a := range []*acc{&all, &clean} {
				if a == &clean && !ok {
					continue
				}
				a.sumM += r.MeanRate
				a.sumP += r.P95Rate
				a.sbM += r.Sbatch.Summary.Mean.Seconds()
				a.moM += r.Mosaic.Summary.Mean.Seconds()
				a.n++
			}
		}
	}
	for _, x := range []struct {
		what string
		a    acc
	}{{"all", all}, {"clean", clean}} {
		if x.a.n == 0 {
			continue
		}
		n := float64(x.a.n)
		fmt.Printf("%s streams (%d): mean of per-stream ratios: mean %.2f, p95 %.2f; mean of mean waits: sbatch -M %.1fs, mosaic %.1fs (ratio %.2f)\n",
			x.what, x.a.n, x.a.sumM/n, x.a.sumP/n, x.a.sbM/n, x.a.moM/n, x.a.moM/x.a.sbM)
	}
}

func fmtRatio(v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	return fmt.Sprintf("%.2f", v)
}

// slurm runs a Slurm client command on this machine against the rig.
func (b *bench) slurm(ctx context.Context, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Env = append(os.Environ(), "SLURM_CONF="+b.conf, "SLURM_TIME_FORMAT=%s")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err != nil {
		return out.String() + errb.String(), fmt.Errorf("%s: %w", args[0], err)
	}
	return out.String(), nil
}

// sbatch sends a job the way a user of both clusters does without Mosaic: -M lists
// both, Slurm picks the one whose will-run test says it starts first.
func (b *bench) sbatch(ctx context.Context, name string, j Job) (jobID, cluster string, err error) {
	out, err := b.slurm(ctx, "sbatch", "--parsable", "-M", "alpha,beta", "-p", "gpuA100", "-A", b.rig["RIG_ACCOUNT"],
		"-J", name, "-N", "1", "-n", "1", "-c", strconv.Itoa(j.CPUs()), "--mem="+strconv.Itoa(j.MemGB())+"G",
		"--gres=gpu:"+b.rig["RIG_GPU_TYPE"]+":"+strconv.Itoa(j.GPUs), "-t", strconv.Itoa(j.WallMinutes()),
		"-o", "/dev/null", "-e", "/dev/null", "-D", "/tmp", "--wrap", "sleep "+strconv.Itoa(int(j.Runtime.Seconds())))
	if err != nil {
		return "", "", fmt.Errorf("sbatch -M alpha,beta %s: %w: %s", name, err, strings.TrimSpace(out))
	}
	return ParseSbatchParsable(out)
}

// queuedNames lists the rig's queued/running jobs as "name|gres" lines.
func (b *bench) queued(ctx context.Context) ([]string, error) {
	out, err := b.slurm(ctx, "squeue", "-M", "alpha,beta", "-h", "-t", "PD,R,CG,S,CF", "-o", "%j|%b")
	if err != nil {
		return nil, fmt.Errorf("%w: %s", err, strings.TrimSpace(out))
	}
	return QueueLines(out), nil
}

// drainSlurm waits until no job named prefix-… is queued or running.
func (b *bench) drainSlurm(ctx context.Context, prefix string, deadline time.Time) error {
	for time.Now().Before(deadline) {
		lines, err := b.queued(ctx)
		if err != nil {
			return err
		}
		left := 0
		for _, l := range lines {
			if strings.HasPrefix(l, prefix+"-") {
				left++
			}
		}
		if left == 0 {
			return nil
		}
		if err := sleepCtx(ctx, time.Second); err != nil {
			return err
		}
	}
	return fmt.Errorf("jobs %s-* still queued after --drain-timeout %s; look at squeue -M alpha,beta", prefix, b.c.drainTimeout)
}

// waitIdle waits (bounded) until no GPU job is queued or running on the rig, so each
// side starts on empty clusters; other engineers share the rig.
func (b *bench) waitIdle(ctx context.Context) {
	deadline := time.Now().Add(b.c.idleTimeout)
	for {
		lines, err := b.queued(ctx)
		busy := []string{}
		for _, l := range lines {
			if GPUJobLine(l) {
				busy = append(busy, l)
			}
		}
		if err == nil && len(busy) == 0 {
			_ = sleepCtx(ctx, 2*time.Second) // let the last job's epilog finish
			return
		}
		if !time.Now().Before(deadline) || ctx.Err() != nil {
			fmt.Printf("  WARNING: the rig's GPUs are not free after %s (%v %v); starting anyway\n", b.c.idleTimeout, busy, err)
			return
		}
		_ = sleepCtx(ctx, 2*time.Second)
	}
}

// bootTimes reads each cluster's slurmctld start time (0 when it does not answer).
func (b *bench) bootTimes(ctx context.Context) map[string]int64 {
	m := map[string]int64{}
	for _, c := range b.clusters {
		out, err := b.slurm(ctx, "scontrol", "-M", c, "show", "config")
		if err == nil {
			m[c], _ = ParseBootTime(out)
		}
	}
	return m
}

func (b *bench) sacct(ctx context.Context, since time.Time) ([]SacctRow, error) {
	out, err := b.slurm(ctx, "sacct", "-M", "alpha,beta", "-X", "-n", "-P", "-o", sacctFields,
		"-S", since.Format("2006-01-02T15:04:05"), "-E", "now")
	if err != nil {
		return nil, fmt.Errorf("%w: %s", err, strings.TrimSpace(out))
	}
	return ParseSacct(out)
}

// cancelAll takes a failed side's jobs off the rig (best effort).
func (b *bench) cancelAll(which string, subs []Submitted, ids []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if which == "mosaic" {
		for _, id := range ids {
			if id != "" {
				_, _ = b.mosaic.cli(ctx, "cancel", id)
			}
		}
		return
	}
	for _, s := range subs {
		for _, k := range s.Keys {
			if k.JobID != "" {
				_, _ = b.slurm(ctx, "scancel", "-M", k.Cluster, k.JobID)
			}
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// core is the Mosaic core of the run: one `mosaic serve` with the two rig clusters
// over ssh in its catalog, in an isolated home (own token, own SQLite store).
type core struct {
	bin, url, home, sites string
	env                   []string
	cmd                   *exec.Cmd
	done                  chan struct{}
}

func startCore(ctx context.Context, c config, rig map[string]string) (*core, error) {
	home := filepath.Join(c.out, "mosaic-home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		return nil, err
	}
	var sb strings.Builder
	sb.WriteString("# written by scripts/bench/rigplace: the two rig clusters over ssh\nsystems:\n")
	for _, cl := range []string{"alpha", "beta"} {
		up := strings.ToUpper(cl)
		host := rig["RIG_SSH_HOST_"+up]
		if host == "" {
			host = "rig-" + cl
		}
		fmt.Fprintf(&sb, "  - name: %s\n    kind: ssh\n    host: %s\n    ssh: {config_file: %s}\n    accounts: [%s]\n    workdir: %s\n    order_own_jobs: %s\n",
			cl, host, rig["RIG_SSH_CONFIG"], rig["RIG_ACCOUNT"], rig["RIG_WORKDIR_"+up], c.order)
		if strings.EqualFold(c.order, site.OrderSmallestFirst) {
			fmt.Fprintf(&sb, "    order_nice_step: %d\n", c.niceStep)
		}
	}
	sites := filepath.Join(c.out, "sites.yaml")
	if err := os.WriteFile(sites, []byte(sb.String()), 0o600); err != nil {
		return nil, err
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	k := &core{bin: c.mosaic, url: "http://" + addr, home: home, sites: sites, done: make(chan struct{})}
	k.env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, "config"),
		"XDG_STATE_HOME="+filepath.Join(home, "state"), "MOSAIC_URL="+k.url, "NO_COLOR=1")
	logf, err := os.OpenFile(filepath.Join(c.out, "serve.log"), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, err
	}
	k.cmd = exec.Command(c.mosaic, "serve", "--addr", addr, "--sites", sites, "--tick", c.tick.String(), "--headless")
	k.cmd.Env, k.cmd.Dir, k.cmd.Stdout, k.cmd.Stderr = k.env, home, logf, logf
	if err := k.cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start mosaic serve: %w", err)
	}
	go func() { _ = k.cmd.Wait(); logf.Close(); close(k.done) }()
	// Ready when healthy and both clusters have been probed healthy.
	for i := 0; i < 120; i++ {
		if resp, err := http.Get(k.url + "/healthz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				out, err := k.cli(ctx, "resources", "--json")
				if err == nil {
					if h, err := ParseHealth([]byte(out)); err == nil && h["alpha"] == "ok" && h["beta"] == "ok" {
						return k, nil
					}
				}
			}
		}
		select {
		case <-k.done:
			return nil, fmt.Errorf("mosaic serve exited; see %s", filepath.Join(c.out, "serve.log"))
		case <-ctx.Done():
			k.stop()
			return nil, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	k.stop()
	return nil, fmt.Errorf("mosaic serve did not see alpha and beta healthy within 60s; see %s", filepath.Join(c.out, "serve.log"))
}

func freeAddr() (string, error) {
	l, err := netListen()
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// stop ends the core this program started (by its own process handle).
func (k *core) stop() {
	if k == nil || k.cmd == nil || k.cmd.Process == nil {
		return
	}
	_ = k.cmd.Process.Signal(os.Interrupt)
	select {
	case <-k.done:
	case <-time.After(15 * time.Second):
		_ = k.cmd.Process.Kill()
		<-k.done
	}
}

func (k *core) cli(ctx context.Context, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, k.bin, args...)
	cmd.Env, cmd.Dir = k.env, k.home
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("mosaic %s: %w: %s", args[0], err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}

// submit sends the job through Mosaic with the same request as the sbatch side: the
// GPUs, cores, memory and walltime fixed (envelope min = max), placement left to it.
func (k *core) submit(ctx context.Context, name string, j Job) (string, error) {
	out, err := k.cli(ctx, "submit", "--json=task", "--name", name, "--command", "sleep "+strconv.Itoa(int(j.Runtime.Seconds())),
		"--gpus", strconv.Itoa(j.GPUs), "--cpus", strconv.Itoa(j.CPUs()), "--mem", strconv.Itoa(j.MemGB()),
		"--walltime", strconv.Itoa(j.WallMinutes())+"m")
	if err != nil {
		return "", err
	}
	return ParseSubmittedID([]byte(out))
}

func (k *core) task(ctx context.Context, id string) (TaskView, error) {
	out, err := k.cli(ctx, "task", id, "--json")
	if err != nil {
		return TaskView{}, err
	}
	return ParseTask([]byte(out))
}

// drain waits until every task has ended.
func (k *core) drain(ctx context.Context, ids []string, deadline time.Time) error {
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	for time.Now().Before(deadline) {
		out, err := k.cli(ctx, "tasks", "--json=id,state", "--limit", "10000")
		if err != nil {
			return err
		}
		states, err := ParseTaskStates([]byte(out))
		if err != nil {
			return err
		}
		left := 0
		for id := range want {
			switch states[id] {
			case "succeeded":
			case "failed", "cancelled":
				return fmt.Errorf("mosaic task %s ended %s; see mosaic task %s (MOSAIC_URL=%s)", id, states[id], id, k.url)
			default:
				left++
			}
		}
		if left == 0 {
			return nil
		}
		if err := sleepCtx(ctx, time.Second); err != nil {
			return err
		}
	}
	return fmt.Errorf("mosaic tasks not done after --drain-timeout; see mosaic tasks (MOSAIC_URL=%s)", k.url)
}
