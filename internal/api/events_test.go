package api

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/core"
	"github.com/mosaic-hpc/mosaic/internal/core/coretest"
	"github.com/mosaic-hpc/mosaic/internal/model"
)

// eventsServer runs a real core on the embedded simulated federation (in-memory
// store) behind the real API, with a few tasks submitted so the log has events.
func eventsServer(t *testing.T) (*httptest.Server, *core.Core) {
	t.Helper()
	return coreServer(t, Options{Token: "tok"})
}

// coreServer is eventsServer with the API's options.
func coreServer(t *testing.T, opts Options) (*httptest.Server, *core.Core) {
	t.Helper()
	c := coretest.Start(t, coretest.Options{SimSpeed: 60})
	srv, err := New(c, opts)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	return hs, c
}

func apiGet(t *testing.T, hs *httptest.Server, path string, hdr map[string]string, out any) int {
	t.Helper()
	req, _ := http.NewRequest("GET", hs.URL+path, nil)
	req.Header.Set("Authorization", "Bearer tok")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := hs.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode == 200 {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s: %v: %s", path, err, b)
		}
	}
	if resp.StatusCode != 200 && out != nil {
		t.Logf("%s: %d %s", path, resp.StatusCode, b)
	}
	return resp.StatusCode
}

func submitTasks(t *testing.T, c *core.Core, n int) {
	t.Helper()
	for i := range n {
		env := model.Envelope{CPUCores: model.IntRange{Min: 1, Max: 1}, Walltime: model.DurationRange{Min: model.Duration(10 * time.Minute), Max: model.Duration(10 * time.Minute)}}
		if _, err := c.SubmitTask(context.Background(), core.SubmitRequest{Name: fmt.Sprintf("ev%d", i), Command: "true", Envelope: &env}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestEventsNewestFirstWithCursor: GET /api/events returns the newest events first,
// limit keeps the newest N, and next_before pages back through everything exactly once.
func TestEventsNewestFirstWithCursor(t *testing.T) {
	hs, c := eventsServer(t)
	submitTasks(t, c, 3)
	all, err := c.Events(context.Background(), core.EventQuery{Limit: 10000})
	if err != nil || len(all) < 7 {
		t.Fatalf("want several events, got %d %v", len(all), err)
	}
	newestID := all[len(all)-1].ID

	var page core.EventPage
	if code := apiGet(t, hs, "/api/events?limit=3", nil, &page); code != 200 {
		t.Fatalf("status %d", code)
	}
	if len(page.Events) != 3 || page.Events[0].ID != newestID || page.Events[0].ID <= page.Events[2].ID || page.NextBefore != page.Events[2].ID {
		t.Fatalf("first page not the newest 3, newest first: %+v", page)
	}
	if page.LastID < newestID {
		t.Fatalf("last_id %d, want >= %d", page.LastID, newestID)
	}
	var seen []int64
	for _, e := range page.Events {
		seen = append(seen, e.ID)
	}
	for i := 0; page.NextBefore != 0; i++ {
		if i > 100 {
			t.Fatal("paging does not end")
		}
		before := page.NextBefore
		page = core.EventPage{}
		if code := apiGet(t, hs, "/api/events?limit=3&before="+strconv.FormatInt(before, 10), nil, &page); code != 200 {
			t.Fatalf("status %d", code)
		}
		for _, e := range page.Events {
			if e.ID >= before {
				t.Fatalf("page before %d holds %d", before, e.ID)
			}
			seen = append(seen, e.ID)
		}
	}
	// Events keep coming (the sim runs the jobs), so compare with what existed at the start.
	have := map[int64]bool{}
	for _, id := range seen {
		if have[id] {
			t.Fatalf("event %d twice", id)
		}
		have[id] = true
	}
	for _, e := range all {
		if !have[e.ID] {
			t.Fatalf("event %d missing from the pages", e.ID)
		}
	}

	// after_id reads forward, oldest first; order= overrides; a bad order is a 422.
	page = core.EventPage{}
	apiGet(t, hs, fmt.Sprintf("/api/events?after_id=%d&limit=2", all[0].ID), nil, &page)
	if len(page.Events) != 2 || page.Events[0].ID != all[1].ID || page.NextAfter != all[2].ID {
		t.Fatalf("after_id page: %+v", page)
	}
	page = core.EventPage{}
	apiGet(t, hs, "/api/events?order=oldest&limit=1", nil, &page)
	if len(page.Events) != 1 || page.Events[0].ID != all[0].ID {
		t.Fatalf("order=oldest: %+v", page)
	}
	for _, q := range []string{"order=sideways", "since=yesterday", "before=-1", "before=x", "after_id=-5", "limit=20000", "limit=-1"} {
		if code := apiGet(t, hs, "/api/events?"+q, nil, nil); code != 422 {
			t.Errorf("/api/events?%s: %d, want 422", q, code)
		}
	}
	if code := apiGet(t, hs, "/api/events?task=nosuchtask", nil, nil); code != 404 {
		t.Errorf("unknown task: %d, want 404", code)
	}
}

type sseMsg struct {
	event string
	id    int64
	data  string
}

// readSSE reads messages until n event messages arrived or the deadline passed.
func readSSE(t *testing.T, body io.Reader, n int, within time.Duration) []sseMsg {
	t.Helper()
	msgs := make(chan sseMsg, 1000)
	go func() {
		defer close(msgs)
		sc := bufio.NewScanner(body)
		var m sseMsg
		for sc.Scan() {
			l := sc.Text()
			switch {
			case strings.HasPrefix(l, "event:"):
				m.event = strings.TrimSpace(l[6:])
			case strings.HasPrefix(l, "id:"):
				m.id, _ = strconv.ParseInt(strings.TrimSpace(l[3:]), 10, 64)
			case strings.HasPrefix(l, "data:"):
				m.data = strings.TrimSpace(l[5:])
			case l == "":
				msgs <- m
				m = sseMsg{}
			}
		}
	}()
	var out []sseMsg
	events := 0
	deadline := time.After(within)
	for events < n || len(out) == 0 {
		select {
		case m, ok := <-msgs:
			if !ok {
				return out
			}
			out = append(out, m)
			if m.event == "event" {
				events++
			}
		case <-deadline:
			return out
		}
	}
	return out
}

func openStream(t *testing.T, hs *httptest.Server, path string, hdr map[string]string) *http.Response {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, "GET", hs.URL+path, nil)
	req.Header.Set("Authorization", "Bearer tok")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := hs.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// TestStreamReplaysAfterLastEventID: a stream opened with Last-Event-ID (what an
// EventSource resends on reconnect, and what the CLI sends after a core restart) first
// says where it starts (ready, id = the cursor), then replays every event after it, in
// order, none at or before it. Before the change the header was ignored and the stream
// started at the newest event, losing everything in between.
func TestStreamReplaysAfterLastEventID(t *testing.T) {
	hs, c := eventsServer(t)
	submitTasks(t, c, 2)
	all, _ := c.Events(context.Background(), core.EventQuery{Limit: 10000})
	if len(all) < 5 {
		t.Fatalf("want several events, got %d", len(all))
	}
	cursor := all[1].ID
	want := all[2:]

	for _, tc := range []struct {
		name string
		path string
		hdr  map[string]string
	}{
		{"Last-Event-ID", "/api/events/stream", map[string]string{"Last-Event-ID": strconv.FormatInt(cursor, 10)}},
		{"after_id", fmt.Sprintf("/api/events/stream?after_id=%d", cursor), nil},
		// EventSource keeps the URL it was opened with (an older after_id) and sends the
		// newer Last-Event-ID: the later cursor wins.
		{"both", "/api/events/stream?after_id=1", map[string]string{"Last-Event-ID": strconv.FormatInt(cursor, 10)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := openStream(t, hs, tc.path, tc.hdr)
			if resp.StatusCode != 200 {
				b, _ := io.ReadAll(resp.Body)
				t.Fatalf("status %d %s", resp.StatusCode, b)
			}
			msgs := readSSE(t, resp.Body, len(want), 10*time.Second)
			if len(msgs) == 0 || msgs[0].event != "ready" || msgs[0].id != cursor {
				t.Fatalf("first message must be ready with id %d: %+v", cursor, msgs)
			}
			var got []int64
			for _, m := range msgs[1:] {
				if m.event != "event" {
					continue
				}
				var e model.Event
				if err := json.Unmarshal([]byte(m.data), &e); err != nil || e.ID != m.id {
					t.Fatalf("message id %d, event %+v %v", m.id, e, err)
				}
				got = append(got, m.id)
			}
			if len(got) < len(want) {
				t.Fatalf("replayed %v, want ids %d..%d", got, want[0].ID, want[len(want)-1].ID)
			}
			for i, e := range want {
				if got[i] != e.ID {
					t.Fatalf("replay %v, want %d at %d", got, e.ID, i)
				}
			}
		})
	}

	t.Run("no cursor starts at the newest", func(t *testing.T) {
		newest, _ := c.Events(context.Background(), core.EventQuery{Limit: 1, Newest: true})
		resp := openStream(t, hs, "/api/events/stream", nil)
		msgs := readSSE(t, resp.Body, 0, time.Second)
		if len(msgs) == 0 || msgs[0].event != "ready" || msgs[0].id < newest[0].ID {
			t.Fatalf("ready %+v, want id >= %d", msgs, newest[0].ID)
		}
	})
	t.Run("a cursor from another store replays this one", func(t *testing.T) {
		resp := openStream(t, hs, "/api/events/stream", map[string]string{"Last-Event-ID": "99999999"})
		msgs := readSSE(t, resp.Body, 1, 10*time.Second)
		if len(msgs) < 2 || msgs[0].event != "ready" || msgs[0].id != 0 || msgs[1].id != all[0].ID {
			t.Fatalf("want ready at 0, then the first event %d: %+v", all[0].ID, msgs)
		}
	})
	t.Run("bad Last-Event-ID", func(t *testing.T) {
		for _, v := range []string{"abc", "-3", "1e9"} {
			resp := openStream(t, hs, "/api/events/stream", map[string]string{"Last-Event-ID": v})
			if resp.StatusCode != 422 {
				t.Fatalf("Last-Event-ID %q: status %d", v, resp.StatusCode)
			}
		}
	})
}

// TestLogsErrorsAreClear: logs of an unknown task, and of a finished job whose files
// are gone, are 404s that say why (before the change a job with vanished files read as
// empty logs, and an unreachable site as a 500); a finished job's logs name their host.
func TestLogsErrorsAreClear(t *testing.T) {
	hs, c := eventsServer(t)
	get := func(path string) (int, string) {
		req, _ := http.NewRequest("GET", hs.URL+path, nil)
		req.Header.Set("Authorization", "Bearer tok")
		resp, err := hs.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/api/tasks/nosuchtask/logs"); code != 404 || !strings.Contains(body, "nosuchtask") {
		t.Fatalf("unknown task: %d %s", code, body)
	}
	env := model.Envelope{CPUCores: model.IntRange{Min: 1, Max: 1}, Walltime: model.DurationRange{Min: model.Duration(10 * time.Minute), Max: model.Duration(10 * time.Minute)}}
	res, err := c.SubmitTask(context.Background(), core.SubmitRequest{Name: "logs", Command: "echo logs-api-test", Envelope: &env})
	if err != nil {
		t.Fatal(err)
	}
	id := res.Task.ID
	waitFinal(t, c, id)
	code, body := get("/api/tasks/" + id + "/logs")
	var l core.JobLogs
	if code != 200 || json.Unmarshal([]byte(body), &l) != nil || !strings.Contains(l.Stdout, "logs-api-test") || l.Host != "localhost" || l.Attempt != 1 {
		t.Fatalf("logs of a finished job: %d %s", code, body)
	}
	if err := os.RemoveAll(filepath.Dir(l.StdoutPath)); err != nil {
		t.Fatal(err)
	}
	if code, body := get("/api/tasks/" + id + "/logs"); code != 404 || !strings.Contains(body, "is gone") || !strings.Contains(body, l.StdoutPath) {
		t.Fatalf("logs of a job whose files are gone: %d %s", code, body)
	}

	// A job that has not started: empty tails and a note, not an error.
	snap, err := c.Federation()
	if err != nil {
		t.Fatal(err)
	}
	var busy *model.ResourceRecord
	for i, r := range snap.Records {
		if r.GPUsPerNode == 0 && r.Nodes.Down == 0 && r.Nodes.Allocated+r.Nodes.Mixed > 0 && r.MaxNodesPerJob >= r.Nodes.Total {
			busy = &snap.Records[i]
			break
		}
	}
	if busy == nil {
		t.Fatal("the demo federation has no busy CPU partition that allows whole-partition jobs")
	}
	whole := model.Envelope{Nodes: model.IntRange{Min: busy.Nodes.Total, Max: busy.Nodes.Total},
		CPUCores: model.IntRange{Min: busy.TotalCores, Max: busy.TotalCores}, Walltime: model.DurationRange{Min: model.Duration(time.Hour), Max: model.Duration(time.Hour)}}
	res, err = c.SubmitTask(context.Background(), core.SubmitRequest{Name: "waits", Command: "echo never-yet", Envelope: &whole, Target: busy.System + ":" + busy.Partition})
	if err != nil {
		t.Fatal(err)
	}
	code, body = get("/api/tasks/" + res.Task.ID + "/logs")
	l = core.JobLogs{}
	if code != 200 || json.Unmarshal([]byte(body), &l) != nil || !strings.Contains(l.Note, "has not started") || l.Stdout != "" || l.StdoutPath == "" {
		t.Fatalf("logs of a pending job: %d %s", code, body)
	}
}

// TestShutdownEndsStreams: an open event stream (the web UI always has one) ends when
// the HTTP server shuts down, so a graceful stop is prompt and clean. Before, Shutdown
// waited out its whole timeout and `mosaic serve` exited with "context deadline
// exceeded".
func TestShutdownEndsStreams(t *testing.T) {
	_, c := eventsServer(t)
	srv, err := New(c, Options{Token: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	hs := srv.HTTPServer()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go hs.Serve(ln)
	req, _ := http.NewRequest("GET", "http://"+ln.Addr().String()+"/api/events/stream", nil)
	req.Header.Set("Authorization", "Bearer tok")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if msgs := readSSE(t, resp.Body, 0, 5*time.Second); len(msgs) == 0 || msgs[0].event != "ready" {
		t.Fatalf("stream did not open: %+v", msgs)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	start := time.Now()
	if err := hs.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown with an open stream: %v after %s", err, time.Since(start))
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Fatalf("shutdown took %s", el)
	}
}

// TestLogsReadFailureIs502: a site that holds a job's output but fails to read it
// (here the stdout path is a directory) answers 502 naming the system and saying
// where to look — not 503 with Retry-After, which tells clients (and the MCP tools)
// to retry what will fail again.
func TestLogsReadFailureIs502(t *testing.T) {
	hs, c := eventsServer(t)
	env := model.Envelope{CPUCores: model.IntRange{Min: 1, Max: 1}, Walltime: model.DurationRange{Min: model.Duration(10 * time.Minute), Max: model.Duration(10 * time.Minute)}}
	res, err := c.SubmitTask(context.Background(), core.SubmitRequest{Name: "logs502", Command: "echo logs-502-test", Envelope: &env})
	if err != nil {
		t.Fatal(err)
	}
	id := res.Task.ID
	waitFinal(t, c, id)
	l, err := c.TaskLogs(context.Background(), id, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(l.StdoutPath); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(l.StdoutPath, 0o700); err != nil { // unreadable as a file
		t.Fatal(err)
	}
	req, _ := http.NewRequest("GET", hs.URL+"/api/tasks/"+id+"/logs", nil)
	req.Header.Set("Authorization", "Bearer tok")
	resp, err := hs.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadGateway || resp.Header.Get("Retry-After") != "" || !strings.Contains(string(b), l.System) || !strings.Contains(string(b), "mosaic exec") {
		t.Fatalf("logs the site fails to read: HTTP %d Retry-After %q %s", resp.StatusCode, resp.Header.Get("Retry-After"), b)
	}
}

// waitFinal waits (at most 30 s) until task id has ended.
func waitFinal(t *testing.T, c *core.Core, id string) {
	t.Helper()
	for i := 0; ; i++ {
		td, err := c.Task(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if td.State.Final() {
			return
		}
		if i > 300 {
			t.Fatalf("task did not finish: %s", td.State)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
