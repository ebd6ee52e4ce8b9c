package campaign

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/site"
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
