package campaign

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mosaic-hpc/mosaic/agent"
)

// SpawnSite configures RunSite: one site's slice of a federated campaign.
type SpawnSite struct {
	// Spec is the whole campaign; Agents selects the slice (order kept).
	Spec   *Spec
	Agents []string
	// RunID and Site identify the run and this site.
	RunID, Site string
	// ExchangeURL and Tokens (agent name -> its own token) reach the
	// exchange; NewClient builds one agent's client from its token.
	ExchangeURL string
	Tokens      map[string]string
	NewClient   func(token string) (*agent.Client, error)
	// StartupTimeout bounds each agent's wait for its peers.
	StartupTimeout time.Duration
	// Out receives landmarks and agent output, each line prefixed "[agent] ".
	Out io.Writer
}

// SpawnSiteKillGrace is how long each agent of a spawn-site gets between SIGTERM
// to its process group and SIGKILL. It is below 5 s so that spawn-site ends,
// with nothing of its agents left, within 5 s of SIGINT or SIGTERM even when an
// agent's child ignores SIGTERM (a launcher's stop, a job's cancel, Ctrl-C on
// an attach session all wait on it).
const SpawnSiteKillGrace = 3 * time.Second

// RunSite runs one wrapper per agent of the slice and waits for all of them.
// The slice is validated in federated mode (peers and the initial agent may
// live on other sites). It never sends the bootstrap message: in a federated
// launch that is `campaign bootstrap`'s job, once every site is up. The result
// is 0 when every agent exited 0, else the first non-zero status in slice order.
func RunSite(ctx context.Context, ss SpawnSite) (int, error) {
	slice, err := ss.Spec.Slice(ss.Agents)
	if err != nil {
		return 2, err
	}
	if err := slice.Validate(Federated); err != nil {
		return 2, fmt.Errorf("slice %s is invalid:\n%w", strings.Join(ss.Agents, ","), err)
	}
	becomeSubreaper()
	clients := make([]*agent.Client, len(slice.Agents))
	for i, a := range slice.Agents {
		tok := ss.Tokens[a.Name]
		if tok == "" {
			return 2, fmt.Errorf("no exchange token for agent %s of this slice", a.Name)
		}
		if clients[i], err = ss.NewClient(tok); err != nil {
			return 2, err
		}
	}
	codes := make([]int, len(slice.Agents))
	errs := make([]error, len(slice.Agents))
	var wg sync.WaitGroup
	out := &syncWriter{w: ss.Out}
	for i, a := range slice.Agents {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pw := &prefixWriter{w: out, prefix: "[" + a.Name + "] "}
			codes[i], errs[i] = RunAgent(ctx, AgentRun{
				Spec: slice, RunID: ss.RunID, Name: a.Name, Site: ss.Site, Client: clients[i],
				ExchangeURL: ss.ExchangeURL, Token: ss.Tokens[a.Name], StartupTimeout: ss.StartupTimeout,
				KillGrace: SpawnSiteKillGrace, Log: pw, Stdout: pw, Stderr: pw,
			})
			pw.Flush()
			if errs[i] != nil {
				fmt.Fprintf(out, "[%s] mosaic-agent %s: %v\n", a.Name, a.Name, errs[i])
			}
		}()
	}
	wg.Wait()
	for i := range codes {
		if codes[i] != 0 {
			return codes[i], fmt.Errorf("agent %s exited with status %d", slice.Agents[i].Name, codes[i])
		}
	}
	return 0, nil
}

// syncWriter serialises writes of several goroutines.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.w == nil {
		return len(p), nil
	}
	return s.w.Write(p)
}

// prefixWriter writes each complete line with a prefix (partial lines are held
// until their newline or Flush).
type prefixWriter struct {
	mu     sync.Mutex
	w      io.Writer
	prefix string
	buf    []byte
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.buf = append(p.buf, b...)
	for {
		i := strings.IndexByte(string(p.buf), '\n')
		if i < 0 {
			break
		}
		line := append([]byte(p.prefix), p.buf[:i+1]...)
		p.buf = p.buf[i+1:]
		if _, err := p.w.Write(line); err != nil {
			return len(b), err
		}
	}
	if len(p.buf) > 64<<10 { // a runaway line without newline
		_, _ = p.w.Write(append(append([]byte(p.prefix), p.buf...), '\n'))
		p.buf = p.buf[:0]
	}
	return len(b), nil
}

// Flush writes a pending partial line.
func (p *prefixWriter) Flush() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.buf) > 0 {
		_, _ = p.w.Write(append(append([]byte(p.prefix), p.buf...), '\n'))
		p.buf = nil
	}
}

// groupAlive reports whether process group pgid still has a member that is not
// a zombie. An orphaned grandchild that was killed stays a zombie until init
// reaps it, which in containers and some batch steps takes seconds: counting it
// as alive kept every agent's stop waiting out its whole kill grace. Without a
// readable /proc entry for any member, kill(-pgid, 0) decides.
func groupAlive(pgid int) bool {
	if syscall.Kill(-pgid, 0) != nil {
		return false
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return true
	}
	member := false
	for _, en := range ents {
		if en.Name()[0] < '0' || en.Name()[0] > '9' {
			continue
		}
		b, err := os.ReadFile("/proc/" + en.Name() + "/stat")
		if err != nil {
			continue
		}
		state, pgrp, ok := parseProcStat(string(b))
		if !ok || pgrp != pgid {
			continue
		}
		member = true
		if state != "Z" && state != "X" {
			return true
		}
	}
	return !member
}

// parseProcStat reads the state and process group of a /proc/PID/stat line
// ("pid (comm) S ppid pgrp ..."; comm may hold spaces and parentheses).
func parseProcStat(s string) (state string, pgrp int, ok bool) {
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return "", 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 3 {
		return "", 0, false
	}
	n, err := strconv.Atoi(f[2])
	if err != nil {
		return "", 0, false
	}
	return f[0], n, true
}

// becomeSubreaper makes this process the reaper of its agents' orphans (Linux
// PR_SET_CHILD_SUBREAPER): a grandchild whose parent died — a `sleep` deaf to SIGTERM
// under a shell agent that was not — is re-parented to spawn-site instead of init, so
// it stays a descendant of the batch job's step. A batch system that tracks a job's
// processes by parentage (Slurm's proctrack/linuxproc) then still finds and kills it
// when it SIGKILLs the job, even if spawn-site is killed before its own group stop
// (seen on the rig: a second cancel of a cancelling job escalated at once). Best
// effort: elsewhere the call fails and nothing changes.
func becomeSubreaper() {
	const prSetChildSubreaper = 36 // linux/prctl.h
	_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0)
}
