package pbs

import (
	"strings"
	"testing"

	"github.com/mosaic-hpc/mosaic/internal/dialect"
)

// TestParseMyJobsRig reads a capture from the rig's OpenPBS 23.06 (testdata): one
// running and one waiting GPU job, one held CPU job, all the user's.
func TestParseMyJobsRig(t *testing.T) {
	got, err := ParseMyJobs(fixture(t, "qstat-a-w.openpbs-23.06.06.sample.txt"), "mosaicpbs", []string{"workq", "gpu"})
	if err != nil {
		t.Fatal(err)
	}
	if got["gpu"] != (JobCounts{Running: 1, Pending: 1}) || got["workq"] != (JobCounts{Pending: 1}) {
		t.Errorf("counts %+v", got)
	}
	other, err := ParseMyJobs(fixture(t, "qstat-a-w.openpbs-23.06.06.sample.txt"), "someoneelse", []string{"workq", "gpu"})
	if err != nil || len(other) != 0 {
		t.Errorf("another user's counts: %+v, %v", other, err)
	}
}

const altHeader = `
srv:
                                                            Req'd  Req'd   Elap
Job ID          Username        Queue           Jobname    SessID NDS TSK Memory Time  S Time
--------------- --------------- --------------- ---------- ------ --- --- ------ ----- - -----
`

func TestParseMyJobs(t *testing.T) {
	queues := []string{"workq", "gpu", "averyveryverylongqueue", "averyveryverylongqueue2"}
	cases := []struct {
		name, body, user string
		want             map[string]JobCounts
		err              string
	}{
		{name: "empty listing", body: "", user: "u", want: map[string]JobCounts{}},
		{name: "no jobs at all", body: "\n", user: "u", want: map[string]JobCounts{}},
		{name: "states", user: "u", body: "1.s u workq j 1 1 1 -- 01:00 R 00:01\n2.s u workq j -- 1 1 -- 01:00 Q --\n3.s u workq j -- 1 1 -- 01:00 E --\n4.s u gpu j -- 1 1 -- 01:00 W --\n5.s u gpu j -- 1 1 -- 01:00 S --\n",
			want: map[string]JobCounts{"workq": {Running: 2, Pending: 1}, "gpu": {Pending: 1}}},
		{name: "other users skipped", user: "u", body: "1.s v workq j 1 1 1 -- 01:00 R 00:01\n2.s uu workq j 1 1 1 -- 01:00 R 00:01\n",
			want: map[string]JobCounts{}},
		{name: "cut user name", user: "averyverylongusername", body: "1.s averyverylongu* gpu j 1 1 1 -- 01:00 R 00:01\n",
			want: map[string]JobCounts{"gpu": {Running: 1}}},
		{name: "cut user of someone else", user: "abc", body: "1.s abcdefghijklmn* gpu j 1 1 1 -- 01:00 R 00:01\n", want: map[string]JobCounts{}},
		{name: "ambiguous cut queue is skipped", user: "u", body: "1.s u averyveryverylo* j 1 1 1 -- 01:00 R 00:01\n", want: map[string]JobCounts{}},
		{name: "unknown queue skipped", user: "u", body: "1.s u elsewhere j 1 1 1 -- 01:00 R 00:01\n", want: map[string]JobCounts{}},
		{name: "short line", user: "u", body: "1.s u workq j 1 1 1 -- 01:00 R\n", err: "want 11 columns"},
		{name: "unknown state counts as neither", user: "u", body: "1.s u workq j 1 1 1 -- 01:00 Z 00:01\n2.s u workq j 1 1 1 -- 01:00 R 00:01\n",
			want: map[string]JobCounts{"workq": {Running: 1}}},
		{name: "empty user matches nothing", user: "", body: "1.s * workq j 1 1 1 -- 01:00 R 00:01\n", want: map[string]JobCounts{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseMyJobs([]byte(altHeader+c.body), c.user, queues)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(c.want) {
				t.Fatalf("got %+v, want %+v", got, c.want)
			}
			for q, w := range c.want {
				if got[q] != w {
					t.Errorf("%s: %+v, want %+v", q, got[q], w)
				}
			}
		})
	}
}

// TestProbeCountsMyJobs: ParseProbe puts the third output's counts on the records.
func TestProbeCountsMyJobs(t *testing.T) {
	recs, err := utc.ParseProbe([]dialect.Output{{Stdout: fixture(t, "qstat-Q-f-F-json.openpbs-23.06.06.sample.json")},
		{Stdout: fixture(t, "pbsnodes-a-F-json.openpbs-23.06.06.sample.json")},
		{Stdout: fixture(t, "qstat-a-w.openpbs-23.06.06.sample.txt")}}, "mosaicpbs")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r.Partition == "gpu" && (r.MyRunningJobs != 1 || r.MyPendingJobs != 1) {
			t.Errorf("gpu record: mine running %d pending %d", r.MyRunningJobs, r.MyPendingJobs)
		}
	}
	// The user's counts are best effort: a failed or unreadable listing keeps the
	// queue and node records (with zero counts) rather than marking the site down.
	for _, bad := range []dialect.Output{{ExitCode: 2, Stderr: []byte("qstat: cannot connect to server")}, {Stdout: []byte(altHeader + "short line\n")}} {
		recs, err := utc.ParseProbe([]dialect.Output{{Stdout: fixture(t, "qstat-Q-f-F-json.openpbs-23.06.06.sample.json")},
			{Stdout: fixture(t, "pbsnodes-a-F-json.openpbs-23.06.06.sample.json")}, bad}, "mosaicpbs")
		if err != nil || len(recs) == 0 {
			t.Errorf("probe with a failed job listing: %d records, %v", len(recs), err)
		}
		for _, r := range recs {
			if r.MyRunningJobs != 0 || r.MyPendingJobs != 0 {
				t.Errorf("counts from a failed listing: %+v", r)
			}
		}
	}
}

func FuzzParseMyJobs(f *testing.F) {
	f.Add([]byte(altHeader+"1.s u workq j 1 1 1 -- 01:00 R 00:01\n"), "u")
	f.Add([]byte(altHeader+"1.s averyverylongu* gpu* j 1 1 1 -- 01:00 Q --\n"), "averyverylonguser")
	f.Add([]byte("---\n* * * * * * * * * * *\n"), "")
	f.Fuzz(func(t *testing.T, out []byte, user string) {
		got, err := ParseMyJobs(out, user, []string{"workq", "gpu"})
		if err != nil {
			return
		}
		for q, c := range got {
			if q != "workq" && q != "gpu" || c.Running < 0 || c.Pending < 0 {
				t.Fatalf("bad count %q %+v", q, c)
			}
		}
	})
}

// TestParseStatusSeveralDocuments: the status loop prints one document per qstat; every
// job of every document counts, unknown ids are absent (not an error), and a server
// that cannot be reached or output that is not JSON is an error.
func TestParseStatusSeveralDocuments(t *testing.T) {
	doc := func(id, state string) string {
		return `{"timestamp":1,"pbs_version":"23.06.06","pbs_server":"vm","Jobs":{"` + id + `":{"Job_Name":"n","job_state":"` + state + `","substate":42}}}` + "\n"
	}
	ids := []string{"1.vm", "2.vm", "3.vm"}
	cases := []struct {
		name string
		out  dialect.Output
		want []string
		err  string
	}{
		{name: "two documents", out: dialect.Output{Stdout: []byte(doc("1.vm", "R") + doc("2.vm", "Q"))}, want: []string{"1.vm", "2.vm"}},
		{name: "one unknown id", out: dialect.Output{ExitCode: 153, Stdout: []byte(doc("1.vm", "R")), Stderr: []byte("qstat: Unknown Job Id 3.vm\n")}, want: []string{"1.vm"}},
		{name: "all unknown", out: dialect.Output{ExitCode: 153, Stderr: []byte("qstat: Unknown Job Id 1.vm\nqstat: Unknown Job Id 2.vm\n")}, want: nil},
		{name: "server down", out: dialect.Output{ExitCode: 2, Stderr: []byte("qstat: cannot connect to server vm (errno=15010)\n")}, err: "cannot connect"},
		{name: "usage error", out: dialect.Output{ExitCode: 2, Stderr: []byte("qstat: conflicting options.\n")}, err: "qstat failed"},
		{name: "garbage after a document", out: dialect.Output{Stdout: []byte(doc("1.vm", "R") + "}{")}, err: "document 2"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := utc.ParseStatus(ids, c.out)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(c.want) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
			for _, id := range c.want {
				if _, ok := got[id]; !ok {
					t.Errorf("missing %s in %v", id, got)
				}
			}
		})
	}
	if argv := utc.StatusCommand([]string{"1.vm"}); strings.Join(argv, " ") != "qstat -x -f -F json -- 1.vm" {
		t.Errorf("one id: %q", argv)
	}
	if argv := utc.StatusCommand(ids); argv[0] != "sh" || argv[len(argv)-1] != "3.vm" || len(argv) != 4+len(ids) || !strings.Contains(argv[2], `-- "$j"`) {
		t.Errorf("several ids: %q", argv)
	}
	// A job id is never read as an option ("-x" from a hostile --site jobid= or site).
	if argv := utc.StatusCommand([]string{"-Bf"}); argv[len(argv)-2] != "--" {
		t.Errorf("an id that looks like an option: %q", argv)
	}
}
