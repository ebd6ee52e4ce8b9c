package hpc

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/site"
	"github.com/mosaic-hpc/mosaic/internal/transport"
)

// TestEstimatesPlanASubmissionStillInFlight runs Submit and EstimateStarts' real remote
// commands through sh against stub Slurm commands: while a 1-GPU job's sbatch has not
// answered, a 4-GPU job's estimate on the same idle node is after the first job's
// limit (Slurm's will-run test, which cannot see it, says now); once the site has
// answered and a later listing is taken, the record no longer counts (the listing
// shows the job, or it has ended).
func TestEstimatesPlanASubmissionStillInFlight(t *testing.T) {
	bin := t.TempDir()
	release := filepath.Join(bin, "release")
	now := time.Now()
	// sbatch --test-only answers at once ("now"); a real submission waits (at most 20 s)
	// for the test to release it, then prints its id.
	sbatch := "#!/bin/sh\ncase \"$1\" in\n--test-only) echo 'sbatch: Job 4 to start at " + now.Format(stdFmt) +
		" using 8 processors on nodes n1 in partition gpu' >&2; exit 0;;\nesac\n" +
		"i=0; while [ ! -e '" + release + "' ] && [ $i -lt 200 ]; do sleep 0.1; i=$((i+1)); done\necho 77\n"
	if err := os.WriteFile(filepath.Join(bin, "sbatch"), []byte(sbatch), 0o700); err != nil {
		t.Fatal(err)
	}
	// n1: 4 GPUs, 64 cores, nothing running.
	stub(t, bin, "sinfo", "gpu|n1|idle|64|0/64/0/64|256000|0|gpu:a100:4|gpu:a100:0(IDX:N/A)|1-00:00:00|up|1-infinite|(null)|\n", false, 0)
	stub(t, bin, "squeue", "", false, 0)
	stub(t, bin, "id", "alice\n", false, 0)
	stub(t, bin, "sacct", "", false, 0)
	p, err := New(site.System{Name: "X", Kind: site.KindLocal, WorkDir: t.TempDir()},
		WithTransport(stubFirst{&shellSite{bin: bin}}), WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	job := func(tag string, gpus int) model.JobSpec {
		return model.JobSpec{Tag: tag, Name: tag, Partition: "gpu", Nodes: 1, NTasks: 1, CPUsPerTask: 2, GPUs: gpus,
			Walltime: model.Duration(10 * time.Minute), Command: "true"}
	}
	estimate := func() time.Duration {
		t.Helper()
		est, err := p.EstimateStarts(context.Background(), []model.JobSpec{job("four", 4)})
		if err != nil || est[0].Err != nil {
			t.Fatalf("estimate: %v %v", err, est)
		}
		return time.Until(est[0].Start)
	}
	if w := estimate(); w > time.Minute {
		t.Fatalf("idle node, nothing submitted: estimated wait %v, want about none", w)
	}

	type result struct {
		id  string
		err error
	}
	done := make(chan result, 1)
	go func() {
		id, err := p.Submit(context.Background(), job("one", 1))
		done <- result{id, err}
	}()
	for i := 0; len(p.submitted.since(time.Now(), p)) == 0; i++ { // the submission has begun
		if i > 200 {
			select {
			case r := <-done:
				t.Fatalf("the submission ended early: %q %v", r.id, r.err)
			default:
			}
			t.Fatal("the submission was never recorded")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if w := estimate(); w < 9*time.Minute || w > 11*time.Minute {
		t.Errorf("with a 1-GPU job of 10 minutes in flight: estimated wait %v, want after it (10m)", w)
	}
	if err := os.WriteFile(release, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || r.id != "77" {
		t.Fatalf("submit: %q %v", r.id, r.err)
	}
	if w := estimate(); w > time.Minute {
		t.Errorf("after the site answered, a new listing counts: estimated wait %v, want about none (the stub lists nothing)", w)
	}
}

// stubFirst runs a command named in the stub directory as that stub (shellSite's
// exec looks argv[0] up in the test's own PATH; sh -c commands look in the stubs').
type stubFirst struct{ *shellSite }

func (s stubFirst) Run(ctx context.Context, argv []string, stdin io.Reader) (transport.Result, error) {
	if len(argv) > 0 && !strings.Contains(argv[0], "/") {
		if st, err := os.Stat(filepath.Join(s.bin, argv[0])); err == nil && !st.IsDir() {
			argv = append([]string{filepath.Join(s.bin, argv[0])}, argv[1:]...)
		}
	}
	return s.shellSite.Run(ctx, argv, stdin)
}

// TestSubmissionsRecord: a refused submission is dropped; an accepted one counts for
// listings taken before its answer and not after; old ones age out; the record is
// bounded.
func TestSubmissionsRecord(t *testing.T) {
	var s submissions
	a, b := &Provider{}, &Provider{}
	t0 := time.Now()
	x := s.begin(a, model.JobSpec{Tag: "x"})
	y := s.begin(b, model.JobSpec{Tag: "y"})
	if got := s.since(t0, a); len(got) != 2 || !got[0].Own || got[1].Own {
		t.Fatalf("in flight: %+v, want both, x own", got)
	}
	s.end(y, "", false)
	s.end(x, "12", true)
	if got := s.since(t0, a); len(got) != 1 || got[0].JobID != "12" {
		t.Fatalf("after the answers: %+v, want x with its id", got)
	}
	if got := s.since(time.Now().Add(time.Millisecond), a); len(got) != 0 {
		t.Fatalf("a listing after the answer: %+v, want none", got)
	}
	x.done = time.Now().Add(-submittedKeep - time.Second)
	s.begin(a, model.JobSpec{}) // prunes
	if len(s.list) != 1 {
		t.Fatalf("%d kept, want the old one aged out", len(s.list))
	}
	for i := range maxSubmitted + 10 {
		s.end(s.begin(a, model.JobSpec{}), "1", true)
		if len(s.list) > maxSubmitted+1 {
			t.Fatalf("record grew to %d after %d submissions", len(s.list), i)
		}
	}
	z := s.begin(a, model.JobSpec{Tag: "z", GPUs: 2, Command: "echo $TOKEN", Script: "#!/bin/sh", Env: map[string]string{"TOKEN": "s3cret"}})
	if z.spec.Command != "" || z.spec.Script != "" || z.spec.Env != nil || z.spec.GPUs != 2 {
		t.Errorf("recorded %+v, want the size kept and no command, script or environment (secrets)", z.spec)
	}
	var none *submissions
	none.end(none.begin(a, model.JobSpec{}), "1", true)
	if none.since(t0, a) != nil {
		t.Error("a nil record keeps something")
	}
}

// TestAnnouncedSubmissions: the core's announcement counts from the decision; the
// Submit of its tag takes it over (counted once), after which the release leaves the
// submission's own record; an announcement released without a Submit is gone, and one
// whose release is lost ages out.
func TestAnnouncedSubmissions(t *testing.T) {
	p, err := New(site.System{Name: "X", Kind: site.KindLocal, WorkDir: t.TempDir()},
		WithTransport(&shellSite{bin: t.TempDir()}), WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	s := p.submitted
	t0 := time.Now()
	release := p.ExpectSubmit(model.JobSpec{Tag: "mosaic-t1-1", GPUs: 1})
	if got := s.since(t0, p); len(got) != 1 || got[0].Spec.GPUs != 1 || !got[0].Own {
		t.Fatalf("announced: %+v, want it counted as our own", got)
	}
	e := s.begin(p, model.JobSpec{Tag: "mosaic-t1-1", GPUs: 1, Partition: "gpu"})
	if got := s.since(t0, p); len(got) != 1 || got[0].Spec.Partition != "gpu" {
		t.Fatalf("submitting: %+v, want the announcement taken over (one job, the rendered spec)", got)
	}
	release()
	if got := s.since(t0, p); len(got) != 1 {
		t.Fatalf("released after the Submit took it over: %+v, want the submission kept", got)
	}
	s.end(e, "5", true)
	if got := s.since(t0, p); len(got) != 1 || got[0].JobID != "5" {
		t.Fatalf("accepted: %+v", got)
	}

	other := p.ExpectSubmit(model.JobSpec{Tag: "mosaic-t2-1"})
	again := p.ExpectSubmit(model.JobSpec{Tag: "mosaic-t2-1"}) // the dispatch's, same job
	if got := s.since(time.Now(), p); len(got) != 1 {
		t.Fatalf("one tag announced twice: %+v, want one job", got)
	}
	other()
	other() // a release is idempotent
	if got := s.since(time.Now(), p); len(got) != 1 {
		t.Fatalf("one of two announcements released (twice): %+v, want the job still counted", got)
	}
	again()
	if got := s.since(time.Now(), p); len(got) != 0 {
		t.Fatalf("announcements released without a Submit: %+v, want none", got)
	}
	p.ExpectSubmit(model.JobSpec{Tag: "mosaic-t3-1"}) // its release is lost
	s.mu.Lock()
	s.list[len(s.list)-1].begun = time.Now().Add(-expectedKeep - time.Second)
	s.mu.Unlock()
	if x := s.begin(p, model.JobSpec{Tag: "mosaic-t3-1"}); x.adopted {
		t.Error("a Submit took over an announcement that had aged out")
	}
	if got := s.since(time.Now(), p); len(got) != 1 || got[0].Spec.Tag != "mosaic-t3-1" {
		t.Errorf("in flight: %+v, want only the Submit of mosaic-t3-1 (its aged-out announcement dropped)", got)
	}
}
