package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Issue 14, finding 1: a .env or sites.yaml in the working directory belongs to whoever
// wrote the repository the user cd'd into. These tests run the built binary in such a
// directory and check that neither the token nor the shell is handed over, and that the
// same files are honoured when the user names them (--env-file, --sites).

// without returns vars without the given keys.
func without(vars []string, keys ...string) []string {
	var out []string
next:
	for _, v := range vars {
		for _, k := range keys {
			if strings.HasPrefix(v, k+"=") {
				continue next
			}
		}
		out = append(out, v)
	}
	return out
}

// runIn runs the CLI in dir with vars and returns stdout, stderr and the exit code.
func runIn(t *testing.T, dir string, vars []string, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env, cmd.Dir = vars, dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("run %v: %v", args, err)
		}
		code = ee.ExitCode()
	}
	return out.String(), errb.String(), code
}

// syncBuffer is a bytes.Buffer safe to read while a process writes to it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// serveIn starts `mosaic serve --addr ADDR ARGS` in dir and waits until /healthz answers.
func serveIn(t *testing.T, dir string, vars []string, addr string, args ...string) *syncBuffer {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"serve", "--addr", addr}, args...)...)
	cmd.Env, cmd.Dir = vars, dir
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("serve output:\n%s", out.String())
		}
	})
	for i := 0; i < 200; i++ { // 20 s
		if code, _ := httpGet("http://"+addr+"/healthz", ""); code == 200 {
			return out
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("core did not become healthy within 20s:\n%s", out.String())
	return nil
}

// recorder is a listener standing in for a stranger's server: it records every request.
type recorder struct {
	mu    sync.Mutex
	auths []string
	n     int
}

func startRecorder(t *testing.T) (*recorder, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec.mu.Lock()
		rec.n++
		rec.auths = append(rec.auths, r.Header.Get("Authorization"))
		rec.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"tasks":[]}`))
	}), ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return rec, ln.Addr().String()
}

func (r *recorder) seen() (int, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n, append([]string(nil), r.auths...)
}

// TestWorkDirDotEnvCannotRedirectToken: a .env with MOSAIC_URL pointing at a stranger's
// listener, in the directory `mosaic tasks` runs from, gets no request (so no token);
// the CLI says once that it ignores the file. Named with --env-file it is used.
func TestWorkDirDotEnvCannotRedirectToken(t *testing.T) {
	e := newEnv(t)
	vars := without(e.vars, "MOSAIC_URL", "MOSAIC_TOKEN", "MOSAIC_TOKEN_FILE")
	// The user's own configuration says where the core is: the config directory's env
	// file (which is read, unlike the working directory).
	cfgDir := filepath.Join(e.home, "config", "mosaic")
	if err := os.MkdirAll(cfgDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cfgDir, "env"), []byte("MOSAIC_URL=http://"+e.addr+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	serveIn(t, e.home, vars, e.addr, "--tick", "1s")

	rec, recAddr := startRecorder(t)
	repo := t.TempDir()
	if err := os.WriteFile(filepath.Join(repo, ".env"), []byte("MOSAIC_URL=http://"+recAddr+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, rc := runIn(t, repo, vars, "tasks")
	if n, auths := rec.seen(); n != 0 {
		t.Fatalf("the stranger's listener got %d requests (Authorization %q): the working directory's .env was trusted", n, auths)
	}
	if rc != 0 {
		t.Fatalf("mosaic tasks against the user's core: rc=%d stderr=%s", rc, errOut)
	}
	_ = out
	if strings.Count(errOut, "ignoring ./.env") != 1 || !strings.Contains(errOut, "--env-file ./.env") {
		t.Errorf("want one notice that ./.env is ignored and how to use it, got stderr:\n%s", errOut)
	}

	// Named on the command line, the same file is the user's choice and is used.
	_, errOut, _ = runIn(t, repo, vars, "tasks", "--env-file", "./.env")
	n, auths := rec.seen()
	if n == 0 || auths[0] != "Bearer "+e.token() {
		t.Fatalf("--env-file ./.env: the listener saw %d requests (%q); stderr %s", n, auths, errOut)
	}
	if strings.Contains(errOut, "ignoring") {
		t.Errorf("a named env file is reported as ignored: %s", errOut)
	}
}

// hostileSites writes a sites.yaml whose one ssh system runs `touch MARKER` through a
// ProxyCommand when probed, and returns the catalog path and the marker path.
func hostileSites(t *testing.T, dir string) (string, string) {
	t.Helper()
	marker := filepath.Join(t.TempDir(), "MARKER")
	cat := fmt.Sprintf(`systems:
  - name: Stranger
    kind: ssh
    host: stranger.invalid
    ssh:
      connect_timeout: 2s
      options:
        - "ProxyCommand=sh -c 'touch %s'"
    workdir: /tmp/stranger
    partitions:
      - name: cpu
        nodes: 1
        cpu_cores: 4
        memory_gb: 8
`, marker)
	p := filepath.Join(dir, "sites.yaml")
	if err := os.WriteFile(p, []byte(cat), 0o644); err != nil {
		t.Fatal(err)
	}
	return p, marker
}

func aboutCatalog(t *testing.T, addr, token string) (string, int) {
	t.Helper()
	code, body := httpGet("http://"+addr+"/api/about", token)
	if code != 200 {
		t.Fatalf("GET /api/about: %d %s", code, body)
	}
	var a struct {
		Catalog string `json:"catalog"`
		Systems int    `json:"systems"`
	}
	if err := json.Unmarshal(body, &a); err != nil {
		t.Fatal(err)
	}
	return a.Catalog, a.Systems
}

// TestWorkDirSitesCannotRunCommands: a .env naming a sites.yaml with a ProxyCommand, in
// the directory `mosaic serve` starts in, is ignored: the embedded simulated federation
// runs and the command never does. `serve --env-file ./.env` names it: then the catalog
// is used, ProxyCommand included (the user's own file keeps every ssh option).
func TestWorkDirSitesCannotRunCommands(t *testing.T) {
	needTool(t, "ssh", "apt-get install openssh-client")
	e := newEnv(t)
	vars := without(e.vars, "MOSAIC_SITES")
	repo := t.TempDir()
	_, marker := hostileSites(t, repo)
	if err := os.WriteFile(filepath.Join(repo, ".env"), []byte("MOSAIC_SITES=./sites.yaml\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	out := serveIn(t, repo, vars, e.addr, "--tick", "200ms")
	if cat, n := aboutCatalog(t, e.addr, e.token()); n != 6 || !strings.Contains(cat, "embedded") {
		t.Fatalf("serve in the stranger's directory runs catalog %q (%d systems), want the embedded federation", cat, n)
	}
	time.Sleep(2 * time.Second) // ten ticks
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the ProxyCommand of the working directory's sites.yaml ran")
	}
	if !strings.Contains(out.String(), "ignoring ./.env") {
		t.Errorf("serve did not say that ./.env is ignored:\n%s", out.String())
	}

	// Named explicitly, it is the user's own catalog, with every ssh option.
	// (A second core beside the first needs its own store: one core per MOSAIC_DB.)
	addr2 := freeAddr(t)
	vars2 := append(append([]string{}, vars...), "MOSAIC_DB="+filepath.Join(t.TempDir(), "second.db"))
	serveIn(t, repo, vars2, addr2, "--tick", "200ms", "--env-file", "./.env")
	if cat, n := aboutCatalog(t, addr2, e.token()); n != 1 || !strings.HasSuffix(cat, "sites.yaml") {
		t.Fatalf("serve --env-file ./.env runs catalog %q (%d systems), want the named sites.yaml", cat, n)
	}
	for i := 0; i < 100; i++ { // 10 s
		if _, err := os.Stat(marker); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("with --env-file ./.env the catalog's ProxyCommand never ran: a named catalog must keep its ssh options")
}

// TestDoctorIgnoresWorkDirSites: doctor follows serve's lookup; a sites.yaml in the
// working directory is not probed (its ProxyCommand does not run) unless named.
func TestDoctorIgnoresWorkDirSites(t *testing.T) {
	needTool(t, "ssh", "apt-get install openssh-client")
	e := newEnv(t)
	vars := without(e.vars, "MOSAIC_SITES")
	repo := t.TempDir()
	_, marker := hostileSites(t, repo)
	out, errOut, _ := runIn(t, repo, vars, "doctor")
	if _, err := os.Stat(marker); err == nil {
		t.Fatalf("doctor probed the working directory's sites.yaml and ran its ProxyCommand:\n%s", out)
	}
	if !strings.Contains(out, "embedded simulated federation") {
		t.Errorf("doctor did not check the embedded federation:\n%s", out)
	}
	if strings.Count(errOut, "ignoring ./sites.yaml") != 1 || !strings.Contains(errOut, "--sites ./sites.yaml") {
		t.Errorf("want one notice that ./sites.yaml is ignored and how to use it, got stderr:\n%s", errOut)
	}
	out, _, _ = runIn(t, repo, vars, "doctor", "--sites", "./sites.yaml")
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("doctor --sites ./sites.yaml did not probe the named catalog:\n%s", out)
	}
}

// TestConfigDirSitesMustBeTrusted: $XDG_CONFIG_HOME/mosaic/sites.yaml is serve's
// default catalog, and is refused, with the chmod that fixes it, when group-writable.
func TestConfigDirSitesMustBeTrusted(t *testing.T) {
	e := newEnv(t)
	vars := without(e.vars, "MOSAIC_SITES")
	cfgDir := filepath.Join(e.home, "config", "mosaic")
	if err := os.MkdirAll(cfgDir, 0o700); err != nil {
		t.Fatal(err)
	}
	cat := "systems:\n  - name: Solo\n    kind: sim\n    machine: delta\n    partitions:\n      - {name: cpu, accounts: [demo]}\n    sim:\n      max_nodes: 4\n"
	p := filepath.Join(cfgDir, "sites.yaml")
	if err := os.WriteFile(p, []byte(cat), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, 0o664); err != nil {
		t.Fatal(err)
	}
	_, errOut, rc := runIn(t, e.home, vars, "serve", "--addr", freeAddr(t))
	if rc == 0 || !strings.Contains(errOut, "chmod go-w "+p) {
		t.Fatalf("group-writable %s: rc=%d, want a refusal naming the chmod; stderr:\n%s", p, rc, errOut)
	}
	out, _, rc := runIn(t, e.home, vars, "doctor")
	if rc == 0 || !strings.Contains(out, "chmod go-w "+p) {
		t.Fatalf("doctor with a group-writable catalog: rc=%d, want the chmod:\n%s", rc, out)
	}
	if err := os.Chmod(p, 0o600); err != nil {
		t.Fatal(err)
	}
	serveIn(t, e.home, vars, e.addr, "--tick", "1s")
	if got, n := aboutCatalog(t, e.addr, e.token()); got != p || n != 1 {
		t.Fatalf("serve runs catalog %q (%d systems), want %s", got, n, p)
	}
}
