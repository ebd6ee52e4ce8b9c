package globusfake

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/auth"
	"github.com/mosaic-hpc/mosaic/internal/transport/globus"
	"github.com/mosaic-hpc/mosaic/internal/transport/rigenv"
)

// token gets a Compute token with a client-credentials grant.
func token(t *testing.T, s *Server) string {
	t.Helper()
	s.AddClient("c", "s")
	form := url.Values{"grant_type": {"client_credentials"}, "scope": {auth.ComputeScope}}
	req, _ := http.NewRequest(http.MethodPost, s.URL+"/v2/oauth2/token", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth("c", "s")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tr struct {
		AccessToken    string `json:"access_token"`
		ResourceServer string `json:"resource_server"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&tr)
	if tr.ResourceServer != auth.ComputeResourceServer || tr.AccessToken == "" {
		t.Fatalf("token response: %+v", tr)
	}
	return tr.AccessToken
}

func post(t *testing.T, s *Server, tok, path string, body any) (int, map[string]any) {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, s.URL+path, bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

func TestFakeRefusesWrongShapes(t *testing.T) {
	s := New(t)
	tok := token(t, s)
	if code, _ := post(t, s, "wrong", "/v3/functions", map[string]any{}); code != http.StatusUnauthorized {
		t.Fatalf("bad token: %d", code)
	}
	dill := map[string]any{"function_name": "f", "function_code": globus.PackBuffers("01\ngASV"), "meta": map[string]string{"serde_identifier": "01"}}
	if code, _ := post(t, s, tok, "/v3/functions", dill); code != http.StatusUnprocessableEntity {
		t.Fatalf("dill-serialized function accepted: %d", code)
	}
	noMeta := map[string]any{"function_name": globus.FunctionName, "function_code": globus.FunctionCode()}
	if code, _ := post(t, s, tok, "/v3/functions", noMeta); code != http.StatusUnprocessableEntity {
		t.Fatalf("registration without meta accepted: %d", code)
	}
}

func TestFakeDefaultResultIsNotJSON(t *testing.T) {
	if err := Python(); err != nil {
		rigenv.Missing(t, "python3 not installed (apt-get install python3)")
	}
	s := New(t)
	tok := token(t, s)
	s.AddEndpoint(Endpoint{ID: "4b116d3c-1703-4f8f-9f6f-39921e5864df", Name: "mosaic"})
	code, out := post(t, s, tok, "/v3/functions", map[string]any{"function_name": globus.FunctionName, "function_code": globus.FunctionCode(),
		"meta": map[string]string{"python_version": "3", "sdk_version": "x", "serde_identifier": "st"}})
	if code != 200 {
		t.Fatalf("register: %d %v", code, out)
	}
	fid := out["function_uuid"].(string)
	payload, _ := globus.TaskPayload([]any{[]string{"echo", "hi"}, "", 10, 1000}, nil)
	// No result_serializers: the endpoint answers with its default (dill) strategy.
	code, out = post(t, s, tok, "/v3/endpoints/4b116d3c-1703-4f8f-9f6f-39921e5864df/submit", map[string]any{"create_queue": false, "tasks": map[string][]string{fid: {payload}}})
	if code != 200 {
		t.Fatalf("submit: %d %v", code, out)
	}
	tid := out["tasks"].(map[string]any)[fid].([]any)[0].(string)
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		_, st := post(t, s, tok, "/v2/batch_status", map[string]any{"task_ids": []string{tid}})
		rec := st["results"].(map[string]any)[tid].(map[string]any)
		if rec["status"] == "success" {
			if !strings.HasPrefix(rec["result"].(string), "00\n") {
				t.Fatalf("default result strategy: %q", rec["result"])
			}
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("task did not finish")
}
