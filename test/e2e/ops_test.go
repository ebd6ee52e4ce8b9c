package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestServeJSONLogsAccessLogAndMetrics: `mosaic serve --log-format json` (the flag
// over MOSAIC_LOG_FORMAT; another format is refused from either) writes one JSON
// object a line on stderr (its banner stays plain text on stdout), with an
// access-log line per request that never holds the token; /openapi.json carries the
// version /api/about reports; /metrics has the Prometheus-named families.
func TestServeJSONLogsAccessLogAndMetrics(t *testing.T) {
	e := newEnv(t)
	// A format neither text nor json is refused, from the flag and from the environment.
	if _, errOut, rc := e.run("serve", "--addr", e.addr, "--log-format", "xml"); rc == 0 || !strings.Contains(errOut, "want text or json") {
		t.Errorf("--log-format xml: rc=%d %s", rc, errOut)
	}
	bad := *e
	bad.vars = append(append([]string(nil), e.vars...), "MOSAIC_LOG_FORMAT=xml")
	if _, errOut, rc := bad.run("serve", "--addr", e.addr); rc == 0 || !strings.Contains(errOut, `"xml": want text or json`) {
		t.Errorf("MOSAIC_LOG_FORMAT=xml: rc=%d %s", rc, errOut)
	}
	// The flag wins over the environment.
	e.vars = append(e.vars, "MOSAIC_LOG_LEVEL=debug", "MOSAIC_LOG_FORMAT=text")
	logOf := e.serveLogged("--log-format", "json", "--headless")
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

	// serve's output: the banner on stdout (plain text, lines of its own), then only
	// JSON lines. An access line is written once its answer is out: wait for them.
	var raw string
	access := 0
	for range 50 { // bounded: 5 s
		raw, access = logOf(), 0
		for _, line := range strings.Split(strings.TrimSpace(raw), "\n") {
			if !strings.HasPrefix(line, "{") {
				if !strings.HasPrefix(line, "Mosaic ") && !strings.HasPrefix(line, "  ") {
					t.Fatalf("serve wrote a line that is neither its banner nor JSON: %q", line)
				}
				continue
			}
			var m map[string]any
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Fatalf("a log line is not JSON: %q", line)
			}
			if m["msg"] == "http request" {
				access++
				if m["route"] == "/api/tasks/{id}" && (m["status"] != float64(404) || m["path"] != "/api/tasks/t-none") {
					t.Errorf("access log line: %v", m)
				}
			}
		}
		if access >= 6 { // healthz polls, tasks, the 404, openapi, about, metrics
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if access < 6 {
		t.Errorf("%d access-log lines for at least 6 requests:\n%s", access, raw)
	}
	if !strings.Contains(raw, "serving") {
		t.Errorf("no banner:\n%s", raw)
	}
	if strings.Contains(raw, tok) {
		t.Errorf("the log holds the API token:\n%s", raw)
	}
}
