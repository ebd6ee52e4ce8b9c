package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestServeJSONLogsAccessLogAndMetrics: `mosaic serve --log-format json` writes one
// JSON object a line on stderr (its banner stays plain text on stdout), with an
// access-log line per request that never holds the token; /openapi.json carries the
// version /api/about reports; /metrics has the Prometheus-named families.
func TestServeJSONLogsAccessLogAndMetrics(t *testing.T) {
	e := newEnv(t)
	errPath := filepath.Join(t.TempDir(), "stderr.log")
	errFile, err := os.Create(errPath)
	if err != nil {
		t.Fatal(err)
	}
	var stdout bytes.Buffer
	cmd := exec.Command(binary, "serve", "--addr", e.addr, "--log-format", "json", "--headless")
	cmd.Env, cmd.Dir = append(e.vars, "MOSAIC_LOG_LEVEL=debug"), e.home
	cmd.Stdout, cmd.Stderr = &stdout, errFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		errFile.Close()
	}
	t.Cleanup(stop)
	healthy := false
	for range 200 { // bounded: 20 s
		if code, _ := httpGet("http://"+e.addr+"/healthz", ""); code == 200 {
			healthy = true
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !healthy {
		t.Fatal("serve did not become healthy within 20s")
	}
	tok := e.token()
	base := "http://" + e.addr
	if code, _ := httpGet(base+"/api/tasks", tok); code != 200 {
		t.Fatalf("/api/tasks: %d", code)
	}
	if code, _ := httpGet(base+"/api/tasks/t-none?token="+tok, tok); code != 404 {
		t.Fatalf("unknown task: %d", code)
	}
	code, body := httpGet(base+"/openapi.json", "")
	var doc struct {
		Info struct{ Version string } `json:"info"`
	}
	if code != 200 || json.Unmarshal(body, &doc) != nil {
		t.Fatalf("/openapi.json: %d", code)
	}
	var about struct{ Version string }
	if code, body := httpGet(base+"/api/about", tok); code != 200 || json.Unmarshal(body, &about) != nil || about.Version == "" || doc.Info.Version != about.Version {
		t.Errorf("openapi info.version %q, /api/about version %q", doc.Info.Version, about.Version)
	}
	code, body = httpGet(base+"/metrics", "")
	for _, name := range []string{"# TYPE mosaic_system_health gauge", "# TYPE mosaic_snapshots_total counter",
		"# TYPE mosaic_http_request_duration_seconds histogram", "# TYPE mosaic_probe_duration_seconds histogram",
		`mosaic_http_request_duration_seconds_count{code="404",method="GET",route="/api/tasks/{id}"} 1`} {
		if code != 200 || !strings.Contains(string(body), name) {
			t.Errorf("/metrics lacks %q", name)
		}
	}
	stop()

	if !strings.Contains(stdout.String(), "serving") {
		t.Errorf("the banner is not on stdout: %q", stdout.String())
	}
	raw, _ := os.ReadFile(errPath)
	access := 0
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Errorf("a stderr line is not JSON: %q", sc.Text())
			continue
		}
		if m["msg"] == "http request" {
			access++
			if m["route"] == "/api/tasks/{id}" && (m["status"] != float64(404) || m["path"] != "/api/tasks/t-none") {
				t.Errorf("access log line: %v", m)
			}
		}
	}
	if access < 5 {
		t.Errorf("%d access-log lines for at least 5 requests:\n%s", access, raw)
	}
	if strings.Contains(string(raw), tok) {
		t.Errorf("the log holds the API token:\n%s", raw)
	}
}
