//go:build linux

package simprov

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/sim"
	"github.com/mosaic-hpc/mosaic/internal/site"
	"github.com/mosaic-hpc/mosaic/internal/testproc"
)

// The jobs the crash helper submits, by name: command, partition, nodes, walltime.
var crashJobs = []struct {
	name, cmd, part string
	nodes           int
	wall            time.Duration
}{
	{"done", `echo done >> "$SIDE"`, "gpu", 1, time.Hour},                                    // finished before the crash
	{"runs", `echo runs >> "$SIDE"; sleep 5; echo out-of-runs; exit 3`, "gpu", 1, time.Hour}, // adopted, ends FAILED 3
	{"quick", `echo quick >> "$SIDE"; sleep 0.3`, "gpu", 1, time.Hour},                       // ends while nobody watches
	{"long", `echo long >> "$SIDE"; sleep 60`, "gpu", 1, 6 * time.Minute},                    // adopted, TIMEOUT at 6 simulated minutes
	{"cancel", `echo cancel >> "$SIDE"; sleep 60`, "cpu", 1, time.Hour},                      // adopted, then cancelled
	{"killed", `echo killed >> "$SIDE"; sleep 60`, "cpu", 1, time.Hour},                      // killed from outside while nobody watches
	{"pending", `echo pending >> "$SIDE"`, "cpu", 4, time.Hour},                              // queued behind the others: requeued
}

// TestCrashHelperProcess is the subprocess of TestRestartAfterKill9: a provider that
// submits crashJobs, prints their ids once all but the last run, and waits to be
// killed with SIGKILL (at most a minute).
func TestCrashHelperProcess(t *testing.T) {
	dir := os.Getenv("SIMPROV_CRASH_HELPER_DIR")
	if dir == "" {
		t.Skip("helper process only")
	}
	p, err := New(testSystem(), site.SimGlobal{Seed: 1}, Options{Speed: 60, Tick: 20 * time.Millisecond, WorkDir: dir, Configure: noLoad})
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(3)
	}
	p.Start()
	ids := map[string]string{}
	for _, j := range crashJobs {
		s := model.JobSpec{Tag: "mosaic-" + j.name + "-1", Name: j.name, Partition: j.part, Nodes: j.nodes, NTasks: 1, CPUsPerTask: 1,
			Walltime: model.Duration(j.wall), Command: j.cmd, Env: map[string]string{"SIDE": filepath.Join(dir, "side")}}
		id, err := p.Submit(ctx, s)
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(3)
		}
		ids[j.name] = id
		if j.name == "done" {
			for range 250 {
				m, _ := p.Status(ctx, []string{id})
				if m[id].State.Final() {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
	}
	for range 250 { // until the five that can start have started
		m, _ := p.Status(ctx, []string{ids["runs"], ids["quick"], ids["long"], ids["cancel"], ids["killed"]})
		n := 0
		for _, st := range m {
			if st.State == model.JobRunning || st.State.Final() {
				n++
			}
		}
		if n == 5 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	b, _ := json.Marshal(ids)
	fmt.Printf("ids %s\n", b)
	time.Sleep(time.Minute)
	os.Exit(4)
}

func TestRestartAfterKill9(t *testing.T) {
	dir := t.TempDir()
	cmd, l := testproc.Start(t, "TestCrashHelperProcess", []string{"SIMPROV_CRASH_HELPER_DIR=" + dir}, "ids ")
	var ids map[string]string
	if err := json.Unmarshal([]byte(strings.TrimPrefix(l, "ids ")), &ids); err != nil {
		t.Fatal(err)
	}
	sysDir := filepath.Join(dir, safeName(testSystem().Name))
	rec := func(name string) *jobRecord {
		t.Helper()
		r, err := loadRecord(filepath.Join(sysDir, ids[name]))
		if err != nil {
			t.Fatalf("record of %s: %v", name, err)
		}
		return r
	}
	pids := map[string]int{}
	for _, n := range []string{"runs", "long", "cancel", "killed"} {
		r := rec(n)
		if r.State != sim.Running || r.PID <= 0 || r.ProcStart == 0 {
			t.Fatalf("record of running job %s before the crash: %+v", n, r)
		}
		pids[n] = r.PID
	}
	if r := rec("pending"); r.State != sim.Pending {
		t.Fatalf("record of the pending job: %+v", r)
	}

	// The core dies without cleanup; its job processes live on.
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if !pidAlive(pids["runs"]) || !pidAlive(pids["long"]) {
		t.Fatal("the jobs died with the core; the test would prove nothing")
	}
	// Nobody watches: "quick" ends, "killed" is killed from outside.
	_ = syscall.Kill(-pids["killed"], syscall.SIGKILL)
	time.Sleep(800 * time.Millisecond)

	p := newProvider(t, testSystem(), Options{Speed: 60, Tick: 20 * time.Millisecond, WorkDir: dir, Configure: noLoad})
	p.Start()
	all := make([]string, 0, len(ids))
	for _, id := range ids {
		all = append(all, id)
	}
	// Right after the restart, before any tick: every job is known, none vanished.
	m, err := p.Status(ctx, all)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]model.JobState{
		"done":    {model.JobSucceeded},
		"runs":    {model.JobRunning},
		"quick":   {model.JobSucceeded, model.JobRunning},
		"long":    {model.JobRunning},
		"cancel":  {model.JobRunning},
		"killed":  {model.JobLost},
		"pending": {model.JobPending, model.JobRunning, model.JobSucceeded},
	}
	for name, states := range want {
		st, ok := m[ids[name]]
		if !ok {
			t.Fatalf("job %s (%s) unknown right after the restart", name, ids[name])
		}
		if !containsState(states, st.State) {
			t.Errorf("job %s right after the restart: %s (%s), want one of %v", name, st.State, st.Reason, states)
		}
		if st.JobID != ids[name] || st.Name != "mosaic-"+name+"-1" {
			t.Errorf("job %s: id %s name %s", name, st.JobID, st.Name)
		}
	}
	if r := m[ids["killed"]]; !strings.Contains(r.Reason, "no exit status") {
		t.Errorf("lost job's reason: %q", r.Reason)
	}
	if err := p.Cancel(ctx, []string{ids["cancel"]}); err != nil {
		t.Fatal(err)
	}
	if st := waitFinal(t, p, ids["cancel"]); st.State != model.JobCancelled {
		t.Errorf("cancelled adopted job: %+v", st)
	}
	waitGone(t, pids["cancel"])

	if st := waitFinal(t, p, ids["quick"]); st.State != model.JobSucceeded {
		t.Errorf("job that ended while nobody watched: %+v", st)
	}
	st := waitFinal(t, p, ids["runs"])
	if st.State != model.JobFailed || st.ExitCode != 3 {
		t.Errorf("adopted job's end: %+v, want FAILED exit 3 (from the wrapper's status file)", st)
	}
	if l, err := p.Logs(ctx, ids["runs"], 0); err != nil || l.Stdout != "out-of-runs\n" {
		t.Errorf("adopted job's logs: %+v %v", l, err)
	}
	st = waitFinal(t, p, ids["long"])
	if st.State != model.JobTimeout {
		t.Errorf("adopted job over its walltime: %+v, want TIMEOUT", st)
	}
	waitGone(t, pids["long"])
	if st := waitFinal(t, p, ids["pending"]); st.State != model.JobSucceeded || st.JobID != ids["pending"] {
		t.Errorf("requeued job: %+v", st)
	}
	found, err := p.FindByTag(ctx, []string{"mosaic-done-1", "mosaic-runs-1", "mosaic-pending-1", "mosaic-nope-1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 3 || found["mosaic-done-1"].JobID != ids["done"] || found["mosaic-pending-1"].JobID != ids["pending"] {
		t.Errorf("find by tag after a restart: %+v", found)
	}

	// Every command ran exactly once.
	b, err := os.ReadFile(filepath.Join(dir, "side"))
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, l := range strings.Fields(string(b)) {
		count[l]++
	}
	for _, j := range crashJobs {
		if count[j.name] != 1 {
			t.Errorf("job %s ran %d times, want once (side effects %q)", j.name, count[j.name], b)
		}
	}
	// A provider's own new ids never collide with the earlier run's.
	id := submit(t, p, spec("gpu", "true", time.Hour))
	n, _ := strconv.ParseInt(id, 10, 64)
	for name, old := range ids {
		if o, _ := strconv.ParseInt(old, 10, 64); n <= o {
			t.Errorf("new id %d not above %s's %d", n, name, o)
		}
	}
}

func containsState(s []model.JobState, x model.JobState) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}

// TestRestartDoesNotAdoptAReusedPid: a record whose pid now belongs to another
// process (different start time) is not adopted, and that process is left alone.
func TestRestartDoesNotAdoptAReusedPid(t *testing.T) {
	dir := t.TempDir()
	stranger := exec.Command("sleep", "30")
	stranger.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // a group leader, like a job
	if err := stranger.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stranger.Process.Kill(); _ = stranger.Wait() })
	start, ok := procStartTime(stranger.Process.Pid)
	if !ok {
		t.Fatal("no start time for a live process")
	}
	sysDir := filepath.Join(dir, safeName(testSystem().Name))
	for i, tc := range []struct {
		name      string
		procStart uint64
	}{
		{"other start time", start + 1},
		{"start time matches but not the job's command line", start},
	} {
		id := int64(1000 + i)
		jd := filepath.Join(sysDir, strconv.FormatInt(id, 10))
		if err := os.MkdirAll(jd, 0o755); err != nil {
			t.Fatal(err)
		}
		r := &jobRecord{ID: id, System: testSystem().Name, Spec: spec("gpu", "sleep 30", time.Hour), Speed: 60, Submitted: time.Now(),
			State: sim.Running, Started: time.Now(), PID: stranger.Process.Pid, ProcStart: tc.procStart}
		if err := saveRecord(jd, r); err != nil {
			t.Fatal(err)
		}
	}
	p := newProvider(t, testSystem(), Options{Speed: 60, WorkDir: dir, Configure: noLoad})
	m, err := p.Status(ctx, []string{"1000", "1001"})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"1000", "1001"} {
		if m[id].State != model.JobLost {
			t.Errorf("job %s with a reused pid: %+v, want lost", id, m[id])
		}
	}
	if len(p.adopted) != 0 {
		t.Fatalf("adopted a stranger: %v", p.adopted)
	}
	time.Sleep(100 * time.Millisecond)
	if st, err := readProcStat(stranger.Process.Pid); err != nil || st.state == 'Z' {
		t.Fatalf("the stranger with the reused pid was killed (%v)", err)
	}
}

// TestWorkDirLockedByAnotherProvider: a second provider on a work directory in use
// leaves the first one's jobs alone (no adoption, no kill, no requeue).
func TestWorkDirLockedByAnotherProvider(t *testing.T) {
	dir := t.TempDir()
	a := newProvider(t, testSystem(), Options{Speed: 60, Tick: 20 * time.Millisecond, WorkDir: dir, Configure: noLoad})
	a.Start()
	s := spec("gpu", "sleep 30 & echo $! > pid; wait", time.Hour)
	id := submit(t, a, s)
	child := readPid(t, a, id)
	b := newProvider(t, testSystem(), Options{Speed: 60, WorkDir: dir, Configure: noLoad})
	if b.lock != nil || len(b.recs) != 0 || len(b.adopted) != 0 {
		t.Fatalf("second provider took over a live provider's directory: lock %v recs %d adopted %d", b.lock != nil, len(b.recs), len(b.adopted))
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if !pidAlive(child) {
		t.Fatal("the first provider's job was killed by the second")
	}
	if st, _ := a.Status(ctx, []string{id}); st[id].State != model.JobRunning {
		t.Fatalf("first provider's job: %+v", st[id])
	}
	// After a graceful Close the job is recorded as ended, and the next provider
	// reports that at once.
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	waitGone(t, child)
	c := newProvider(t, testSystem(), Options{Speed: 60, WorkDir: dir, Configure: noLoad})
	m, err := c.Status(ctx, []string{id})
	if err != nil {
		t.Fatal(err)
	}
	if m[id].State != model.JobNodeFail || !strings.Contains(m[id].Reason, "Mosaic stopped") {
		t.Fatalf("job killed by Close, seen after a restart: %+v", m[id])
	}
}

// TestRestartKillsJobWithDamagedRecord: a job still running whose record cannot be
// read cannot be followed; it is killed so that it does not run beside its retry.
func TestRestartKillsJobWithDamagedRecord(t *testing.T) {
	dir := t.TempDir()
	jd := filepath.Join(dir, safeName(testSystem().Name), "1000")
	if err := os.MkdirAll(jd, 0o755); err != nil {
		t.Fatal(err)
	}
	// The job as the wrapper runs it: its own group, the job directory in its arguments.
	job := exec.Command("/bin/sh", "-c", "sleep 30", "mosaic-sim-job", "sh", filepath.Join(jd, "job.sh"), jd)
	job.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := job.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = job.Process.Kill(); _ = job.Wait() })
	if err := os.WriteFile(filepath.Join(jd, pidFile), []byte(strconv.Itoa(job.Process.Pid)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(jd, recordFile), []byte(`{"v":1,"id":1000,"state":"RUNN`), 0o600); err != nil {
		t.Fatal(err)
	}
	newProvider(t, testSystem(), Options{Speed: 60, WorkDir: dir, Configure: noLoad})
	done := make(chan error, 1)
	go func() { done <- job.Wait() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the job with a damaged record still runs after the restart")
	}
}

// TestJobEndingAsCloseRunsKeepsItsResult: a job that exits on its own while Close
// holds the lock (its wait sees the provider closed) is recorded with its real
// result, not as a node failure: the engine would retry a NODE_FAIL and run a
// finished command again. The interleaving is forced: the test holds the lock until
// the job's process is reaped, then runs Close's steps.
func TestJobEndingAsCloseRunsKeepsItsResult(t *testing.T) {
	for _, tc := range []struct {
		cmd   string
		state sim.State
		code  int
	}{
		{"true", sim.Completed, 0},
		{"exit 3", sim.Failed, 3},
	} {
		t.Run(tc.cmd, func(t *testing.T) {
			p := newProvider(t, testSystem(), Options{Speed: 60, Configure: noLoad})
			id := submit(t, p, spec("gpu", tc.cmd, time.Hour))
			n, _ := strconv.ParseInt(id, 10, 64)
			p.mu.Lock()
			pr := p.procs[n]
			if pr == nil {
				p.mu.Unlock()
				t.Fatal("the job did not start at submit")
			}
			pid := pr.cmd.Process.Pid
			for i := 0; syscall.Kill(pid, 0) == nil; i++ { // until wait reaped it and waits for the lock
				if i == 500 {
					p.mu.Unlock()
					t.Fatal("the job's process did not end")
				}
				time.Sleep(10 * time.Millisecond)
			}
			stopped := p.stopLocked()
			p.mu.Unlock()
			if err := p.finishClose(stopped); err != nil {
				t.Fatal(err)
			}
			r, err := loadRecord(p.jobDir(n))
			if err != nil {
				t.Fatal(err)
			}
			if r.State != tc.state || r.ExitCode != tc.code {
				t.Fatalf("job that ended as Close ran: %s exit %d (%s), want %s exit %d", r.State, r.ExitCode, r.Reason, tc.state, tc.code)
			}
		})
	}
}

// startFakeJob starts a process that looks like the wrapper of job id under dir
// (its own group, the job directory in its arguments) and writes a RUNNING record
// for it, as a crashed core leaves one. It returns the process.
func startFakeJob(t *testing.T, dir string, id int64) *exec.Cmd {
	t.Helper()
	jd := filepath.Join(dir, safeName(testSystem().Name), strconv.FormatInt(id, 10))
	if err := os.MkdirAll(jd, 0o755); err != nil {
		t.Fatal(err)
	}
	job := exec.Command("/bin/sh", "-c", "sleep 30", "mosaic-sim-job", "sh", filepath.Join(jd, "job.sh"), jd)
	job.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := job.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = job.Process.Kill(); _ = job.Wait() })
	start, ok := procStartTime(job.Process.Pid)
	if !ok {
		t.Fatal("no start time for a live process")
	}
	r := &jobRecord{ID: id, System: testSystem().Name, Spec: spec("gpu", "sleep 30", time.Hour), Speed: 60, Submitted: time.Now(),
		State: sim.Running, Started: time.Now(), PID: job.Process.Pid, ProcStart: start}
	if err := saveRecord(jd, r); err != nil {
		t.Fatal(err)
	}
	return job
}

// TestCloseSettlesAdoptedJobsThatEnded: on Close, an adopted job that already wrote
// its exit status is recorded with it (not killed and marked NODE_FAIL, which the
// engine would run again); one still running is killed and is NODE_FAIL.
func TestCloseSettlesAdoptedJobsThatEnded(t *testing.T) {
	dir := t.TempDir()
	startFakeJob(t, dir, 1000)
	startFakeJob(t, dir, 1001)
	running := startFakeJob(t, dir, 1002)
	p := newProvider(t, testSystem(), Options{Speed: 60, WorkDir: dir, Configure: noLoad})
	if len(p.adopted) != 3 {
		t.Fatalf("adopted %d jobs, want 3", len(p.adopted))
	}
	// The jobs end between two ticks: the exit status is there, Close comes first.
	for id, code := range map[int64]string{1000: "0\n", 1001: "3\n"} {
		if err := os.WriteFile(filepath.Join(p.jobDir(id), exitFile), []byte(code), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[int64]struct {
		state sim.State
		code  int
	}{1000: {sim.Completed, 0}, 1001: {sim.Failed, 3}, 1002: {sim.NodeFail, 0}} {
		r, err := loadRecord(p.jobDir(id))
		if err != nil {
			t.Fatal(err)
		}
		if r.State != want.state || r.ExitCode != want.code {
			t.Errorf("adopted job %d after Close: %s exit %d (%s), want %s exit %d", id, r.State, r.ExitCode, r.Reason, want.state, want.code)
		}
	}
	done := make(chan error, 1)
	go func() { done <- running.Wait() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the adopted job still running was not killed by Close")
	}
}

// TestRecoveredPendingJobKeepsItsStartTime: a job whose record still says PENDING
// but whose wrapper wrote its pid (the core died between the start and the record)
// started when its process did, not when the next provider adopted it, which would
// extend its walltime. The provider's clock runs an hour ahead to tell them apart.
// Likewise for such a job that ended meanwhile: it started when it wrote its pid file.
func TestRecoveredPendingJobKeepsItsStartTime(t *testing.T) {
	dir := t.TempDir()
	submitted := time.Now().Add(-time.Minute)
	pending := func(id int64, pid int) string {
		jd := filepath.Join(dir, safeName(testSystem().Name), strconv.FormatInt(id, 10))
		if err := os.MkdirAll(jd, 0o755); err != nil {
			t.Fatal(err)
		}
		r := &jobRecord{ID: id, System: testSystem().Name, Spec: spec("gpu", "sleep 30", time.Hour), Speed: 60, Submitted: submitted, State: sim.Pending}
		if err := saveRecord(jd, r); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(jd, pidFile), []byte(strconv.Itoa(pid)+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return jd
	}
	// Running: the wrapper as launch starts it.
	jd := filepath.Join(dir, safeName(testSystem().Name), "1000")
	job := exec.Command("/bin/sh", "-c", "sleep 30", "mosaic-sim-job", "sh", filepath.Join(jd, "job.sh"), jd)
	job.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := job.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = job.Process.Kill(); _ = job.Wait() })
	began := time.Now()
	jd1 := pending(1000, job.Process.Pid)
	early := began.Add(-50 * time.Second) // so the pid file's time would be wrong: /proc's is used
	if err := os.Chtimes(filepath.Join(jd1, pidFile), early, early); err != nil {
		t.Fatal(err)
	}
	// Ended: a pid that is gone, its pid file written 30s ago, its exit status 10s ago.
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	jd2 := pending(1001, gone.Process.Pid)
	wrote, exited := time.Now().Add(-30*time.Second), time.Now().Add(-10*time.Second)
	if err := os.WriteFile(filepath.Join(jd2, exitFile), []byte("0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(filepath.Join(jd2, pidFile), wrote, wrote); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(filepath.Join(jd2, exitFile), exited, exited); err != nil {
		t.Fatal(err)
	}

	ahead := time.Now().Add(time.Hour)
	p := newProvider(t, testSystem(), Options{Speed: 60, WorkDir: dir, Configure: noLoad, Clock: func() time.Time { return ahead }})
	r := p.adopted[1000]
	if r == nil {
		t.Fatalf("the running job was not adopted: %+v", p.recs[1000])
	}
	// /proc's start time is to the second (boot time), so allow a little either way.
	if d := r.Started.Sub(began); d < -2*time.Second || d > 2*time.Second {
		t.Errorf("adopted job started at %v, want its process's start %v (provider clock %v)", r.Started, began, ahead)
	}
	r = p.recs[1001]
	if r.State != sim.Completed {
		t.Fatalf("job that ended meanwhile: %+v", r)
	}
	if !r.Started.Equal(wrote.UTC()) || r.Ended.Before(r.Started) {
		t.Errorf("job that ended meanwhile: started %v ended %v, want started %v (its pid file)", r.Started, r.Ended, wrote.UTC())
	}
}
