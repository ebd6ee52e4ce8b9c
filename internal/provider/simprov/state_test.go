package simprov

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/sim"
)

// A real line (Linux 6.x, proc(5)) with a command name holding spaces and parentheses.
const statLine = "4242 (sh (job) x) S 1 4242 4242 0 -1 4194560 120 0 0 0 0 0 0 0 20 0 1 0 987654 2560000 200 18446744073709551615 1 1 0 0 0 0 0 0 65536 0 0 0 17 1 0 0 0 0 0\n"

func TestParseProcStat(t *testing.T) {
	st, err := parseProcStat([]byte(statLine))
	if err != nil || st.state != 'S' || st.pgrp != 4242 || st.start != 987654 {
		t.Fatalf("good line: %+v %v", st, err)
	}
	for _, tc := range []struct{ name, in string }{
		{"empty", ""},
		{"no parentheses", "4242 sh S 1 4242"},
		{"only a closing parenthesis", "4242 sh) S 1 4242 4242 0 -1 4194560 120 0 0 0 0 0 0 0 20 0 1 0 987654"},
		{"too few fields", "4242 (sh) S 1 4242 4242 0"},
		{"long state", "4242 (sh) SS 1 4242 4242 0 -1 4194560 120 0 0 0 0 0 0 0 20 0 1 0 987654"},
		{"group not a number", "4242 (sh) S 1 x 4242 0 -1 4194560 120 0 0 0 0 0 0 0 20 0 1 0 987654"},
		{"negative group", "4242 (sh) S 1 -4 4242 0 -1 4194560 120 0 0 0 0 0 0 0 20 0 1 0 987654"},
		{"start not a number", "4242 (sh) S 1 4242 4242 0 -1 4194560 120 0 0 0 0 0 0 0 20 0 1 0 -98"},
		{"binary", "\x00\xff(\x01)"},
	} {
		if st, err := parseProcStat([]byte(tc.in)); err == nil {
			t.Errorf("%s: parsed as %+v", tc.name, st)
		}
	}
}

func TestParseBootTime(t *testing.T) {
	stat := "cpu  1 2 3 4\nintr 5\nctxt 99\nbtime 1764576000\nprocesses 7\n"
	if bt, ok := parseBootTime([]byte(stat)); !ok || !bt.Equal(time.Unix(1764576000, 0)) {
		t.Fatalf("boot time: %v %v", bt, ok)
	}
	for _, in := range []string{"", "cpu 1 2\n", "btime x\n", "btime -5\n", "xbtime 5\n"} {
		if bt, ok := parseBootTime([]byte(in)); ok {
			t.Errorf("%q: parsed as %v", in, bt)
		}
	}
}

func FuzzParseProcStat(f *testing.F) {
	f.Add([]byte(statLine))
	f.Add([]byte("1 () Z"))
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := parseProcStat(b)
		if err == nil && (st.pgrp < 0 || st.state == 0) {
			t.Fatalf("accepted %q as %+v", b, st)
		}
	})
}

func TestParseRecord(t *testing.T) {
	good := `{"v":1,"id":12,"system":"S","spec":{"tag":"mosaic-x-1","partition":"gpu","nodes":1,"walltime":"1h"},"speed":60,"state":"RUNNING","pid":77,"exit_code":0}`
	r, err := parseRecord([]byte(good))
	if err != nil || r.ID != 12 || r.PID != 77 || r.State != sim.Running || r.Spec.Tag != "mosaic-x-1" || r.Spec.Walltime.D() != time.Hour {
		t.Fatalf("good record: %+v %v", r, err)
	}
	for _, tc := range []struct{ name, in, want string }{
		{"empty", "", "record"},
		{"not json", "hello", "record"},
		{"truncated", good[:40], "record"},
		{"other version", strings.Replace(good, `"v":1`, `"v":9`, 1), "version"},
		{"no id", strings.Replace(good, `"id":12`, `"id":0`, 1), "no job id"},
		{"negative pid", strings.Replace(good, `"pid":77`, `"pid":-3`, 1), "pid"},
		{"unknown state", strings.Replace(good, `"RUNNING"`, `"DANCING"`, 1), "unknown state"},
		{"wrong type", strings.Replace(good, `"id":12`, `"id":"12"`, 1), "record"},
		{"huge", `{"v":1,"id":1,"reason":"` + strings.Repeat("x", maxRecord) + `"}`, "bytes"},
	} {
		if _, err := parseRecord([]byte(tc.in)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want one mentioning %q", tc.name, err, tc.want)
		}
	}
}

func FuzzParseRecord(f *testing.F) {
	f.Add([]byte(`{"v":1,"id":12,"state":"PENDING"}`))
	f.Add([]byte(`{"v":1,"id":3,"state":"LOST","pid":9}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := parseRecord(b)
		if err == nil && (r.ID <= 0 || r.PID < 0 || r.V != recordV) {
			t.Fatalf("accepted %q as %+v", b, r)
		}
	})
}

// TestDamagedRecordLeavesJobAlone: a record that does not parse is skipped (logged),
// the others are recovered, and the provider starts.
func TestDamagedRecordLeavesJobAlone(t *testing.T) {
	dir := t.TempDir()
	sysDir := filepath.Join(dir, safeName(testSystem().Name))
	for id, body := range map[string]string{"1000": "{garbage", "1001": ""} {
		if err := os.MkdirAll(filepath.Join(sysDir, id), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(sysDir, id, recordFile), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	jd := filepath.Join(sysDir, "1002")
	if err := os.MkdirAll(jd, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := saveRecord(jd, &jobRecord{ID: 1002, Spec: spec("gpu", "true", time.Hour), Speed: 60, State: sim.Completed, Submitted: time.Now()}); err != nil {
		t.Fatal(err)
	}
	p := newProvider(t, testSystem(), Options{Speed: 60, WorkDir: dir, Configure: noLoad})
	m, err := p.Status(ctx, []string{"1000", "1001", "1002"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m["1000"]; ok {
		t.Errorf("damaged record answered: %+v", m["1000"])
	}
	if m["1002"].State != model.JobSucceeded {
		t.Errorf("good record next to damaged ones: %+v", m["1002"])
	}
	// New ids stay above every job directory, readable or not.
	if id := submit(t, p, spec("gpu", "true", time.Hour)); id <= "1002" && len(id) <= 4 {
		t.Errorf("new id %s not above the ids on disk", id)
	}
}
