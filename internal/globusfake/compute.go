package globusfake

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/auth"
	"github.com/mosaic-hpc/mosaic/internal/transport/globus"
)

type function struct {
	name, src, code string
}

type task struct {
	id, endpoint, function string
	payload                string
	jsonResult             bool
	status                 string // waiting-for-ep, running, success, failed
	result, exception      string
	completion             float64
}

func (s *Server) computeRoutes(mux *http.ServeMux) {
	// web_client.py register_function: POST /v3/functions with
	// FunctionRegistrationData.to_dict() → {"function_uuid"}.
	mux.HandleFunc("POST /v3/functions", func(w http.ResponseWriter, r *http.Request) {
		if _, ok := s.bearer(w, r, auth.ComputeResourceServer); !ok {
			return
		}
		var req struct {
			FunctionName string `json:"function_name"`
			FunctionCode string `json:"function_code"`
			Meta         *struct {
				PythonVersion   string `json:"python_version"`
				SDKVersion      string `json:"sdk_version"`
				SerdeIdentifier string `json:"serde_identifier"`
			} `json:"meta"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			writeJSON(w, http.StatusUnprocessableEntity, map[string]string{"code": "BAD_REQUEST", "message": err.Error()})
			return
		}
		bufs, err := globus.UnpackBuffers(req.FunctionCode)
		if err != nil || len(bufs) != 1 || req.Meta == nil {
			writeJSON(w, http.StatusUnprocessableEntity, map[string]string{"code": "BAD_REQUEST", "message": fmt.Sprintf("function_code must pack one serialized function and meta is required (%v)", err)})
			return
		}
		name, src, err := globus.ParsePureSource(bufs[0])
		if err != nil || name != req.FunctionName || req.Meta.SerdeIdentifier != "st" {
			writeJSON(w, http.StatusUnprocessableEntity, map[string]string{"code": "BAD_REQUEST", "message": fmt.Sprintf("fake accepts PureSourceTextInspect functions only: %v", err)})
			return
		}
		s.Registrations.Add(1)
		id := newUUID()
		s.mu.Lock()
		s.functions[id] = function{name: name, src: src, code: req.FunctionCode}
		s.mu.Unlock()
		writeJSON(w, http.StatusOK, map[string]string{"function_uuid": id})
	})
	// web_client.py submit: POST /v3/endpoints/{id}/submit with Batch.prepare().
	mux.HandleFunc("POST /v3/endpoints/{id}/submit", func(w http.ResponseWriter, r *http.Request) {
		if _, ok := s.bearer(w, r, auth.ComputeResourceServer); !ok {
			return
		}
		var req struct {
			CreateQueue       bool                `json:"create_queue"`
			Tasks             map[string][]string `json:"tasks"`
			TaskGroupID       string              `json:"task_group_id"`
			ResultSerializers []string            `json:"result_serializers"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Tasks) == 0 {
			writeJSON(w, http.StatusUnprocessableEntity, map[string]string{"code": "BAD_REQUEST", "message": "tasks required"})
			return
		}
		s.Submits.Add(1)
		epID := r.PathValue("id")
		s.mu.Lock()
		ep := s.endpoints[epID]
		if ep == nil {
			s.mu.Unlock()
			writeJSON(w, http.StatusNotFound, map[string]string{"code": "ENDPOINT_NOT_FOUND", "message": "no endpoint " + epID})
			return
		}
		resp := map[string]any{"request_id": randHex(8), "task_group_id": firstNonEmpty(req.TaskGroupID, newUUID()), "endpoint_id": epID}
		ids := map[string][]string{}
		var start []*task
		for fid, payloads := range req.Tasks {
			if _, ok := s.functions[fid]; !ok {
				s.mu.Unlock()
				writeJSON(w, http.StatusNotFound, map[string]string{"code": "FUNCTION_NOT_FOUND", "message": "no function " + fid})
				return
			}
			for _, p := range payloads {
				t := &task{id: newUUID(), endpoint: epID, function: fid, payload: p,
					jsonResult: slices.Contains(req.ResultSerializers, globus.JSONDataPath), status: "waiting-for-ep"}
				if ep.online {
					t.status = "running"
					start = append(start, t)
				}
				s.tasks[t.id] = t
				ids[fid] = append(ids[fid], t.id)
			}
		}
		s.mu.Unlock()
		resp["tasks"] = ids
		for _, t := range start {
			s.run(t)
		}
		writeJSON(w, http.StatusOK, resp)
	})
	// web_client.py get_batch_status: POST /v2/batch_status {"task_ids"} →
	// {"response": "batch", "results": {...}} (client.py get_batch_result).
	mux.HandleFunc("POST /v2/batch_status", func(w http.ResponseWriter, r *http.Request) {
		if _, ok := s.bearer(w, r, auth.ComputeResourceServer); !ok {
			return
		}
		s.BatchStatusCalls.Add(1)
		var req struct {
			TaskIDs []string `json:"task_ids"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			writeJSON(w, http.StatusUnprocessableEntity, map[string]string{"code": "BAD_REQUEST", "message": err.Error()})
			return
		}
		results := map[string]any{}
		s.mu.Lock()
		for _, id := range req.TaskIDs {
			if t, ok := s.tasks[id]; ok {
				results[id] = t.record()
			}
		}
		s.mu.Unlock()
		writeJSON(w, http.StatusOK, map[string]any{"response": "batch", "results": results})
	})
	// web_client.py get_task: GET /v2/tasks/{id}.
	mux.HandleFunc("GET /v2/tasks/{id}", func(w http.ResponseWriter, r *http.Request) {
		if _, ok := s.bearer(w, r, auth.ComputeResourceServer); !ok {
			return
		}
		s.mu.Lock()
		t, ok := s.tasks[r.PathValue("id")]
		var rec map[string]any
		if ok {
			rec = t.record()
		}
		s.mu.Unlock()
		if !ok {
			writeJSON(w, http.StatusNotFound, map[string]string{"code": "TASK_NOT_FOUND"})
			return
		}
		writeJSON(w, http.StatusOK, rec)
	})
	// web_client.py get_endpoint_status: GET /v2/endpoints/{id}/status.
	mux.HandleFunc("GET /v2/endpoints/{id}/status", func(w http.ResponseWriter, r *http.Request) {
		if _, ok := s.bearer(w, r, auth.ComputeResourceServer); !ok {
			return
		}
		s.StatusCalls.Add(1)
		s.mu.Lock()
		ep := s.endpoints[r.PathValue("id")]
		var online bool
		if ep != nil {
			online = ep.online
		}
		s.mu.Unlock()
		if ep == nil {
			writeJSON(w, http.StatusNotFound, map[string]string{"code": "ENDPOINT_NOT_FOUND"})
			return
		}
		st := "offline"
		if online {
			st = "online"
		}
		writeJSON(w, http.StatusOK, map[string]any{"status": st, "details": map[string]any{}})
	})
	// web_client.py get_endpoints: GET /v2/endpoints → [{uuid, name, display_name, owner}]
	// (globus-sdk-python testing data for ComputeClientV2.get_endpoints).
	mux.HandleFunc("GET /v2/endpoints", func(w http.ResponseWriter, r *http.Request) {
		if _, ok := s.bearer(w, r, auth.ComputeResourceServer); !ok {
			return
		}
		s.mu.Lock()
		out := []map[string]any{}
		for _, ep := range s.endpoints {
			out = append(out, map[string]any{"uuid": ep.ID, "name": ep.Name, "display_name": ep.Name, "owner": s.Identity.Sub})
		}
		s.mu.Unlock()
		slices.SortFunc(out, func(a, b map[string]any) int { return strings.Compare(a["name"].(string), b["name"].(string)) })
		writeJSON(w, http.StatusOK, out)
	})
	// web_client.py get_endpoint_metadata: GET /v2/endpoints/{id} (hostname, status, ...).
	mux.HandleFunc("GET /v2/endpoints/{id}", func(w http.ResponseWriter, r *http.Request) {
		if _, ok := s.bearer(w, r, auth.ComputeResourceServer); !ok {
			return
		}
		s.mu.Lock()
		ep := s.endpoints[r.PathValue("id")]
		var out map[string]any
		if ep != nil {
			st := "offline"
			if ep.online {
				st = "online"
			}
			out = map[string]any{"uuid": ep.ID, "name": ep.Name, "display_name": ep.Name, "owner": s.Identity.Sub, "status": st, "hostname": ep.Hostname}
		}
		s.mu.Unlock()
		if out == nil {
			writeJSON(w, http.StatusNotFound, map[string]string{"code": "ENDPOINT_NOT_FOUND"})
			return
		}
		writeJSON(w, http.StatusOK, out)
	})
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// record is the task document of client.py _update_task_table (caller holds s.mu).
func (t *task) record() map[string]any {
	rec := map[string]any{"task_id": t.id, "status": t.status}
	switch t.status {
	case "success":
		rec["result"] = t.result
		rec["completion_t"] = fmt.Sprintf("%.6f", t.completion)
	case "failed":
		rec["exception"] = t.exception
		rec["completion_t"] = fmt.Sprintf("%.6f", t.completion)
	}
	return rec
}

// harness runs a task like the endpoint worker, decoding the wire payloads in Python
// independently of Mosaic's Go encoder: unpack_buffers (serialize/utils.py),
// PureSourceTextInspect.deserialize and JSONData.deserialize (serialize/concretes.py);
// then it calls the function and prints the JSON result.
const harness = `import codecs, json, sys
def unpack_buffers(p):
    out = []
    while p:
        d, b = p.split("\n", 1)
        n = int(d)
        if n < 0 or len(b) < n:
            raise ValueError("bad packed buffer")
        out.append(b[:n])
        p = b[n:]
    return out
d = json.load(sys.stdin)
(code,) = unpack_buffers(d["function_code"])
assert code[:3] == "st\n", "not PureSourceTextInspect"
name, body = codecs.decode(code[3:].encode(), "base64").decode().split(":", 1)
ns = {}
exec(body, ns)
a, k = unpack_buffers(d["payload"])
assert a[:3] == "11\n" and k[:3] == "11\n", "arguments are not JSONData"
r = ns[name](*json.loads(a[3:]), **json.loads(k[3:]))
sys.stdout.write(json.dumps(r))
`

// run executes a task in the background.
func (s *Server) run(t *task) {
	s.mu.Lock()
	fn := s.functions[t.function]
	ep := *s.endpoints[t.endpoint]
	s.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		status, result, exc := s.execute(fn, ep, t)
		s.mu.Lock()
		t.status, t.result, t.exception = status, result, exc
		t.completion = float64(time.Now().UnixNano()) / 1e9
		s.mu.Unlock()
	}()
}

func (s *Server) execute(fn function, ep Endpoint, t *task) (status, result, exception string) {
	in, _ := json.Marshal(map[string]any{"function_code": fn.code, "payload": t.payload})
	py := s.Python
	if py == "" {
		py = pythonPath()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, "-c", harness)
	cmd.Stdin = bytes.NewReader(in)
	cmd.Env = append(os.Environ(), ep.Env...)
	cmd.Dir = ep.Dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "failed", "", fmt.Sprintf("Traceback (fake endpoint):\n%s\n%v", errb.String(), err)
	}
	var payload string
	if t.jsonResult {
		payload = globus.JSONDataID + out.String()
	} else {
		// The endpoint's default data strategy is dill (DillDataBase64, "00\n").
		payload = "00\n" + base64.StdEncoding.EncodeToString(out.Bytes())
	}
	if len(payload) > s.ResultLimit {
		return "failed", "", fmt.Sprintf("globus_compute_sdk.errors.MaxResultSizeExceeded: Task result of %d bytes exceeds the %d-byte limit", len(payload), s.ResultLimit)
	}
	return "success", payload, ""
}

// pythonPath prefers the system interpreter (version-manager shims add ~0.3 s per task).
func pythonPath() string {
	if _, err := os.Stat("/usr/bin/python3"); err == nil {
		return "/usr/bin/python3"
	}
	return "python3"
}

// Python reports whether tasks can run (python3 found).
func Python() error {
	_, err := exec.LookPath(pythonPath())
	return err
}
