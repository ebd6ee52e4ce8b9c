package web_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

func apiJSON(t *testing.T, d *demo, path string, out any) int {
	t.Helper()
	req, _ := http.NewRequest("GET", d.http.URL+path, nil)
	req.Header.Set("Authorization", "Bearer ui-test-token")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if out != nil {
		json.NewDecoder(resp.Body).Decode(out)
	}
	return resp.StatusCode
}

func waitFinalViaAPI(t *testing.T, d *demo, id string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		var task struct{ State string }
		apiJSON(t, d, "/api/tasks/"+id, &task)
		switch task.State {
		case "succeeded", "failed", "cancelled":
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("task %s did not finish", id)
}

// TestActivityStreamResumesAndLogsExplain: (1) when the event stream drops before any
// event arrived, the page reconnects from the position the stream gave it and shows
// the events made while it was away, each once (before, it reconnected "from now" and
// lost them); (2) the Logs tab of a job whose files are gone says so, as a state with
// the core's reason, not an error box (before, it showed an empty log as if the job
// had printed nothing).
func TestActivityStreamResumesAndLogsExplain(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test; run without -short")
	}
	chromiumOrSkip(t)
	d := startDemo(t)
	b := newBrowser(t, 1280, 800)
	base := d.http.URL
	small := map[string]any{"cpu_cores": map[string]any{"min": 1, "max": 1}, "walltime": map[string]any{"min": "10m", "max": "10m"}}
	first := submitViaAPI(t, d, map[string]any{"name": "ui-first", "command": "echo first-output", "envelope": small})
	waitFinalViaAPI(t, d, first)

	b.do(t, "login", 30*time.Second, chromedp.Navigate(d.srv.LoginURL(base)), chromedp.WaitVisible(css("body[data-ready=true]")))
	b.do(t, "activity", 20*time.Second, chromedp.Navigate(base+"/#/activity"), chromedp.WaitVisible(css("#activity-list li")))
	time.Sleep(500 * time.Millisecond) // the stream is open and has said where it starts

	// Drop every connection (the stream with it) and make events while the page is away.
	d.http.CloseClientConnections()
	second := submitViaAPI(t, d, map[string]any{"name": "ui-second", "command": "echo second", "envelope": small})
	b.waitJS(t, "events made while disconnected", `!!document.querySelector('#activity-list li[data-kind=decision] a[href="#/tasks/`+second+`"]')`, 30*time.Second)
	waitFinalViaAPI(t, d, second)
	b.waitJS(t, "the second task's finish", `!!document.querySelector('#activity-list li[data-kind=finished] a[href="#/tasks/`+second+`"]')`, 30*time.Second)
	dups := eval[[]string](t, b, `(() => { const seen = {}, d = []; for (const li of document.querySelectorAll('#activity-list li')) { if (seen[li.dataset.id]) d.push(li.dataset.id); seen[li.dataset.id] = 1; } return d; })()`)
	if len(dups) > 0 {
		t.Fatalf("events shown twice after the reconnect: %v", dups)
	}

	// Logs: readable, then gone.
	var logs struct {
		StdoutPath string `json:"stdout_path"`
	}
	if code := apiJSON(t, d, "/api/tasks/"+first+"/logs", &logs); code != 200 || logs.StdoutPath == "" {
		t.Fatalf("logs of %s: %d %+v", first, code, logs)
	}
	b.do(t, "task logs", 20*time.Second, chromedp.Navigate(base+"/#/tasks/"+first), chromedp.WaitVisible(css("#tab-logs")),
		chromedp.Click(css("#tab-logs")), chromedp.WaitVisible(css("#log-stdout")))
	if out := eval[string](t, b, `document.querySelector('#log-stdout').textContent`); !strings.Contains(out, "first-output") {
		t.Fatalf("stdout %q", out)
	}
	if err := os.RemoveAll(filepath.Dir(logs.StdoutPath)); err != nil {
		t.Fatal(err)
	}
	b.do(t, "refresh logs", 20*time.Second, chromedp.Click(css("#panel-logs .btn")), chromedp.WaitVisible(css("#logs-why")))
	why := eval[string](t, b, `document.querySelector('#logs-why').textContent`)
	if !strings.Contains(why, "is gone") || eval[bool](t, b, `!!document.querySelector('#panel-logs .alert')`) {
		t.Fatalf("logs of a job whose files are gone: %q", why)
	}
	b.noErrors(t, "activity and logs")
}
