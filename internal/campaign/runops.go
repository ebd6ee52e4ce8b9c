package campaign

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/provider/hpc"
	"github.com/mosaic-hpc/mosaic/internal/site"
)

// RunStatus reads a run directory and refreshes what can be asked cheaply:
// the submitted jobs' states (from the sites) and whether the launcher and
// attach sessions are alive. Sites that cannot be asked keep their recorded
// state with Error set.
func RunStatus(ctx context.Context, root, runID string, cat *site.Catalog, localEnv []string) (RunState, error) {
	d, err := OpenRunDir(root, runID)
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
	d, err := OpenRunDir(root, runID)
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
			if s.SubmittedJob == "" {
				errs = append(errs, fmt.Errorf("site %s: cancel task %s: %w", s.Name, s.TaskID, err))
				continue
			}
			fmt.Fprintf(out, "%s: cancel task %s: %v; cancelling job %s at the site directly\n", s.Name, s.TaskID, err, s.SubmittedJob)
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
