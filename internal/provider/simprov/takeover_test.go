//go:build linux

package simprov

import (
	"encoding/json"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/testproc"
)

// TestTakeOverAfterLeaderKill9: a team-mode follower's provider is built while the
// leader's provider owns the work directory; it leaves the leader's jobs alone until
// the leader dies, then TakeOver adopts them (found by tag, followed to their end)
// without running any twice.
func TestTakeOverAfterLeaderKill9(t *testing.T) {
	dir := t.TempDir()
	cmd, l := testproc.Start(t, "TestCrashHelperProcess", []string{"SIMPROV_CRASH_HELPER_DIR=" + dir}, "ids ")
	var ids map[string]string
	if err := json.Unmarshal([]byte(strings.TrimPrefix(l, "ids ")), &ids); err != nil {
		t.Fatal(err)
	}
	f := newProvider(t, testSystem(), Options{Speed: 60, Tick: 20 * time.Millisecond, WorkDir: dir})
	f.Start()
	if err := f.TakeOver(); err == nil || !strings.Contains(err.Error(), "still uses the work directory") {
		t.Fatalf("TakeOver while the leader lives: %v, want a refusal", err)
	}
	if found, _ := f.FindByTag(ctx, []string{"mosaic-runs-1"}); len(found) != 0 {
		t.Fatalf("a follower's provider knows the leader's jobs: %+v", found)
	}
	time.Sleep(300 * time.Millisecond) // the follower's model issues background ids meanwhile
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if err := f.TakeOver(); err != nil {
		t.Fatalf("TakeOver after the leader died: %v", err)
	}
	if err := f.TakeOver(); err != nil {
		t.Fatalf("second TakeOver (a no-op): %v", err)
	}
	tags := []string{}
	for name := range ids {
		tags = append(tags, "mosaic-"+name+"-1")
	}
	found, err := f.FindByTag(ctx, tags)
	if err != nil {
		t.Fatal(err)
	}
	for name, id := range ids {
		if found["mosaic-"+name+"-1"].JobID != id {
			t.Errorf("job %s: found %+v, want id %s", name, found["mosaic-"+name+"-1"], id)
		}
	}
	if st := waitFinal(t, f, ids["runs"]); st.State != model.JobFailed || st.ExitCode != 3 {
		t.Errorf("adopted job's end: %+v, want FAILED exit 3", st)
	}
	// A new job gets an id no earlier job had.
	id, err := f.Submit(ctx, model.JobSpec{Tag: "mosaic-new-1", Name: "new", Partition: "cpu", Nodes: 1, NTasks: 1, CPUsPerTask: 1,
		Walltime: model.Duration(time.Hour), Command: "true"})
	if err != nil {
		t.Fatal(err)
	}
	for name, old := range ids {
		if old == id {
			t.Fatalf("new job reuses the id %s of %s", id, name)
		}
	}
}
