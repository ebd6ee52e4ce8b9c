package hpc

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/dialect"
	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/provider"
	"github.com/mosaic-hpc/mosaic/internal/transport/shellquote"
)

// MaxEstimateBatch bounds the specs of one EstimateStarts call (one remote command);
// a longer batch is sent as several.
const MaxEstimateBatch = 64

// estimateScript uploads the scripts it reads on stdin (each ended by a line holding
// only the boundary $2) to the paths after $2, then runs the estimate command on each,
// printing "<boundary> <path>" before and "<boundary> rc=<status>" after its output
// (stderr merged). %s is the estimate command with "$f" for the path. The scripts never
// travel on the command line (ps on the login node would show them); only paths and
// the boundary do. read and printf are POSIX builtins, so nothing is read past a
// script's boundary line.
const estimateScript = `umask 077 && mkdir -p "$1" || exit 97
b=$2
shift 2
for f in "$@"; do
  { while IFS= read -r l; do [ "$l" = "$b" ] && break; printf '%%s\n' "$l"; done; } > "$f" || exit 98
done
for f in "$@"; do
  printf '%%s %%s\n' "$b" "$f"
  %s 2>&1
  printf '%%s rc=%%d\n' "$b" "$?"
done
`

// EstimateStarts implements provider.BatchEstimator: one remote command per batch of
// up to MaxEstimateBatch specs uploads their scripts and runs the dialect's estimate
// (sbatch --test-only) on each, over one connection. A spec that cannot be rendered,
// or that the site refuses, has its own error. Each spec is estimated under its
// owner's site identity and account (model.JobSpec.Owner), as their job would run;
// an owner without an identity here gets that refusal as the spec's error.
func (p *Provider) EstimateStarts(ctx context.Context, specs []model.JobSpec) ([]provider.Estimate, error) {
	const placeholder = "\x00mosaic-estimate-path\x00"
	cmd := p.d.EstimateCommand(placeholder)
	if cmd == nil {
		return nil, fmt.Errorf("%s: start estimate with %s: %w", p.sys.Name, p.d.Name(), provider.ErrUnsupported)
	}
	parts := make([]string, len(cmd))
	found := false
	for i, a := range cmd {
		if a == placeholder {
			parts[i], found = `"$f"`, true
			continue
		}
		parts[i] = shellquote.Quote(a)
	}
	if !found {
		return nil, fmt.Errorf("%s: the %s estimate command does not take a script path: %w", p.sys.Name, p.d.Name(), provider.ErrUnsupported)
	}
	pc := p.planCommands() // once: the script and the reading of its blocks agree
	script := fmt.Sprintf(estimateScript, strings.Join(parts, " ")) + planScript(pc)
	if p.perUser() {
		return p.estimateByOwner(ctx, script, pc, specs)
	}
	return p.estimateAll(ctx, script, pc, specs)
}

// estimateByOwner runs each owner's specs under that owner's identity and account
// (as their jobs would be submitted); the specs of an owner without an identity here
// get that refusal as their error.
func (p *Provider) estimateByOwner(ctx context.Context, script string, pc planCmds, specs []model.JobSpec) ([]provider.Estimate, error) {
	out := make([]provider.Estimate, len(specs))
	byOwner := map[string][]int{}
	var order []string
	for i := range specs {
		o := specs[i].Owner
		if _, ok := byOwner[o]; !ok {
			order = append(order, o)
		}
		byOwner[o] = append(byOwner[o], i)
	}
	for _, o := range order {
		idx := byOwner[o]
		q, err := p.forOwner(o)
		if err != nil {
			for _, i := range idx {
				out[i].Err = fmt.Errorf("%s: start estimate for %s: %w", p.sys.Name, o, err)
			}
			continue
		}
		sub := make([]model.JobSpec, len(idx))
		for j, i := range idx {
			sub[j] = specs[i]
			if q != p {
				sub[j].Account = q.userAccount(sub[j].Account)
			}
		}
		res, err := q.estimateAll(ctx, script, pc, sub)
		if err != nil {
			return nil, err
		}
		for j, i := range idx {
			out[i] = res[j]
		}
	}
	return out, nil
}

// estimateAll is EstimateStarts as this provider's identity.
func (p *Provider) estimateAll(ctx context.Context, script string, pc planCmds, specs []model.JobSpec) ([]provider.Estimate, error) {
	out := make([]provider.Estimate, len(specs))
	for lo := 0; lo < len(specs); lo += MaxEstimateBatch {
		hi := min(lo+MaxEstimateBatch, len(specs))
		if err := p.estimateBatch(ctx, script, pc, specs[lo:hi], out[lo:hi]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// estimateBatch runs one remote command for specs, filling out.
func (p *Provider) estimateBatch(ctx context.Context, script string, pc planCmds, specs []model.JobSpec, out []provider.Estimate) error {
	type item struct {
		i    int
		path string
		body []byte
	}
	var items []item
	dir := ""
	for i, spec := range specs {
		spec.Tag = spec.Tag + "-estimate-" + strconv.Itoa(i)
		_, files, body, err := p.prepare(spec)
		if err != nil {
			out[i].Err = err
			continue
		}
		if dir == "" {
			dir = path.Dir(files.Script)
		}
		items = append(items, item{i, files.Script, body})
	}
	if len(items) == 0 {
		return nil
	}
	boundary, err := newBoundary()
	if err != nil {
		return err
	}
	var stdin bytes.Buffer
	argv := []string{"sh", "-c", script, "sh", dir, boundary}
	for _, it := range items {
		if bytes.Contains(it.body, []byte(boundary)) { // 128 random bits: never, but be sure
			return fmt.Errorf("%s: estimate batch boundary collides with a script; retry", p.sys.Name)
		}
		stdin.Write(it.body)
		if len(it.body) > 0 && it.body[len(it.body)-1] != '\n' {
			stdin.WriteByte('\n')
		}
		stdin.WriteString(boundary + "\n")
		argv = append(argv, it.path)
	}
	start := time.Now()
	res, err := p.run(ctx, argv, &stdin)
	if err != nil {
		return err
	}
	blocks, err := parseEstimateBatch(res.Stdout, boundary)
	if err != nil {
		if res.ExitCode != 0 {
			return dialect.Mark(p.d, res, fmt.Errorf("%s: estimate batch (exit %d): %s: %w", p.sys.Name, res.ExitCode,
				strings.TrimSpace(string(res.Stderr)), err))
		}
		return fmt.Errorf("%s: %w", p.sys.Name, err)
	}
	now := time.Now()
	submitted := p.submitted.since(start, p)
	ordered := make([]model.JobSpec, len(specs)) // as prepare renders them: with their nice
	for i := range specs {
		ordered[i] = p.ordered(specs[i])
	}
	plan := p.planStarts(pc, blocks, ordered, submitted, now)
	for _, it := range items {
		b, ok := blocks[it.path]
		if !ok {
			out[it.i].Err = fmt.Errorf("%s: the estimate batch printed nothing for %s (the login node stopped early?); retry", p.sys.Name, it.path)
			continue
		}
		t, err := p.d.ParseEstimate(dialect.Output{Stdout: b.out, ExitCode: b.rc})
		if err != nil {
			out[it.i].Err = fmt.Errorf("%s: %w", p.sys.Name, err)
			continue
		}
		ps := p.planned(plan[it.i])
		out[it.i].Start = applyPlan(t, ps, now)
		p.logEstimate(ctx, ordered[it.i], t, ps, out[it.i].Start, len(submitted), now)
	}
	return nil
}

// logEstimate logs, at Debug, how one estimate was made: the scheduler's own answer
// and its allowance for the queue, the queue plan's two times, the start taken and
// how many recorded submissions were handed to the plan (it plans ahead those the
// listing does not show yet). It names the job only by its size and place (no
// command, script or environment).
func (p *Provider) logEstimate(ctx context.Context, spec model.JobSpec, site time.Time, ps dialect.PlannedStart, start time.Time, submitted int, now time.Time) {
	if !p.log.Enabled(ctx, slog.LevelDebug) {
		return
	}
	wait := func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return max(t.Sub(now), 0).Round(time.Second).String()
	}
	p.log.Debug("estimate", "partition", spec.Partition,
		"nodes", spec.Nodes, "ntasks", spec.NTasks, "gpus", spec.GPUs, "walltime", spec.Walltime.D(), "nice", spec.Nice,
		"site_wait", wait(site), "site_queue_allowance", ps.QueueAllowance,
		"plan_limits_wait", wait(ps.Limits), "plan_predicted_wait", wait(ps.Predicted),
		"wait", wait(start), "submissions_recorded", submitted)
}

// planBlock names the output block of the dialect's i-th plan command.
func planBlock(i int) string { return "@plan-" + strconv.Itoa(i) }

// planCmds are a dialect's plan commands (dialect.QueuePlanner), asked once per
// batch: the script that runs them and the reading of their blocks share one answer.
type planCmds struct {
	qp    dialect.QueuePlanner
	cmds  [][]string
	limit int
}

// planCommands asks the dialect for its plan commands; the zero planCmds when it has none.
func (p *Provider) planCommands() planCmds {
	qp, ok := p.d.(dialect.QueuePlanner)
	if !ok {
		return planCmds{}
	}
	cmds, limit := qp.PlanCommands()
	return planCmds{qp, cmds, limit}
}

// planScript runs the plan commands after a batch's estimates, each as a block of
// the batch's output (stderr dropped: the plan reads stdout only, and a failed
// command only leaves its specs unplanned); "" when there are none.
func planScript(pc planCmds) string {
	var b strings.Builder
	for i, cmd := range pc.cmds {
		q := make([]string, len(cmd))
		for k, a := range cmd {
			q[k] = shellquote.Quote(a)
		}
		// Cut at the dialect's limit (a whole site's listing must not push the batch's
		// output past the transport's cap). The status is the command's own, not head's
		// (POSIX sh has no pipefail: it travels on fd 3), so a failing command's partial
		// output is not planned; the newline before the status line keeps a listing that
		// does not end in one (cut at the limit) from swallowing it, which would fail the
		// whole batch (the parsers skip blank lines).
		fmt.Fprintf(&b, planStep, planBlock(i), strings.Join(q, " "), pc.limit)
	}
	return b.String()
}

// planStep is one plan command's block: %s its block name, %s the command, %d the
// byte limit.
const planStep = `printf '%%s %%s\n' "$b" %s
{ r=$( { { %s 2>/dev/null; echo "$?" >&3; } | head -c %d >&4; } 3>&1 ); } 4>&1
printf '\n%%s rc=%%s\n' "$b" "${r:-99}"
`

// applyPlan is the start estimate from the scheduler's own answer t and the queue
// plan ps (dialect.QueuePlanner): t without its rough allowance for the queue
// (ps.QueueAllowance, never before now), then the later of that and the limits' plan
// (the will-run test fits the running jobs only; the queue ahead starts first),
// moved earlier by what planning the user's own jobs for their predicted runtimes
// gains, never before now. The scheduler's answer knows what the plan does not
// (reservations, limits, features, memory), so it stays a floor, and only the gain of
// the prediction is taken from the plan, not its time.
func applyPlan(t time.Time, ps dialect.PlannedStart, now time.Time) time.Time {
	if a := ps.QueueAllowance; a > 0 && !ps.Limits.IsZero() {
		t = later(t.Add(-a), now)
	}
	if ps.Limits.After(t) {
		t = ps.Limits
	}
	if g := ps.Gain(); g > 0 {
		t = later(t.Add(-g), now)
	}
	return t
}

// planned is ps as this provider uses it: without the prediction when it plans on the
// limits only (WithRuntimePredictions).
func (p *Provider) planned(ps dialect.PlannedStart) dialect.PlannedStart {
	if p.limitsOnly {
		ps.Predicted = time.Time{}
	}
	return ps
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// planOutputs are the plan commands' outputs from a batch's blocks (false, logged:
// a command printed nothing).
func (p *Provider) planOutputs(pc planCmds, blocks map[string]estimateBlock) ([]dialect.Output, bool) {
	outs := make([]dialect.Output, len(pc.cmds))
	for i := range outs {
		b, ok := blocks[planBlock(i)]
		if !ok {
			p.log.Debug("queue plan: a plan command printed nothing", "block", planBlock(i))
			return nil, false
		}
		outs[i] = dialect.Output{Stdout: b.out, ExitCode: b.rc}
	}
	return outs, true
}

// planStarts is the dialect's queue-aware plan for specs from a batch's plan blocks
// (zero times where there is none: no planner, a plan command failed or printed what
// the dialect cannot read; the scheduler's own answers then stand, and why is logged).
func (p *Provider) planStarts(pc planCmds, blocks map[string]estimateBlock, specs []model.JobSpec, submitted []dialect.Submitted, now time.Time) []dialect.PlannedStart {
	out := make([]dialect.PlannedStart, len(specs))
	if pc.qp == nil {
		return out
	}
	outs, ok := p.planOutputs(pc, blocks)
	if !ok {
		return out
	}
	starts, err := pc.qp.PlanStarts(outs, specs, submitted, now)
	if err != nil || len(starts) != len(specs) {
		p.log.Info("queue plan: not planned; Slurm's own estimates stand", "err", err)
		return out
	}
	return starts
}

// newBoundary is a line no script contains: "mosaic-estimate-" and 128 random bits.
func newBoundary() (string, error) {
	var r [16]byte
	if _, err := rand.Read(r[:]); err != nil {
		return "", fmt.Errorf("estimate batch boundary: %w", err)
	}
	return "mosaic-estimate-" + hex.EncodeToString(r[:]), nil
}

// estimateBlock is one script's output in an estimate batch and its exit status.
type estimateBlock struct {
	out []byte
	rc  int
}

// parseEstimateBatch splits the batch's output into blocks by path. Each block is
// "<boundary> <path>", output lines, "<boundary> rc=<n>". Output before the first
// header (a login banner) is ignored; a header without its trailer, a trailer without
// a header, a bad status or a repeated path is an error.
func parseEstimateBatch(stdout []byte, boundary string) (map[string]estimateBlock, error) {
	blocks := map[string]estimateBlock{}
	head := []byte(boundary + " ")
	var cur string
	var buf []byte
	open := false
	for len(stdout) > 0 {
		line := stdout
		if i := bytes.IndexByte(stdout, '\n'); i >= 0 {
			line, stdout = stdout[:i+1], stdout[i+1:]
		} else {
			stdout = nil
		}
		body := bytes.TrimSuffix(line, []byte("\n"))
		if !bytes.HasPrefix(body, head) {
			if open {
				buf = append(buf, line...)
			}
			continue
		}
		rest := string(body[len(head):])
		if rc, ok := strings.CutPrefix(rest, "rc="); ok {
			if !open {
				return nil, errors.New("estimate batch: a status line without its script")
			}
			n, err := strconv.Atoi(rc)
			if err != nil || n < 0 || n > 255 {
				return nil, fmt.Errorf("estimate batch: bad exit status %q for %s", rc, cur)
			}
			blocks[cur] = estimateBlock{out: buf, rc: n}
			open, buf = false, nil
			continue
		}
		if open {
			return nil, fmt.Errorf("estimate batch: the output of %s has no status line", cur)
		}
		if rest == "" {
			return nil, errors.New("estimate batch: a script header without a path")
		}
		if _, dup := blocks[rest]; dup {
			return nil, fmt.Errorf("estimate batch: %s appears twice", rest)
		}
		cur, open, buf = rest, true, nil
	}
	if open {
		return nil, fmt.Errorf("estimate batch: the output of %s has no status line (cut short)", cur)
	}
	return blocks, nil
}
