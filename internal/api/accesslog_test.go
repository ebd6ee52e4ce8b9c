package api

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/config"
	"github.com/mosaic-hpc/mosaic/internal/core"
	"github.com/mosaic-hpc/mosaic/internal/core/coretest"
)

// jsonLogServer is a real core (coretest options o: the simulated federation, or a
// catalog) behind the API with the logger of both writing JSON lines into the
// returned buffer.
// The API's options are opts (Token and Logger are set here).
func jsonLogServer(t *testing.T, token string, o coretest.Options, opts ...Options) (*httptest.Server, *syncBuffer) {
	t.Helper()
	buf := &syncBuffer{}
	log := slog.New(slog.NewJSONHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	o.Logger = log
	c := coretest.Start(t, o)
	var ao Options
	if len(opts) > 0 {
		ao = opts[0]
	}
	ao.Token, ao.Logger = token, log
	srv, err := New(c, ao)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	return hs, buf
}

// accessLines parses the JSON log and returns its access-log lines.
func accessLines(t *testing.T, buf *syncBuffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(buf.String()))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("a log line is not JSON: %v: %s", err, sc.Text())
		}
		if m["msg"] == "http request" {
			out = append(out, m)
		}
	}
	return out
}

func do(t *testing.T, req *http.Request) (int, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestAccessLogNeverLogsCredentials: every request gets one access-log line with
// method, route pattern, path, status, bytes, duration, user agent and remote
// address — and neither the API token (in Authorization), nor a cookie, nor a value
// in the query (a login code, a token someone put in the URL) reaches the log.
func TestAccessLogNeverLogsCredentials(t *testing.T) {
	const token = "tok-9f8e7d6c5b4a-secret"
	hs, buf := jsonLogServer(t, token, coretest.Options{SimSpeed: 60})
	const cookieSecret = "cookie-77aa-secret"
	const querySecret = "query-55bb-secret"

	req, _ := http.NewRequest("GET", hs.URL+"/api/tasks/t-nope?token="+querySecret, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("User-Agent", "ops-test/1.0")
	req.Header.Set("Cookie", "mosaic_session="+cookieSecret)
	if code, body := do(t, req); code != http.StatusNotFound {
		t.Fatalf("unknown task: HTTP %d %s", code, body)
	}
	req, _ = http.NewRequest("GET", hs.URL+"/api/tasks", nil)
	req.Header.Set("Authorization", "Bearer wrong-"+token)
	if code, _ := do(t, req); code != http.StatusUnauthorized {
		t.Fatalf("wrong token: HTTP %d", code)
	}
	req, _ = http.NewRequest("GET", hs.URL+"/login?code="+querySecret, nil)
	do(t, req)
	req, _ = http.NewRequest("GET", hs.URL+"/healthz", nil)
	do(t, req)
	// A credential pasted into the path itself (not the query) is redacted too.
	req, _ = http.NewRequest("GET", hs.URL+"/api/tasks/"+token+"/access_token="+querySecret, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	do(t, req)

	lines := accessLines(t, buf)
	if len(lines) != 5 {
		t.Fatalf("want 5 access-log lines, got %d:\n%s", len(lines), buf.String())
	}
	if p, _ := lines[4]["path"].(string); p != "/api/tasks/[redacted]/access_token=[redacted]" {
		t.Errorf("a path holding credentials is logged as %q", p)
	}
	first := lines[0]
	want := map[string]any{"method": "GET", "route": "/api/tasks/{id}", "path": "/api/tasks/t-nope", "status": float64(404),
		"user_agent": "ops-test/1.0", "level": "INFO"}
	for k, v := range want {
		if first[k] != v {
			t.Errorf("access log %s = %v, want %v (line %v)", k, first[k], v, first)
		}
	}
	for _, k := range []string{"duration_ms", "bytes", "remote", "time"} {
		if _, ok := first[k]; !ok {
			t.Errorf("access log line has no %s: %v", k, first)
		}
	}
	if r, _ := first["remote"].(string); !strings.HasPrefix(r, "127.0.0.1:") {
		t.Errorf("remote = %q, want the client's 127.0.0.1:port", r)
	}
	if b, _ := first["bytes"].(float64); b <= 0 {
		t.Errorf("bytes = %v, want the problem's size", first["bytes"])
	}
	if lines[1]["status"] != float64(401) || lines[1]["route"] != "/api/tasks" {
		t.Errorf("the refused request is logged with its status and route: %v", lines[1])
	}
	if lines[3]["level"] != "DEBUG" || lines[3]["route"] != "/healthz" {
		t.Errorf("/healthz is logged at DEBUG: %v", lines[3])
	}
	all := buf.String()
	for _, secret := range []string{token, cookieSecret, querySecret} {
		if strings.Contains(all, secret) {
			t.Errorf("the log holds a credential %q:\n%s", secret, all)
		}
	}
}

// siteServer is jsonLogServer on the given site catalog.
func siteServer(t *testing.T, token, sitesYAML string) (*httptest.Server, *syncBuffer) {
	t.Helper()
	sites := filepath.Join(t.TempDir(), "sites.yaml")
	if err := os.WriteFile(sites, []byte(sitesYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	return jsonLogServer(t, token, coretest.Options{SitesFile: sites})
}

// siteDownServer: the only system is reached over ssh at a closed port of
// 127.0.0.1, so every call to it fails to connect.
func siteDownServer(t *testing.T, token string) (*httptest.Server, *syncBuffer) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close() // nothing listens there now: connections are refused at once
	return siteServer(t, token, sshSiteYAML("Gone", port, "2s"))
}

// sshSiteYAML is a catalog of one ssh system at 127.0.0.1:port.
func sshSiteYAML(name string, port int, connectTimeout string) string {
	return fmt.Sprintf(`systems:
  - name: %s
    kind: ssh
    host: 127.0.0.1
    ssh:
      port: %d
      connect_timeout: %s
      options: [StrictHostKeyChecking=no, UserKnownHostsFile=/dev/null]
    accounts: [acct]
    workdir: /tmp/mosaic-%s
    partitions:
      - {name: cpu, nodes: 2, cpu_cores: 8, memory_gb: 16, max_walltime: "1h"}
`, name, port, connectTimeout, strings.ToLower(name))
}

func postJSON(t *testing.T, hs *httptest.Server, token, path, body string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", hs.URL+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

// TestSiteFailureIs502WithTheSiteNamed: a site that is reached but fails the request
// (here a local site whose workdir cannot be created) answers 502 naming the site,
// not 500, and the access log has it at ERROR with the site's own words.
func TestSiteFailureIs502WithTheSiteNamed(t *testing.T) {
	const token = "tok-site-fails-5678"
	hs, buf := siteServer(t, token, "systems:\n  - name: Loc\n    kind: local\n    accounts: [acct]\n    workdir: /proc/mosaic-no-such-dir\n"+
		"    partitions:\n      - {name: cpu, nodes: 2, cpu_cores: 8, memory_gb: 16, max_walltime: \"1h\"}\n")
	resp, body := postJSON(t, hs, token, "/api/resources/Loc/files", `{"path":"x.txt","content":"hi"}`)
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(body, "Loc") || !strings.Contains(body, "mkdir") {
		t.Fatalf("put-file the site cannot write: HTTP %d %s", resp.StatusCode, body)
	}
	var found map[string]any
	for _, l := range accessLines(t, buf) {
		if l["route"] == "/api/resources/{system}/files" {
			found = l
		}
	}
	if found == nil || found["level"] != "ERROR" || found["status"] != float64(502) || !strings.Contains(fmt.Sprint(found["err"]), "mkdir") {
		t.Fatalf("the 502 is not logged at ERROR with its cause: %v", found)
	}
}

// TestSiteDownIs503WithTheSiteNamedAndLogged: a look-around call to a site that
// cannot be reached answers 503 with Retry-After and the site's name (not 500), and
// the access log has the 5xx at level ERROR with its cause.
func TestSiteDownIs503WithTheSiteNamedAndLogged(t *testing.T) {
	const token = "tok-site-down-1234"
	hs, buf := siteDownServer(t, token)
	resp, b := postJSON(t, hs, token, "/api/resources/Gone/exec", `{"command":"sinfo -s"}`)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || !strings.Contains(b, "Gone") {
		t.Fatalf("exec on a site that is down: HTTP %d Retry-After %q %s", resp.StatusCode, resp.Header.Get("Retry-After"), b)
	}
	var found map[string]any
	for _, l := range accessLines(t, buf) {
		if l["route"] == "/api/resources/{system}/exec" {
			found = l
		}
	}
	if found == nil || found["level"] != "ERROR" || found["status"] != float64(503) {
		t.Fatalf("the 503 is not logged at ERROR: %v\n%s", found, buf.String())
	}
	if cause, _ := found["err"].(string); !strings.Contains(cause, "Gone") || !strings.Contains(cause, "unreachable") {
		t.Errorf("the logged cause does not name the site and why: %q", cause)
	}
	if strings.Contains(buf.String(), token) {
		t.Errorf("the log holds the API token")
	}
}

// TestRedactCredentials: texts bound for the log lose the API token and anything
// shaped like a credential, and keep the rest.
func TestRedactCredentials(t *testing.T) {
	s := &Server{opts: Options{Token: "tok-abcdef"}}
	for _, tc := range []struct{ in, want string }{
		{"plain failure: exit 1", "plain failure: exit 1"},
		{"sent tok-abcdef to x", "sent [redacted] to x"},
		{"Authorization: Bearer abc.def-ghi failed", "Authorization: Bearer [redacted] failed"},
		{"GET /x?token=s3cr3t&y=1", "GET /x?token=[redacted]&y=1"},
		{"password: hunter2, retry", "password: [redacted], retry"},
		{"api_key=K123 secret=S", "api_key=[redacted] secret=[redacted]"},
		{"dial redis://:pw123@127.0.0.1:6379", "dial redis://:[redacted]@127.0.0.1:6379"},
		{"login?code=XYZ", "login?code=[redacted]"},
		{"GET /login?x=1&code=XYZ&y=2", "GET /login?x=1&code=[redacted]&y=2"},
		// Quoted values go to their closing quote, spaces included.
		{"psql: password='hunter2 x' rejected", "psql: password='[redacted]' rejected"},
		{`PGPASSWORD="hunter2" psql -h db`, `PGPASSWORD="[redacted]" psql -h db`},
		{`password="unterminated hunter2`, `password="[redacted]"`},
		// JSON keys that name a token or a secret inside a longer name.
		{`{"access_token":"eyJabc","expires_in":3600}`, `{"access_token":"[redacted]","expires_in":3600}`},
		{`{"client_secret": "s3cr3t", "id": "c1"}`, `{"client_secret": "[redacted]", "id": "c1"}`},
		{`refresh_token=rt-1;x=2`, `refresh_token=[redacted];x=2`},
		// Any Authorization scheme keeps its name and loses its value.
		{"Authorization: Basic dXNlcjpwYXNz sent", "Authorization: Basic [redacted] sent"},
		{`"Authorization": "Digest abc123"`, `"Authorization": "Digest [redacted]"`},
		{"authorization=rawvalue", "authorization=[redacted]"},
		// Not credentials: a job's exit code, a word that merely contains "code".
		{"job 12 failed: exit code: 137", "job 12 failed: exit code: 137"},
		{"exit code=1 (decode error)", "exit code=1 (decode error)"},
		{"", ""},
	} {
		if got := s.redact(tc.in); got != tc.want {
			t.Errorf("redact(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// FuzzRedact: whatever the text, the token never survives redaction.
func FuzzRedact(f *testing.F) {
	for _, s := range []string{"x tok-abcdef y", "Bearer tok-abcdef", "token=tok-abcdef", "tok-abcdeftok-abcdef", "://u:tok-abcdef@h",
		`password='a b'`, `{"access_token":"x"}`, "Authorization: Basic x", "?code=1&code=2", `secret="`} {
		f.Add(s)
	}
	s := &Server{opts: Options{Token: "tok-abcdef"}}
	f.Fuzz(func(t *testing.T, in string) {
		if out := s.redact(in); strings.Contains(out, "tok-abcdef") {
			t.Fatalf("redact(%q) = %q keeps the token", in, out)
		}
	})
}

// logLines parses the JSON log and returns the lines with the given msg.
func logLines(t *testing.T, buf *syncBuffer, msg string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

// waitLine waits (bounded) until the access log has a line for route, and returns it.
func waitLine(t *testing.T, buf *syncBuffer, route string, within time.Duration) map[string]any {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		for _, l := range accessLines(t, buf) {
			if l["route"] == route {
				return l
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no access-log line for %s within %s:\n%s", route, within, buf.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestHandlerPanicIsLoggedWithItsCause: a handler that panics is logged at ERROR with
// the panic's value (redacted) and the stack, and its access-log line (500, ERROR)
// names the panic; net/http still ends the connection. A deliberate
// http.ErrAbortHandler is left to net/http: no panic report.
func TestHandlerPanicIsLoggedWithItsCause(t *testing.T) {
	const token = "tok-panic-2468"
	hs, buf := jsonLogServer(t, token, coretest.Options{SimSpeed: 60}, Options{Routes: []func(*http.ServeMux){func(mux *http.ServeMux) {
		mux.HandleFunc("GET /boom", func(http.ResponseWriter, *http.Request) { panic("kaboom: nil map, password=hunter2") })
		mux.HandleFunc("GET /abort", func(http.ResponseWriter, *http.Request) { panic(http.ErrAbortHandler) })
	}}})
	for _, p := range []string{"/boom", "/abort"} {
		req, _ := http.NewRequest("GET", hs.URL+p, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			t.Fatalf("%s: a panicking handler answered HTTP %d; want the connection ended", p, resp.StatusCode)
		}
	}
	line := waitLine(t, buf, "/boom", 5*time.Second)
	if line["level"] != "ERROR" || line["status"] != float64(500) || !strings.Contains(fmt.Sprint(line["err"]), "kaboom: nil map") {
		t.Errorf("the panic's access-log line does not name it: %v", line)
	}
	panics := logLines(t, buf, "http handler panicked")
	if len(panics) != 1 {
		t.Fatalf("want one panic report (for /boom, none for the abort), got %d:\n%s", len(panics), buf.String())
	}
	pr := panics[0]
	if pr["level"] != "ERROR" || pr["path"] != "/boom" || !strings.Contains(fmt.Sprint(pr["panic"]), "kaboom") ||
		!strings.Contains(fmt.Sprint(pr["stack"]), "TestHandlerPanicIsLoggedWithItsCause") {
		t.Errorf("the panic report lacks its value or the stack naming the handler: %v", pr)
	}
	if strings.Contains(buf.String(), "hunter2") {
		t.Error("the panic's value reached the log unredacted")
	}
	if l := waitLine(t, buf, "/abort", 5*time.Second); l["status"] != float64(500) {
		t.Errorf("the aborted request's line: %v", l)
	}
}

// hungSiteServer: the only system is reached over ssh at a port of 127.0.0.1 that
// accepts connections and never says a word, so every call to it waits for ssh's
// connect timeout (2 s): the first probe round ends (site down) and a look-around
// call hangs for that long.
func hungSiteServer(t *testing.T, token string) (*httptest.Server, *syncBuffer) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return // the listener closed at the end of the test
			}
			conns = append(conns, c) // held open, silent
		}
	}()
	return siteServer(t, token, sshSiteYAML("Mute", ln.Addr().(*net.TCPAddr).Port, "3s"))
}

// TestClientGoneIs499AtInfo: a client that goes away while the core waits for a site
// is not a server error nor the site's: the access log has 499 (client closed
// request) at INFO, not a 502 at ERROR.
func TestClientGoneIs499AtInfo(t *testing.T) {
	const token = "tok-client-gone-1357"
	hs, buf := hungSiteServer(t, token)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", hs.URL+"/api/resources/Mute/exec", strings.NewReader(`{"command":"sinfo -s"}`))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	if resp, err := http.DefaultClient.Do(req); err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("the mute site answered within 300 ms: HTTP %d %s", resp.StatusCode, b)
	}
	line := waitLine(t, buf, "/api/resources/{system}/exec", 10*time.Second)
	if line["status"] != float64(StatusClientClosed) || line["level"] != "INFO" {
		t.Fatalf("a request its client gave up on is logged %v %v, want 499 at INFO: %v", line["status"], line["level"], line)
	}
}

// TestHealthzNotReadyLogsItsCause: /healthz before the first probe round answers
// 503 and is logged at DEBUG with why (not at ERROR with "no cause recorded").
func TestHealthzNotReadyLogsItsCause(t *testing.T) {
	buf := &syncBuffer{}
	log := slog.New(slog.NewJSONHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	dir := t.TempDir()
	c, err := core.Open(context.Background(), core.OpenOptions{Config: &config.Config{StateDir: dir, DBPath: ":memory:", Tick: time.Second, SimSpeed: 30},
		Logger: log, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() }) // never run: the first probe round never happens
	srv, err := New(c, Options{Token: "tok", Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	req, _ := http.NewRequest("GET", hs.URL+"/healthz", nil)
	if code, body := do(t, req); code != http.StatusServiceUnavailable {
		t.Fatalf("/healthz of a core not probed yet: HTTP %d %s", code, body)
	}
	line := waitLine(t, buf, "/healthz", 5*time.Second)
	if line["level"] != "DEBUG" || line["status"] != float64(503) || !strings.Contains(fmt.Sprint(line["err"]), core.ErrNotReady.Error()) {
		t.Fatalf("/healthz not ready is logged %v with cause %q, want DEBUG with why: %v", line["level"], line["err"], line)
	}
}
