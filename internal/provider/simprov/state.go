package simprov

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/sim"
)

// A simulated site's batch system lives inside the core, but its jobs are real
// processes that outlive a core killed with SIGKILL. So that a restart neither loses
// them nor runs them again, the provider keeps its own state on disk, one record per
// job in the job's directory (<workdir>/<system>/<id>/mosaic-job.json), written
// before the step it describes becomes visible:
//
//   - at submit, before the id is returned: the spec, state PENDING;
//   - at start, right after the process starts: RUNNING with its pid (= process
//     group id), the process's start time from /proc/<pid>/stat (so a reused pid is
//     not mistaken for the job) and the output paths. The job runs under a small
//     /bin/sh wrapper that first writes its own pid (.mosaic-pid, covering a crash
//     between the start and the record) and at the end writes the job's exit status
//     (.mosaic-exit): a restarted provider cannot wait(2) for a process it did not
//     start, so that file is how it learns the exit code;
//   - at the end: the final state, exit code and reason.
//
// A new provider on the same work directory (New) reconciles every record that is
// not final, before it answers anything:
//
//   - PENDING, never started: queued again in the new model under the same id (a
//     real controller keeps its queue across restarts too);
//   - RUNNING and the process is still ours (alive, same start time, its command
//     line names the job's directory): adopted — followed to the end (exit status
//     from .mosaic-exit), its walltime enforced from the recorded start, cancel
//     kills its group;
//   - RUNNING and the process is gone: final from .mosaic-exit, or, if it left
//     none, "lost" with the reason; any survivors of its process group are killed
//     first, so nothing of it runs beside a retry;
//   - a record that cannot be read: the job cannot be followed, so its process (found
//     by the wrapper's pid file and checked like above) is killed; the engine then
//     sees the job vanish and retries it.
//
// Final records keep answering Status, FindByTag and Logs (like sacct), so nothing
// looks "running" for minutes after a restart with nobody watching it.

const (
	recordFile = "mosaic-job.json"
	pidFile    = ".mosaic-pid"
	exitFile   = ".mosaic-exit"
	lockFile   = ".mosaic-sim.lock"
	recordV    = 1
	// maxRecord bounds a record read from disk (a spec carries the script).
	maxRecord = 4 << 20
)

// Raw state of a job whose process ended while no provider watched it and left no
// exit status.
const rawLost = "LOST"

// jobRecord is the provider's durable state of one user job.
type jobRecord struct {
	V         int           `json:"v"`
	ID        int64         `json:"id"` // the id the caller knows
	System    string        `json:"system"`
	Spec      model.JobSpec `json:"spec"`
	Speed     float64       `json:"speed"`
	Submitted time.Time     `json:"submitted"` // wall clock, like every time here
	State     sim.State     `json:"state"`     // PENDING, RUNNING or final; "LOST" is final too
	Started   time.Time     `json:"started,omitzero"`
	Ended     time.Time     `json:"ended,omitzero"`
	PID       int           `json:"pid,omitempty"` // the wrapper's pid = the job's process group
	ProcStart uint64        `json:"proc_start,omitempty"`
	Stdout    string        `json:"stdout,omitempty"`
	Stderr    string        `json:"stderr,omitempty"`
	ExitCode  int           `json:"exit_code"`
	Reason    string        `json:"reason,omitempty"`
	NodeList  string        `json:"node_list,omitempty"`
}

func (r *jobRecord) final() bool { return r.State.Final() || r.State == rawLost }

// exited records the job's own end: exit code 0 is COMPLETED, anything else FAILED
// (like sim.Cluster.Finish).
func (r *jobRecord) exited(code int, at time.Time) {
	r.State, r.ExitCode, r.Reason, r.Ended = sim.Completed, code, "", at
	if code != 0 {
		r.State, r.Reason = sim.Failed, "NonZeroExitCode"
	}
}

// stoppedByClose records a job killed because the provider was closed.
func (r *jobRecord) stoppedByClose(code int, at time.Time) {
	r.State, r.ExitCode, r.Ended = sim.NodeFail, code, at
	r.Reason = "Mosaic stopped: a simulated site's jobs stop with the core"
}

// status renders a record the way Status reports a job; now is the wall clock.
func (r *jobRecord) status(now time.Time) model.JobStatus {
	st := model.JobStatus{JobID: strconv.FormatInt(r.ID, 10), Name: r.Spec.Tag, RawState: string(r.State),
		ExitCode: r.ExitCode, Reason: r.Reason, Submit: r.Submitted, Start: r.Started, End: r.Ended, NodeList: r.NodeList}
	if r.State == rawLost {
		st.State = model.JobLost
	} else {
		st.State = r.State.Model()
	}
	speed := max(r.Speed, 1e-9)
	switch {
	case !r.Ended.IsZero() && !r.Started.IsZero():
		st.Elapsed = model.Duration(time.Duration(float64(r.Ended.Sub(r.Started)) * speed))
	case !r.Started.IsZero():
		st.Elapsed = model.Duration(time.Duration(float64(now.Sub(r.Started)) * speed))
	}
	return st
}

// deadline is when an adopted job's walltime (simulated) is up on the wall clock.
func (r *jobRecord) deadline() time.Time {
	return r.Started.Add(time.Duration(float64(r.Spec.Walltime.D()) / max(r.Speed, 1e-9)))
}

// parseRecord decodes a record file; errors say what is wrong with it.
func parseRecord(b []byte) (*jobRecord, error) {
	if len(b) > maxRecord {
		return nil, fmt.Errorf("record is %d bytes, more than %d", len(b), maxRecord)
	}
	var r jobRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	switch {
	case r.V != recordV:
		return nil, fmt.Errorf("record version %d, want %d", r.V, recordV)
	case r.ID <= 0:
		return nil, fmt.Errorf("record has no job id")
	case r.PID < 0:
		return nil, fmt.Errorf("record has pid %d", r.PID)
	}
	switch r.State {
	case sim.Pending, sim.Running, sim.Completed, sim.Failed, sim.Timeout, sim.NodeFail, sim.Cancelled, rawLost:
	default:
		return nil, fmt.Errorf("record has unknown state %q", r.State)
	}
	return &r, nil
}

// saveRecord writes a record atomically (temporary file, fsync, rename) so a crash
// leaves the old record or the new one, never half of one.
func saveRecord(dir string, r *jobRecord) error {
	r.V = recordV
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, recordFile+".tmp-*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(b)
	if err == nil {
		err = tmp.Sync()
	}
	err = errors.Join(err, tmp.Close())
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(dir, recordFile))
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return err
	}
	return nil
}

func loadRecord(dir string) (*jobRecord, error) {
	f, err := os.Open(filepath.Join(dir, recordFile))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, maxRecord+1)
	n, err := readFull(f, b)
	if err != nil {
		return nil, err
	}
	return parseRecord(b[:n])
}

func readFull(f *os.File, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := f.Read(b[n:])
		n += m
		if err != nil {
			if errors.Is(err, os.ErrClosed) {
				return n, err
			}
			return n, nil // io.EOF or a read error: what was read is judged by the parser
		}
	}
	return n, nil
}

// readSmallInt reads a file holding one decimal integer (the wrapper's pid or exit
// status); ok is false if it is missing or not a number.
func readSmallInt(path string) (int, bool) {
	b, err := os.ReadFile(path)
	if err != nil || len(b) > 32 {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || n < 0 {
		return 0, false
	}
	return n, true
}

// record persists the record of a job (caller holds p.mu) and keeps it in memory.
func (p *Provider) saveLocked(r *jobRecord) error {
	p.recs[r.ID] = r
	return saveRecord(p.jobDir(r.ID), r)
}

// recover reconciles the records a previous provider left in the work directory
// (see the comment at the top of this file). It runs in New before the provider is
// returned, after the work directory's lock was taken.
func (p *Provider) recover(recs []*jobRecord, damaged []string) {
	p.stopUnfollowable(damaged)
	now := p.clock()
	for _, r := range recs {
		p.recs[r.ID] = r
		if r.final() {
			continue
		}
		dir := p.jobDir(r.ID)
		pid := r.PID
		if pid == 0 {
			if n, ok := readSmallInt(filepath.Join(dir, pidFile)); ok {
				pid = n // started, then the core died before the record said so
			}
		}
		if r.State == sim.Pending && pid == 0 {
			p.requeue(r)
			continue
		}
		if r.State == sim.Pending {
			r.State = sim.Running // started, then the core died before the record said so
		}
		r.PID = pid
		if pid > 0 && ours(pid, r.ProcStart, dir) {
			if r.ProcStart == 0 {
				r.ProcStart, _ = procStartTime(pid)
			}
			if r.Started.IsZero() {
				r.Started = startedAt(r, dir, now) // not now: that would extend its walltime
			}
			p.adopted[r.ID] = r
			p.log.Info("sim job re-adopted after a restart", "job", r.ID, "pid", pid)
			if err := p.saveLocked(r); err != nil {
				p.log.Warn("sim job record", "job", r.ID, "err", err)
			}
			continue
		}
		p.endOrphan(r, now)
	}
}

// endOrphan settles a job whose process is gone (or is not ours any more): the exit
// status it left, else lost. Survivors of its process group are killed first.
func (p *Provider) endOrphan(r *jobRecord, now time.Time) {
	dir := p.jobDir(r.ID)
	killGroupIfOrphaned(r.PID)
	if code, ok := readSmallInt(filepath.Join(dir, exitFile)); ok {
		r.exited(code, fileTime(filepath.Join(dir, exitFile), now))
	} else {
		r.State, r.ExitCode = rawLost, 0
		r.Reason = "the job's process ended while Mosaic was not running and left no exit status (killed, or the machine restarted)"
		r.Ended = now
	}
	if r.Started.IsZero() && r.PID > 0 { // started, then the core died before the record said so
		r.Started = startedAt(r, dir, r.Ended)
	}
	p.log.Info("sim job ended while Mosaic was down", "job", r.ID, "state", r.State, "exit", r.ExitCode)
	if err := p.saveLocked(r); err != nil {
		p.log.Warn("sim job record", "job", r.ID, "err", err)
	}
}

// startedAt is when a job whose record does not say so started: its process's start
// time (r.ProcStart, checked against the pid's by the caller), else when the wrapper
// wrote its pid file, else now; never before its submission nor after now.
func startedAt(r *jobRecord, dir string, now time.Time) time.Time {
	var t time.Time
	if r.ProcStart != 0 {
		t, _ = procStartWall(r.ProcStart)
	}
	if t.IsZero() {
		t = fileTime(filepath.Join(dir, pidFile), now)
	}
	if t.After(now) {
		t = now
	}
	if t.Before(r.Submitted) {
		t = r.Submitted
	}
	return t.UTC()
}

func fileTime(path string, def time.Time) time.Time {
	if fi, err := os.Stat(path); err == nil {
		return fi.ModTime().UTC()
	}
	return def
}

// requeue queues a job that never started in the new model, keeping its id.
func (p *Provider) requeue(r *jobRecord) {
	req, err := p.request(r.Spec)
	var mid int64
	if err == nil {
		mid, err = p.c.Submit(req)
	}
	if err != nil {
		r.State, r.Ended = sim.Failed, p.clock()
		r.Reason = "could not be queued again after Mosaic restarted: " + firstLine(err.Error())
		p.log.Warn("sim job not requeued after a restart", "job", r.ID, "err", err)
		if err := p.saveLocked(r); err != nil {
			p.log.Warn("sim job record", "job", r.ID, "err", err)
		}
		return
	}
	s := r.Spec
	p.specs[mid] = &s
	p.alias[r.ID], p.extOf[mid] = mid, r.ID
	p.log.Info("sim job queued again after a restart", "job", r.ID, "model_job", mid)
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// followAdopted moves adopted jobs on (caller holds p.mu): ended (exit status from
// the wrapper's file), gone without one (lost), or over their walltime (killed,
// TIMEOUT).
func (p *Provider) followAdopted() {
	if len(p.adopted) == 0 {
		return
	}
	now := p.clock()
	for id, r := range p.adopted {
		dir := p.jobDir(id)
		code, exited := readSmallInt(filepath.Join(dir, exitFile))
		switch {
		case exited:
			r.exited(code, now)
		case !ours(r.PID, r.ProcStart, dir):
			killGroupIfOrphaned(r.PID)
			if code, ok := readSmallInt(filepath.Join(dir, exitFile)); ok { // wrote it as it exited
				r.exited(code, now)
			} else {
				r.State, r.Reason, r.Ended = rawLost, "the re-adopted job's process ended without an exit status (killed from outside Mosaic?)", now
			}
		case r.Spec.Walltime > 0 && now.After(r.deadline()):
			killGroup(r.PID)
			r.State, r.ExitCode, r.Reason, r.Ended = sim.Timeout, 0, "TimeLimit", now
		default:
			continue
		}
		delete(p.adopted, id)
		if err := p.saveLocked(r); err != nil {
			p.log.Warn("sim job record", "job", id, "err", err)
		}
	}
}

// cancelAdopted kills an adopted job's process group; false if id is not adopted.
func (p *Provider) cancelAdopted(id int64) bool {
	r, ok := p.adopted[id]
	if !ok {
		return false
	}
	killGroup(r.PID)
	r.State, r.ExitCode, r.Reason, r.Ended = sim.Cancelled, 0, "Cancelled", p.clock()
	delete(p.adopted, id)
	if err := p.saveLocked(r); err != nil {
		p.log.Warn("sim job record", "job", id, "err", err)
	}
	return true
}

// ours reports whether pid is still the job started in dir: alive (not a zombie),
// the same process start time when one was recorded, and a command line naming the
// job's directory (the wrapper's arguments).
func ours(pid int, start uint64, dir string) bool {
	if pid <= 0 {
		return false
	}
	info, err := readProcStat(pid)
	if errors.Is(err, errNoProcFS) {
		return pidAlive(pid) // no /proc (not Linux): no guard against a reused pid
	}
	if err != nil {
		return false
	}
	if info.state == 'Z' || info.state == 'X' || start != 0 && info.start != start || info.pgrp != pid {
		return false
	}
	cl, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	return slices.Contains(strings.Split(string(cl), "\x00"), dir)
}

// scanRecords reads every job record under the work directory. Unreadable ones are
// reported and skipped; the directories of those that exist are returned as damaged.
func (p *Provider) scanRecords() (recs []*jobRecord, maxID int64, damaged []string) {
	ents, err := os.ReadDir(p.workdir)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			p.log.Warn("sim work directory unreadable; jobs of an earlier run are not recovered", "dir", p.workdir, "err", err)
		}
		return nil, 0, nil
	}
	var out []*jobRecord
	for _, e := range ents {
		id, err := strconv.ParseInt(e.Name(), 10, 64)
		if err != nil || !e.IsDir() || id <= 0 {
			continue
		}
		maxID = max(maxID, id)
		r, err := loadRecord(filepath.Join(p.workdir, e.Name()))
		if err != nil {
			if !errors.Is(err, os.ErrNotExist) {
				p.log.Warn("sim job record unreadable; the job is not recovered", "job", id, "err", err)
				damaged = append(damaged, filepath.Join(p.workdir, e.Name()))
			}
			continue
		}
		if r.ID != id {
			p.log.Warn("sim job record names another job; ignored", "dir", e.Name(), "id", r.ID)
			continue
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b *jobRecord) int { return cmp.Compare(a.ID, b.ID) })
	return out, maxID, damaged
}

// stopUnfollowable kills the still-running process of a job whose record is damaged:
// it cannot be followed, and left alone it would run beside the retry that follows
// once the job is reported lost.
func (p *Provider) stopUnfollowable(dirs []string) {
	for _, dir := range dirs {
		pid, ok := readSmallInt(filepath.Join(dir, pidFile))
		if !ok || !ours(pid, 0, dir) {
			continue
		}
		killGroup(pid)
		p.log.Warn("sim job killed: its record is damaged, so it cannot be followed after the restart; it will be reported lost and retried", "dir", dir, "pid", pid)
	}
}
