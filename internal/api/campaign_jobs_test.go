package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "github.com/mosaic-hpc/mosaic/api/v1"
	"github.com/mosaic-hpc/mosaic/client"
	"github.com/mosaic-hpc/mosaic/internal/core"
	"github.com/mosaic-hpc/mosaic/internal/core/coretest"
)

// syncBuffer is a log sink safe for the core's and the server's goroutines.
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

// campaignJobsServer is a real core on the embedded simulated federation with a
// real SQLite store, both logging at debug level into log, behind the real API.
func campaignJobsServer(t *testing.T) (*httptest.Server, *core.Core, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c := coretest.Start(t, coretest.Options{SimSpeed: 60, OnDisk: true, Logger: log})
	srv, err := New(c, Options{Token: "tok", Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewUnstartedServer(srv)
	hs.Config = srv.HTTPServer()
	hs.Start()
	t.Cleanup(hs.Close)
	return hs, c, logs
}

func deltaJob(run, account, command string, env map[string]string) client.CampaignJobRequest {
	return client.CampaignJobRequest{RunID: run, Site: "Delta@NCSA", Agents: []string{"coordinator", "worker-a"},
		Spec: v1.JobSpec{Tag: "mosaic-c-" + run + "-delta", Name: "campaign " + run + " on Delta@NCSA", System: "Delta@NCSA",
			Partition: "cpu", Account: account, Nodes: 1, NTasks: 1, CPUsPerTask: 2, Walltime: v1.Duration(time.Hour),
			Command: command, Env: env}}
}

func rawPost(t *testing.T, hs *httptest.Server, path, token, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, hs.URL+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := hs.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestCampaignJobsOverTheAPI: a launcher's slice job handed to the core over
// HTTP is that core's task — pinned to the spec's system and partition, in the
// task list and the events with the run id, followed and cancelled through the
// campaign-jobs routes — and the forwarded value never appears in the server's
// or the core's log, in the task, in its events or in any answer.
func TestCampaignJobsOverTheAPI(t *testing.T) {
	hs, _, logs := campaignJobsServer(t)
	ctx := context.Background()
	const secret = "fwd-s3cr3t-value-7781"
	cl, err := client.New(hs.URL, "tok")
	if err != nil {
		t.Fatal(err)
	}
	var answers []string
	// Without the token: refused, nothing stored.
	if code, body := rawPost(t, hs, "/api/campaign-jobs", "", `{"run_id":"r1"}`); code != http.StatusUnauthorized {
		t.Fatalf("without a token: HTTP %d %s", code, body)
	}
	if code, body := rawPost(t, hs, "/api/campaign-jobs", "wrong", `{"run_id":"r1"}`); code != http.StatusUnauthorized {
		t.Fatalf("with a wrong token: HTTP %d %s", code, body)
	}

	id, err := cl.SubmitCampaignJob(ctx, deltaJob("r1", "demo-delta-cpu", "sleep 3000", map[string]string{"FWD_TOKEN": secret}))
	if err != nil || id == "" {
		t.Fatalf("submit: %q %v", id, err)
	}
	j, err := cl.CampaignJob(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if j.TaskID != id || j.Final() || j.JobID == "" {
		t.Fatalf("campaign job after submit: %+v", j)
	}
	var td v1.TaskDetail
	if code := apiGet(t, hs, "/api/tasks/"+id, nil, &td); code != 200 {
		t.Fatalf("task %s: HTTP %d", id, code)
	}
	if td.Target == nil || td.Target.System != "Delta@NCSA" || td.Target.Partition != "cpu" || !strings.Contains(td.Name, "r1") ||
		len(td.Attempts) != 1 || td.Attempts[0].Tag != "mosaic-c-r1-delta" || td.Attempts[0].JobID != j.JobID {
		t.Errorf("task: %+v", td)
	}
	var list struct {
		Tasks []v1.TaskSummary `json:"tasks"`
	}
	if code := apiGet(t, hs, "/api/tasks", nil, &list); code != 200 || len(list.Tasks) != 1 || list.Tasks[0].ID != id {
		t.Errorf("task list: HTTP %d %+v", code, list.Tasks)
	}
	var evs v1.EventPage
	if code := apiGet(t, hs, "/api/events?task="+id, nil, &evs); code != 200 || len(evs.Events) == 0 {
		t.Fatalf("events: HTTP %d %+v", code, evs)
	}
	var named bool
	for _, e := range evs.Events {
		named = named || (strings.Contains(e.Message, "campaign run r1") && strings.Contains(e.Rationale, "FWD_TOKEN"))
	}
	if !named {
		t.Errorf("no event names the run and the forwarded variable: %+v", evs.Events)
	}

	// Cancelled through the route: the task ends, and a second cancel is no error.
	cj, err := cl.CancelCampaignJob(ctx, id, "campaign run r1 stopped")
	if err != nil {
		t.Fatal(err)
	}
	if cj.TaskState != "cancelled" {
		t.Errorf("after cancel: %+v", cj)
	}
	if _, err := cl.CancelCampaignJob(ctx, id, "again"); err != nil {
		t.Errorf("cancelling an ended campaign job: %v", err)
	}
	if code, body := rawPost(t, hs, "/api/campaign-jobs/"+id+"/cancel", "tok", `{"reason":"two\nlines"}`); code != http.StatusUnprocessableEntity {
		t.Errorf("a reason with a newline: HTTP %d %s", code, body)
	}
	if _, err := cl.CampaignJob(ctx, "nosuchtask"); !isStatus(err, http.StatusNotFound) {
		t.Errorf("unknown task: %v", err)
	}

	// A job the site refuses: the answer names the stored task AND the error.
	rid, err := cl.SubmitCampaignJob(ctx, deltaJob("r2", "nosuch-acct", "true", map[string]string{"FWD_TOKEN": secret}))
	if rid == "" || !isStatus(err, 0) || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("refused job: id %q, err %v", rid, err)
	}
	if rj, err := cl.CampaignJob(ctx, rid); err != nil || rj.TaskState != "failed" {
		t.Errorf("refused job's task: %+v %v", rj, err)
	}
	code, body := rawPost(t, hs, "/api/campaign-jobs", "tok", `{"run_id":"r3","site":"Delta@NCSA","spec":{"tag":"t","system":"Delta@NCSA","partition":"cpu","account":"nosuch-acct","walltime":"1h","command":"true","env":{"FWD_TOKEN":"`+secret+`"}}}`)
	answers = append(answers, body)
	if code != http.StatusCreated || !strings.Contains(body, `"task_id":"`) || !strings.Contains(body, `"error":{`) {
		t.Errorf("refusal answer: HTTP %d %s", code, body)
	}

	// Refused before any task is stored: a problem answer, no task id.
	if id, err := cl.SubmitCampaignJob(ctx, deltaJob("bad run id!", "demo-delta-cpu", "true", nil)); id != "" || !isStatus(err, http.StatusUnprocessableEntity) {
		t.Errorf("bad run id: %q %v", id, err)
	}
	// Malformed bodies carrying the secret: the answer names the field, never the value.
	for _, body := range []string{
		`{"run_id":"r4","spec":{"env":{"FWD_TOKEN":"` + secret + `"},"nodes":"two"}}`,
		`{"run_id":"r4","spec":{"env":{"FWD_TOKEN":"` + secret + `"}`,
		`{"run_id":"r4","spec":{"env":{"FWD_TOKEN":"` + secret + `","N":5}}}`,
	} {
		code, ans := rawPost(t, hs, "/api/campaign-jobs", "tok", body)
		answers = append(answers, ans)
		if code != http.StatusBadRequest {
			t.Errorf("malformed %s: HTTP %d %s", body, code, ans)
		}
	}

	if code, ans := rawPost(t, hs, "/api/campaign-jobs", "tok", `{"run_id":"`+strings.Repeat("x", MaxCampaignJobBody)+`"}`); code != http.StatusRequestEntityTooLarge {
		t.Errorf("a body over %d bytes: HTTP %d %.200s", MaxCampaignJobBody, code, ans)
	}

	var all []string
	for _, p := range []string{"/api/tasks", "/api/events?limit=1000", "/api/tasks/" + id, "/api/tasks/" + rid, "/api/events?task=" + id} {
		req, _ := http.NewRequest(http.MethodGet, hs.URL+p, nil)
		req.Header.Set("Authorization", "Bearer tok")
		resp, err := hs.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		all = append(all, p+": "+string(b))
	}
	for _, s := range append(append(all, answers...), "log: "+logs.String()) {
		if strings.Contains(s, secret) {
			t.Errorf("the forwarded value leaked:\n%s", s)
		}
	}
	if !strings.Contains(logs.String(), "level=") {
		t.Error("the log sink saw nothing; the check above would prove nothing")
	}
}

// isStatus reports whether err is an API error with that status (0: any).
func isStatus(err error, status int) bool {
	var ae *client.APIError
	return errors.As(err, &ae) && (status == 0 || ae.Status == status)
}

// TestCampaignJobIdempotencyKeyOverTheAPI: POST /api/campaign-jobs with an
// Idempotency-Key answers 201 with the stored task, the same key and body again
// 200 with that task (its job queued once), the same key with another body 422.
func TestCampaignJobIdempotencyKeyOverTheAPI(t *testing.T) {
	hs, c, _ := campaignJobsServer(t)
	post := func(key string, req client.CampaignJobRequest) (int, v1.CampaignJobSubmitted, string) {
		t.Helper()
		body, _ := json.Marshal(req)
		r, _ := http.NewRequest(http.MethodPost, hs.URL+"/api/campaign-jobs", bytes.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Authorization", "Bearer tok")
		r.Header.Set("Idempotency-Key", key)
		resp, err := hs.Client().Do(r)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var out v1.CampaignJobSubmitted
		_ = json.Unmarshal(b, &out)
		return resp.StatusCode, out, string(b)
	}
	job := deltaJob("r1", "demo-delta-cpu", "sleep 3000", map[string]string{"FWD_TOKEN": "v"})
	code, first, body := post("launch-1", job)
	if code != http.StatusCreated || first.TaskID == "" {
		t.Fatalf("first: HTTP %d %s", code, body)
	}
	code, again, body := post("launch-1", job)
	if code != http.StatusOK || again.TaskID != first.TaskID || again.Error != nil {
		t.Fatalf("retry: HTTP %d %s; want 200 with task %s", code, body, first.TaskID)
	}
	td, err := c.Task(context.Background(), first.TaskID)
	if err != nil || len(td.Attempts) != 1 {
		t.Fatalf("task %s: %d attempts %v; want its one job", first.TaskID, len(td.Attempts), err)
	}
	other := job
	other.Spec.Command = "sleep 3001"
	if code, _, body := post("launch-1", other); code != http.StatusUnprocessableEntity || !strings.Contains(body, "different submission") {
		t.Fatalf("same key, another body: HTTP %d %s; want 422", code, body)
	}
}
