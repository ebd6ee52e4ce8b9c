package campaign

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRunDir(t *testing.T) {
	root := filepath.Join(t.TempDir(), "campaigns")
	st := RunState{RunID: "r-1", CampaignName: "c", State: RunStarting,
		Sites: []SiteState{{SiteSpec: SiteSpec{Name: "alpha", Mode: ModeSubmit}}, {SiteSpec: SiteSpec{Name: "beta", Mode: ModeAttach, JobID: "12"}}}}
	d, err := CreateRunDir(root, st)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := CreateRunDir(root, st); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("a second run with the same id: %v", err)
	}
	if err := d.WriteToken("secret"); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(d.Path, "token"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("token file: %v %v", fi.Mode(), err)
	}
	if err := d.UpdateSite("alpha", func(s *SiteState) { s.SubmittedJob = "77" }); err != nil {
		t.Fatal(err)
	}
	// A fresh open (as `campaign stop` does later) sees the job id.
	d2, err := OpenRunDir(root, "r-1")
	if err != nil {
		t.Fatal(err)
	}
	if got := d2.State().Sites[0].SubmittedJob; got != "77" {
		t.Errorf("persisted job id %q", got)
	}
	if tok, err := d2.Token(); err != nil || tok != "secret" {
		t.Errorf("token %q %v", tok, err)
	}
	runs, err := ListRuns(root)
	if err != nil || len(runs) != 1 || runs[0].RunID != "r-1" {
		t.Errorf("ListRuns: %+v %v", runs, err)
	}
	if _, err := OpenRunDir(root, "nope"); err == nil || !strings.Contains(err.Error(), "no run nope") {
		t.Errorf("missing run: %v", err)
	}
	if err := os.WriteFile(filepath.Join(d.Path, "state.json"), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenRunDir(root, "r-1"); err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Errorf("damaged state: %v", err)
	}
	for _, bad := range []string{"", ".", "..", "../x", "a/b", "-x", strings.Repeat("a", 129), "a b"} {
		if ValidateRunID(bad) == nil {
			t.Errorf("run id %q accepted", bad)
		}
	}
}

// TestRunDirKeepsNoStorePassword: a PostgreSQL URL recorded as the run's store is
// written without its password, and one an older run directory holds is read back
// without it (so `campaign status --json` never prints it).
func TestRunDirKeepsNoStorePassword(t *testing.T) {
	root := filepath.Join(t.TempDir(), "campaigns")
	const pg = "postgres://mosaic:rd-s3cret@db.example.org:5432/mosaic?sslmode=require"
	d, err := CreateRunDir(root, RunState{RunID: "r-pg", State: RunStarting, TasksStore: pg})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Update(func(st *RunState) { st.TasksStore = pg + "&application_name=x" }); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(d.Path, "state.json"))
	if err != nil || strings.Contains(string(data), "rd-s3cret") || !strings.Contains(string(data), "db.example.org") {
		t.Fatalf("state.json: %s %v", data, err)
	}
	// An older run directory with the password in it.
	old := strings.Replace(string(data), "xxxxx", "rd-s3cret", 1)
	if err := os.WriteFile(filepath.Join(d.Path, "state.json"), []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	d2, err := OpenRunDir(root, "r-pg")
	if err != nil {
		t.Fatal(err)
	}
	if st := d2.State(); strings.Contains(st.TasksStore, "rd-s3cret") || !strings.Contains(st.TasksStore, "db.example.org") {
		t.Fatalf("read back: %q", st.TasksStore)
	}
	runs, err := ListRuns(root)
	if err != nil || len(runs) != 1 || strings.Contains(runs[0].TasksStore, "rd-s3cret") {
		t.Fatalf("ListRuns: %+v %v", runs, err)
	}
}
