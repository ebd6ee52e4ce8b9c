package main

import (
	"strings"
	"testing"
	"time"
)

// Real lines of `SLURM_TIME_FORMAT=%s sacct -M alpha,beta -X -n -P -o <sacctFields>`
// on the rig (Slurm 22.05): a finished GPU job, a CPU job, a job cancelled by user 0,
// one still pending (Start Unknown, no AllocTRES yet) and one running (End Unknown).
const sacctSample = `alpha|11108|mosaic-2ki6m3ew-1|1796130507|1796130507|1796130512|COMPLETED|billing=32,cpu=32,gres/gpu:a100=2,gres/gpu=2,mem=64G,node=1
alpha|11109|mosaic-envok344335201-1|1796130514|1796130515|1796130515|COMPLETED|billing=1,cpu=1,mem=1G,node=1
beta|8430|mosaic-probe659565744-11|1796130554|1796130554|1796130558|CANCELLED by 0|billing=8,cpu=8,gres/gpu:a100=2,gres/gpu=2,mem=1G,node=1
alpha|11112|rbtest|1796130562|Unknown|Unknown|PENDING|

beta|8431|rb-s1-s-04|1796130570|1796130598|Unknown|RUNNING|billing=32,cpu=32,gres/gpu:a100=4,gres/gpu=4,mem=64G,node=1
`

func TestParseSacct(t *testing.T) {
	rows, err := ParseSacct(sacctSample)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 5 {
		t.Fatalf("%d rows, want 5 (the blank line skipped)", len(rows))
	}
	r := rows[0]
	if r.Cluster != "alpha" || r.JobID != "11108" || r.Name != "mosaic-2ki6m3ew-1" || r.Submit.Unix() != 1796130507 ||
		r.Start.Unix() != 1796130507 || r.End.Unix() != 1796130512 || r.State != "COMPLETED" || r.GPUs != 2 || r.CPUs != 32 {
		t.Fatalf("row 0 = %+v", r)
	}
	if rows[1].GPUs != 0 || rows[2].State != "CANCELLED" || rows[2].GPUs != 2 {
		t.Fatalf("rows 1, 2 = %+v, %+v", rows[1], rows[2])
	}
	if p := rows[3]; p.Started() || !p.End.IsZero() || p.GPUs != 0 || p.State != "PENDING" {
		t.Fatalf("pending row = %+v", p)
	}
	if run := rows[4]; !run.Started() || !run.End.IsZero() || run.GPUs != 4 {
		t.Fatalf("running row = %+v", run)
	}
}

// TestParseSacctMalformed: every way a line can be wrong is an error naming the line,
// never a row with a silently wrong time.
func TestParseSacctMalformed(t *testing.T) {
	good := "alpha|11108|j|1796130507|1796130507|1796130512|COMPLETED|cpu=1,gres/gpu=2"
	for _, tc := range []struct{ name, in, want string }{
		{"too few fields", "alpha|11108|j|1796130507|1796130507|1796130512|COMPLETED", "7 fields"},
		{"too many fields (a | in the name)", "alpha|11108|a|b|1796130507|1796130507|1796130512|COMPLETED|cpu=1", "9 fields"},
		{"not -P output", "alpha 11108 j 1796130507 1796130507 1796130512 COMPLETED cpu=1", "1 fields"},
		{"empty cluster", "|11108|j|1796130507|1796130507|1796130512|COMPLETED|", "cluster"},
		{"cluster with a space", "al pha|11108|j|1796130507|1796130507|1796130512|COMPLETED|", "cluster"},
		{"step id (no -X)", "alpha|11108.batch|batch|1796130507|1796130507|1796130512|COMPLETED|", "job id"},
		{"array id", "alpha|11108_3|j|1796130507|1796130507|1796130512|COMPLETED|", "job id"},
		{"ISO time (no SLURM_TIME_FORMAT=%s)", "alpha|11108|j|2026-12-01T13:08:27|2026-12-01T13:08:27|2026-12-01T13:08:32|COMPLETED|", "Submit"},
		{"negative start", "alpha|11108|j|1796130507|-5|1796130512|COMPLETED|", "Start"},
		{"zero end", "alpha|11108|j|1796130507|1796130507|0|COMPLETED|", "End"},
		{"absurd time", "alpha|11108|j|1796130507|99999999999999|1796130512|COMPLETED|", "Start"},
		{"no submit time", "alpha|11108|j|Unknown|1796130507|1796130512|COMPLETED|", "no submit time"},
		{"start before submit", "alpha|11108|j|1796130507|1796130500|1796130512|COMPLETED|", "before it was submitted"},
		{"TRES not key=value", "alpha|11108|j|1796130507|1796130507|1796130512|COMPLETED|cpu", "key=value"},
		{"GPU count not a number", "alpha|11108|j|1796130507|1796130507|1796130512|COMPLETED|gres/gpu=two", "not a count"},
		{"GPU count negative", "alpha|11108|j|1796130507|1796130507|1796130512|COMPLETED|gres/gpu=-1", "not a count"},
		{"CPU count not a number", "alpha|11108|j|1796130507|1796130507|1796130512|COMPLETED|cpu=1.5", "not a count"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseSacct(good + "\n" + tc.in + "\n")
			if err == nil {
				t.Fatalf("accepted %q", tc.in)
			}
			if !strings.Contains(err.Error(), "line 2") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q: want line 2 and %q", err, tc.want)
			}
		})
	}
	if rows, err := ParseSacct(""); err != nil || len(rows) != 0 {
		t.Fatalf("empty output: %v %v", rows, err)
	}
}

func FuzzParseSacct(f *testing.F) {
	for _, l := range strings.Split(sacctSample, "\n") {
		f.Add(l)
	}
	f.Add("alpha|1|j|1|Unknown|None|PENDING|")
	f.Add("a|1|j|1|2|3|X|gres/gpu=")
	f.Fuzz(func(t *testing.T, s string) {
		rows, err := ParseSacct(s)
		if err != nil {
			return
		}
		for _, r := range rows {
			if !jobIDRe.MatchString(r.JobID) || !clusterRe.MatchString(r.Cluster) || r.Submit.IsZero() || r.GPUs < 0 || r.CPUs < 0 {
				t.Fatalf("accepted a bad row %+v from %q", r, s)
			}
			if r.Started() && r.Start.Before(r.Submit) {
				t.Fatalf("accepted a start before submit: %+v", r)
			}
			if w := Wait(r.Submit, r.Start); r.Started() && w < 0 {
				t.Fatalf("negative wait %s from %+v", w, r)
			}
		}
	})
}

func TestParseSbatchParsable(t *testing.T) {
	id, cl, err := ParseSbatchParsable("11112;alpha\n")
	if err != nil || id != "11112" || cl != "alpha" {
		t.Fatalf("got %q %q %v", id, cl, err)
	}
	for _, bad := range []string{"", "11112", ";alpha", "11112;", "abc;alpha", "11112;al pha", "11112;alpha;beta",
		"sbatch: error: Batch job submission failed: Requested node configuration is not available"} {
		if id, cl, err := ParseSbatchParsable(bad); err == nil {
			t.Errorf("accepted %q as %q on %q", bad, id, cl)
		}
	}
}

func FuzzParseSbatchParsable(f *testing.F) {
	f.Add("11112;alpha\n")
	f.Add("11112")
	f.Fuzz(func(t *testing.T, s string) {
		id, cl, err := ParseSbatchParsable(s)
		if err == nil && (!jobIDRe.MatchString(id) || !clusterRe.MatchString(cl)) {
			t.Fatalf("accepted %q as %q;%q", s, id, cl)
		}
	})
}

func TestParseEnvFile(t *testing.T) {
	env, err := ParseEnvFile("# generated\nRIG_DIR=/tmp/mosaic-rig\n\nRIG_ACCOUNT=rigacct\nEMPTY=\nX=a=b\n")
	if err != nil || env["RIG_DIR"] != "/tmp/mosaic-rig" || env["RIG_ACCOUNT"] != "rigacct" || env["X"] != "a=b" || len(env) != 4 {
		t.Fatalf("got %v %v", env, err)
	}
	for _, bad := range []string{"RIG_DIR", "=x", "1X=2", "RIG DIR=x", "export RIG_DIR=x"} {
		if _, err := ParseEnvFile("A=1\n" + bad + "\n"); err == nil || !strings.Contains(err.Error(), "line 2") {
			t.Errorf("%q: error %v, want one naming line 2", bad, err)
		}
	}
}

func FuzzParseEnvFile(f *testing.F) {
	f.Add("# c\nA=1\nB=\n")
	f.Add("=x")
	f.Fuzz(func(t *testing.T, s string) {
		env, err := ParseEnvFile(s)
		if err != nil {
			return
		}
		for k := range env {
			if !envKeyRe.MatchString(k) {
				t.Fatalf("accepted key %q", k)
			}
		}
	})
}

// Shapes of the real `mosaic task ID --json`, `submit --json=task`, `tasks --json=id,state`
// and `resources --json` output (trimmed), as captured on the rig.
const (
	taskSample   = `{"id":"2ki6m3ew","name":"t1","state":"succeeded","attempts":[{"task_id":"2ki6m3ew","n":1,"tag":"mosaic-2ki6m3ew-1","system":"alpha","partition":"cpu","job_id":"11108","state":"succeeded"},{"n":2,"tag":"mosaic-2ki6m3ew-2","system":"beta","state":"queued"}]}`
	submitSample = `{"task":{"id":"2ki6m3ew","name":"t1","state":"submitted"},"decision":{"chosen":"alpha/cpu/rigacct"},"dry_run":false}`
	statesSample = `[{"id":"2ki6m3ew","state":"succeeded"},{"id":"x1","state":"queued"}]`
	healthSample = `{"seq":127,"systems":[{"system":"alpha","health":"ok"},{"system":"beta","health":"down"}],"records":[]}`
)

func TestParseMosaicJSON(t *testing.T) {
	tv, err := ParseTask([]byte(taskSample))
	if err != nil || tv.ID != "2ki6m3ew" || len(tv.Attempts) != 2 || tv.Attempts[0].JobID != "11108" || tv.Attempts[0].System != "alpha" || tv.Attempts[0].Tag != "mosaic-2ki6m3ew-1" {
		t.Fatalf("task: %+v %v", tv, err)
	}
	if id, err := ParseSubmittedID([]byte(submitSample)); err != nil || id != "2ki6m3ew" {
		t.Fatalf("submit: %q %v", id, err)
	}
	if st, err := ParseTaskStates([]byte(statesSample)); err != nil || st["2ki6m3ew"] != "succeeded" || st["x1"] != "queued" {
		t.Fatalf("states: %v %v", st, err)
	}
	if h, err := ParseHealth([]byte(healthSample)); err != nil || h["alpha"] != "ok" || h["beta"] != "down" {
		t.Fatalf("health: %v %v", h, err)
	}
	for _, tc := range []struct {
		name  string
		parse func([]byte) error
		in    string
	}{
		{"task: not JSON", func(b []byte) error { _, err := ParseTask(b); return err }, "mosaic: task not found"},
		{"task: no id", func(b []byte) error { _, err := ParseTask(b); return err }, `{"name":"t1"}`},
		{"task: job id not a number", func(b []byte) error { _, err := ParseTask(b); return err }, `{"id":"x","attempts":[{"n":1,"system":"alpha","job_id":"12;rm"}]}`},
		{"task: job without a system", func(b []byte) error { _, err := ParseTask(b); return err }, `{"id":"x","attempts":[{"n":1,"job_id":"12"}]}`},
		{"task: attempts not a list", func(b []byte) error { _, err := ParseTask(b); return err }, `{"id":"x","attempts":{}}`},
		{"submit: no task", func(b []byte) error { _, err := ParseSubmittedID(b); return err }, `{"decision":{}}`},
		{"submit: truncated", func(b []byte) error { _, err := ParseSubmittedID(b); return err }, `{"task":{"id":"2ki`},
		{"states: object", func(b []byte) error { _, err := ParseTaskStates(b); return err }, `{"id":"x","state":"queued"}`},
		{"states: entry without state", func(b []byte) error { _, err := ParseTaskStates(b); return err }, `[{"id":"x"}]`},
		{"health: system without name", func(b []byte) error { _, err := ParseHealth(b); return err }, `{"systems":[{"health":"ok"}]}`},
		{"health: not JSON", func(b []byte) error { _, err := ParseHealth(b); return err }, `<html>`},
	} {
		if err := tc.parse([]byte(tc.in)); err == nil {
			t.Errorf("%s: accepted %q", tc.name, tc.in)
		}
	}
}

func FuzzParseMosaicJSON(f *testing.F) {
	for _, s := range []string{taskSample, submitSample, statesSample, healthSample} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b := []byte(s)
		if tv, err := ParseTask(b); err == nil {
			for _, a := range tv.Attempts {
				if a.JobID != "" && (!jobIDRe.MatchString(a.JobID) || !clusterRe.MatchString(a.System)) {
					t.Fatalf("accepted attempt %+v", a)
				}
			}
		}
		if id, err := ParseSubmittedID(b); err == nil && id == "" {
			t.Fatal("accepted an empty id")
		}
		_, _ = ParseTaskStates(b)
		_, _ = ParseHealth(b)
	})
}

func TestQueueLines(t *testing.T) {
	out := "CLUSTER: alpha\nrb1-s1-s-00|gres:gpu:a100:2\nblocker|N/A\n\nCLUSTER: beta\nx|gres/gpu:4\nweird\n"
	ls := QueueLines(out)
	if len(ls) != 4 {
		t.Fatalf("lines %q", ls)
	}
	gpu := 0
	for _, l := range ls {
		if GPUJobLine(l) {
			gpu++
		}
	}
	if gpu != 2 {
		t.Fatalf("%d GPU lines in %q, want 2", gpu, ls)
	}
	if GPUJobLine("gpu-named-job|N/A") {
		t.Fatal("a job named gpu without gres counted as a GPU job")
	}
}

// TestWaitUsesOneClockAtSecondResolution: sacct's whole seconds against a truncated
// arrival: never negative, exact on whole seconds.
func TestWaitUsesOneClockAtSecondResolution(t *testing.T) {
	at := time.Unix(1796130507, 900_000_000)
	for _, tc := range []struct {
		start int64
		want  time.Duration
	}{{1796130507, 0}, {1796130508, time.Second}, {1796130547, 40 * time.Second}} {
		if got := Wait(at, time.Unix(tc.start, 0)); got != tc.want {
			t.Errorf("arrival %s start %d: wait %s, want %s", at, tc.start, got, tc.want)
		}
	}
}

func TestParseBootTime(t *testing.T) {
	out := "Configuration data as of 2026-12-01T13:31:12\nAccountingStorageBackupHost = (null)\nBOOT_TIME               = 1796131392\nRebootProgram           = (null)\n"
	if v, err := ParseBootTime(out); err != nil || v != 1796131392 {
		t.Fatalf("got %d %v", v, err)
	}
	for _, bad := range []string{"", "RebootProgram = (null)\n", "BOOT_TIME = 2026-12-01T13:23:12\n", "BOOT_TIME = 0\n", "BOOT_TIME =\n", "BOOT_TIME = -4\n"} {
		if v, err := ParseBootTime(bad); err == nil {
			t.Errorf("%q: accepted as %d", bad, v)
		}
	}
}

func FuzzParseBootTime(f *testing.F) {
	f.Add("BOOT_TIME               = 1796131392\n")
	f.Add("X = 1\nBOOT_TIME=")
	f.Fuzz(func(t *testing.T, s string) {
		if v, err := ParseBootTime(s); err == nil && v <= 0 {
			t.Fatalf("accepted %d from %q", v, s)
		}
	})
}
