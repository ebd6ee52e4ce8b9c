package api

import (
	"bufio"
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

	"github.com/mosaic-hpc/mosaic/internal/core/coretest"
)

// jsonLogServer is a real core (coretest options o: the simulated federation, or a
// catalog) behind the API with the logger of both writing JSON lines into the
// returned buffer.
func jsonLogServer(t *testing.T, token string, o coretest.Options) (*httptest.Server, *syncBuffer) {
	t.Helper()
	buf := &syncBuffer{}
	log := slog.New(slog.NewJSONHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	o.Logger = log
	c := coretest.Start(t, o)
	srv, err := New(c, Options{Token: token, Logger: log})
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

	lines := accessLines(t, buf)
	if len(lines) != 4 {
		t.Fatalf("want 4 access-log lines, got %d:\n%s", len(lines), buf.String())
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
	return siteServer(t, token, fmt.Sprintf(`systems:
  - name: Gone
    kind: ssh
    host: 127.0.0.1
    ssh:
      port: %d
      connect_timeout: 2s
      options: [StrictHostKeyChecking=no, UserKnownHostsFile=/dev/null]
    accounts: [acct]
    workdir: /tmp/mosaic-gone
    partitions:
      - {name: cpu, nodes: 2, cpu_cores: 8, memory_gb: 16, max_walltime: "1h"}
`, port))
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
		{"", ""},
	} {
		if got := s.redact(tc.in); got != tc.want {
			t.Errorf("redact(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// FuzzRedact: whatever the text, the token never survives redaction.
func FuzzRedact(f *testing.F) {
	for _, s := range []string{"x tok-abcdef y", "Bearer tok-abcdef", "token=tok-abcdef", "tok-abcdeftok-abcdef", "://u:tok-abcdef@h"} {
		f.Add(s)
	}
	s := &Server{opts: Options{Token: "tok-abcdef"}}
	f.Fuzz(func(t *testing.T, in string) {
		if out := s.redact(in); strings.Contains(out, "tok-abcdef") {
			t.Fatalf("redact(%q) = %q keeps the token", in, out)
		}
	})
}
