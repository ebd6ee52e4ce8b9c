package web_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// submitViaAPI submits a task with the bearer token, as the CLI would.
func submitViaAPI(t *testing.T, d *demo, body map[string]any) string {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", d.http.URL+"/api/tasks", bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer ui-test-token")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Task struct {
			ID string `json:"id"`
		} `json:"task"`
		Detail string `json:"detail"`
	}
	json.NewDecoder(resp.Body).Decode(&out)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("submit: HTTP %d: %s", resp.StatusCode, out.Detail)
	}
	return out.Task.ID
}

func css(s string) chromedp.CSS { return chromedp.CSS(s) }

// TestWorkbench drives every view of the UI in headless Chromium against the demo
// federation: sign-in through the one-time URL, the resource wall, idle compute, the
// launch sheet (auto and pinned) down to finished tasks with timelines and logs, a
// failure's continuation in the activity log and the bell, the heatmap, campaigns,
// add resource, settings, the light theme, keyboard use and a narrow window.
func TestWorkbench(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test; run without -short")
	}
	chromiumOrSkip(t)
	d := startDemo(t)
	b := newBrowser(t, 1280, 800) // closed before the server (cleanups run last-in first-out)
	base := d.http.URL

	// Signed out: the page says how to sign in, and the API refuses the browser.
	b.do(t, "open signed out", 20*time.Second, chromedp.EmulateViewport(1280, 800), chromedp.Navigate(base+"/"), chromedp.WaitVisible(css("main h1")))
	eval[any](t, b, `localStorage.setItem('mosaic.theme', 'dark')`)
	if h := eval[string](t, b, `document.querySelector('main h1').textContent`); h != "Sign in" {
		t.Fatalf("signed-out page heading %q, want Sign in", h)
	}
	b.waitJS(t, "signed-out API", `fetch('/api/federation').then(r => window.__st = r.status) && window.__st === 401`, 10*time.Second)

	// The one-time login URL sets the cookie and leaves the address bar clean.
	login := d.srv.LoginURL(base)
	b.do(t, "login", 30*time.Second, chromedp.Navigate(login), chromedp.WaitVisible(css("body[data-ready=true]")))
	if loc := eval[string](t, b, `location.href`); strings.Contains(loc, "code=") {
		t.Fatalf("the login code stayed in the address bar: %s", loc)
	}
	if c := eval[string](t, b, `document.cookie`); strings.Contains(c, "mosaic_session") {
		t.Fatalf("the session cookie is readable by scripts: %q", c)
	}
	// The code works once.
	b.do(t, "reuse login code", 20*time.Second, chromedp.Navigate(login), chromedp.WaitVisible(css(".login")))
	if txt := eval[string](t, b, `document.querySelector('.login .error').textContent`); !strings.Contains(txt, "already used") {
		t.Fatalf("second use of the login code: %q", txt)
	}
	b.do(t, "back to the app", 20*time.Second, chromedp.Navigate(base+"/#/overview"), chromedp.WaitVisible(css("body[data-ready=true]")))
	// A cookie-authenticated POST without the CSRF header is refused.
	b.waitJS(t, "CSRF refusal", `fetch('/api/tasks', {method: 'POST', headers: {'Content-Type': 'application/json'}, body: '{}'}).then(r => window.__csrf = r.status) && window.__csrf === 403`, 10*time.Second)

	// Overview: six system cards with partition rows and busy bars.
	b.waitJS(t, "overview cards", `document.querySelectorAll('.system-card').length === 6 && document.querySelectorAll('.system-card .prow[data-partition] .bar').length > 6`, 20*time.Second)
	b.waitJS(t, "sidebar and stats", `document.querySelectorAll('#systems .dot.ok').length === 6 && document.querySelectorAll('#stats li').length === 6`, 10*time.Second)
	b.do(t, "sort by queue", 10*time.Second, chromedp.SetValue(css("#ov-sort"), "queue"), chromedp.Evaluate[chromedp.Void](`document.querySelector('#ov-sort').dispatchEvent(new Event('change'))`))
	b.waitJS(t, "sorted overview", `document.querySelectorAll('.system-card').length === 6`, 10*time.Second)
	b.shot(t, "overview")
	// Live refreshes keep keyboard focus where it was.
	b.do(t, "focus a system link", 10*time.Second, chromedp.Focus(css(".system-card h2 a")))
	href := eval[string](t, b, `document.activeElement.getAttribute('href')`)
	seq := eval[string](t, b, `document.querySelector('#stats li:last-child span').textContent`)
	b.waitJS(t, "a snapshot refresh", `document.querySelector('#stats li:last-child span').textContent !== '`+seq+`'`, 10*time.Second)
	b.waitJS(t, "refresh drawn", `document.querySelectorAll('.system-card').length === 6`, 5*time.Second)
	time.Sleep(300 * time.Millisecond)
	if got := eval[string](t, b, `document.activeElement.getAttribute('href') || document.activeElement.tagName`); got != href {
		t.Fatalf("after a live refresh focus is on %q, want %q", got, href)
	}
	b.noErrors(t, "overview")

	// Idle compute with a filter.
	b.do(t, "idle", 20*time.Second, chromedp.Navigate(base+"/#/idle"), chromedp.WaitVisible(css(".idle-card")))
	b.do(t, "filter gpus", 10*time.Second, chromedp.SendKeys(css("#f-gpus"), "1"))
	b.waitJS(t, "filtered idle", `[...document.querySelectorAll('.idle-card')].length > 0 && [...document.querySelectorAll('.idle-card')].every(c => /GPUs/.test(c.textContent))`, 10*time.Second)
	b.shot(t, "idle")
	b.noErrors(t, "idle")

	// Launch through the sheet, auto placement, with an agent-drafted envelope.
	b.do(t, "open sheet", 10*time.Second, chromedp.Click(css("#launch-btn")), chromedp.WaitVisible(css("#l-name")))
	b.do(t, "step 1", 10*time.Second,
		chromedp.SendKeys(css("#l-name"), "auto-hello"),
		chromedp.SendKeys(css("#l-command"), "echo hi; sleep 2"),
		chromedp.SendKeys(css("#l-desc"), "a tiny CPU-only shell smoke test on one core for a few minutes"),
		chromedp.Click(css("#next-btn")),
		chromedp.WaitVisible(css("#draft-btn")),
		chromedp.Click(css("#draft-btn")),
		chromedp.WaitVisible(css("#draft-result")))
	src := eval[string](t, b, `document.querySelector('.draft-source').textContent`)
	conf := eval[string](t, b, `document.querySelector('.draft-confidence').textContent`)
	if src == "" || !strings.HasSuffix(conf, "%") {
		t.Fatalf("draft shows source %q confidence %q", src, conf)
	}
	b.do(t, "step 3 dry run", 20*time.Second,
		chromedp.Click(css("#next-btn")),
		chromedp.WaitVisible(css("#dry-btn")),
		chromedp.Click(css("#dry-btn")),
		chromedp.WaitVisible(css(".cand-table tbody tr.chosen")))
	b.shot(t, "launch")
	b.do(t, "submit auto", 20*time.Second, chromedp.Click(css("#submit-btn")), chromedp.WaitVisible(css("#task-head h1")))
	autoID := strings.TrimPrefix(eval[string](t, b, `location.hash`), "#/tasks/")
	waitTaskState(t, b, "succeeded", 120*time.Second)
	checkTimeline(t, b)
	b.do(t, "logs tab", 20*time.Second, chromedp.Click(css("#tab-logs")), chromedp.WaitVisible(css("#log-stdout")))
	if out := eval[string](t, b, `document.querySelector('#log-stdout').textContent`); !strings.Contains(out, "hi") {
		t.Fatalf("stdout of %s: %q, want hi", autoID, out)
	}
	b.do(t, "candidates tab", 20*time.Second, chromedp.Click(css("#tab-candidates")), chromedp.WaitVisible(css("#panel-candidates .verdicts li")))
	b.shot(t, "task-detail")
	b.noErrors(t, "auto launch")

	// Launch pinned from an idle partition ("Launch here").
	b.do(t, "idle again", 20*time.Second, chromedp.Navigate(base+"/#/idle"), chromedp.WaitVisible(css(".idle-card")))
	sys := eval[string](t, b, `document.querySelector('.idle-card').dataset.system`)
	part := eval[string](t, b, `document.querySelector('.idle-card').dataset.partition`)
	b.do(t, "launch here", 30*time.Second,
		chromedp.Click(css(".idle-card .btn.primary")),
		chromedp.WaitVisible(css("#l-name")),
		chromedp.SendKeys(css("#l-name"), "pinned-hello"),
		chromedp.SendKeys(css("#l-command"), "echo pinned; sleep 2"),
		chromedp.Click(css("#next-btn")),
		chromedp.WaitVisible(css("#l-wall-min")),
		chromedp.Click(css("#next-btn")),
		chromedp.WaitVisible(css("#pin-box")),
		chromedp.Click(css("#dry-btn")),
		chromedp.WaitVisible(css(".cand-table tbody tr.chosen")))
	if got := eval[string](t, b, `document.querySelector('.chosen-key').textContent`); !strings.HasPrefix(got, sys+"/"+part+"/") {
		t.Fatalf("pinned to %s:%s but the dry run chose %s", sys, part, got)
	}
	b.do(t, "submit pinned", 20*time.Second, chromedp.Click(css("#submit-btn")), chromedp.WaitVisible(css("#task-head h1")))
	if pin := eval[string](t, b, `document.querySelector('#task-head .chip.warn').textContent`); !strings.Contains(pin, sys) {
		t.Fatalf("pinned task head: %q", pin)
	}
	waitTaskState(t, b, "succeeded", 120*time.Second)
	if pl := eval[string](t, b, `document.querySelector('#task-placement').textContent`); !strings.HasPrefix(pl, sys+" · "+part) {
		t.Fatalf("pinned task ran on %q, want %s · %s", pl, sys, part)
	}
	checkTimeline(t, b)
	b.noErrors(t, "pinned launch")

	// A failing task (exit 3) is retried once by the default policy: the continuation
	// reaches the activity log and the bell over the event stream.
	b.do(t, "activity", 20*time.Second, chromedp.Navigate(base+"/#/activity"), chromedp.WaitVisible(css("#activity-list li")))
	failID := submitViaAPI(t, d, map[string]any{"name": "exits-3", "command": "exit 3",
		"envelope": map[string]any{"cpu_cores": map[string]int{"min": 1}, "walltime": map[string]string{"min": "10m"}}})
	b.waitJS(t, "continuation in activity", `!!document.querySelector('#activity-list li[data-kind=continuation]')`, 120*time.Second)
	b.waitJS(t, "bell count", `!document.querySelector('#bell-count').hidden && Number(document.querySelector('#bell-count').textContent) >= 1`, 20*time.Second)
	// Let the retry fail too, so every event of the task is in before the bell is read.
	b.waitJS(t, "final failure in activity", `!!document.querySelector('#activity-list li[data-kind=failure]')`, 120*time.Second)
	b.shot(t, "activity")
	b.do(t, "open bell", 10*time.Second, chromedp.Click(css("#bell-btn")), chromedp.WaitVisible(css("#bell-panel li")))
	// The retry's rationale names the exit status.
	b.waitJS(t, "bell lists the retry", `[...document.querySelectorAll('#bell-panel li')].some(li => /continuation/.test(li.textContent) && /exited/.test(li.textContent))`, 30*time.Second)
	b.shot(t, "bell")
	b.do(t, "mark read", 10*time.Second, chromedp.Click(css("#bell-panel .btn")))
	b.waitJS(t, "bell cleared", `document.querySelector('#bell-count').hidden`, 10*time.Second)
	// Read state survives a reload (the last-read id is in localStorage) …
	b.do(t, "reload", 20*time.Second, chromedp.Navigate(base+"/#/tasks/"+failID), chromedp.Reload(), chromedp.WaitVisible(css("body[data-ready=true]")))
	b.waitJS(t, "failed task", `document.querySelector('#task-head .chip')?.textContent === 'failed'`, 30*time.Second)
	if hidden := eval[bool](t, b, `document.querySelector('#bell-count').hidden`); !hidden {
		t.Fatal("the bell rang again after a reload although nothing new happened")
	}
	// … and a new failure rings it again, live.
	submitViaAPI(t, d, map[string]any{"name": "exits-3-again", "command": "exit 3",
		"envelope": map[string]any{"cpu_cores": map[string]int{"min": 1}, "walltime": map[string]string{"min": "10m"}}})
	b.waitJS(t, "bell rings again", `!document.querySelector('#bell-count').hidden`, 120*time.Second)
	b.noErrors(t, "failure")

	// Resource detail with the queue-history heatmap.
	b.do(t, "resource", 20*time.Second, chromedp.Navigate(base+"/#/resources/Delta@NCSA"), chromedp.WaitVisible(css("#connection")))
	b.waitJS(t, "heatmap cells", `document.querySelectorAll('#heatmap rect.cell').length >= 30`, 20*time.Second)
	b.shot(t, "resource")
	b.noErrors(t, "resource")

	b.do(t, "tasks", 20*time.Second, chromedp.Navigate(base+"/#/tasks"), chromedp.WaitVisible(css("#tasks-table")))
	b.waitJS(t, "four tasks", `document.querySelectorAll('#tasks-table tbody tr').length === 4`, 10*time.Second)
	b.shot(t, "tasks")

	b.do(t, "campaigns", 20*time.Second, chromedp.Navigate(base+"/#/campaigns"))
	b.waitJS(t, "campaigns view", `/No campaigns yet/.test(document.querySelector('#campaign-list').textContent) || !!document.querySelector('.campaign-card')`, 20*time.Second)
	// The swimlanes of one run, served in the campaign API's shapes.
	d.campaigns.Store(true)
	b.do(t, "campaign list", 20*time.Second, chromedp.Navigate(base+"/#/overview"), chromedp.Navigate(base+"/#/campaigns"), chromedp.WaitVisible(css(".campaign-card")))
	// The list's per-site status comes from each run's detail.
	b.waitJS(t, "per-site status", `document.querySelectorAll('.campaign-card tbody .chip').length === 2`, 10*time.Second)
	b.do(t, "campaign run", 20*time.Second, chromedp.Click(css(".campaign-card h2 a")), chromedp.WaitVisible(css("#swimlanes")))
	if n := eval[int](t, b, `document.querySelectorAll('#swimlanes path.arrow').length`); n != 16 {
		t.Fatalf("swimlanes draw %d arrows, want 16", n)
	}
	if n := eval[int](t, b, `document.querySelectorAll('#swimlanes .xlabel').length`); n == 0 {
		t.Fatal("cross-site messages are not labelled")
	}
	if badge := eval[string](t, b, `document.querySelector('#sites-badge').textContent`); !strings.Contains(badge, "Anvil@RCAC · 2 agents · 5 msgs") {
		t.Fatalf("sites badge: %q", badge)
	}
	b.shot(t, "campaigns")
	d.campaigns.Store(false)

	b.do(t, "add resource", 20*time.Second, chromedp.Navigate(base+"/#/add"))
	b.waitJS(t, "slots", `document.querySelectorAll('.slot').length === 4 && !!document.querySelector('.slot[data-kind=sim] .chip.ok')`, 10*time.Second)
	b.shot(t, "add-resource")

	b.do(t, "settings", 20*time.Second, chromedp.Navigate(base+"/#/settings"), chromedp.WaitVisible(css("#about-ranker")))
	if r := eval[string](t, b, `document.querySelector('#about-ranker').textContent`); r == "" {
		t.Fatal("settings shows no ranker")
	}
	b.shot(t, "settings")
	b.noErrors(t, "campaigns, add resource, settings")

	// Light theme.
	b.do(t, "light theme", 20*time.Second, chromedp.Navigate(base+"/#/overview"), chromedp.WaitVisible(css(".system-card")), chromedp.Click(css("#theme-btn")))
	if th := eval[string](t, b, `document.documentElement.dataset.theme`); th != "light" {
		t.Fatalf("theme after toggle: %q", th)
	}
	b.shot(t, "overview-light")

	// Keyboard: the skip link comes first; Enter opens the sheet, Escape closes it.
	b.do(t, "keyboard", 20*time.Second, chromedp.Reload(), chromedp.WaitVisible(css("body[data-ready=true]")), chromedp.KeyEvent(kb.Tab))
	if a := eval[string](t, b, `document.activeElement.className`); a != "skip" {
		t.Fatalf("the first Tab focused %q, want the skip link", a)
	}
	b.do(t, "enter opens", 10*time.Second, chromedp.Focus(css("#launch-btn")), chromedp.KeyEvent(kb.Enter), chromedp.WaitVisible(css("#l-name")))
	if f := eval[string](t, b, `document.activeElement.id`); f != "l-name" {
		t.Fatalf("the sheet opened with focus on %q, want the name field", f)
	}
	b.do(t, "escape closes", 10*time.Second, chromedp.KeyEvent(kb.Escape), chromedp.WaitNotVisible(css("#sheet")))

	// Narrow window: the sidebar becomes a drawer behind the menu button.
	b.do(t, "narrow", 20*time.Second, chromedp.EmulateViewport(420, 860), chromedp.Navigate(base+"/#/overview"), chromedp.WaitVisible(css(".system-card")), chromedp.WaitVisible(css("#menu-btn")))
	if w := eval[float64](t, b, `document.documentElement.scrollWidth`); w > 430 {
		wide := eval[string](t, b, `[...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right > 425 && !e.closest('.sidebar')).slice(0, 8).map(e => e.tagName + '.' + e.className + ' ' + Math.round(e.getBoundingClientRect().right)).join(', ')`)
		t.Fatalf("narrow window scrolls sideways: content is %.0f px wide; too wide: %s", w, wide)
	}
	// The drawer slides out of view (.15 s) after the resize; picture it closed.
	b.waitJS(t, "drawer closed", `document.querySelector('.sidebar').getBoundingClientRect().right <= 0`, 5*time.Second)
	b.shot(t, "narrow")
	b.do(t, "drawer", 10*time.Second, chromedp.Click(css("#menu-btn")), chromedp.WaitVisible(css("#nav a")))
	b.noErrors(t, "end")
}

func waitTaskState(t *testing.T, b *browser, state string, timeout time.Duration) {
	t.Helper()
	b.waitJS(t, "task "+state, `document.querySelector('#task-head .chip')?.textContent === '`+state+`'`, timeout)
}

// checkTimeline opens the timeline tab and requires the placement decision, the
// dispatch, the job running and the finish.
func checkTimeline(t *testing.T, b *browser) {
	t.Helper()
	b.do(t, "timeline tab", 20*time.Second, chromedp.Click(css("#tab-timeline")), chromedp.WaitVisible(css("#task-timeline li[data-kind=finished]")))
	txt := eval[string](t, b, `[...document.querySelectorAll('#task-timeline li')].map(li => li.dataset.kind + ': ' + li.textContent).join('\n')`)
	for _, want := range []string{"decision: ", "dispatch: ", " running", "finished: "} {
		if !strings.Contains(txt, want) {
			t.Fatalf("timeline lacks %q:\n%s", want, txt)
		}
	}
}
