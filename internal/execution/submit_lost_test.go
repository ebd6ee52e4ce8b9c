package execution

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/dialect"
	"github.com/mosaic-hpc/mosaic/internal/dialect/slurm"
	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/provider"
	"github.com/mosaic-hpc/mosaic/internal/provider/simprov"
	"github.com/mosaic-hpc/mosaic/internal/store"
)

// lostAnswerSite queues the job on a real simulator and then loses the answer, as
// Slurm does with "Socket timed out on send/recv operation" or a transport timeout:
// the job exists, the caller is told it failed. findFails makes the next look-ups by
// tag fail too (the login node still does not answer).
type lostAnswerSite struct {
	*simprov.Provider
	mu        sync.Mutex
	submits   int
	lose      int // answers still to lose
	findFails int
}

func (l *lostAnswerSite) Submit(ctx context.Context, spec model.JobSpec) (string, error) {
	l.mu.Lock()
	l.submits++
	lose := l.lose > 0
	if lose {
		l.lose--
	}
	l.mu.Unlock()
	id, err := l.Provider.Submit(ctx, spec)
	if err != nil || !lose {
		return id, err
	}
	return "", slurmRefusal("sbatch: error: Batch job submission failed: Socket timed out on send/recv operation")
}

// slurmRefusal is the error the hpc provider returns when sbatch fails with msg: the
// Slurm dialect's parse error, marked with the dialect's class of the message.
func slurmRefusal(msg string) error {
	out := dialect.Output{Stderr: []byte(msg + "\n"), ExitCode: 1}
	_, err := (&slurm.Slurm{}).ParseSubmit(out)
	return dialect.Mark(&slurm.Slurm{}, out, fmt.Errorf("A: submit: %w", err))
}

func (l *lostAnswerSite) FindByTag(ctx context.Context, tags []string) (map[string]model.JobStatus, error) {
	l.mu.Lock()
	fail := l.findFails > 0
	if fail {
		l.findFails--
	}
	l.mu.Unlock()
	if fail {
		return nil, fmt.Errorf("ssh A: connection timed out during the look-up: %w", provider.ErrSiteDown)
	}
	return l.Provider.FindByTag(ctx, tags)
}

func (l *lostAnswerSite) count() int { l.mu.Lock(); defer l.mu.Unlock(); return l.submits }

func TestLostSubmitAnswerIsAdoptedNotResubmitted(t *testing.T) {
	for _, tc := range []struct {
		name      string
		findFails int
	}{
		{"found at once", 0},
		{"site silent, settled by the monitor", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			site := &lostAnswerSite{Provider: newSimSite(t, "A"), lose: 1, findFails: tc.findFails}
			st, err := store.Open(ctx, filepath.Join(t.TempDir(), "m.db"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			e := New(Options{Store: st, Providers: provMap{"A": site}, Placer: fixedPlacer{"A"}, SubmitBackoff: time.Millisecond})
			newTask(t, st, "lost", "true")
			if err := e.Dispatch(ctx, "lost", &Placement{System: "A", Partition: "cpu", Account: "acct", Spec: specFor(&model.Task{Command: "true"})}, "test"); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(10 * time.Second)
			for {
				atts, err := st.Attempts(ctx, "lost")
				if err != nil {
					t.Fatal(err)
				}
				if len(atts) == 1 && atts[0].JobID != "" {
					break
				}
				if len(atts) != 1 {
					t.Fatalf("%d attempts: a lost answer must not become a second attempt", len(atts))
				}
				if time.Now().After(deadline) {
					t.Fatalf("attempt never adopted: %+v", atts[0])
				}
				if err := e.Tick(ctx); err != nil {
					t.Logf("tick: %v", err)
				}
				time.Sleep(20 * time.Millisecond)
			}
			for end := time.Now().Add(10 * time.Second); ; {
				tr, err := st.Task(ctx, "lost")
				if err != nil {
					t.Fatal(err)
				}
				if tr.State == model.TaskSucceeded {
					break
				}
				if time.Now().After(end) {
					t.Fatalf("task is %s, want succeeded", tr.State)
				}
				_ = e.Tick(ctx)
				time.Sleep(20 * time.Millisecond)
			}
			if n := site.count(); n != 1 {
				t.Fatalf("the site was asked to submit %d times: the job whose answer was lost was submitted again", n)
			}
		})
	}
}

// cancelLostSite answers status but never delivers a cancel (the cancel path to the
// login node is what failed while the job was being moved).
type cancelLostSite struct{ *simprov.Provider }

func (c cancelLostSite) Cancel(context.Context, []string) error {
	return fmt.Errorf("ssh A: connection timed out: %w", provider.ErrSiteDown)
}

func TestMovedJobThatRanAnywayIsReported(t *testing.T) {
	// Attempt 1 was moved (attempt 2 replaced it) but its cancel never reached the
	// site, and the job ran to the end. The attempt must not just read "cancelled":
	// the event says the command may have run twice.
	ctx := context.Background()
	site := cancelLostSite{newSimSite(t, "A")}
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "m.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e := New(Options{Store: st, Providers: provMap{"A": site}, Placer: fixedPlacer{"A"}, SubmitBackoff: time.Millisecond})
	newTask(t, st, "moved", "true")
	spec := specFor(&model.Task{Command: "true"})
	spec.System, spec.Partition, spec.Account = "A", "cpu", "acct"
	for n := 1; n <= 2; n++ {
		spec.Tag = model.JobTag("moved", n)
		id, err := site.Submit(ctx, spec)
		if err != nil {
			t.Fatal(err)
		}
		state := model.JobPending
		if n == 1 {
			state = model.JobCancelling
		}
		if err := st.CreateAttempt(ctx, &model.Attempt{TaskID: "moved", N: n, Tag: spec.Tag, System: "A", Partition: "cpu", Spec: spec,
			JobID: id, State: state, CreatedAt: time.Now().UTC()}); err != nil {
			t.Fatal(err)
		}
	}
	for end := time.Now().Add(10 * time.Second); ; {
		_ = e.Tick(ctx)
		atts, err := st.Attempts(ctx, "moved")
		if err != nil {
			t.Fatal(err)
		}
		if atts[0].State.Final() {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("attempt 1 still %s", atts[0].State)
		}
		time.Sleep(20 * time.Millisecond)
	}
	evs, err := st.Events(ctx, store.EventQuery{TaskID: "moved", Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if ev.Kind == "warning" && ev.Attempt == 1 && strings.Contains(ev.Message, "ran to the end") && strings.Contains(ev.Rationale, "may have run") {
			return
		}
	}
	t.Fatalf("no warning that the moved job ran anyway: %+v", evs)
}

func TestUserCancelOfABusyTaskAnswers(t *testing.T) {
	// A submit to a site that never answers holds the task's lock; a user's cancel of
	// that task gets ErrBusy after UserLockWait instead of hanging with it.
	ctx, stop := context.WithCancel(context.Background())
	hung := &hungProvider{release: make(chan struct{}), calls: map[string]int{}}
	t.Cleanup(func() { stop(); close(hung.release) })
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "m.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e := New(Options{Store: st, Providers: provMap{"H": hung}, Placer: fixedPlacer{"H"}, UserLockWait: 200 * time.Millisecond})
	newTask(t, st, "busy", "true")
	go func() {
		_ = e.Dispatch(ctx, "busy", &Placement{System: "H", Partition: "cpu", Spec: specFor(&model.Task{Command: "true"})}, "test")
	}()
	for end := time.Now().Add(5 * time.Second); hung.count("submit") == 0; {
		if time.Now().After(end) {
			t.Fatal("the submit never reached the hung site")
		}
		time.Sleep(10 * time.Millisecond)
	}
	within(t, "cancel of a busy task", 3*time.Second, func() error {
		err := e.Cancel(context.Background(), "busy", "user cancel")
		if !errors.Is(err, ErrBusy) {
			return fmt.Errorf("cancel: %v, want ErrBusy", err)
		}
		return nil
	})
}
