package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// hangingLogin is a login node that stops answering: a TCP endpoint on 127.0.0.1 that
// first relays to a real sshd (so jobs can be submitted through it), and once frozen
// accepts new connections and holds them without a byte, and stops relaying on the
// connections it already has (an ssh ControlMaster among them).
type hangingLogin struct {
	ln      net.Listener
	target  string
	frozen  atomic.Bool
	release chan struct{}
	mu      sync.Mutex
	conns   []net.Conn
}

func newHangingLogin(t *testing.T, target string) *hangingLogin {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &hangingLogin{ln: ln, target: target, release: make(chan struct{})}
	t.Cleanup(h.close)
	go h.serve()
	return h
}

func (h *hangingLogin) port() int { return h.ln.Addr().(*net.TCPAddr).Port }

func (h *hangingLogin) keep(c net.Conn) {
	h.mu.Lock()
	h.conns = append(h.conns, c)
	h.mu.Unlock()
}

func (h *hangingLogin) serve() {
	for {
		c, err := h.ln.Accept()
		if err != nil {
			return
		}
		h.keep(c)
		if h.frozen.Load() {
			continue // accepted, never answered
		}
		up, err := net.Dial("tcp", h.target)
		if err != nil {
			c.Close()
			continue
		}
		h.keep(up)
		go h.relay(up, c)
		go h.relay(c, up)
	}
}

// relay copies until frozen; then it holds the bytes and the connection.
func (h *hangingLogin) relay(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if h.frozen.Load() {
			<-h.release
			return
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if err != io.EOF {
				dst.Close()
			}
			return
		}
	}
}

func (h *hangingLogin) freeze() { h.frozen.Store(true) }

func (h *hangingLogin) close() {
	h.ln.Close()
	select {
	case <-h.release:
	default:
		close(h.release)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range h.conns {
		c.Close()
	}
}

// TestRigHungSiteDelaysNoHealthySite runs the real two-cluster rig plus a third site
// whose login node stops answering while Mosaic follows jobs on it: 20 tasks on the two
// healthy clusters are submitted, seen finishing, and (four long ones) cancelled within
// their normal time — a few monitor ticks — never waiting on the hung site's timeouts.
func TestRigHungSiteDelaysNoHealthySite(t *testing.T) {
	r := needRig(t)
	e := newEnv(t)
	login := newHangingLogin(t, "127.0.0.1:"+r.env.Get(t, "RIG_SSH_PORT_ALPHA"))
	sites := r.sites()
	b, err := os.ReadFile(sites)
	if err != nil {
		t.Fatal(err)
	}
	// The third site is alpha's cluster reached through the login node that will hang.
	known := filepath.Join(t.TempDir(), "known_hosts")
	hung := fmt.Sprintf(`  - name: hung
    kind: ssh
    host: 127.0.0.1
    user: root
    ssh: {port: %d, config_file: %s, connect_timeout: 60s, options: [UserKnownHostsFile=%s]}
    accounts: [%s]
    workdir: %s
`, login.port(), r.env.Get(t, "RIG_SSH_CONFIG"), known, r.env.Get(t, "RIG_ACCOUNT"), r.env.Get(t, "RIG_WORKDIR_ALPHA"))
	if err := os.WriteFile(sites, append(b, hung...), 0o600); err != nil {
		t.Fatal(err)
	}
	const tick = time.Second
	e.serve("--sites", sites, "--tick", tick.String())

	// Two jobs on the hung site while it still answers, so the monitor has work there.
	var onHung []string
	for i := 0; i < 2; i++ {
		onHung = append(onHung, submitID(t, e, "--name", fmt.Sprintf("onhung%d", i), "--target", "hung", "--cpus", "1", "--walltime", "10m", "--command", "sleep 300"))
	}
	for _, id := range onHung {
		e.waitTask(id, 60*time.Second, func(t taskJSON) bool { return len(t.Attempts) > 0 && t.Attempts[0].JobID != "" })
	}
	t.Cleanup(func() {
		for _, id := range onHung {
			for _, a := range e.task(id).Attempts {
				if a.JobID != "" {
					r.slurm("alpha", "scancel", a.JobID)
				}
			}
		}
	})
	login.freeze()
	// Until the probes notice, a placement could still pick the hung site: wait until the
	// federation shows it down (its probe times out, bounded).
	deadline := time.Now().Add(60 * time.Second)
	for {
		out, _, rc := e.run("resources", "--json")
		var snap struct {
			Systems []struct{ System, Health string }
		}
		if rc == 0 && json.Unmarshal([]byte(out), &snap) == nil {
			down := false
			for _, s := range snap.Systems {
				down = down || s.System == "hung" && s.Health != "ok"
			}
			if down {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the hung site never showed as down:\n%s", out)
		}
		time.Sleep(500 * time.Millisecond)
	}

	// Normal time for one operation: a few ticks (ssh round trips to a healthy login
	// node are far below a tick). The hung site's own timeouts are 60 s and more.
	limit := 5 * tick
	timed := func(what string, fn func()) {
		t.Helper()
		start := time.Now()
		fn()
		if d := time.Since(start); d > limit {
			t.Errorf("%s took %s, over %s: it waited on the hung site", what, d.Round(time.Millisecond), limit)
		}
	}
	var short, long []string
	for i := 0; i < 16; i++ {
		timed("submit", func() {
			short = append(short, submitID(t, e, "--name", fmt.Sprintf("ok%02d", i), "--cpus", "1", "--walltime", "5m", "--command", "sleep 1"))
		})
	}
	for i := 0; i < 4; i++ {
		timed("submit", func() {
			long = append(long, submitID(t, e, "--name", fmt.Sprintf("long%d", i), "--cpus", "1", "--walltime", "10m", "--command", "sleep 300"))
		})
	}
	for _, id := range append(append([]string{}, short...), long...) {
		if sys := e.task(id).Attempts[0].System; sys == "hung" {
			t.Fatalf("task %s was placed on the hung site", id)
		}
	}

	// Every short job is seen finished within a few ticks of Slurm finishing it.
	type seen struct{ slurm, mosaic time.Time }
	ends := map[string]*seen{}
	for _, id := range short {
		ends["mosaic-"+id+"-1"] = &seen{}
	}
	since := time.Now().Add(-5 * time.Minute).Format("2006-01-02T15:04:05")
	deadline = time.Now().Add(3 * time.Minute)
	for {
		now := time.Now()
		for _, c := range []string{"alpha", "beta"} {
			for _, l := range strings.Split(r.slurm(c, "sacct", "-X", "-n", "-P", "-S", since, "-o", "JobName,State"), "\n") {
				name, state, _ := strings.Cut(strings.TrimSpace(l), "|")
				if s := ends[name]; s != nil && s.slurm.IsZero() && strings.HasPrefix(state, "COMPLETED") {
					s.slurm = now
				}
			}
		}
		out, _, rc := e.run("tasks", "--json=id,state")
		var list []taskJSON
		if rc == 0 && json.Unmarshal([]byte(out), &list) == nil {
			for _, x := range list {
				if s := ends["mosaic-"+x.ID+"-1"]; s != nil && s.mosaic.IsZero() && x.State == "succeeded" {
					s.mosaic = time.Now()
				}
			}
		}
		done := 0
		for _, s := range ends {
			if !s.mosaic.IsZero() && !s.slurm.IsZero() {
				done++
			}
		}
		if done == len(ends) {
			break
		}
		if time.Now().After(deadline) {
			out, _, _ := e.run("tasks")
			t.Fatalf("%d of %d short tasks seen finished by both Slurm and Mosaic within 3 minutes:\n%s", done, len(ends), out)
		}
		time.Sleep(250 * time.Millisecond)
	}
	for tag, s := range ends {
		// Mosaic may see it first (sacct lags); only a late Mosaic counts.
		if lag := s.mosaic.Sub(s.slurm); lag > limit {
			t.Errorf("%s: Mosaic saw the job finish %s after Slurm: the monitor waited on the hung site", tag, lag.Round(time.Millisecond))
		}
	}

	// The long ones run (or queue), and are cancelled promptly and confirmed.
	for _, id := range long {
		e.waitTask(id, 60*time.Second, func(t taskJSON) bool { return t.State == "running" || t.State == "queued" })
	}
	for _, id := range long {
		timed("cancel", func() {
			if _, errOut, rc := e.run("cancel", id); rc != 0 {
				t.Fatalf("cancel %s: %s", id, errOut)
			}
		})
	}
	start := time.Now()
	for _, id := range long {
		e.waitTask(id, 30*time.Second, func(t taskJSON) bool {
			return t.State == "cancelled" && len(t.Attempts) > 0 && t.Attempts[0].State == "cancelled"
		})
	}
	if d := time.Since(start); d > limit+2*tick {
		t.Errorf("cancels confirmed after %s: the monitor waited on the hung site", d.Round(time.Millisecond))
	}
	// The hung site's jobs are still being followed (not given up on, not moved).
	for _, id := range onHung {
		if x := e.task(id); x.State == "failed" || len(x.Attempts) != 1 {
			t.Errorf("task %s on the hung site: %+v", id, x)
		}
	}
}
