package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	v1 "github.com/mosaic-hpc/mosaic/api/v1"
	"github.com/mosaic-hpc/mosaic/client"
	"github.com/mosaic-hpc/mosaic/internal/core"
	"github.com/mosaic-hpc/mosaic/internal/model"
)

// parseIntRange reads "4", "1..4" or "1-4".
func parseIntRange(flag, s string) (model.IntRange, error) {
	s = strings.TrimSpace(s)
	lo, hi, ok := strings.Cut(s, "..")
	if !ok {
		lo, hi, ok = strings.Cut(s, "-")
	}
	if !ok {
		hi = lo
	}
	a, err1 := strconv.Atoi(strings.TrimSpace(lo))
	b, err2 := strconv.Atoi(strings.TrimSpace(hi))
	if err1 != nil || err2 != nil {
		return model.IntRange{}, fmt.Errorf("--%s %q: want N or MIN..MAX, e.g. 1..4", flag, s)
	}
	return model.IntRange{Min: a, Max: b}, nil
}

// parseDurationRange reads "2h" or "1h..4h" (Slurm forms such as 1-00:00:00 allowed).
func parseDurationRange(flag, s string) (model.DurationRange, error) {
	lo, hi, ok := strings.Cut(strings.TrimSpace(s), "..")
	if !ok {
		hi = lo
	}
	a, err := model.ParseDuration(lo)
	if err != nil {
		return model.DurationRange{}, fmt.Errorf("--%s: %w", flag, err)
	}
	b, err := model.ParseDuration(hi)
	if err != nil {
		return model.DurationRange{}, fmt.Errorf("--%s: %w", flag, err)
	}
	return model.DurationRange{Min: a, Max: b}, nil
}

type submitFlags struct {
	name, command, scriptFile, description, envelopeFile string
	auto                                                 bool
	gpus, cpus, mem, nodes, walltime                     string
	gpuModel, avoidGPU, arch, avoid, features            string
	gpuMem                                               int
	objective, maxWait, target, container                string
	dryRun, wait                                         bool
	waitTimeout                                          time.Duration
}

func (f *submitFlags) request(cmd *cobra.Command) (client.SubmitRequest, error) {
	req := client.SubmitRequest{Name: f.name, Command: f.command, Description: f.description,
		AutoEnvelope: f.auto, Target: f.target, Objective: f.objective, DryRun: f.dryRun}
	if f.scriptFile != "" {
		b, err := os.ReadFile(f.scriptFile)
		if err != nil {
			return req, err
		}
		req.Script = string(b)
	}
	fl := cmd.Flags()
	inline := false
	for _, n := range []string{"gpus", "cpus", "mem", "nodes", "walltime", "gpu-model", "avoid-gpu-model", "gpu-mem", "arch", "avoid", "features", "max-queue-wait", "container"} {
		inline = inline || fl.Changed(n)
	}
	if f.envelopeFile != "" && inline {
		return req, errors.New("give --envelope FILE or envelope flags (--gpus, --walltime, …), not both")
	}
	if f.auto && (f.envelopeFile != "" || inline) {
		return req, errors.New("--auto-envelope drafts the envelope from --description; drop the envelope flags or --auto-envelope")
	}
	switch {
	case f.envelopeFile != "":
		b, err := os.ReadFile(f.envelopeFile)
		if err != nil {
			return req, err
		}
		var env model.Envelope
		if strings.HasSuffix(f.envelopeFile, ".json") {
			env, err = model.DecodeEnvelopeJSON(b)
		} else {
			env, err = model.DecodeEnvelopeYAML(b)
		}
		if err != nil {
			return req, fmt.Errorf("%s: %w", f.envelopeFile, err)
		}
		we := core.V1Envelope(env)
		req.Envelope = &we
	case inline:
		env := model.Envelope{}
		var err error
		set := func(name, v string, dst *model.IntRange) {
			if err == nil && v != "" {
				*dst, err = parseIntRange(name, v)
			}
		}
		set("gpus", f.gpus, &env.GPUs)
		set("cpus", f.cpus, &env.CPUCores)
		set("mem", f.mem, &env.MemoryGB)
		set("nodes", f.nodes, &env.Nodes)
		if err == nil && f.walltime != "" {
			env.Walltime, err = parseDurationRange("walltime", f.walltime)
		}
		if err == nil && f.maxWait != "" {
			env.MaxQueueWait, err = model.ParseDuration(f.maxWait)
		}
		if err != nil {
			return req, err
		}
		env.Constraints = model.Constraints{GPUModels: model.SplitList(f.gpuModel), AvoidGPUModels: model.SplitList(f.avoidGPU),
			Arch: model.SplitList(f.arch), AvoidSystems: model.SplitList(f.avoid), Features: model.SplitList(f.features), MinGPUMemoryGB: f.gpuMem}
		if f.container != "" {
			ct, err := model.ParseContainerRef(f.container)
			if err != nil {
				return req, fmt.Errorf("--container %w", err)
			}
			env.Constraints.Container = ct
		}
		we := core.V1Envelope(env)
		req.Envelope = &we
	}
	return req, nil
}

func newSubmitCmd() *cobra.Command {
	var f submitFlags
	var j jsonFlag
	cmd := &cobra.Command{
		Use:   "submit --name NAME --command \"…\" [envelope] [--target SYSTEM[:PARTITION]]",
		Short: "Place a task on the federation and run it (or --dry-run to see the decision)",
		Long: `Place a task where it can start soonest inside its resource envelope, and run it.

The envelope is a range [min viable, max useful] per resource: give it with flags
(--gpus 1..4 --walltime 1h..4h --gpu-mem 40), from a file (--envelope env.yaml), or
let Mosaic draft it from a description (--auto-envelope --description "…").
--target pins the task (the rules still apply). --dry-run prints the candidate table:
every system and partition, each rule's verdict, the sizing, scores and ranks.
--wait follows the task to the end; the exit code mirrors the job's.`,
		Example: `  mosaic submit --name train --command "python train.py" --gpus 1..4 --gpu-mem 40 --walltime 2h..6h --dry-run
  mosaic submit --name infer --command "./run.sh" --auto-envelope --description "7B model inference, about 1 hour" --wait
  mosaic submit --name mpi --command "srun ./a.out" --cpus 128..512 --nodes 1..4 --walltime 4h --target frontera:normal`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			// Check --json against what will be printed before submitting: failing
			// after the submission would leave a task a retry duplicates.
			var prints any = client.SubmitResult{}
			if f.wait && !f.dryRun {
				prints = client.TaskDetail{}
			}
			if err := j.checkFor(prints); err != nil {
				return err
			}
			req, err := f.request(cmd)
			if err != nil {
				return usage(err) // a flag or input file; nothing was submitted
			}
			c, err := newClient()
			if err != nil {
				return err
			}
			res, err := c.Submit(cmd.Context(), req)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if j.set && !f.wait {
				return submittedButNotPrinted(res.Task, j.print(out, res))
			}
			if res.DryRun {
				d, err := core.DecisionFromV1(res.Decision)
				if err != nil {
					return err
				}
				if err := d.Table(out); err != nil {
					return err
				}
				if a, err := c.About(cmd.Context()); err == nil {
					printSimFooter(out, res.Decision, a.Sim)
				}
				return nil
			}
			t := res.Task
			if !j.set {
				if d := res.Decision; d != nil {
					fmt.Fprintf(out, "task %s placed on %s (%s, ranker %s)\n", t.ID, d.Chosen, d.Mode, d.Ranker)
					fmt.Fprintf(out, "  why: %s\n", d.Rationale)
				} else { // an older core's answer to a replayed submission carries none
					fmt.Fprintf(out, "task %s (submitted before, under this idempotency key)\n", t.ID)
				}
				if t.DraftFallback != "" {
					fmt.Fprintf(out, "  envelope drafted heuristically: %s\n", t.DraftFallback)
				}
				if n := len(t.Attempts); n > 0 {
					a := t.Attempts[n-1]
					fmt.Fprintf(out, "  attempt %d: %s:%s job %s (%s)\n", a.N, a.System, a.Partition, dash(a.JobID), a.State)
				}
			}
			if !f.wait {
				fmt.Fprintf(out, "follow it with: mosaic task %s   or   mosaic events --task %s --follow\n", t.ID, t.ID)
				return nil
			}
			final, err := waitTask(cmd.Context(), c, t.ID, f.waitTimeout, cmd.ErrOrStderr(), !j.set)
			if err != nil {
				return err
			}
			if j.set {
				if err := j.print(out, final); err != nil {
					return submittedButNotPrinted(final, err)
				}
			}
			return exitForTask(final)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.name, "name", "", "task name (required)")
	fl.StringVar(&f.command, "command", "", "shell command the job runs")
	fl.StringVar(&f.scriptFile, "script", "", "file with the batch script body (instead of --command)")
	fl.StringVar(&f.description, "description", "", "what the task does (drafts the envelope with --auto-envelope)")
	fl.BoolVar(&f.auto, "auto-envelope", false, "draft the envelope from --description (LLM when configured, heuristics otherwise)")
	fl.StringVar(&f.envelopeFile, "envelope", "", "envelope file (.yaml or .json)")
	fl.StringVar(&f.gpus, "gpus", "", "GPUs in total: N or MIN..MAX")
	fl.StringVar(&f.cpus, "cpus", "", "CPU cores in total: N or MIN..MAX")
	fl.StringVar(&f.mem, "mem", "", "memory in GB in total: N or MIN..MAX")
	fl.StringVar(&f.nodes, "nodes", "", "nodes: N or MIN..MAX (default 1)")
	fl.StringVar(&f.walltime, "walltime", "", "walltime: 2h or MIN..MAX (1h..6h, HH:MM:SS, D-HH:MM:SS)")
	fl.StringVar(&f.gpuModel, "gpu-model", "", "allowed GPU models, comma-separated (A100,H100)")
	fl.StringVar(&f.avoidGPU, "avoid-gpu-model", "", "GPU models to avoid, comma-separated")
	fl.IntVar(&f.gpuMem, "gpu-mem", 0, "minimum memory per GPU (GB)")
	fl.StringVar(&f.arch, "arch", "", "allowed architectures (x86_64,aarch64)")
	fl.StringVar(&f.avoid, "avoid", "", "systems never to use, comma-separated")
	fl.StringVar(&f.features, "features", "", "required site features, comma-separated")
	fl.StringVar(&f.container, "container", "", "run in a container: apptainer:IMAGE")
	fl.StringVar(&f.objective, "objective", "", "earliest_start (default), fastest_finish, max_throughput or min_cost")
	fl.StringVar(&f.maxWait, "max-queue-wait", "", "move the task if it waits longer than this (e.g. 30m)")
	fl.StringVar(&f.target, "target", "", "pin to SYSTEM or SYSTEM:PARTITION")
	fl.BoolVar(&f.dryRun, "dry-run", false, "print the decision (candidate table) without submitting")
	fl.BoolVar(&f.wait, "wait", false, "follow the task to the end; exit code mirrors the job's")
	fl.DurationVar(&f.waitTimeout, "wait-timeout", 0, "give up waiting after this long (the task goes on)")
	cmd.MarkFlagRequired("name")
	addJSONFlag(cmd, &j, client.SubmitResult{}, client.TaskDetail{})
	for flag, fn := range map[string]cobra.CompletionFunc{"gpu-model": completeGPUModels, "avoid-gpu-model": completeGPUModels,
		"arch": completeArchList, "avoid": completeSystemList, "objective": completeObjectives, "target": completeTarget} {
		_ = cmd.RegisterFlagCompletionFunc(flag, fn)
	}
	_ = cmd.RegisterFlagCompletionFunc("envelope", fileExt("yaml", "yml", "json"))
	return cmd
}

// Wait bounds: the slow safety poll in case the event stream breaks without the
// client noticing, the re-check shortly after an event (a task's state can change in
// the transaction after its event), and the poll used once the stream has given up.
const (
	waitSafetyPoll = 30 * time.Second
	waitRecheck    = time.Second
	waitFallback   = 5 * time.Second
	waitCoreGone   = 2 * time.Minute
)

// waitTask follows a task's events until it is final, printing state changes. Each
// event of the task triggers a fresh look at the task; a slow poll covers a stream
// that broke. A core restart in between is ridden out (bounded by waitCoreGone).
func waitTask(ctx context.Context, c *client.Client, id string, limit time.Duration, w io.Writer, progress bool) (*client.TaskDetail, error) {
	if limit > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, limit)
		defer cancel()
	}
	sctx, stop := signalContext()
	defer stop()
	start := time.Now()

	// Take the stream's position before the first look at the task: an event after it
	// is then never missed, however the two race.
	page, err := c.EventsPage(ctx, client.EventFilter{Task: id, Limit: 1})
	if err != nil {
		if ctx.Err() != nil && limit > 0 {
			return nil, waitTimeout(id, limit)
		}
		return nil, err
	}
	wake := make(chan struct{}, 1)
	streamDone := make(chan error, 1)
	fctx, cancelStream := context.WithCancel(ctx)
	defer cancelStream()
	go func() {
		streamDone <- c.FollowEvents(fctx, client.FollowOptions{Task: id, AfterID: page.LastID, ReconnectFor: waitCoreGone},
			func(client.Event) error {
				select {
				case wake <- struct{}{}:
				default:
				}
				return nil
			})
	}()
	safety := time.NewTicker(waitSafetyPoll)
	defer safety.Stop()
	recheck := time.NewTimer(time.Hour)
	recheck.Stop()
	last := ""
	var lostAt time.Time
	for {
		t, err := c.Task(ctx, id)
		switch {
		case err != nil && errors.Is(err, client.ErrNoCore) && ctx.Err() == nil:
			// The core is restarting: wait for the stream (or the polls) to bring it back.
			if lostAt.IsZero() {
				lostAt = time.Now()
			} else if time.Since(lostAt) > waitCoreGone {
				return nil, fmt.Errorf("%w; task %s goes on (mosaic task %s once the core is back)", err, id, id)
			}
			recheck.Reset(waitRecheck)
		case err != nil:
			if ctx.Err() != nil && limit > 0 {
				return nil, waitTimeout(id, limit)
			}
			return nil, err
		default:
			lostAt = time.Time{}
			line := string(t.State)
			if n := len(t.Attempts); n > 0 {
				a := t.Attempts[n-1]
				line = fmt.Sprintf("%s  attempt %d on %s:%s  job %s (%s)", t.State, a.N, a.System, a.Partition, dash(a.JobID), a.State)
			}
			if progress && line != last {
				fmt.Fprintf(w, "[%s] %s\n", fmtElapsed(time.Since(start)), line)
				last = line
			}
			if t.Final() {
				return t, nil
			}
		}
		select {
		case <-ctx.Done():
			if limit > 0 {
				return nil, waitTimeout(id, limit)
			}
			return nil, ctx.Err()
		case <-sctx.Done():
			return nil, &exitError{code: exitInterrupted, kind: kindInterrupted, taskID: id,
				msg: fmt.Sprintf("stopped waiting; task %s goes on (mosaic task %s, mosaic cancel %s)", id, id, id)}
		case <-wake:
			recheck.Reset(waitRecheck)
		case <-recheck.C:
		case <-safety.C:
		case err := <-streamDone:
			// The stream gave up (the core stayed away, or refused it): poll instead.
			if err != nil && ctx.Err() == nil {
				fmt.Fprintf(w, "mosaic: event stream ended (%v); checking every %s\n", err, waitFallback)
			}
			safety.Reset(waitFallback)
		}
	}
}

// submittedButNotPrinted is a --json path refused after the task was submitted (a
// key below the untyped decision, known only from the value): not a usage error —
// something was done — but an error naming the task, so a script does not resubmit.
func submittedButNotPrinted(t *client.TaskDetail, err error) error {
	if err == nil || t == nil || t.ID == "" {
		return err
	}
	return &exitError{code: exitMosaic, kind: kindError, taskID: t.ID,
		msg: fmt.Sprintf("task %s was submitted (mosaic task %s), but its JSON could not be printed: %v", t.ID, t.ID, err)}
}

// waitTimeout is --wait-timeout running out: not a failure of the task, which
// goes on; the message says how to follow it.
func waitTimeout(id string, limit time.Duration) error {
	return &exitError{code: exitMosaic, kind: kindWaitTimeout, taskID: id,
		msg: fmt.Sprintf("stopped waiting after %s (--wait-timeout); the task goes on; follow it with `mosaic logs -f %s` / `mosaic task %s`", limit, id, id)}
}

func fmtElapsed(d time.Duration) string {
	d = d.Round(time.Second)
	return fmt.Sprintf("%02d:%02d:%02d", int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60)
}

// exitForTask mirrors the job: 0 on success, the job's exit code on failure
// (jobExit: 1 when it has none or one that reads as Mosaic's own), 143 when the
// task was cancelled.
func exitForTask(t *client.TaskDetail) error {
	switch model.TaskState(t.State) {
	case model.TaskSucceeded:
		return nil
	case model.TaskCancelled:
		return &exitError{code: exitCancelled, kind: kindCancelled, taskID: t.ID, msg: fmt.Sprintf("task %s was cancelled: %s", t.ID, t.Reason)}
	}
	code, msg := exitTaskFailed, fmt.Sprintf("task %s %s: %s", t.ID, t.State, t.Reason)
	if n := len(t.Attempts); n > 0 && t.Attempts[n-1].ExitCode != nil && *t.Attempts[n-1].ExitCode != 0 {
		job := *t.Attempts[n-1].ExitCode
		code = jobExit(job)
		if note := jobExitNote(job, code); note != "" {
			msg += fmt.Sprintf("; the job exited %d %s", job, note)
		}
	}
	return &exitError{code: code, kind: kindTaskFailed, taskID: t.ID, msg: msg}
}

func newTaskCmd() *cobra.Command {
	var j jsonFlag
	cmd := &cobra.Command{
		Use:   "task ID",
		Short: "Show one task: state, attempts, decision and recent events",
		Example: `  mosaic task 7kq2m9xa
  mosaic task 7kq2m9xa --json=state,attempts.system,decision.chosen
  mosaic task 7kq2m9xa --jq '.attempts[-1].exit_code'`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeTaskArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := newClient()
			if err != nil {
				return err
			}
			t, err := c.Task(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if j.set {
				return j.print(cmd.OutOrStdout(), t)
			}
			out := cmd.OutOrStdout()
			tw := table(out)
			target := "auto"
			if t.Target != nil {
				target = t.Target.System
				if t.Target.Partition != "" {
					target += ":" + t.Target.Partition
				}
			}
			for _, kv := range [][2]string{{"id", t.ID}, {"name", t.Name}, {"state", string(t.State)}, {"reason", dash(t.Reason)},
				{"placement", target}, {"command", dash(t.Command)}, {"created", t.CreatedAt.Local().Format(time.DateTime)}} {
				fmt.Fprintf(tw, "%s\t%s\n", kv[0], kv[1])
			}
			tw.Flush()
			if len(t.Attempts) > 0 {
				fmt.Fprintln(out)
				tw = table(out)
				fmt.Fprintln(tw, "ATTEMPT\tSYSTEM\tPARTITION\tJOBID\tSTATE\tEXIT\tSIZING\tREASON")
				for _, a := range t.Attempts {
					exit := "-"
					if a.ExitCode != nil {
						exit = strconv.Itoa(*a.ExitCode)
					}
					spec := core.JobSpecFromV1(a.Spec)
					fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", a.N, a.System, a.Partition, dash(a.JobID), a.State, exit,
						spec.SizeCompact(), dash(clip(a.Reason, 60)))
				}
				tw.Flush()
			}
			if a, err := c.About(cmd.Context()); err == nil {
				printSimTimes(out, t.Attempts, a.Sim, time.Now())
			}
			// The newest 50 events, printed in the order they happened.
			evs, err := c.Events(cmd.Context(), client.EventFilter{Task: t.ID, Limit: 50})
			if err == nil && len(evs) > 0 {
				slices.Reverse(evs)
				fmt.Fprintln(out)
				printEvents(out, evs)
			}
			return nil
		},
	}
	addJSONFlag(cmd, &j, client.TaskDetail{})
	addWideFlag(cmd, &j)
	return cmd
}

// printSimFooter says, under a dry-run's candidate table, which candidates run on a
// simulated clock and what the chosen walltime and wait mean in real time.
func printSimFooter(w io.Writer, d *v1.Decision, sc *v1.SimClock) {
	if d == nil || sc == nil {
		return
	}
	var sims []string
	seen := map[string]bool{}
	for _, c := range d.Candidates {
		if _, ok := sc.Systems[c.System]; ok && c.Feasible && !seen[c.System] {
			seen[c.System] = true
			sims = append(sims, c.System)
		}
	}
	if len(sims) == 0 {
		return
	}
	sort.Strings(sims)
	fmt.Fprintf(w, "simulated time: %s run at %s (1h of walltime takes %s real time); walltimes and waits above are simulated\n",
		strings.Join(sims, ", "), core.SpeedText(sc.Speed), core.RealTime(time.Hour, sc.Speed))
	ch := d.ChosenCandidate()
	if ch == nil || d.Spec == nil {
		return
	}
	if speed, ok := sc.Systems[ch.System]; ok {
		fmt.Fprintf(w, "chosen on %s at %s: walltime %s takes %s real time, estimated wait %s takes %s\n", ch.System, core.SpeedText(speed),
			d.Spec.Walltime, core.RealTime(d.Spec.Walltime.D(), speed), ch.EstWait, core.RealTime(ch.EstWait.D(), speed))
	}
}

// printSimTimes gives, for each attempt on a simulated system, its walltime and
// elapsed time in both clocks (the attempt's times are the wall clock's).
func printSimTimes(w io.Writer, attempts []*v1.Attempt, sc *v1.SimClock, now time.Time) {
	if sc == nil {
		return
	}
	first := true
	for _, a := range attempts {
		speed, ok := sc.Systems[a.System]
		if !ok || speed <= 0 {
			continue
		}
		if first {
			fmt.Fprintf(w, "\nsimulated time (%s):\n", sc.Summary)
			first = false
		}
		line := fmt.Sprintf("  attempt %d on %s at %s: walltime %s takes %s real time", a.N, a.System, core.SpeedText(speed),
			a.Spec.Walltime, core.RealTime(a.Spec.Walltime.D(), speed))
		from, end, verb := a.StartedAt, now, "running for"
		switch {
		case a.StartedAt != nil && a.EndedAt != nil:
			end, verb = *a.EndedAt, "ran"
		case a.StartedAt == nil && a.State == string(model.JobPending):
			from, verb = &a.CreatedAt, "queued for"
		}
		if from != nil && !from.IsZero() {
			real := max(end.Sub(*from), 0)
			line += fmt.Sprintf("; %s %s real time = %s simulated", verb, model.Duration(real.Round(time.Second)),
				model.Duration(time.Duration(float64(real)*speed).Round(time.Second)))
		}
		fmt.Fprintln(w, line)
	}
}

// oneLine collapses whitespace and cuts s to n characters (an ellipsis last), except
// under --wide / -o wide.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); !wide && len(r) > n {
		s = string(r[:n-1]) + "…"
	}
	return s
}

func printEvents(w io.Writer, evs []client.Event) {
	tw := table(w)
	fmt.Fprintln(tw, "TIME\tTASK\tKIND\tACTOR\tMESSAGE\tWHY")
	for _, e := range evs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", e.Time.Local().Format("15:04:05"), dash(e.TaskID), e.Kind, e.Actor,
			clip(e.Message, 80), clip(e.Rationale, 100))
	}
	tw.Flush()
}

func newTasksCmd() *cobra.Command {
	var j jsonFlag
	var state string
	var limit int
	cmd := &cobra.Command{
		Use:   "tasks [--state running,queued]",
		Short: "List tasks, newest first",
		Example: `  mosaic tasks
  mosaic tasks --state running,queued --wide
  mosaic tasks --jq '.[] | select(.state == "failed") | .id'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := newClient()
			if err != nil {
				return err
			}
			ts, err := c.Tasks(cmd.Context(), model.SplitList(state), limit)
			if err != nil {
				return err
			}
			if j.set {
				return j.print(cmd.OutOrStdout(), ts)
			}
			tw := table(cmd.OutOrStdout())
			fmt.Fprintln(tw, "ID\tNAME\tSTATE\tSYSTEM\tPARTITION\tJOBID\tATTEMPTS\tSIZING\tUPDATED")
			for _, t := range ts {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", t.ID, clip(t.Name, 30), t.State, dash(t.System), dash(t.Partition),
					dash(t.JobID), t.Attempts, dash(t.Sizing), t.UpdatedAt.Local().Format("01-02 15:04:05"))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&state, "state", "", "only these states (comma-separated)")
	cmd.Flags().IntVar(&limit, "limit", 0, "at most this many")
	addJSONFlag(cmd, &j, []client.TaskSummary{})
	addWideFlag(cmd, &j)
	_ = cmd.RegisterFlagCompletionFunc("state", completeTaskStates)
	return cmd
}

func newCancelCmd() *cobra.Command {
	var j jsonFlag
	cmd := &cobra.Command{
		Use:   "cancel ID",
		Short: "Cancel a task's jobs at their sites",
		Example: `  mosaic cancel 7kq2m9xa
  mosaic cancel 7kq2m9xa --jq .state`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeTaskArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := newClient()
			if err != nil {
				return err
			}
			t, err := c.Cancel(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if j.set {
				return j.print(cmd.OutOrStdout(), t)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "task %s %s\n", t.ID, t.State)
			return nil
		},
	}
	addJSONFlag(cmd, &j, client.TaskDetail{})
	return cmd
}

func newReplanCmd() *cobra.Command {
	var j jsonFlag
	var clear bool
	cmd := &cobra.Command{
		Use:   "replan ID [--clear-target]",
		Short: "Place a task anew; a pending job is replaced (new one first, then the old one cancelled)",
		Example: `  mosaic replan 7kq2m9xa
  mosaic replan 7kq2m9xa --clear-target --json=attempts.system,attempts.partition`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeTaskArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := newClient()
			if err != nil {
				return err
			}
			t, err := c.Replan(cmd.Context(), args[0], clear)
			if err != nil {
				return err
			}
			if j.set {
				return j.print(cmd.OutOrStdout(), t)
			}
			if n := len(t.Attempts); n > 0 {
				a := t.Attempts[n-1]
				fmt.Fprintf(cmd.OutOrStdout(), "task %s: attempt %d on %s:%s (%s)\n", t.ID, a.N, a.System, a.Partition, a.State)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&clear, "clear-target", false, "drop the pin and let the meta-scheduler choose")
	addJSONFlag(cmd, &j, client.TaskDetail{})
	return cmd
}

func newLogsCmd() *cobra.Command {
	var j jsonFlag
	var attempt, tail int
	var follow bool
	cmd := &cobra.Command{
		Use:   "logs TASK [-f]",
		Short: "Show the stdout/stderr tails of a task's job (also after a restart of the core); -f follows them",
		Long: `Show the ends of a task's job output (stdout, then stderr; at most --tail bytes of each,
default 64 KiB), read from the site even after a restart of the core.

-f/--follow keeps printing what the job writes, stdout to stdout and stderr to stderr,
every 2 seconds, across retries and migrations (a new attempt is announced on stderr),
until the task ends; Ctrl-C stops following (the task goes on). Output written faster
than --tail bytes per 2 seconds is shown from the newest --tail bytes, after a "…" line.`,
		Example: `  mosaic logs 7kq2m9xa
  mosaic logs 7kq2m9xa -f
  mosaic logs 7kq2m9xa --attempt 1 --tail 4096
  mosaic logs 7kq2m9xa --jq .stderr`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeTaskArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			if follow && j.set {
				return usagef("--follow prints the output as it comes; it does not combine with --json or --jq")
			}
			c, err := newClient()
			if err != nil {
				return err
			}
			if follow {
				return followLogs(cmd.Context(), c, args[0], attempt, tail, cmd.OutOrStdout(), cmd.ErrOrStderr())
			}
			l, err := c.TaskLogs(cmd.Context(), args[0], attempt, tail)
			if err != nil {
				return err
			}
			if j.set {
				return j.print(cmd.OutOrStdout(), l)
			}
			out := cmd.OutOrStdout()
			if l.Note != "" {
				fmt.Fprintf(cmd.ErrOrStderr(), "mosaic: %s\n", l.Note)
			}
			fmt.Fprintf(out, "==> stdout (%s) <==\n%s", dash(l.StdoutPath), l.Stdout)
			if l.Stdout != "" && !strings.HasSuffix(l.Stdout, "\n") {
				fmt.Fprintln(out)
			}
			fmt.Fprintf(out, "==> stderr (%s) <==\n%s", dash(l.StderrPath), l.Stderr)
			if l.Stderr != "" && !strings.HasSuffix(l.Stderr, "\n") {
				fmt.Fprintln(out)
			}
			return nil
		},
	}
	cmd.Flags().IntVar(&attempt, "attempt", 0, "attempt number (default: the latest)")
	cmd.Flags().IntVar(&tail, "tail", 0, "bytes from the end of each stream (default 64 KiB)")
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing new output until the task ends (Ctrl-C stops following; the task goes on)")
	addJSONFlag(cmd, &j, client.Logs{})
	return cmd
}

// logsFollowEvery is how often logs --follow reads the job's output.
const logsFollowEvery = 2 * time.Second

// followLogs prints a task's job output as it grows until the task is final (then
// once more, for what the job wrote last) or Ctrl-C. attempt 0 follows the latest
// attempt, announcing each new one on errw.
func followLogs(ctx context.Context, c *client.Client, id string, attempt, tail int, out, errw io.Writer) error {
	sctx, stop := signalContext()
	defer stop()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		<-sctx.Done()
		cancel()
	}()
	var prevOut, prevErr string
	shown := -1 // the attempt whose output is being shown
	waiting := false
	for {
		t, err := c.Task(ctx, id)
		if err != nil {
			return followStopped(ctx, sctx, id, err)
		}
		l, err := c.TaskLogs(ctx, id, attempt, tail)
		var api *client.APIError
		switch {
		case err != nil && errors.As(err, &api) && api.Status == http.StatusNotFound && !t.Final():
			// No job yet (the task exists: it was just read): wait for one.
			if !waiting {
				fmt.Fprintf(errw, "mosaic: task %s has no job yet (%s); waiting for one\n", id, t.State)
				waiting = true
			}
			l = nil
		case err != nil:
			return followStopped(ctx, sctx, id, err)
		}
		if l == nil {
			select {
			case <-ctx.Done():
				return followStopped(ctx, sctx, id, ctx.Err())
			case <-time.After(logsFollowEvery):
			}
			continue
		}
		if l.Attempt != shown {
			if shown >= 0 {
				fmt.Fprintf(errw, "mosaic: attempt %d on %s (job %s)\n", l.Attempt, l.System, dash(l.JobID))
			}
			shown, prevOut, prevErr = l.Attempt, "", ""
		}
		if _, err := io.WriteString(out, newOutput(prevOut, l.Stdout)); err != nil {
			return err
		}
		if _, err := io.WriteString(errw, newOutput(prevErr, l.Stderr)); err != nil {
			return err
		}
		prevOut, prevErr = l.Stdout, l.Stderr
		if t.Final() {
			return nil
		}
		select {
		case <-ctx.Done():
			return followStopped(ctx, sctx, id, ctx.Err())
		case <-time.After(logsFollowEvery):
		}
	}
}

// followStopped is the error of a follow that ended early: Ctrl-C (130, the task
// goes on) or what went wrong.
func followStopped(ctx, sctx context.Context, id string, err error) error {
	if sctx.Err() != nil {
		return &exitError{code: exitInterrupted, kind: kindInterrupted, taskID: id,
			msg: fmt.Sprintf("stopped following; task %s goes on (mosaic task %s, mosaic cancel %s)", id, id, id)}
	}
	return err
}

// newOutput is what cur (the newest tail of a stream) adds to prev (the tail shown
// before). Below the tail window cur starts with prev; once the stream outgrows it
// the window slides, and the new part starts after the longest end of prev that
// begins cur. With no overlap at all (more was written than the window holds, or
// the file was rewritten) it is cur after a "…" line.
func newOutput(prev, cur string) string {
	if strings.HasPrefix(cur, prev) {
		return cur[len(prev):]
	}
	// The overlap is a suffix of prev that begins cur. One at least k bytes long
	// starts where cur's first k bytes occur in prev: try those places, the longest
	// overlap (leftmost) first, at most maxOverlapTries of them (repetitive output
	// could offer very many); a shorter one is one of the last k-1 places.
	k := min(len(cur), 32)
	anchor := cur[:k]
	for i, tries := 0, 0; k > 0 && tries < maxOverlapTries; tries++ {
		j := strings.Index(prev[i:], anchor)
		if j < 0 {
			break
		}
		if start := i + j; strings.HasPrefix(cur, prev[start:]) {
			return cur[len(prev)-start:]
		}
		i += j + 1
	}
	for start := max(0, len(prev)-k+1); start < len(prev); start++ {
		if strings.HasPrefix(cur, prev[start:]) {
			return cur[len(prev)-start:]
		}
	}
	if cur == "" {
		return ""
	}
	return "…\n" + cur
}

// maxOverlapTries bounds newOutput's search for where a slid window resumes.
const maxOverlapTries = 4096

func newEventsCmd() *cobra.Command {
	var j jsonFlag
	var task, since string
	var follow bool
	var limit int
	var before int64
	cmd := &cobra.Command{
		Use:   "events [--task ID] [--limit N] [--since 1h] [--before ID] [--follow]",
		Short: "Show the activity log, newest first: decisions, dispatches, transitions, continuations and their rationales",
		Long: `Show the activity log, newest first (at most --limit events, default 200).
Older pages: --before ID (the command prints the next one on stderr).
--follow prints the latest events oldest first, then new ones as they happen; when
the core restarts it reconnects and resumes after the last event it printed, so
nothing is printed twice and nothing is lost.`,
		Example: `  mosaic events --limit 20
  mosaic events --task 7kq2m9xa --follow
  mosaic events --since 1h --jq '.[] | select(.kind == "continuation") | .rationale'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if follow && before > 0 {
				return usagef("--before pages back through older events; it does not combine with --follow")
			}
			c, err := newClient()
			if err != nil {
				return err
			}
			if follow && limit == 0 {
				limit = 20
			}
			page, err := c.EventsPage(cmd.Context(), client.EventFilter{Task: task, Since: since, Limit: limit, BeforeID: before})
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if !follow {
				if j.set {
					if err := j.print(out, page.Events); err != nil {
						return err
					}
				} else {
					printEvents(out, page.Events)
				}
				if page.NextBefore > 0 {
					more := fmt.Sprintf("mosaic events --before %d", page.NextBefore)
					if limit > 0 {
						more += fmt.Sprintf(" --limit %d", limit)
					}
					if task != "" {
						more += " --task " + task
					}
					fmt.Fprintf(cmd.ErrOrStderr(), "older events: %s\n", more)
				}
				return nil
			}
			// Follow: the latest page oldest first, like tail -f, then the stream.
			evs := page.Events
			slices.Reverse(evs)
			for _, e := range evs {
				if err := printFollowed(out, j, e); err != nil {
					return err
				}
			}
			ctx, stop := signalContext()
			defer stop()
			errw := cmd.ErrOrStderr()
			err = c.FollowEvents(ctx, client.FollowOptions{Task: task, AfterID: page.LastID,
				OnConnection: func(last int64, err error) {
					if err != nil {
						fmt.Fprintf(errw, "mosaic: lost the core (%v); reconnecting for up to %s\n", err, client.DefaultReconnectFor)
					} else {
						fmt.Fprintf(errw, "mosaic: reconnected; resuming after event %d\n", last)
					}
				}}, func(e client.Event) error { return printFollowed(out, j, e) })
			if errors.Is(err, context.Canceled) {
				return nil
			}
			return err
		},
	}
	cmd.Flags().StringVar(&task, "task", "", "only this task")
	cmd.Flags().StringVar(&since, "since", "", "only events since (RFC 3339 or a duration such as 1h)")
	cmd.Flags().IntVar(&limit, "limit", 0, "at most this many, the newest (default 200; 20 with --follow)")
	cmd.Flags().Int64Var(&before, "before", 0, "only events older than this id (the next page of older events)")
	cmd.Flags().BoolVar(&follow, "follow", false, "keep printing new events as they happen; survives core restarts (Ctrl-C stops)")
	addJSONFlag(cmd, &j, []client.Event{}, client.Event{})
	addWideFlag(cmd, &j)
	_ = cmd.RegisterFlagCompletionFunc("task", completeTaskFlag)
	return cmd
}

// printFollowed prints one event of events --follow: a JSON line, or a readable one.
func printFollowed(out io.Writer, j jsonFlag, e client.Event) error {
	if j.set {
		return j.print(out, e)
	}
	fmt.Fprintf(out, "%s  %-12s %-6s %s", e.Time.Local().Format("15:04:05"), e.Kind, e.Actor, e.Message)
	if e.TaskID != "" {
		fmt.Fprintf(out, "  [task %s]", e.TaskID)
	}
	if e.Rationale != "" {
		fmt.Fprintf(out, "\n          why: %s", clip(e.Rationale, 200))
	}
	_, err := fmt.Fprintln(out)
	return err
}

func newEnvelopeCmd() *cobra.Command {
	var j jsonFlag
	var name, desc string
	cmd := &cobra.Command{
		Use:   "envelope --name NAME --description \"…\"",
		Short: "Draft a resource envelope from a description (LLM when configured, heuristics otherwise)",
		Example: `  mosaic envelope --description "fine-tune a 7B model on 4 A100s for about 6 hours"
  mosaic envelope --description "CPU only, 256 cores, a day" --json=envelope.cpu_cores,envelope.walltime`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := newClient()
			if err != nil {
				return err
			}
			r, err := c.DraftEnvelope(cmd.Context(), name, desc)
			if err != nil {
				return err
			}
			if j.set {
				return j.print(cmd.OutOrStdout(), envelopeResult{Envelope: r.Envelope, FallbackReason: r.FallbackReason, Drafter: r.Drafter})
			}
			e := r.Envelope
			tw := table(cmd.OutOrStdout())
			rng := func(r v1.IntRange, unit string) string {
				if r.Min == 0 && r.Max == 0 {
					return "-"
				}
				if r.Max == 0 || r.Max == r.Min {
					return fmt.Sprintf("%d%s", r.Min, unit)
				}
				return fmt.Sprintf("%d..%d%s", r.Min, r.Max, unit)
			}
			wall := e.Walltime.Min.String()
			if e.Walltime.Max > e.Walltime.Min {
				wall += ".." + e.Walltime.Max.String()
			}
			for _, kv := range [][2]string{{"gpus", rng(e.GPUs, "")}, {"cpu cores", rng(e.CPUCores, "")}, {"memory", rng(e.MemoryGB, " GB")},
				{"nodes", rng(e.Nodes, "")}, {"walltime", wall}, {"gpu models", dash(strings.Join(e.Constraints.GPUModels, ","))},
				{"min gpu memory", fmt.Sprintf("%d GB", e.Constraints.MinGPUMemoryGB)}, {"objective", dash(string(e.Objective))},
				{"source", fmt.Sprintf("%s (confidence %.2f, drafter %s)", e.Source, e.Confidence, r.Drafter)}, {"rationale", dash(e.Rationale)}} {
				fmt.Fprintf(tw, "%s\t%s\n", kv[0], kv[1])
			}
			if r.FallbackReason != "" {
				fmt.Fprintf(tw, "llm fallback\t%s\n", r.FallbackReason)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&name, "name", "", "task name")
	cmd.Flags().StringVar(&desc, "description", "", "what the task does (required)")
	cmd.MarkFlagRequired("description")
	addJSONFlag(cmd, &j, envelopeResult{})
	addWideFlag(cmd, &j)
	return cmd
}

// envelopeResult is what `mosaic envelope --json` prints.
type envelopeResult struct {
	Envelope       v1.Envelope `json:"envelope"`
	FallbackReason string      `json:"fallback_reason"`
	Drafter        string      `json:"drafter"`
}
