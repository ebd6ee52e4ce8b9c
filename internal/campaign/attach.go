package campaign

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/site"
	"github.com/mosaic-hpc/mosaic/internal/transport/shellquote"
)

// AttachBackend runs a slice inside an allocation the user already holds:
// `srun --jobid=ID --overlap` from the login node when the job id is known,
// else a nested `ssh -tt` from the login node to the compute node.
type AttachBackend struct {
	l    SiteLaunch
	conn *siteConn

	mu     sync.Mutex
	dir    string
	cmd    *exec.Cmd
	done   chan struct{}
	waitEr error
	output bytes.Buffer // ssh's own messages (the slice logs to site.log)
}

// NewAttachBackend prepares an attach-mode site.
func NewAttachBackend(sys site.System, l SiteLaunch, localEnv []string) (*AttachBackend, error) {
	if l.Spec.Mode != ModeAttach {
		return nil, fmt.Errorf("site %s: not an attach spec", l.Spec.Name)
	}
	conn, err := newSiteConn(sys, localEnv)
	if err != nil {
		return nil, err
	}
	if l.EnvScript == "" {
		l.EnvScript = sys.EnvScript
	}
	return &AttachBackend{l: l, conn: conn}, nil
}

// Site implements Backend.
func (b *AttachBackend) Site() string { return b.l.Spec.Name }

// srun reports whether the slice enters the allocation with srun --overlap
// (a Slurm site and a job id); otherwise nested ssh is used.
func (b *AttachBackend) srun() bool {
	return b.l.Spec.JobID != "" && !strings.EqualFold(b.conn.sys.Dialect, site.DialectPBS)
}

// outerScript runs on the login node: log first, then into the allocation.
func (b *AttachBackend) outerScript(dir string) string {
	var extra map[string]string
	if b.l.Spec.JobID != "" && !b.srun() {
		// A nested ssh inherits none of the allocation's environment; PBS's
		// nodefile path is deterministic, so rebuild both.
		extra = map[string]string{"PBS_JOBID": b.l.Spec.JobID, "PBS_NODEFILE": "/var/spool/pbs/aux/" + b.l.Spec.JobID}
	}
	inner := b.l.innerScript(dir, false, true, extra)
	var into []string
	if b.srun() {
		into = []string{"srun", "--jobid=" + b.l.Spec.JobID, "--overlap", "-w", b.l.Spec.Host,
			"-N1", "-n1", "--job-name=" + b.l.jobName(), "bash", "-c", inner}
	} else {
		into = []string{"ssh", "-tt", "-o", "BatchMode=yes", "-o", "ServerAliveInterval=30",
			"-o", "ServerAliveCountMax=6", b.l.Spec.Host, shellquote.Join("bash", "-c", inner)}
	}
	return fmt.Sprintf("cd %s || exit 1\nexec >> site.log 2>&1\necho \"mosaic: attach from $(hostname) into %s at $(date -u +%%FT%%TZ)\"\nexec %s\n",
		shellquote.Quote(dir), b.l.Spec.Host, shellquote.Join(into...))
}

// Start implements Backend.
func (b *AttachBackend) Start(ctx context.Context) error {
	rd := b.l.remoteDir(b.conn.sys.WorkDir)
	res, err := b.conn.sh(ctx, prepareScript, strings.NewReader(b.l.tokensFile()), rd)
	if err != nil {
		return err
	}
	if !res.OK() {
		return fmt.Errorf("site %s: cannot create %s on %s: %s", b.l.Spec.Name, rd, b.conn.login(), res.Message())
	}
	dir := strings.TrimSpace(string(res.Stdout))
	b.mu.Lock()
	b.dir = dir
	b.mu.Unlock()
	_ = b.l.Dir.UpdateSite(b.l.Spec.Name, func(s *SiteState) {
		s.Login, s.RemoteDir, s.Log, s.State = b.conn.login(), dir, dir+"/site.log", "starting"
		if b.srun() {
			s.StepName = b.l.jobName()
		}
	})
	cmd, err := b.conn.longCmd(b.outerScript(dir))
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = &lockedBuf{b: &b.output, mu: &b.mu}, &lockedBuf{b: &b.output, mu: &b.mu}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("site %s: start ssh: %w", b.l.Spec.Name, err)
	}
	b.cmd, b.done = cmd, make(chan struct{})
	if err := b.l.Dir.UpdateSite(b.l.Spec.Name, func(s *SiteState) { s.SSHPID, s.State = cmd.Process.Pid, "running" }); err != nil {
		b.l.printf("warning: could not record ssh pid %d: %v", cmd.Process.Pid, err)
	}
	go func() {
		err := cmd.Wait()
		b.mu.Lock()
		b.waitEr = err
		b.mu.Unlock()
		close(b.done)
	}()
	how := "nested ssh"
	if b.srun() {
		how = "srun --jobid=" + b.l.Spec.JobID + " --overlap"
	}
	b.l.printf("attached to %s via %s (%s); log %s/site.log", b.l.Spec.Host, b.conn.login(), how, dir)
	return nil
}

// Poll implements Backend: running while ssh lives; when it exits, success if
// it exited 0, else an error with the log's tail (at once, not at a timeout).
func (b *AttachBackend) Poll(ctx context.Context) (string, bool, error) {
	if b.done == nil {
		return "not started", false, nil
	}
	select {
	case <-b.done:
	default:
		return "running", false, nil
	}
	b.mu.Lock()
	err, out, dir := b.waitEr, strings.TrimSpace(b.output.String()), b.dir
	b.mu.Unlock()
	if err == nil {
		return "succeeded", true, nil
	}
	msg := fmt.Sprintf("site %s: the attach session ended (%v)", b.l.Spec.Name, err)
	if out != "" {
		msg += "; ssh said: " + lastLines(out, 5)
	}
	msg += "\n--- tail of " + dir + "/site.log on " + b.conn.login() + " ---\n" + b.conn.tail(ctx, dir+"/site.log", 30)
	return "failed", true, errors.New(msg)
}

// Stop implements Backend: hang up the session (SIGHUP reaches the agents
// through the remote terminal), then make sure on the site: cancel the srun
// step by name, or kill the recorded spawn-site pid on the compute node.
func (b *AttachBackend) Stop(ctx context.Context) error {
	b.mu.Lock()
	dir := b.dir
	b.mu.Unlock()
	var remoteErr error
	if b.srun() && dir != "" {
		// Cancelling the step first lets Slurm send SIGTERM (agents terminate
		// their mailboxes) before the hang-up.
		remoteErr = stopAttachRemote(ctx, b.conn, b.l.Spec, dir, b.l.jobName())
	}
	if b.cmd != nil && b.cmd.Process != nil {
		select {
		case <-b.done:
		default:
			_ = syscall.Kill(-b.cmd.Process.Pid, syscall.SIGTERM)
			select {
			case <-b.done:
			case <-time.After(10 * time.Second):
				_ = syscall.Kill(-b.cmd.Process.Pid, syscall.SIGKILL)
				<-b.done
			}
		}
	}
	if b.srun() {
		return remoteErr
	}
	return stopAttachRemote(ctx, b.conn, b.l.Spec, dir, "")
}

// stopAttachRemote ends what an attach-mode slice left on the site.
func stopAttachRemote(ctx context.Context, conn *siteConn, sp SiteSpec, dir, step string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var res resultLike
	var err error
	if step != "" {
		// Cancel only our step of the user's allocation, never the allocation.
		r, e := conn.sh(ctx, `squeue -h -s -j "$1" -o "%i %j" 2>/dev/null | while read id name; do [ "$name" = "$2" ] && scancel "$id"; done; true`, nil, sp.JobID, step)
		res, err = r, e
	} else if dir != "" {
		r, e := conn.sh(ctx, `p=$(cat "$1/pid" 2>/dev/null) || exit 0; case "$p" in *[!0-9]*|"") exit 0;; esac; ssh -o BatchMode=yes "$2" "grep -q spawn-site /proc/$p/cmdline 2>/dev/null && kill -TERM $p"; true`, nil, dir, sp.Host)
		res, err = r, e
	}
	if err != nil {
		return fmt.Errorf("site %s: stop on the site: %w", sp.Name, err)
	}
	if res != nil && !res.OK() {
		return fmt.Errorf("site %s: stop on the site: %s", sp.Name, res.Message())
	}
	return nil
}

type resultLike interface {
	OK() bool
	Message() string
}

// Close implements Backend.
func (b *AttachBackend) Close() error { return b.conn.Close() }

type lockedBuf struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.b.Len() > 64<<10 {
		return len(p), nil
	}
	return l.b.Write(p)
}

func lastLines(s string, n int) string {
	ls := strings.Split(strings.TrimSpace(s), "\n")
	if len(ls) > n {
		ls = ls[len(ls)-n:]
	}
	return strings.Join(ls, " | ")
}
