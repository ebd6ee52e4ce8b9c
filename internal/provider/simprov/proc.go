package simprov

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/mosaic-hpc/mosaic/internal/sim"
)

// proc is a user job's running process.
type proc struct {
	cmd    *exec.Cmd
	reason sim.State // why the provider killed it (TIMEOUT, NODE_FAIL, CANCELLED), "" if it exited
}

// wrapper runs the job script and leaves what a restarted provider needs to follow
// a job it did not start (state.go): its own pid first, the job's exit status last.
// Arguments: $1 "exec" (run the script itself: it names another interpreter) or
// "sh", $2 the script, $3 the job directory. Each echo is one write(2), so a reader
// sees the whole number or an empty file.
const wrapper = `echo $$ > "$3/` + pidFile + `"
if [ "$1" = exec ]; then "$2"; else /bin/sh "$2"; fi
c=$?
echo $c > "$3/` + exitFile + `"
exit $c`

// launch runs a job the model just started; the caller holds p.mu. A job whose
// process cannot be started ends FAILED with exit code 127 and the reason in its
// stderr file.
func (p *Provider) launch(ev sim.Event) {
	spec := p.specs[ev.JobID]
	if spec == nil || p.closed {
		return // not submitted through this provider (cannot happen) or shutting down
	}
	j, _ := p.c.Job(ev.JobID)
	ext := p.ext(ev.JobID)
	dir := p.jobDir(ext)
	fail := func(err error) {
		p.log.Warn("sim job could not start", "job", ev.JobID, "err", err)
		if f, ferr := os.OpenFile(filepath.Join(dir, "stderr"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); ferr == nil {
			fmt.Fprintf(f, "mosaic-sim: cannot start the job: %v\n", err)
			f.Close()
		}
		_ = p.c.Finish(ev.JobID, 127)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		p.log.Warn("sim job work directory", "dir", dir, "err", err)
		_ = p.c.Finish(ev.JobID, 127)
		return
	}
	body := spec.Script
	if body == "" {
		body = "#!/bin/sh\n" + spec.Command + "\n"
	}
	script := filepath.Join(dir, "job.sh")
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		fail(err)
		return
	}
	stdout, err := os.Create(filepath.Join(dir, "stdout"))
	if err != nil {
		fail(err)
		return
	}
	defer stdout.Close()
	stderr, err := os.Create(filepath.Join(dir, "stderr"))
	if err != nil {
		fail(err)
		return
	}
	defer stderr.Close()
	if spec.Container != nil {
		fmt.Fprintf(stderr, "mosaic-sim: simulated site: image %s is not pulled; running the command directly\n", spec.Container.Image)
	}
	mode := "sh"
	if strings.HasPrefix(body, "#!") && !strings.HasPrefix(body, "#!/bin/sh") {
		mode = "exec" // honour another interpreter
	}
	_ = os.Remove(filepath.Join(dir, exitFile)) // a leftover would end the job at once after a restart
	_ = os.Remove(filepath.Join(dir, pidFile))
	cmd := exec.Command("/bin/sh", "-c", wrapper, "mosaic-sim-job", mode, script, dir)
	cmd.Dir = dir
	if spec.WorkDir != "" {
		if fi, err := os.Stat(spec.WorkDir); err == nil && fi.IsDir() {
			cmd.Dir = spec.WorkDir
		}
	}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.Env = p.jobEnv(j, ext, spec.Env, dir)
	setProcessGroup(cmd)
	if err := cmd.Start(); err != nil {
		fail(err)
		return
	}
	pr := &proc{cmd: cmd}
	p.procs[ev.JobID] = pr
	if r := p.recs[ext]; r != nil {
		// Right after the start: pid, process start time (a reused pid is not the job)
		// and output; the wrapper's pid file covers a crash before this is written.
		r.State, r.Started, r.PID = sim.Running, p.toReal(j.Start), cmd.Process.Pid
		r.ProcStart, _ = procStartTime(cmd.Process.Pid)
		r.Stdout, r.Stderr = stdout.Name(), stderr.Name()
		r.NodeList = p.status(j).NodeList
		if err := p.saveLocked(r); err != nil {
			p.log.Warn("sim job record", "job", ext, "err", err)
		}
	}
	p.log.Debug("sim job started", "job", ev.JobID, "pid", cmd.Process.Pid, "dir", dir)
	p.waiters.Add(1)
	go p.wait(ev.JobID, pr)
}

// wait reaps a process and reports its exit code to the model.
func (p *Provider) wait(id int64, pr *proc) {
	defer p.waiters.Done()
	err := pr.cmd.Wait()
	code := 0
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = exitCode(ee)
		} else {
			code = 1
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.procs, id)
	if pr.reason != "" {
		return // the model already ended it (timeout, node failure, cancel)
	}
	if p.closed {
		p.recordClosed(id, err, code)
		return
	}
	p.advanceLocked()
	if err := p.c.Finish(id, code); err != nil && !errors.Is(err, sim.ErrNotRunning) {
		p.log.Warn("sim job finish", "job", id, "err", err)
	}
	p.advanceLocked() // report the end and start what it made room for
}

// recordClosed persists the end of a job whose process ended while the provider
// was closing (caller holds p.mu), so the next run reports it ended instead of
// waiting for a job that is gone. A job that ended on its own (the wrapper wrote the
// exit status, or it exited without being killed: it may have finished just as
// Close took the lock) keeps its real result; one Close killed is NODE_FAIL, which
// the engine retries. Recording a finished job as NODE_FAIL would run it again.
func (p *Provider) recordClosed(id int64, err error, code int) {
	r := p.recs[p.ext(id)]
	if r == nil || r.final() {
		return
	}
	now := p.clock().UTC()
	if c, ok := readSmallInt(filepath.Join(p.jobDir(r.ID), exitFile)); ok {
		r.exited(c, now)
	} else if !killedBySignal(err) {
		r.exited(code, now)
	} else {
		r.stoppedByClose(code, now)
	}
	if err := p.saveLocked(r); err != nil {
		p.log.Warn("sim job record", "job", r.ID, "err", err)
	}
}

// jobPassthrough are the variables of the core's environment a simulated job keeps,
// like a batch job's fresh login environment. Nothing else of the core's passes:
// it holds API keys and tokens (MOSAIC_LLM_API_KEY, GLOBUS_CLIENT_SECRET, ...).
var jobPassthrough = []string{"PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "TZ", "TMPDIR"}

// jobEnv is the process environment: PATH, HOME and the other jobPassthrough
// variables, the MOSAIC_* variables, then the spec's (what the task asks for).
func (p *Provider) jobEnv(j sim.Job, ext int64, extra map[string]string, dir string) []string {
	gpus := make([]string, j.GPUsPerNode)
	for i := range gpus {
		gpus[i] = strconv.Itoa(i)
	}
	var env []string
	for _, k := range jobPassthrough {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		} else if k == "PATH" {
			env = append(env, "PATH=/usr/local/bin:/usr/bin:/bin")
		}
	}
	env = append(env,
		"MOSAIC_JOB_ID="+strconv.FormatInt(ext, 10),
		"MOSAIC_SYSTEM="+p.sys.Name,
		"MOSAIC_PARTITION="+j.Partition,
		"MOSAIC_NODES="+strconv.Itoa(j.Nodes),
		"MOSAIC_GPUS="+strconv.Itoa(j.GPUsPerNode*j.Nodes),
		"MOSAIC_CPUS_PER_NODE="+strconv.Itoa(j.CoresPerNode),
		"MOSAIC_JOB_NAME="+j.Tag,
		"MOSAIC_WORKDIR="+dir,
		"CUDA_VISIBLE_DEVICES="+strings.Join(gpus, ","),
	)
	for k, v := range extra {
		env = append(env, k+"="+v)
	}
	return env
}
