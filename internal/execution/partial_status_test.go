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

	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/provider"
	"github.com/mosaic-hpc/mosaic/internal/provider/simprov"
	"github.com/mosaic-hpc/mosaic/internal/store"
)

// unroutableSite answers status for every job but those of blocked tags, which it
// reports in a provider.PartialError, as the hpc provider does for a job whose owner
// has no site identity.
type unroutableSite struct {
	*simprov.Provider
	mu      sync.Mutex
	blocked map[string]bool // job ids
}

func (u *unroutableSite) Status(ctx context.Context, ids []string) (map[string]model.JobStatus, error) {
	u.mu.Lock()
	var ask []string
	failed := map[string]error{}
	for _, id := range ids {
		if u.blocked[id] {
			failed[id] = errors.New("no site identity for this user")
		} else {
			ask = append(ask, id)
		}
	}
	u.mu.Unlock()
	res, err := u.Provider.Status(ctx, ask)
	if err != nil {
		return nil, err
	}
	if len(failed) > 0 {
		return res, &provider.PartialError{System: "A", Failed: failed}
	}
	return res, nil
}

// TestUnroutableJobDoesNotStopMonitoring: with one job the site cannot be asked about,
// the other job's task still finishes, and the blocked one gets one event saying why
// and stays as it is.
func TestUnroutableJobDoesNotStopMonitoring(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	site := &unroutableSite{Provider: newSimSite(t, "A"), blocked: map[string]bool{}}
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "m.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e := New(Options{Store: st, Providers: provMap{"A": site}, Placer: fixedPlacer{"A"}, SubmitBackoff: time.Millisecond})
	for id, cmd := range map[string]string{"tok": "true", "tblk": "sleep 600"} {
		newTask(t, st, id, cmd)
		if err := e.Dispatch(ctx, id, &Placement{System: "A", Partition: "cpu", Account: "acct", Spec: specFor(&model.Task{Command: cmd})}, "test"); err != nil {
			t.Fatal(err)
		}
	}
	blk, err := st.Attempts(ctx, "tblk")
	if err != nil || len(blk) != 1 || blk[0].JobID == "" {
		t.Fatalf("blocked task's attempt %+v %v", blk, err)
	}
	site.mu.Lock()
	site.blocked[blk[0].JobID] = true
	site.mu.Unlock()
	deadline := time.Now().Add(45 * time.Second)
	for time.Now().Before(deadline) {
		if err := e.Tick(ctx); err != nil {
			t.Fatal(err)
		}
		if tr, _ := st.Task(ctx, "tok"); tr.State.Final() {
			break
		}
		time.Sleep(30 * time.Millisecond)
	}
	if tr, _ := st.Task(ctx, "tok"); tr.State != model.TaskSucceeded {
		t.Fatalf("the routable task is %s (%s), want succeeded", tr.State, tr.Reason)
	}
	evs, err := st.Events(ctx, store.EventQuery{TaskID: "tblk", Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var notes []string
	for _, ev := range evs {
		if strings.Contains(ev.Message, "cannot be monitored") {
			notes = append(notes, fmt.Sprint(ev.Message, " / ", ev.Rationale))
		}
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "no site identity") {
		t.Fatalf("blocked task's events %v, want one saying it cannot be monitored and why", notes)
	}
	if tr, _ := st.Task(ctx, "tblk"); tr.State.Final() {
		t.Fatalf("the blocked task became %s without its site's word", tr.State)
	}
}

// FindByTag looks up every tag but the blocked ones, reported in a PartialError.
func (u *unroutableSite) FindByTag(ctx context.Context, tags []string) (map[string]model.JobStatus, error) {
	u.mu.Lock()
	var ask []string
	failed := map[string]error{}
	for _, tag := range tags {
		if u.blocked[tag] {
			failed[tag] = errors.New("no site identity for this user")
		} else {
			ask = append(ask, tag)
		}
	}
	u.mu.Unlock()
	res, err := u.Provider.FindByTag(ctx, ask)
	if err != nil {
		return nil, err
	}
	if len(failed) > 0 {
		return res, &provider.PartialError{System: "A", Failed: failed}
	}
	return res, nil
}

// TestUnroutableOrphanDoesNotStopRecovery: after a restart, a submit of unknown outcome
// whose owner has no identity is left as it is (with an event), and the others on the
// same system are settled.
func TestUnroutableOrphanDoesNotStopRecovery(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	site := &unroutableSite{Provider: newSimSite(t, "A"), blocked: map[string]bool{model.JobTag("oblk", 1): true}}
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "m.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	for _, task := range []string{"ook", "oblk"} {
		newTask(t, st, task, "echo hi")
		spec := specFor(&model.Task{Command: "echo hi"})
		spec.Tag, spec.System, spec.Partition, spec.Account, spec.Name = model.JobTag(task, 1), "A", "cpu", "acct", task
		if err := st.CreateAttempt(ctx, &model.Attempt{TaskID: task, N: 1, Tag: spec.Tag, System: "A", Partition: "cpu", Account: "acct",
			Spec: spec, State: model.JobSubmitting, CreatedAt: time.Now().UTC()}); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(5 * time.Millisecond)
	e := New(Options{Store: st, Providers: provMap{"A": site}, Placer: fixedPlacer{"A"}})
	if err := e.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	ok, _ := st.Attempts(ctx, "ook")
	if len(ok) != 1 || ok[0].State == model.JobSubmitting {
		t.Fatalf("the routable orphan was not settled: %+v", ok)
	}
	blk, _ := st.Attempts(ctx, "oblk")
	if len(blk) != 1 || blk[0].State != model.JobSubmitting {
		t.Fatalf("the unroutable orphan changed without its site's word: %+v", blk)
	}
	evs, err := st.Events(ctx, store.EventQuery{TaskID: "oblk", Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var said bool
	for _, ev := range evs {
		said = said || strings.Contains(ev.Message, "cannot be monitored")
	}
	if !said {
		t.Fatalf("no event says why the unroutable orphan is left: %+v", evs)
	}
}
