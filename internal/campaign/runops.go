package campaign

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/provider/hpc"
	"github.com/mosaic-hpc/mosaic/internal/site"
)

// FindRun opens the directory of a launched run. An invalid run id and a run
// that does not exist under root are *ArgError (the CLI exits 2), the latter
// saying where runs live and how to list them; a damaged directory is not.
func FindRun(root, runID string) (*RunDir, error) {
	if err := ValidateRunID(runID); err != nil {
		return nil, argError(err)
	}
	if _, err := os.Stat(filepath.Join(root, runID, "state.json")); errors.Is(err, os.ErrNotExist) {
		return nil, argError(fmt.Errorf("unknown run %s: no run directory %s (launched runs live under %s; list them with `mosaic campaign status`)",
			runID, filepath.Join(root, runID), root))
	}
	return OpenRunDir(root, runID)
}

// RunStatus reads a run directory and refreshes what can be asked cheaply:
// the submitted jobs' states (from the sites) and whether the launcher and
// attach sessions are alive. Sites that cannot be asked keep their recorded
// state with Error set.
func RunStatus(ctx context.Context, root, runID string, cat *site.Catalog, localEnv []string) (RunState, error) {
	d, err := FindRun(root, runID)
	if err != nil {
		return RunState{}, err
	}
	st := d.State()
	if st.LauncherPID != 0 && !pidRuns(st.LauncherPID, "mosaic") && !isFinalRunState(st.State) {
		st.State += " (launcher gone)"
	}
	for i := range st.Sites {
		s := &st.Sites[i]
		if s.SubmittedJob == "" || cat == nil {
			continue
		}
		sys, ok := cat.System(s.Name)
		if !ok {
			continue
		}
		conn, err := newSiteConn(*sys, localEnv)
		if err != nil {
			s.Error = err.Error()
			continue
		}
		prov, err := hpc.New(*sys, hpc.WithTransport(conn.tr))
		if err == nil {
			qctx, cancel := context.WithTimeout(ctx, time.Minute)
			var js map[string]jobStatus
			js, err = statusOf(qctx, prov, s.SubmittedJob)
			cancel()
			if j, ok := js[s.SubmittedJob]; ok && err == nil {
				s.State = j
			}
		}
		if err != nil {
			s.Error = err.Error()
		}
		_ = conn.Close()
	}
	return st, nil
}

type jobStatus = string

func statusOf(ctx context.Context, p *hpc.Provider, id string) (map[string]jobStatus, error) {
	m, err := p.Status(ctx, []string{id})
	if err != nil {
		return nil, err
	}
	out := map[string]jobStatus{}
	for k, v := range m {
		out[k] = string(v.State)
	}
	return out, nil
}

// OpenJobs opens the Jobs of the store a run recorded (RunState.TasksStore);
// done releases it.
type OpenJobs func(ctx context.Context, store string) (jobs Jobs, done func(), err error)

// StopRun stops a run from its directory: it interrupts a live launcher (which
// tears its sites down), then makes sure itself: cancels submit-mode sites'
// tasks through the core's engine (openJobs, on the run's store), hangs up
// attach sessions and ends their remote steps or processes. A job whose task
// cannot be reached (no openJobs, the store busy or lost, a run directory
// older than tasks) is cancelled at its site directly.
func StopRun(ctx context.Context, root, runID string, cat *site.Catalog, localEnv []string, out io.Writer, openJobs OpenJobs) error {
	d, err := FindRun(root, runID)
	if err != nil {
		return err
	}
	st := d.State()
	if st.LauncherPID != 0 && st.LauncherPID != os.Getpid() && pidRuns(st.LauncherPID, "mosaic") {
		fmt.Fprintf(out, "interrupting the launcher (pid %d)\n", st.LauncherPID)
		_ = syscall.Kill(st.LauncherPID, syscall.SIGINT)
		for i := 0; i < 120 && pidRuns(st.LauncherPID, "mosaic"); i++ {
			time.Sleep(500 * time.Millisecond)
		}
	}
	var jobs Jobs
	if openJobs != nil && slices.ContainsFunc(st.Sites, func(s SiteState) bool { return s.TaskID != "" }) {
		j, done, err := openJobs(ctx, st.TasksStore)
		if err != nil {
			fmt.Fprintf(out, "the run's tasks cannot be reached (%v); cancelling their jobs at the sites directly\n", err)
		} else {
			defer done()
			jobs = j
		}
	}
	var errs []error
	for _, s := range st.Sites {
		var engineErr error // the engine's cancel failed (not merely pending): a busy submit may still queue the job
		if s.TaskID != "" && jobs != nil {
			cctx, cancel := context.WithTimeout(ctx, time.Minute)
			err := jobs.CancelCampaignJob(cctx, s.TaskID, "campaign run "+runID+" stopped (campaign stop)")
			cancel()
			if err == nil {
				fmt.Fprintf(out, "%s: task %s cancelled (job %s; or it had already ended)\n", s.Name, s.TaskID, orDash(s.SubmittedJob))
				_ = d.UpdateSite(s.Name, func(x *SiteState) {
					if !isFinalSiteState(x.State) {
						x.State = "stopped"
					}
				})
				continue
			}
			what := "cancel task " + s.TaskID + " failed"
			if errors.Is(err, ErrCancelPending) {
				what = "task " + s.TaskID + ": cancel pending"
			} else {
				engineErr = err
			}
			fmt.Fprintf(out, "%s: %s (%v); cancelling its job %s at the site directly\n", s.Name, what, err, orDash(s.SubmittedJob))
		}
		sys, ok := cat.System(s.Name)
		if !ok {
			errs = append(errs, fmt.Errorf("site %s is no longer in the sites catalog; clean it up by hand (job %s, dir %s)", s.Name, s.SubmittedJob+s.JobID, s.RemoteDir))
			continue
		}
		conn, err := newSiteConn(*sys, localEnv)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		switch {
		case s.SubmittedJob != "":
			prov, err := hpc.New(*sys, hpc.WithTransport(conn.tr))
			if err == nil {
				cctx, cancel := context.WithTimeout(ctx, time.Minute)
				err = prov.Cancel(cctx, []string{s.SubmittedJob})
				cancel()
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("site %s: cancel job %s: %w", s.Name, s.SubmittedJob, err))
			} else {
				fmt.Fprintf(out, "%s: job %s cancelled (or already ended)\n", s.Name, s.SubmittedJob)
			}
		case s.Mode == ModeSubmit && (s.TaskID != "" || s.State == string(model.JobSubmitting)):
			// Its id was never recorded (the submit's answer was lost, or the launcher
			// died first): the job may be queued all the same, under its name.
			if err := cancelByTag(ctx, conn, *sys, runID, s, engineErr, out); err != nil {
				errs = append(errs, err)
				_ = conn.Close()
				continue // not stopped: its job may still be queued
			}
		case s.Mode == ModeAttach:
			if s.SSHPID != 0 && pidRuns(s.SSHPID, "ssh") {
				_ = syscall.Kill(-s.SSHPID, syscall.SIGTERM)
			}
			if err := stopAttachRemote(ctx, conn, s.SiteSpec, s.RemoteDir, s.StepName); err != nil {
				errs = append(errs, err)
			} else {
				fmt.Fprintf(out, "%s: attach slice stopped (the allocation %s is left to you)\n", s.Name, orDash(s.JobID))
			}
		}
		_ = conn.Close()
		_ = d.UpdateSite(s.Name, func(x *SiteState) {
			if !isFinalSiteState(x.State) {
				x.State = "stopped"
			}
		})
	}
	_ = d.Update(func(r *RunState) {
		if !isFinalRunState(r.State) {
			r.State = RunStopped
		}
	})
	return errors.Join(errs...)
}

// cancelByTag cancels a submit-mode site's job found by its name (the launcher's
// job name, mosaic-c-<run>-<site>); an error names the task and the name when
// the site cannot be asked, so that nothing queued is passed over in silence.
// engineErr is why the engine could not cancel the task (nil if it was not asked):
// then "no such job" is not the end, since the task's submit may still be running.
func cancelByTag(ctx context.Context, conn *siteConn, sys site.System, runID string, s SiteState, engineErr error, out io.Writer) error {
	tag := s.JobTag
	if tag == "" {
		l := SiteLaunch{Spec: s.SiteSpec, RunID: runID}
		tag = l.jobName()
	}
	task := orDash(s.TaskID)
	prov, err := hpc.New(sys, hpc.WithTransport(conn.tr))
	if err != nil {
		return fmt.Errorf("site %s: task %s: its job %s cannot be looked up: %w; cancel it by hand (squeue --name=%s, or qselect -N %s)", s.Name, task, tag, err, tag, tag)
	}
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	found, err := prov.FindByTag(cctx, []string{tag})
	if err != nil {
		return fmt.Errorf("site %s: task %s: its job %s could not be looked up, so it may still be queued: %w; run stop again, or cancel it by hand (squeue --name=%s, or qselect -N %s)", s.Name, task, tag, err, tag, tag)
	}
	j, ok := found[tag]
	if !ok || j.JobID == "" {
		if engineErr != nil {
			return fmt.Errorf("site %s: no job named %s at the site yet, but task %s could not be cancelled (%w): its submit may still queue it; run stop again", s.Name, tag, task, engineErr)
		}
		fmt.Fprintf(out, "%s: no job named %s at the site (task %s): nothing to cancel\n", s.Name, tag, task)
		return nil
	}
	if err := prov.Cancel(cctx, []string{j.JobID}); err != nil {
		return fmt.Errorf("site %s: task %s: cancel job %s (found by its name %s): %w", s.Name, task, j.JobID, tag, err)
	}
	fmt.Fprintf(out, "%s: job %s (found by its name %s) cancelled (or already ended)\n", s.Name, j.JobID, tag)
	return nil
}

func isFinalRunState(s string) bool {
	return s == RunFinished || s == RunFailed || s == RunStopped
}

// pidRuns reports whether pid is alive and its command line mentions word
// (so that a recycled pid is never signalled).
func pidRuns(pid int, word string) bool {
	if pid <= 0 {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return false
	}
	return strings.Contains(strings.ReplaceAll(string(b), "\x00", " "), word)
}
