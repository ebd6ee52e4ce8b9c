package execution

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/provider/hpc"
	"github.com/mosaic-hpc/mosaic/internal/site"
	"github.com/mosaic-hpc/mosaic/internal/store"
	"github.com/mosaic-hpc/mosaic/internal/transport/rigenv"
)

// TestRigReplanMovesAPendingJobOnce: on the real Slurm rig, over ssh, a job waits on
// alpha behind a blocker holding the whole node while beta is free. Replanning moves
// it to beta (new job first, then the old one cancelled while still queued), and the
// command runs exactly once: its side-effect file has one line, and accounting shows
// alpha's job cancelled without ever starting and beta's completed.
func TestRigReplanMovesAPendingJobOnce(t *testing.T) {
	env := rigenv.Require(t)
	ctx := context.Background()
	provs := provMap{}
	for _, c := range []string{"alpha", "beta"} {
		up := strings.ToUpper(c)
		p, err := hpc.New(site.System{Name: c, Kind: site.KindSSH, Dialect: site.DialectSlurm, Host: env.Get(t, "RIG_SSH_HOST_"+up),
			SSH: &site.SSH{ConfigFile: env.Get(t, "RIG_SSH_CONFIG")}, Accounts: []string{env.Get(t, "RIG_ACCOUNT")}, WorkDir: env.Get(t, "RIG_WORKDIR_"+up)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Close() })
		provs[c] = p
	}
	slurm := func(cluster string, args ...string) string {
		t.Helper()
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Env = append(os.Environ(), "SLURM_CONF="+env.Get(t, "SLURM_CONF_"+strings.ToUpper(cluster)))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s on %s: %v\n%s", strings.Join(args, " "), cluster, err, out)
		}
		return string(out)
	}
	// The blocker: alpha's whole node for 30 minutes.
	blocker := strings.TrimSpace(strings.Split(slurm("alpha", "sbatch", "--parsable", "-J", "rig-blocker", "-A", env.Get(t, "RIG_ACCOUNT"), "-p", "cpu",
		"-c", env.Get(t, "RIG_NODE_CPUS"), "--gres=gpu:"+env.Get(t, "RIG_GPUS_PER_NODE"), "-t", "30", "-o", "/dev/null", "--wrap", "sleep 600"), ";")[0])
	t.Cleanup(func() { slurm("alpha", "scancel", blocker) })
	for i := 0; ; i++ { // the shared rig may still be busy: up to 60 s
		if st := strings.TrimSpace(slurm("alpha", "squeue", "-h", "-j", blocker, "-o", "%T")); st == "RUNNING" {
			break
		}
		if i == 600 {
			skipUnlessCI(t, "the blocker never started on alpha (the shared rig is busy); try again")
		}
		time.Sleep(100 * time.Millisecond)
	}
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "m.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e := New(Options{Store: st, Providers: provs, Placer: orderedPlacer{"beta", "alpha"}, ReplanEvery: 2 * time.Second})
	ran := filepath.Join(t.TempDir(), "ran")
	id := "rigmove" + strings.ReplaceAll(time.Now().Format("150405.000"), ".", "")
	command := "echo ran >> " + ran
	pol, _ := json.Marshal(model.Policy{MaxMigrations: 1})
	now := time.Now().UTC()
	if err := st.CreateTask(ctx, &store.TaskRow{Task: model.Task{ID: id, Name: id, Command: command, State: model.TaskPlaced,
		Envelope:  model.Envelope{CPUCores: model.IntRange{Min: 1, Max: 1}, Walltime: model.DurationRange{Min: model.Duration(5 * time.Minute), Max: model.Duration(5 * time.Minute)}},
		CreatedAt: now, UpdatedAt: now}, Policy: pol}); err != nil {
		t.Fatal(err)
	}
	spec := model.JobSpec{Nodes: 1, NTasks: 1, CPUsPerTask: 1, MemoryGB: 1, Walltime: model.Duration(5 * time.Minute), Command: command}
	if err := e.Dispatch(ctx, id, &Placement{System: "alpha", Partition: "cpu", Account: env.Get(t, "RIG_ACCOUNT"), Spec: spec}, "rig test: queued behind the blocker"); err != nil {
		t.Fatal(err)
	}
	var tr *store.TaskRow
	var atts []*model.Attempt
	started := false
	for deadline := time.Now().Add(4 * time.Minute); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		if err := e.Tick(ctx); err != nil {
			t.Fatal(err)
		}
		atts, _ = st.Attempts(ctx, id)
		started = started || len(atts) == 2 && atts[1].State == model.JobRunning
		// Done when the task is final and so is every attempt: beta's job may finish
		// before the monitor has confirmed alpha's cancel (a tick later).
		if tr, err = st.Task(ctx, id); err == nil && tr.State.Final() && allFinal(atts) {
			break
		}
	}
	atts, _ = st.Attempts(ctx, id)
	evs, _ := st.Events(ctx, store.EventQuery{TaskID: id, Limit: 100})
	if len(atts) != 2 || atts[1].System != "beta" || atts[0].State != model.JobCancelled {
		logEvents(t, evs)
		t.Fatalf("%d attempts; want the job moved to beta and the old one cancelled", len(atts))
	}
	if !tr.State.Final() && !started {
		skipUnlessCI(t, "moved, but beta's job never started within 4 minutes (the shared rig is busy); try again")
	}
	if tr.State != model.TaskSucceeded {
		logEvents(t, evs)
		t.Fatalf("task %s; want it succeeded on beta", tr.State)
	}
	if b, err := os.ReadFile(ran); err != nil || strings.Count(string(b), "ran") != 1 {
		t.Fatalf("the command ran %d times (%v), want once", strings.Count(string(b), "ran"), err)
	}
	// Accounting: alpha's job was cancelled before it started; beta's completed.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Second) {
		a := strings.TrimSpace(slurm("alpha", "sacct", "-X", "-n", "-P", "-j", atts[0].JobID, "-o", "State,Start"))
		b := strings.TrimSpace(slurm("beta", "sacct", "-X", "-n", "-P", "-j", atts[1].JobID, "-o", "State,Start"))
		if strings.HasPrefix(a, "CANCELLED") && strings.HasSuffix(a, "|None") && strings.HasPrefix(b, "COMPLETED") {
			t.Logf("sacct alpha job %s: %s; beta job %s: %s", atts[0].JobID, a, atts[1].JobID, b)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sacct: alpha job %s %q (want CANCELLED, never started), beta job %s %q (want COMPLETED)", atts[0].JobID, a, atts[1].JobID, b)
		}
	}
	if mv, ok := findEvent(evs, "replan: move pending job "+atts[0].JobID+": alpha → beta:cpu"); ok {
		t.Logf("event: %s — %s", mv.Message, mv.Rationale)
	}
}

// allFinal reports whether every attempt has reached a final state.
func allFinal(atts []*model.Attempt) bool {
	for _, a := range atts {
		if !a.State.Final() {
			return false
		}
	}
	return len(atts) > 0
}

// skipUnlessCI skips on a developer's busy rig, but fails under CI=true, where the
// rig is the test's own and a skip would hide a broken move.
func skipUnlessCI(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatal(why)
	}
	t.Skip(why)
}
