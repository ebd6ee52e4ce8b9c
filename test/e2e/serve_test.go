package e2e

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

func httpGet(url, token string) (int, []byte) {
	return httpDo("GET", url, token, "")
}

func httpDo(method, url, token, host string) (int, []byte) {
	req, _ := http.NewRequest(method, url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if host != "" {
		req.Host = host
	}
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// TestDemoFederation is issue 2's acceptance path: a clean start serves six simulated
// systems within 10 s, status changes across ticks, and the API is locked down.
func TestDemoFederation(t *testing.T) {
	e := newEnv(t)
	start := time.Now()
	e.serve("--tick", "1s", "--speed", "300")
	snap := waitSnapshot(t, e)
	if el := time.Since(start); el > 10*time.Second {
		t.Errorf("six systems took %s to appear, want <= 10s", el)
	}
	if len(snap.Systems) != 6 {
		t.Fatalf("want 6 systems, got %d", len(snap.Systems))
	}

	// Token file is private.
	st, err := os.Stat(e.tokenPath())
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("token file mode: %v %v", st.Mode().Perm(), err)
	}

	// Security baseline.
	if code, _ := httpGet("http://"+e.addr+"/api/federation", ""); code != 401 {
		t.Errorf("no token: got %d, want 401", code)
	}
	if code, _ := httpGet("http://"+e.addr+"/api/federation", "wrong"); code != 401 {
		t.Errorf("wrong token: got %d, want 401", code)
	}
	if code, _ := httpDo("GET", "http://"+e.addr+"/api/federation", e.token(), "evil.example"); code != 403 {
		t.Errorf("Host evil.example: got %d, want 403", code)
	}
	if code, _ := httpDo("GET", "http://"+e.addr+"/healthz", "", "evil.example:8642"); code != 403 {
		t.Errorf("Host evil.example on /healthz: got %d, want 403", code)
	}
	code, body := httpGet("http://"+e.addr+"/api/federation", e.token())
	if code != 200 {
		t.Fatalf("with token: %d %s", code, body)
	}
	checkRecordFields(t, body)

	// mosaic status: Markdown whose free-GPU and queue columns move across ticks.
	first, errOut, rc := e.run("status")
	if rc != 0 || !strings.Contains(first, "| partition |") || !strings.Contains(first, "## Delta@NCSA") {
		t.Fatalf("status rc=%d stderr=%s\n%s", rc, errOut, first)
	}
	changed := false
	for i := 0; i < 20 && !changed; i++ {
		time.Sleep(1200 * time.Millisecond)
		again, _, _ := e.run("status")
		changed = tableBody(again) != tableBody(first)
	}
	if !changed {
		t.Fatal("status did not change across ticks")
	}

	// Every data command has --json.
	for _, args := range [][]string{{"resources"}, {"resources", "delta"}, {"idle", "--gpus", "1"}, {"status"}, {"about"}} {
		out, errOut, rc := e.run(append(args, "--json")...)
		if rc != 0 || !json.Valid([]byte(out)) {
			t.Errorf("%v --json: rc=%d stderr=%s out=%.200s", args, rc, errOut, out)
		}
	}
	out, _, rc := e.run("resources", "--json=records")
	if rc != 0 || !strings.Contains(out, `"records"`) || strings.Contains(out, `"systems"`) {
		t.Errorf("--json field selection: rc=%d %.200s", rc, out)
	}
	_, errOut, rc = e.run("resources", "--json=nope")
	if rc == 0 || !strings.Contains(errOut, "available") {
		t.Errorf("unknown --json field: rc=%d %s", rc, errOut)
	}
	_, errOut, rc = e.run("resources", "nosuch")
	if rc == 0 || !strings.Contains(errOut, "known systems") {
		t.Errorf("unknown system: rc=%d %s", rc, errOut)
	}
	out, _, rc = e.run("resources")
	if rc != 0 || !strings.HasPrefix(out, "SYSTEM") || !strings.Contains(out, "gpuA100x4") {
		t.Errorf("resources table:\n%s", out)
	}

	// History is stored (downsampled) from the first probe round on.
	code, body = httpGet("http://"+e.addr+"/api/federation/history?system=delta&since=1h", e.token())
	if code != 200 || !strings.Contains(string(body), `"partition":"gpuA100x4"`) {
		t.Errorf("history: %d %.300s", code, body)
	}
	if code, _ := httpGet("http://"+e.addr+"/api/federation/history?since=yesterday", e.token()); code != 422 {
		t.Errorf("bad since: %d", code)
	}
	if code, _ := httpGet("http://"+e.addr+"/api/status?format=text", ""); code != 401 {
		t.Errorf("status text without token: %d", code)
	}
	if code, _ := httpGet("http://"+e.addr+"/api/idle?gpus=-1", e.token()); code != 422 {
		t.Errorf("negative gpus: %d", code)
	}

	// OpenAPI and offline docs.
	code, body = httpGet("http://"+e.addr+"/openapi.json", "")
	if code != 200 || !strings.Contains(string(body), `"openapi":"3.1`) {
		t.Errorf("openapi: %d %.100s", code, body)
	}
	code, body = httpGet("http://"+e.addr+"/docs", "")
	if code != 200 || strings.Contains(string(body), "https://") {
		t.Errorf("docs must render offline (no external URLs): %d", code)
	}
	code, body = httpGet("http://"+e.addr+"/metrics", "")
	if code != 200 || !strings.Contains(string(body), "mosaic_partition_free_gpus") {
		t.Errorf("metrics: %d", code)
	}

	// A second serve on the same port is refused with a message naming the port.
	_, port, _ := net.SplitHostPort(e.addr)
	_, errOut, rc = e.run("serve", "--addr", e.addr)
	if rc == 0 || !strings.Contains(errOut, "port "+port+" is already in use") {
		t.Errorf("busy port: rc=%d %s", rc, errOut)
	}
}

func TestCLIWithoutCore(t *testing.T) {
	e := newEnv(t)
	_, errOut, rc := e.run("status")
	if rc == 0 || !strings.Contains(errOut, "mosaic serve") {
		t.Fatalf("want a hint to start the core, rc=%d: %s", rc, errOut)
	}
}

type snapshotJSON struct {
	Systems []struct {
		System string `json:"system"`
		Health string `json:"health"`
	} `json:"systems"`
	Records []map[string]any `json:"records"`
}

func waitSnapshot(t *testing.T, e *env) snapshotJSON {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		code, body := httpGet("http://"+e.addr+"/api/federation", e.token())
		if code == 200 {
			var s snapshotJSON
			if err := json.Unmarshal(body, &s); err != nil {
				t.Fatal(err)
			}
			if len(s.Systems) == 6 && len(s.Records) > 0 {
				return s
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("no snapshot within 10s")
	return snapshotJSON{}
}

func checkRecordFields(t *testing.T, body []byte) {
	t.Helper()
	var s snapshotJSON
	if err := json.Unmarshal(body, &s); err != nil {
		t.Fatal(err)
	}
	want := []string{"timestamp", "provider", "endpoint", "system", "partition", "account", "arch",
		"cpu_cores_per_node", "memory_per_node_gb", "gpus_per_node", "gpu_memory_gb", "nodes",
		"free_gpus", "free_cores", "running_jobs", "pending_jobs", "my_running_jobs", "my_pending_jobs",
		"walltime_cap", "max_nodes_per_job", "container_runtimes", "health", "probe_latency_ms"}
	gpuSeen := false
	for _, r := range s.Records {
		for _, k := range want {
			if _, ok := r[k]; !ok {
				t.Fatalf("record %v/%v lacks %q", r["system"], r["partition"], k)
			}
		}
		if n, _ := r["gpus_per_node"].(float64); n > 0 {
			gpuSeen = true
			if r["gpu_model"] == "" || r["gpu_memory_gb"].(float64) <= 0 {
				t.Errorf("GPU record without model/memory: %v", r)
			}
		}
		nodes := r["nodes"].(map[string]any)
		for _, k := range []string{"idle", "mixed", "allocated", "down", "total"} {
			if _, ok := nodes[k]; !ok {
				t.Fatalf("nodes lacks %q", k)
			}
		}
	}
	if !gpuSeen {
		t.Error("no GPU partition in the demo federation")
	}
}

// tableBody drops the heading line (it carries the time) so only data is compared.
func tableBody(md string) string {
	if i := strings.Index(md, "\n"); i >= 0 {
		return md[i+1:]
	}
	return md
}
