package web_test

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestSimClockInUI: the UI never hides the simulated clock (issue 15 finding 8). The
// top bar shows the speed-up, Settings / About says what it means, the launch sheet's
// dry run gives the chosen walltime and wait in real time, and a task's detail gives its
// walltime and run time in both clocks. The demo federation runs at 120×.
func TestSimClockInUI(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test; run without -short")
	}
	chromiumOrSkip(t)
	d := startDemo(t)
	b := newBrowser(t, 1280, 800)
	base := d.http.URL
	b.do(t, "login", 30*time.Second, chromedp.EmulateViewport(1280, 800), chromedp.Navigate(d.srv.LoginURL(base)), chromedp.WaitVisible(css("body[data-ready=true]")))

	const summary = "simulated federation at 120× — 1h of walltime takes 30s real time"
	b.waitJS(t, "speed badge", `!document.querySelector('#sim-clock').hidden`, 10*time.Second)
	if got := eval[string](t, b, `document.querySelector('#sim-clock').textContent`); got != "simulated 120×" {
		t.Errorf("top bar badge %q, want %q", got, "simulated 120×")
	}
	if got := eval[string](t, b, `document.querySelector('#sim-clock').title`); got != summary {
		t.Errorf("badge title %q, want %q", got, summary)
	}

	b.do(t, "settings", 20*time.Second, chromedp.Navigate(base+"/#/settings"), chromedp.WaitVisible(css("#about-clock")))
	if got := eval[string](t, b, `document.querySelector('#about-clock').textContent`); got != summary {
		t.Errorf("settings clock %q, want %q", got, summary)
	}

	// The launch sheet's dry run: walltime 10m..20m asks for 20m = 10 s real at 120×.
	b.do(t, "open sheet", 10*time.Second, chromedp.Navigate(base+"/#/overview"), chromedp.WaitVisible(css(".system-card")),
		chromedp.Click(css("#launch-btn")), chromedp.WaitVisible(css("#l-name")))
	b.do(t, "dry run", 30*time.Second,
		chromedp.SendKeys(css("#l-name"), "clock-dry"),
		chromedp.SendKeys(css("#l-command"), "true"),
		chromedp.Click(css("#next-btn")),
		chromedp.WaitVisible(css("#l-wall-max")),
		chromedp.SetValue(css("#l-wall-max"), "20m"),
		chromedp.Click(css("#next-btn")),
		chromedp.WaitVisible(css("#dry-btn")),
		chromedp.Click(css("#dry-btn")),
		chromedp.WaitVisible(css("#dry-sim-note")))
	note := eval[string](t, b, `document.querySelector('#dry-sim-note').textContent`)
	if !regexp.MustCompile(`^\S+ is simulated at 120×: walltime (20m takes 10s|10m takes 5s) real time, estimated wait \S+ takes \S+\.$`).MatchString(note) {
		t.Errorf("dry-run note %q", note)
	}
	b.do(t, "close sheet", 10*time.Second, chromedp.Click(css("#sheet button.close")), chromedp.WaitNotVisible(css("#sheet")))
	b.noErrors(t, "launch sheet")

	// A task that ran: walltime and run time in both clocks.
	id := submitViaAPI(t, d, map[string]any{"name": "clock", "command": "sleep 2",
		"envelope": map[string]any{"cpu_cores": map[string]int{"min": 1}, "walltime": map[string]string{"min": "10m"}}})
	b.do(t, "task detail", 20*time.Second, chromedp.Navigate(base+"/#/tasks/"+id), chromedp.WaitVisible(css("#task-head h1")))
	waitTaskState(t, b, "succeeded", 60*time.Second)
	b.waitJS(t, "elapsed", `/^ran /.test(document.querySelector('#task-elapsed')?.textContent || '')`, 10*time.Second)
	if got := eval[string](t, b, `document.querySelector('#task-walltime-real').textContent`); got != " (simulated at 120×: takes 5s real time)" {
		t.Errorf("walltime in real time: %q", got)
	}
	el := eval[string](t, b, `document.querySelector('#task-elapsed').textContent`)
	m := regexp.MustCompile(`^ran (\S+) real time = (\S+) simulated \(at 120×\)$`).FindStringSubmatch(el)
	if m == nil {
		t.Fatalf("elapsed %q", el)
	}
	real, err1 := time.ParseDuration(m[1])
	sim, err2 := time.ParseDuration(m[2])
	if err1 != nil || err2 != nil || real < time.Second || real > 20*time.Second || sim < 100*real || sim > 140*real {
		t.Errorf("elapsed %q: want about 2 s real and 120× that simulated", el)
	}
	if !strings.Contains(eval[string](t, b, `document.querySelector('#task-head').textContent`), "10m") {
		t.Error("task head lacks the walltime")
	}
	b.shot(t, "task-sim-clock")
	b.noErrors(t, "task detail")
}
