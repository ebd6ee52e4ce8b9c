package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
)

// TestSubmitPrintsAnswerWithoutDecision: a submit answer without a decision (an older
// core's replay of an Idempotency-Key answered "decision": null) is printed, not a
// nil-pointer panic.
func TestSubmitPrintsAnswerWithoutDecision(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/api/tasks" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"task":{"id":"t123","name":"x","state":"placed","attempts":[]},"decision":null,"dry_run":false}`))
	}))
	defer srv.Close()
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(t.TempDir(), "config"))
	t.Setenv("MOSAIC_URL", srv.URL)
	t.Setenv("MOSAIC_TOKEN", "tok")
	root := newRootCmd()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs([]string{"submit", "--name", "x", "--command", "true", "--cpus", "1", "--walltime", "10m"})
	if err := root.Execute(); err != nil {
		t.Fatalf("submit: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "task t123") {
		t.Fatalf("output %q, want the task named", out.String())
	}
}
