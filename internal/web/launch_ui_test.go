package web_test

import (
	"context"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/scheduler/draft"
)

// signedInDemo starts the demo federation and opens the workbench in a new 1280×900
// browser, signed in (skipped under -short).
func signedInDemo(t *testing.T) (*demo, *browser) {
	t.Helper()
	if testing.Short() {
		t.Skip("browser test; run without -short")
	}
	chromiumOrSkip(t)
	d := startDemo(t)
	b := newBrowser(t, 1280, 900)
	b.do(t, "login", 30*time.Second, chromedp.EmulateViewport(1280, 900), chromedp.Navigate(d.srv.LoginURL(d.http.URL)), chromedp.WaitVisible(css("body[data-ready=true]")))
	return d, b
}

// fill sets a launch-sheet field as typing would (value, then an input event).
func fill(t *testing.T, b *browser, id, value string) {
	t.Helper()
	v, _ := json.Marshal(value)
	if !eval[bool](t, b, `(() => { const el = document.getElementById('`+id+`'); if (!el) return false; el.value = `+string(v)+`;
		el.dispatchEvent(new Event('input', {bubbles: true})); el.dispatchEvent(new Event('change', {bubbles: true})); return el.value === `+string(v)+`; })()`) {
		t.Fatalf("field #%s did not take %q", id, value)
	}
}

// buttonStates checks, by computed style, which footer buttons the user sees on a
// step: Next on steps 1–2 only, Submit on step 3 only, Back disabled on step 1.
func buttonStates(t *testing.T, b *browser, step int) {
	t.Helper()
	got := eval[string](t, b, `['next-btn', 'submit-btn', 'back-btn'].map(id => {
		const el = document.getElementById(id), cs = getComputedStyle(el);
		const gone = cs.display === 'none' || el.getBoundingClientRect().width === 0;
		return id + ':' + (gone ? 'gone' : 'shown' + (el.disabled ? '/disabled' : ''));
	}).join(' ')`)
	want := map[int]string{
		1: "next-btn:shown submit-btn:gone back-btn:shown/disabled",
		2: "next-btn:shown submit-btn:gone back-btn:shown",
		3: "next-btn:gone submit-btn:shown/disabled back-btn:shown",
	}[step]
	if got != want {
		t.Fatalf("step %d buttons: %s, want %s", step, got, want)
	}
	if cur := eval[string](t, b, `document.querySelector('.steps li[aria-current=step]')?.dataset.n || ''`); cur != strconv.Itoa(step) {
		t.Fatalf("step list marks step %q, want %d", cur, step)
	}
}

// storedTask reads the task the sheet submitted (the address is #/tasks/<id>) from
// the core, as the CLI and API would see it.
func storedTask(t *testing.T, b *browser, d *demo) model.Task {
	t.Helper()
	b.waitJS(t, "task page", `/^#\/tasks\/[a-z0-9]+$/.test(location.hash)`, 20*time.Second)
	id := strings.TrimPrefix(eval[string](t, b, `location.hash`), "#/tasks/")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	td, err := d.core.Task(ctx, id)
	if err != nil {
		t.Fatalf("stored task %s: %v", id, err)
	}
	return td.Task
}

// TestLaunchSheetEveryFieldRoundTrips fills every envelope field of the launch sheet
// by hand — the fields `mosaic submit` has — previews the placement, submits, and
// reads the stored task back from the core: it carries every constraint. The footer
// shows Next on steps 1–2 only and Submit on step 3 only (by computed style: hidden
// wins over .btn's inline-block), a hidden Next clicked on step 3 does nothing (the
// TypeError of issue 21), and the pages log no error, network ones included.
func TestLaunchSheetEveryFieldRoundTrips(t *testing.T) {
	d, b := signedInDemo(t)

	b.do(t, "open sheet", 10*time.Second, chromedp.Click(css("#launch-btn")), chromedp.WaitVisible(css("#l-name")))
	buttonStates(t, b, 1)
	fill(t, b, "l-name", "every-field")
	fill(t, b, "l-command", "echo every field")
	b.do(t, "step 2", 10*time.Second, chromedp.Click(css("#next-btn")), chromedp.WaitVisible(css("#l-gpu-mem")))
	buttonStates(t, b, 2)
	for id, v := range map[string]string{
		"l-gpus-min": "1", "l-gpus-max": "4", "l-cpu-min": "4", "l-cpu-max": "32", "l-mem-min": "16", "l-mem-max": "128",
		"l-nodes-min": "1", "l-nodes-max": "2", "l-wall-min": "10m", "l-wall-max": "30m",
		"l-gpu-model": "H100, gh200", "l-avoid-gpu": "A100", "l-gpu-mem": "80", "l-arch": "aarch64",
		"l-container": "docker://nvcr.io/nvidia/pytorch:24.01-py3", "l-runtime": "apptainer",
		"l-features": "gh200", "l-max-wait": "45m", "l-objective": "min_cost",
	} {
		fill(t, b, id, v)
	}
	b.do(t, "avoid Vista", 10*time.Second, chromedp.Click(css(`#l-avoid-systems input[value="Vista@TACC"]`)))
	b.do(t, "step 3", 10*time.Second, chromedp.Click(css("#next-btn")), chromedp.WaitVisible(css("#dry-btn")))
	buttonStates(t, b, 3)
	// The hidden Next, clicked anyway, neither moves past the last step nor throws.
	eval[any](t, b, `document.getElementById('next-btn').click()`)
	buttonStates(t, b, 3)
	if !eval[bool](t, b, `document.querySelector('section[data-step="3"]').hidden === false`) {
		t.Fatal("a click on the hidden Next left the last step")
	}
	summary := eval[string](t, b, `[...document.querySelectorAll('#env-summary dd')].map(dd => dd.dataset.key + '=' + dd.textContent).join('\n')`)
	for _, want := range []string{"GPU models=H100, gh200", "Never on=Vista@TACC", "GPU memory=≥ 80 GB", "Max queue wait=45m", "Features=gh200", "Container=docker://nvcr.io/nvidia/pytorch:24.01-py3 (apptainer)"} {
		if !strings.Contains(summary, want) {
			t.Errorf("the envelope summary lacks %q:\n%s", want, summary)
		}
	}
	b.do(t, "dry run", 30*time.Second, chromedp.Click(css("#dry-btn")), chromedp.WaitVisible(css(".cand-table tbody tr.chosen")))
	if got := eval[string](t, b, `document.querySelector('.chosen-key').textContent`); !strings.HasPrefix(got, "DeltaAI@NCSA/ghx4/") {
		t.Fatalf("the dry run chose %s; only DeltaAI ghx4 meets every constraint", got)
	}
	if eval[bool](t, b, `document.getElementById('submit-btn').disabled`) {
		t.Fatal("Submit stays disabled after a feasible dry run")
	}
	b.do(t, "submit", 20*time.Second, chromedp.Click(css("#submit-btn")))
	task := storedTask(t, b, d)
	e := task.Envelope
	h := func(m float64) model.Duration { return model.Duration(time.Duration(m * float64(time.Minute))) }
	checks := []struct {
		what string
		ok   bool
	}{
		{"gpus 1..4", e.GPUs == model.IntRange{Min: 1, Max: 4}},
		{"cpu_cores 4..32", e.CPUCores == model.IntRange{Min: 4, Max: 32}},
		{"memory_gb 16..128", e.MemoryGB == model.IntRange{Min: 16, Max: 128}},
		{"nodes 1..2", e.Nodes == model.IntRange{Min: 1, Max: 2}},
		{"walltime 10m..30m", e.Walltime == model.DurationRange{Min: h(10), Max: h(30)}},
		{"gpu_models H100,GH200", strings.Join(e.Constraints.GPUModels, ",") == "H100,GH200"},
		{"avoid_gpu_models A100", strings.Join(e.Constraints.AvoidGPUModels, ",") == "A100"},
		{"min_gpu_memory_gb 80", e.Constraints.MinGPUMemoryGB == 80},
		{"arch aarch64", strings.Join(e.Constraints.Arch, ",") == "aarch64"},
		{"container", e.Constraints.Container != nil && e.Constraints.Container.Image == "docker://nvcr.io/nvidia/pytorch:24.01-py3" && e.Constraints.Container.Runtime == "apptainer"},
		{"features gh200", strings.Join(e.Constraints.Features, ",") == "gh200"},
		{"avoid_systems Vista@TACC", strings.Join(e.Constraints.AvoidSystems, ",") == "Vista@TACC"},
		{"max_queue_wait 45m", e.MaxQueueWait == h(45)},
		{"objective min_cost", e.Objective == model.ObjMinCost},
		{"source user", e.Source == model.SourceUser},
		{"not pinned", task.Target == nil},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("stored task lacks %s: %+v", c.what, e)
		}
	}
	b.noErrors(t, "launch every field")
	b.noNetworkErrors(t, "launch every field")
}

// TestLaunchSheetDraftedEnvelopeRoundTrips: the agent drafts from a description, the
// drafted fields are filled and marked with the draft's source and confidence, and the
// stored task's envelope is the drafter's, field for field (nothing dropped on submit,
// the GPU memory minimum of issue 21 included). Screenshots: launch-envelope (step 2
// drafted) and launch-review (step 3 with the candidate table).
func TestLaunchSheetDraftedEnvelopeRoundTrips(t *testing.T) {
	d, b := signedInDemo(t)
	const desc = "inference of llama 70B on H100s, needs 4 nodes, at least 24 GB of VRAM, apptainer docker://nvcr.io/nvidia/pytorch:24.01-py3, 6 hours, cheap please"
	want := draft.Heuristic(desc)
	if want.Constraints.MinGPUMemoryGB != 24 || want.Nodes.Min != 4 || len(want.Constraints.GPUModels) == 0 || want.Constraints.Container == nil {
		t.Fatalf("the drafter no longer drafts what this test needs: %+v", want)
	}

	b.do(t, "open sheet", 10*time.Second, chromedp.Click(css("#launch-btn")), chromedp.WaitVisible(css("#l-name")))
	fill(t, b, "l-name", "drafted")
	fill(t, b, "l-command", "echo drafted")
	fill(t, b, "l-desc", desc)
	b.do(t, "draft", 20*time.Second, chromedp.Click(css("#next-btn")), chromedp.WaitVisible(css("#draft-btn")),
		chromedp.Click(css("#draft-btn")), chromedp.WaitVisible(css("#draft-result")))
	if src := eval[string](t, b, `document.querySelector('.draft-source').textContent`); src != model.SourceHeuristic {
		t.Fatalf("draft source %q", src)
	}
	if conf := eval[string](t, b, `document.querySelector('.draft-confidence').textContent`); conf != strconv.Itoa(int(want.Confidence*100+0.5))+"%" {
		t.Fatalf("draft confidence %q, want %.0f%%", conf, want.Confidence*100)
	}
	tagged := eval[string](t, b, `[...document.querySelectorAll('.field')].filter(f => f.querySelector('.draft-tag:not([hidden])')).map(f => f.dataset.field).sort().join(',')`)
	for _, id := range []string{"l-gpu-model", "l-gpu-mem", "l-nodes-min", "l-container", "l-runtime", "l-objective", "l-wall-min"} {
		if !strings.Contains(","+tagged+",", ","+id+",") {
			t.Errorf("drafted field %s is not marked drafted (marked: %s)", id, tagged)
		}
	}
	if v := eval[string](t, b, `document.getElementById('l-gpu-mem').value`); v != "24" {
		t.Fatalf("drafted GPU memory shows %q, want 24", v)
	}
	b.shot(t, "launch-envelope")
	b.do(t, "step 3", 10*time.Second, chromedp.Click(css("#next-btn")), chromedp.WaitVisible(css("#dry-btn")),
		chromedp.Click(css("#dry-btn")), chromedp.WaitVisible(css(".cand-table tbody tr.chosen")))
	b.do(t, "open summary", 5*time.Second, chromedp.Evaluate[chromedp.Void](`document.querySelector('.env-details').open = true`))
	b.shot(t, "launch-review")
	b.do(t, "submit", 20*time.Second, chromedp.Click(css("#submit-btn")))
	got := storedTask(t, b, d).Envelope
	if !reflect.DeepEqual(got, want) {
		gj, _ := json.Marshal(got)
		wj, _ := json.Marshal(want)
		t.Fatalf("the stored envelope is not the draft:\n got  %s\n want %s", gj, wj)
	}
	b.noErrors(t, "launch drafted")
	b.noNetworkErrors(t, "launch drafted")
}

// TestNoConsoleErrorsOnAnyPage visits every view and fails on any console error or
// exception, HTTP error statuses included (the /auth/status 404 of issue 21 was one on
// every page).
func TestNoConsoleErrorsOnAnyPage(t *testing.T) {
	d, b := signedInDemo(t)
	for _, v := range []struct{ route, ready string }{
		{"overview", ".system-card"}, {"idle", ".idle-card"}, {"tasks", "main h1"}, {"activity", "main h1"},
		{"campaigns", "#campaign-list"}, {"add", ".slot"}, {"settings", "#about-ranker"}, {"resources/Delta@NCSA", "#heatmap"},
	} {
		b.do(t, v.route, 20*time.Second, chromedp.Navigate(d.http.URL+"/#/"+v.route), chromedp.WaitVisible(css(v.ready)))
		time.Sleep(400 * time.Millisecond) // let late fetches (status, events) land
		b.noErrors(t, v.route)
		b.noNetworkErrors(t, v.route)
	}
	// The heatmap is drawn at its natural size: its labels stay the 11 px the CSS sets.
	if px := eval[float64](t, b, `(() => { const t = document.querySelector('#heatmap text'); return t.getBoundingClientRect().height; })()`); px > 18 {
		t.Errorf("heatmap label is %.0f px tall: the SVG is stretched", px)
	}
	// Idle compute with nothing matching says which filter removed everything.
	b.do(t, "idle", 20*time.Second, chromedp.Navigate(d.http.URL+"/#/idle"), chromedp.WaitVisible(css(".idle-card")))
	fill(t, b, "f-gpus", "100000")
	b.waitJS(t, "idle explanation", `/Nothing idle: .*at most \d+ idle GPUs in one partition; you asked for 100000/.test(document.querySelector('#idle-list .empty')?.textContent || '')`, 10*time.Second)
	b.noErrors(t, "idle empty")
	// Partition sub-labels are never cut: each fits its cell.
	b.do(t, "overview", 20*time.Second, chromedp.Navigate(d.http.URL+"/#/overview"), chromedp.WaitVisible(css(".prow .pname small")))
	if cut := eval[string](t, b, `[...document.querySelectorAll('.prow .pname small')].filter(s => s.scrollWidth > s.clientWidth + 1).map(s => s.textContent).join('; ')`); cut != "" {
		t.Errorf("partition sub-labels cut: %s", cut)
	}
}
