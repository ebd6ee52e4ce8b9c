package campaign

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/site"
	"github.com/mosaic-hpc/mosaic/internal/transport/rigenv"
)

// TestStopRunNeverSkipsAnUnrecordedJob: a submit-mode site whose task is known
// but whose job id was never recorded (the submit's answer was lost), with the
// run's tasks store out of reach: stop must look the job up at the site by its
// name, and when the site cannot be asked, fail naming the task and the job
// name, never report the site stopped with the job perhaps still queued.
func TestStopRunNeverSkipsAnUnrecordedJob(t *testing.T) {
	root := filepath.Join(t.TempDir(), "runs")
	sp := SiteSpec{Name: "alpha", Mode: ModeSubmit, Queue: "cpu", Walltime: model.Duration(time.Hour), Agents: []string{"coordinator"}}
	for _, tc := range []struct {
		name string
		st   SiteState
		tag  string
	}{
		{"task recorded, tag recorded", SiteState{SiteSpec: sp, TaskID: "t-1", JobTag: "mosaic-c-r7-alpha", State: string(model.JobSubmitting)}, "mosaic-c-r7-alpha"},
		{"task recorded, older run directory without the tag", SiteState{SiteSpec: sp, TaskID: "t-1", State: string(model.JobPending)}, "mosaic-c-r7-alpha"},
		{"launcher died before the task was stored", SiteState{SiteSpec: sp, State: string(model.JobSubmitting)}, "mosaic-c-r7-alpha"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := "r7"
			dir := filepath.Join(root, strings.ReplaceAll(tc.name, " ", "_"))
			if _, err := CreateRunDir(dir, RunState{RunID: run, TasksStore: "/nowhere/tasks.db", Sites: []SiteState{tc.st}}); err != nil {
				t.Fatal(err)
			}
			// Nothing listens on port 1: the login node cannot be asked.
			cat := &site.Catalog{Systems: []site.System{{Name: "alpha", Kind: site.KindSSH, Host: "127.0.0.1", Dialect: site.DialectSlurm,
				SSH: &site.SSH{Port: 1, ConnectTimeout: "2s", Options: []string{"StrictHostKeyChecking=no", "BatchMode=yes"}}}}}
			openJobs := func(context.Context, string) (Jobs, func(), error) {
				return nil, nil, errors.New("store /nowhere/tasks.db: no such file")
			}
			var out bytes.Buffer
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			err := StopRun(ctx, dir, run, cat, nil, &out, openJobs)
			if err == nil {
				t.Fatalf("stop reported success although the job could not be looked up:\n%s", out.String())
			}
			for _, w := range []string{"alpha", tc.tag} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
			if tc.st.TaskID != "" && !strings.Contains(err.Error(), tc.st.TaskID) {
				t.Errorf("error %q does not name task %s", err, tc.st.TaskID)
			}
			d, err := OpenRunDir(dir, run)
			if err != nil {
				t.Fatal(err)
			}
			if s := d.State().Sites[0].State; s == "stopped" {
				t.Errorf("site marked %q although its job may still be queued", s)
			}
		})
	}
}

// busyJobs answers as a core does while a task's submit holds its lock
// (core.ErrBusy after the user lock wait): the cancel did not happen.
type busyJobs struct{}

func (busyJobs) SubmitCampaignJob(context.Context, JobRequest) (string, error) {
	return "", errors.New("not used")
}
func (busyJobs) CampaignJob(context.Context, string) (JobView, error) { return JobView{}, nil }
func (busyJobs) CancelCampaignJob(context.Context, string, string) error {
	return errors.New("task t-1 is busy (another request is working on it); try again")
}

// TestStopRunDuringABusySubmitIsNotStopped: stop while the task's submit is still
// running: the engine cannot cancel (busy) and the real site has no job by that name
// yet — it may get one the moment the submit returns. Stop must fail and leave the
// site not stopped (it used to print "nothing to cancel" and mark it stopped).
func TestStopRunDuringABusySubmitIsNotStopped(t *testing.T) {
	env := rigenv.Require(t)
	dir := filepath.Join(t.TempDir(), "run")
	sp := SiteSpec{Name: "alpha", Mode: ModeSubmit, Queue: "cpu", Walltime: model.Duration(time.Hour), Agents: []string{"coordinator"}}
	st := SiteState{SiteSpec: sp, TaskID: "t-1", JobTag: fmt.Sprintf("mosaic-c-busy%d-alpha", time.Now().UnixNano()%1e9), State: string(model.JobSubmitting)}
	if _, err := CreateRunDir(dir, RunState{RunID: "busy", TasksStore: "/x/tasks.db", Sites: []SiteState{st}}); err != nil {
		t.Fatal(err)
	}
	cat := &site.Catalog{Systems: []site.System{{Name: "alpha", Kind: site.KindLocal, Dialect: site.DialectSlurm, WorkDir: env.Get(t, "RIG_WORKDIR_ALPHA")}}}
	openJobs := func(context.Context, string) (Jobs, func(), error) { return busyJobs{}, func() {}, nil }
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := StopRun(ctx, dir, "busy", cat, []string{"SLURM_CONF=" + env.Get(t, "SLURM_CONF_ALPHA")}, &out, openJobs)
	if err == nil || !strings.Contains(err.Error(), "run stop again") || !strings.Contains(err.Error(), st.JobTag) {
		t.Fatalf("stop during a busy submit: %v\n%s", err, out.String())
	}
	d, err := OpenRunDir(dir, "busy")
	if err != nil {
		t.Fatal(err)
	}
	if s := d.State().Sites[0].State; s == "stopped" {
		t.Errorf("site marked stopped although the submit may still queue its job:\n%s", out.String())
	}
}
