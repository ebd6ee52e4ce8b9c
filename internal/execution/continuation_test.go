package execution

import (
	"strings"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

func hours(h float64) model.Duration { return model.Duration(h * float64(time.Hour)) }

func TestDecide(t *testing.T) {
	env := model.Envelope{GPUs: model.IntRange{Min: 1, Max: 4}, MemoryGB: model.IntRange{Min: 16, Max: 128},
		Walltime: model.DurationRange{Min: hours(1), Max: hours(8)}}
	part := &model.ResourceRecord{System: "A", Partition: "gpu", WalltimeCap: hours(4), MemoryPerNodeGB: 64}
	spec := model.JobSpec{Nodes: 1, GPUs: 2, MemoryGB: 32, Walltime: hours(1)}
	code := 3
	att := func(st model.JobState) *model.Attempt {
		return &model.Attempt{N: 1, System: "A", Partition: "gpu", State: st, Spec: spec, ExitCode: &code}
	}
	h1 := History{Attempts: 1, Retries: map[model.JobState]int{}}
	cases := []struct {
		name     string
		a        *model.Attempt
		pol      model.Policy
		part     *model.ResourceRecord
		h        History
		transSub bool
		want     ActionKind
		why      string
		check    func(t *testing.T, act Action)
	}{
		{name: "node fail retries in place", a: att(model.JobNodeFail), h: h1, want: ActRetry, why: "transient"},
		{name: "lost retries in place", a: att(model.JobLost), h: h1, want: ActRetry},
		{name: "preempted retries", a: att(model.JobPreempted), h: h1, want: ActRetry},
		{name: "transient retry off migrates", a: att(model.JobBootFail), pol: model.Policy{RetryTransient: new(bool)}, h: h1, want: ActMigrate},
		{name: "timeout resizes straight to the envelope max", a: att(model.JobTimeout), h: h1, want: ActResize, why: "resize to 8h, the rest of the envelope",
			check: func(t *testing.T, act Action) {
				if act.Spec.Walltime != hours(8) {
					t.Errorf("walltime %s, want the envelope max 8h (not doubling)", act.Spec.Walltime)
				}
			}},
		{name: "timeout resizes to the partition cap below the envelope max", a: att(model.JobTimeout), part: part, h: h1, want: ActResize, why: "resize to 4h, the most A:gpu allows",
			check: func(t *testing.T, act Action) {
				if act.Spec.Walltime != hours(4) {
					t.Errorf("walltime %s", act.Spec.Walltime)
				}
			}},
		{name: "timeout beyond partition cap migrates", a: func() *model.Attempt { a := att(model.JobTimeout); a.Spec.Walltime = hours(4); return a }(),
			part: part, h: h1, want: ActMigrate, why: "the most A:gpu allows (4h); it moves",
			check: func(t *testing.T, act Action) {
				if act.Envelope.Walltime.Min != hours(8) {
					t.Errorf("raised min %s", act.Envelope.Walltime.Min)
				}
			}},
		{name: "timeout at envelope max fails", a: func() *model.Attempt { a := att(model.JobTimeout); a.Spec.Walltime = hours(8); return a }(),
			h: h1, want: ActFail, why: "raise walltime.max"},
		{name: "oom resizes memory", a: att(model.JobOOM), part: part, h: h1, want: ActResize,
			check: func(t *testing.T, act Action) {
				if act.Spec.MemoryGB != 64 {
					t.Errorf("memory %d", act.Spec.MemoryGB)
				}
			}},
		{name: "oom beyond node migrates", a: func() *model.Attempt { a := att(model.JobOOM); a.Spec.MemoryGB = 64; return a }(),
			part: part, h: h1, want: ActMigrate, why: "more than a A:gpu node has"},
		{name: "oom at envelope max fails", a: func() *model.Attempt { a := att(model.JobOOM); a.Spec.MemoryGB = 128; return a }(),
			h: h1, want: ActFail, why: "memory_gb.max"},
		{name: "failed exit retried once", a: att(model.JobFailed), h: h1, want: ActRetry, why: "code 3"},
		{name: "failed exit twice fails", a: att(model.JobFailed), h: History{Attempts: 2, Retries: map[model.JobState]int{model.JobFailed: 1}}, want: ActFail, why: "fix the command"},
		{name: "retry_failed -1 never retries", a: att(model.JobFailed), pol: model.Policy{RetryFailed: -1}, h: h1, want: ActFail},
		{name: "cancelled outside", a: att(model.JobCancelled), h: h1, want: ActCancel},
		{name: "cancelled by a reverted move's own cancel", a: att(model.JobCancelled), h: History{Attempts: 1, Retries: map[model.JobState]int{}, MoveCancel: true},
			want: ActRetry, why: "cancelled by Mosaic itself, for a move that was reverted"},
		{name: "a reverted move's own cancel uses no attempt", a: att(model.JobCancelled), pol: model.Policy{MaxAttempts: 1}, h: History{Attempts: 1, Retries: map[model.JobState]int{}, MoveCancel: true},
			want: ActRetry, why: "uses none of the policy's attempts"},
		{name: "cancelled at the site on the last attempt ends cancelled, not failed", a: att(model.JobCancelled), pol: model.Policy{MaxAttempts: 1}, h: h1,
			want: ActCancel, why: "outside Mosaic"},
		{name: "cancelled at the site says by whom", a: func() *model.Attempt { a := att(model.JobCancelled); a.RawState = "CANCELLED by 1234"; return a }(), h: h1,
			want: ActCancel, why: "(the site says: CANCELLED by 1234)"},
		{name: "attempt cap", a: att(model.JobNodeFail), h: History{Attempts: 4, Retries: map[model.JobState]int{}}, want: ActFail, why: "allows 4 attempts"},
		{name: "migration cap", a: att(model.JobBootFail), pol: model.Policy{RetryTransient: new(bool), MaxMigrations: 1},
			h: History{Attempts: 2, Migrations: 1, Retries: map[model.JobState]int{}}, want: ActFail, why: "migrations are used up"},
		{name: "submit refused migrates", a: func() *model.Attempt { a := att(model.JobSubmitError); a.Reason = "Invalid account"; return a }(), h: h1, want: ActMigrate, why: "Invalid account"},
		{name: "submit transient retries once", a: att(model.JobSubmitError), h: h1, transSub: true, want: ActRetry},
		{name: "submit transient twice migrates", a: att(model.JobSubmitError), h: History{Attempts: 2, Retries: map[model.JobState]int{model.JobSubmitError: 1}}, transSub: true, want: ActMigrate},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			act := Decide(env, c.pol, c.a, c.part, c.h, c.transSub)
			if act.Kind != c.want {
				t.Fatalf("got %s (%s), want %s", act.Kind, act.Rationale, c.want)
			}
			if act.Rationale == "" {
				t.Fatal("every action needs a rationale")
			}
			if c.why != "" && !strings.Contains(act.Rationale, c.why) {
				t.Errorf("rationale %q lacks %q", act.Rationale, c.why)
			}
			if c.check != nil {
				c.check(t, act)
			}
		})
	}
}

func TestHistoryOf(t *testing.T) {
	atts := []*model.Attempt{
		{System: "A", State: model.JobNodeFail}, {System: "A", State: model.JobTimeout}, {System: "B", State: model.JobFailed}, {System: "B"},
	}
	h := historyOf(atts)
	if h.Attempts != 4 || h.Migrations != 1 || h.Retries[model.JobNodeFail] != 1 || h.Retries[model.JobFailed] != 1 {
		t.Fatalf("%+v", h)
	}
	if ex := excluded(atts, "B"); len(ex) != 2 || ex[0] != "B" || ex[1] != "A" {
		t.Fatalf("excluded %v", ex)
	}
	// Moves that did not happen (refused, or reverted while the old job went on) are
	// neither migrations, nor attempts toward max_attempts, nor break a run of retries.
	at := func(m int) *time.Time { x := time.Date(2026, 12, 1, 0, m, 0, 0, time.UTC); return &x }
	atts = []*model.Attempt{
		{System: "A", State: model.JobFailed, EndedAt: at(30)},
		{System: "B", State: model.JobCancelled, EndedAt: at(5)},   // reverted: A's job outlived it
		{System: "C", State: model.JobSubmitError, EndedAt: at(6)}, // refused move
		{System: "A", State: model.JobFailed, EndedAt: at(40)},
		{System: "B", State: model.JobPending},
	}
	h = historyOf(atts)
	if h.Attempts != 3 || h.Migrations != 1 || h.Retries[model.JobFailed] != 1 {
		t.Fatalf("with aborted moves: %+v (want 3 attempts: the two moves that did not happen used none)", h)
	}
	if ex := excluded(atts, "B"); len(ex) != 2 || ex[1] != "A" {
		t.Fatalf("excluded with aborted moves %v", ex)
	}
	// A real migration (the old job cancelled before the new one ended) is one.
	atts = []*model.Attempt{{System: "A", State: model.JobCancelled, EndedAt: at(5)}, {System: "B", State: model.JobCancelled, EndedAt: at(20)}, {System: "C"}}
	if h := historyOf(atts); h.Migrations != 2 {
		t.Fatalf("two real migrations counted as %d", h.Migrations)
	}
	// A reverted move whose old job's cancel landed first but showed late (the old
	// attempt ended before the reverted one) did not happen either: its reason says so.
	atts = []*model.Attempt{{System: "A", State: model.JobCancelled, EndedAt: at(5)},
		{System: "B", State: model.JobCancelled, EndedAt: at(6), Reason: revertedReason + "the cancel of job 1 on A left it queued"}}
	if c := chain(atts); len(c) != 1 || c[0].System != "A" {
		t.Fatalf("chain with a reverted move that ended last: %d attempts, want only A's", len(c))
	}
}

func TestKeepGrowth(t *testing.T) {
	// A pending job that moves keeps the size its resizes gave it, within the envelope.
	env := model.Envelope{MemoryGB: model.IntRange{Min: 16, Max: 128}, Walltime: model.DurationRange{Min: hours(0.5), Max: hours(8)}}
	cases := []struct {
		name     string
		env      model.Envelope
		spec     model.JobSpec
		wantWall model.Duration
		wantMem  int
	}{
		{"resized walltime is kept", env, model.JobSpec{Nodes: 1, Walltime: hours(8), MemoryGB: 16}, hours(8), 16},
		{"resized memory is kept (total over nodes)", env, model.JobSpec{Nodes: 2, Walltime: hours(0.5), MemoryGB: 32}, hours(0.5), 64},
		{"never past the envelope max", env, model.JobSpec{Nodes: 1, Walltime: hours(9), MemoryGB: 256}, hours(0.5), 16},
		{"fixed walltime (no max) stays", model.Envelope{Walltime: model.DurationRange{Min: hours(1)}}, model.JobSpec{Nodes: 1, Walltime: hours(2)}, hours(1), 0},
		{"site default memory (0) keeps the minimum", env, model.JobSpec{Nodes: 1, Walltime: hours(0.5)}, hours(0.5), 16},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			task := &model.Task{Envelope: c.env}
			got := keepGrowth(task, &model.Attempt{Spec: c.spec})
			if got.Envelope.Walltime.Min != c.wantWall || got.Envelope.MemoryGB.Min != c.wantMem {
				t.Fatalf("walltime.min %s memory_gb.min %d, want %s %d", got.Envelope.Walltime.Min, got.Envelope.MemoryGB.Min, c.wantWall, c.wantMem)
			}
			if task.Envelope.Walltime.Min != c.env.Walltime.Min {
				t.Fatal("the task itself must not change")
			}
			if err := got.Envelope.Validate(); err != nil && c.env.Validate() == nil {
				t.Fatalf("raised envelope is invalid: %v", err)
			}
		})
	}
}

func TestOneLine(t *testing.T) {
	cases := []struct {
		in   string
		n    int
		want string
	}{
		{"no feasible placement\n  Alpha: down\n\n  Beta: full\n", 400, "no feasible placement; Alpha: down; Beta: full"},
		{"", 400, ""},
		{"   \n \n", 400, ""},
		{"ünïcode " + strings.Repeat("x", 20), 10, "ünïcode xx…"}, // cut by characters, not bytes
	}
	for _, c := range cases {
		if got := oneLine(c.in, c.n); got != c.want {
			t.Errorf("oneLine(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
}
