package main

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/client"
	"github.com/mosaic-hpc/mosaic/internal/api"
	"github.com/mosaic-hpc/mosaic/internal/campaign"
	"github.com/mosaic-hpc/mosaic/internal/config"
	"github.com/mosaic-hpc/mosaic/internal/core"
	"github.com/mosaic-hpc/mosaic/internal/errs"
	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/store"
	"github.com/mosaic-hpc/mosaic/internal/store/pgtest"
)

// servedCore runs what `mosaic serve` runs — a core owning a real SQLite store
// (its lease held) on the embedded simulated federation, behind the real API on
// 127.0.0.1 — and points this process's client settings at it.
func servedCore(t *testing.T) (cfg *config.Config, hs *httptest.Server, c *core.Core) {
	t.Helper()
	return servedCoreOn(t, "")
}

// servedCoreOn is servedCore on the store db ("" = an SQLite file of its own).
func servedCoreOn(t *testing.T, db string) (cfg *config.Config, hs *httptest.Server, c *core.Core) {
	t.Helper()
	dir := t.TempDir()
	if db == "" {
		db = filepath.Join(dir, "state", "mosaic.db")
	}
	cfg = &config.Config{StateDir: filepath.Join(dir, "state"), DBPath: db, Tick: 250 * time.Millisecond, SimSpeed: 60}
	ctx, cancel := context.WithCancel(context.Background())
	c, err := core.Open(ctx, core.OpenOptions{Config: cfg, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); c.Run(ctx) }()
	srv, err := api.New(c, api.Options{Token: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	hs = httptest.NewServer(srv)
	t.Cleanup(func() { hs.Close(); cancel(); wg.Wait(); c.Close() })
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "config"))
	t.Setenv("MOSAIC_URL", hs.URL)
	t.Setenv("MOSAIC_TOKEN", "tok")
	return cfg, hs, c
}

// TestLaunchHandsJobsToTheServeOnPostgres: a serve owning a PostgreSQL store is
// found by the store's server, port, database and user (its /about shows the URL
// without the password), so the launch hands it the jobs; the run directory
// records the URL without its password, and `campaign stop` reopening it with
// MOSAIC_DB set reaches the same serve.
func TestLaunchHandsJobsToTheServeOnPostgres(t *testing.T) {
	cfg, _, _ := servedCoreOn(t, pgtest.New(t))
	ctx := context.Background()
	var out strings.Builder
	jobs, db := launcherJobs(t, cfg, &out)
	if _, ok := jobs.(serveJobs); !ok {
		t.Fatalf("jobs %T, output %q", jobs, out.String())
	}
	recorded := store.RedactDSN(db)
	if recorded == db {
		t.Fatalf("the test store's URL has no password to keep out: %s", recorded)
	}
	again, err := runStore(cfg, recorded)
	if err != nil || again != cfg.DBPath {
		t.Fatalf("runStore: %v", err)
	}
	_, stopJobs, _, err := openCampaignCore(ctx, cfg, again, "", &out)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := stopJobs.(serveJobs); !ok {
		t.Fatalf("stop's jobs %T", stopJobs)
	}
}

// TestRunStore: the store a run directory recorded without its password is opened
// with MOSAIC_DB's URL when that names it; another PostgreSQL store is refused with
// what to do; a file or a URL that had no password is used as recorded.
func TestRunStore(t *testing.T) {
	const pg = "postgres://mosaic:s3cret@db.example.org:5433/mosaic?sslmode=require"
	for _, c := range []struct {
		mosaicDB, recorded, want, err string
	}{
		{pg, store.RedactDSN(pg), pg, ""},
		{"/s/mosaic.db", store.RedactDSN(pg), "", "set MOSAIC_DB to that store's URL"},
		{"postgres://mosaic:s3cret@db.example.org:5433/other", store.RedactDSN(pg), "", "set MOSAIC_DB"},
		{"/s/mosaic.db", "/s/campaigns/r.tasks.db", "/s/campaigns/r.tasks.db", ""},
		{"/s/mosaic.db", "postgres://mosaic@db.example.org/mosaic", "postgres://mosaic@db.example.org/mosaic", ""},
		{pg, "", "", "names no store"},
	} {
		got, err := runStore(&config.Config{DBPath: c.mosaicDB}, c.recorded)
		if got != c.want || (c.err == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), c.err) {
			t.Errorf("runStore(%q, %q) = %q, %v; want %q, %q", c.mosaicDB, c.recorded, got, err, c.want, c.err)
		}
		if err != nil && strings.Contains(err.Error(), "s3cret") {
			t.Errorf("the error shows the password: %v", err)
		}
	}
}

// launcherJobs opens what a launch of run-1 on cfg's store opens, failing the test if
// that is a core of its own (a serve owns the store).
func launcherJobs(t *testing.T, cfg *config.Config, out *strings.Builder) (campaign.Jobs, string) {
	t.Helper()
	c, jobs, db, err := openCampaignCore(context.Background(), cfg, cfg.DBPath, "run-1", out)
	if err != nil {
		t.Fatal(err)
	}
	if c != nil {
		c.Close()
		t.Fatalf("the launcher opened a core of its own (%s) while a serve owns the store:\n%s", store.RedactDSN(db), out.String())
	}
	return jobs, db
}

func sliceJob(run, account string) campaign.JobRequest {
	return campaign.JobRequest{RunID: run, Site: "Delta@NCSA", Agents: []string{"coordinator"},
		Spec: model.JobSpec{Tag: "mosaic-c-" + run + "-delta", System: "Delta@NCSA", Partition: "cpu", Account: account,
			Nodes: 1, NTasks: 1, CPUsPerTask: 1, Walltime: model.Duration(time.Hour), Command: "sleep 3000",
			Env: map[string]string{"FWD": "v"}}}
}

// TestLaunchHandsJobsToTheServe: when a serve owns the store, the launcher's
// jobs are that serve's tasks over its API (no core of the launcher's own, the
// user's store recorded); Stored gets the task id, a refusal returns the task id
// and the site's reason, cancel goes through the serve; `campaign stop`'s
// opening of the run's store finds the serve too. Without a serve answering for
// the store the launch keeps its tasks in a store of its own, as before.
func TestLaunchHandsJobsToTheServe(t *testing.T) {
	cfg, _, served := servedCore(t)
	ctx := context.Background()
	var out strings.Builder
	jobs, db := launcherJobs(t, cfg, &out)
	if _, ok := jobs.(serveJobs); !ok || db != cfg.DBPath || !strings.Contains(out.String(), "owned by the core at") {
		t.Fatalf("jobs %T, store %q, output %q", jobs, db, out.String())
	}
	var stored string
	req := sliceJob("run-1", "demo-delta-cpu")
	req.Stored = func(id string) { stored = id }
	id, err := jobs.SubmitCampaignJob(ctx, req)
	if err != nil || id == "" || stored != id {
		t.Fatalf("submit: id %q stored %q err %v", id, stored, err)
	}
	// It is the serve's task.
	task, err := served.Task(ctx, id)
	if err != nil || task.Target == nil || task.Target.System != "Delta@NCSA" || !strings.Contains(task.Name, "run-1") {
		t.Fatalf("the serve's task %s: %+v %v", id, task, err)
	}
	v, err := jobs.CampaignJob(ctx, id)
	if err != nil || v.TaskID != id || v.JobID == "" || v.TaskState.Final() {
		t.Fatalf("campaign job: %+v %v", v, err)
	}
	// `campaign stop` opening the recorded store reaches the same serve.
	_, stopJobs, _, err := openCampaignCore(ctx, cfg, db, "", &out)
	if err != nil {
		t.Fatal(err)
	}
	if err := stopJobs.CancelCampaignJob(ctx, id, "campaign run run-1 stopped"); err != nil {
		t.Fatal(err)
	}
	if task, _ := served.Task(ctx, id); task.State != model.TaskCancelled {
		t.Errorf("the serve's task after cancel: %s", task.State)
	}
	stored = ""
	req = sliceJob("run-9", "nosuch-acct")
	req.Stored = func(id string) { stored = id }
	rid, err := jobs.SubmitCampaignJob(ctx, req)
	if rid == "" || stored != rid || err == nil || !strings.Contains(err.Error(), "refused") || !strings.Contains(err.Error(), rid) {
		t.Fatalf("refused job: id %q stored %q err %v", rid, stored, err)
	}

	// A serve on another store is not the owner: the launch keeps its own store.
	other := filepath.Join(t.TempDir(), "other.db")
	if err := os.WriteFile(other, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := serveOwning(ctx, other); err == nil || !strings.Contains(err.Error(), "runs on the store") {
		t.Errorf("a serve on another store taken as the owner: %v", err)
	}
	// Nothing answers on the URL: the run's own store.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + l.Addr().String()
	l.Close()
	t.Setenv("MOSAIC_URL", dead)
	out.Reset()
	c, jobs, db, err := openCampaignCore(ctx, cfg, cfg.DBPath, "run-2", &out)
	if err != nil {
		t.Fatal(err)
	}
	if c != nil {
		defer c.Close()
	}
	if c == nil || jobs != campaign.Jobs(c) || db != filepath.Join(campaign.CampaignsRoot(cfg.StateDir), "run-2.tasks.db") {
		t.Fatalf("without a serve: core %v, store %q\n%s", c != nil, db, out.String())
	}
	if !strings.Contains(out.String(), "no core answers for it") {
		t.Errorf("the fallback does not say why: %s", out.String())
	}
	// And `campaign stop` says the store is held and nobody answers for it.
	if _, _, _, err := openCampaignCore(ctx, cfg, cfg.DBPath, "", &out); err == nil || !strings.Contains(err.Error(), "no core answers for it") {
		t.Errorf("stop with the store held and no serve: %v", err)
	}
}

// TestServeJobsLostAnswerIsOutcomeUnknown: the serve took the request and its answer
// never came (it crashed, the connection was cut): the job may be queued, so the
// error says the outcome is unknown (the launcher then leaves the site "submitting"
// for `campaign stop` to find the job by its name) — not a refusal.
func TestServeJobsLostAnswerIsOutcomeUnknown(t *testing.T) {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close() // read the request, answer nothing
		}
	}))
	defer hs.Close()
	c, err := client.New(hs.URL, "tok")
	if err != nil {
		t.Fatal(err)
	}
	_, err = serveJobs{c: c}.SubmitCampaignJob(context.Background(), sliceJob("run-3", "demo"))
	if !errors.Is(err, errs.ErrOutcomeUnknown) || !strings.Contains(err.Error(), "may be queued") {
		t.Fatalf("a lost answer: %v, want the outcome unknown", err)
	}
	// A refusal the serve did answer is not "unknown".
	hs2 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusUnprocessableEntity)
		io.WriteString(w, `{"status":422,"title":"Unprocessable Entity","detail":"bad run id"}`)
	}))
	defer hs2.Close()
	c2, _ := client.New(hs2.URL, "tok")
	if _, err := (serveJobs{c: c2}).SubmitCampaignJob(context.Background(), sliceJob("run-3", "demo")); err == nil || errors.Is(err, errs.ErrOutcomeUnknown) {
		t.Fatalf("an answered refusal: %v", err)
	}
}
