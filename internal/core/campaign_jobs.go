package core

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/campaign"
	"github.com/mosaic-hpc/mosaic/internal/execution"
	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/store"
)

// The core runs campaign launchers' submit-mode jobs as its own tasks.
var _ campaign.Jobs = (*Core)(nil)

// campaignPolicy: a slice's job runs once, where its --site says. Its agents are
// tied to the run's exchange and to the launcher following them, so a retry, a
// resize or a move would start a slice nobody waits for; the launcher reports
// the failure with the site log's tail instead.
func campaignPolicy() model.Policy {
	off := false
	return model.Policy{MaxAttempts: 1, RetryFailed: -1, RetryTransient: &off, ResizeOnTimeout: &off, ResizeOnOOM: &off, MigrateOnWait: &off}
}

// SubmitCampaignJob implements campaign.Jobs: the slice's job becomes a task
// pinned to its system and partition with exactly the launcher's job spec (no
// placement: the user named the site, or the scheduler already placed an auto
// site), stored with an event naming the run before the engine submits it. The
// forwarded environment (Spec.Env) reaches the job but never the store.
func (c *Core) SubmitCampaignJob(ctx context.Context, req campaign.JobRequest) (string, error) {
	id, _, err := c.SubmitCampaignJobIdempotent(ctx, req, "")
	return id, err
}

// SubmitCampaignJobIdempotent is SubmitCampaignJob with the client's
// Idempotency-Key (the API's header; "" = none), with the semantics of
// SubmitTaskIdempotent: per user, a second submission with the same key and the
// same request returns the task the first stored (replayed, nothing submitted
// again; the site's refusal of the first is the error again), and one with
// another request is refused (ErrInvalid). A launcher whose request got no
// answer can so retry it, on any replica, without queueing the slice twice.
func (c *Core) SubmitCampaignJobIdempotent(ctx context.Context, req campaign.JobRequest, key string) (id string, replayed bool, err error) {
	if c.engine == nil {
		return "", false, fmt.Errorf("this core has no store, so it cannot run campaign jobs: %w", ErrInvalid)
	}
	if err := campaign.ValidateRunID(req.RunID); err != nil {
		return "", false, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if err := c.claimRun(ctx, req.RunID, true); err != nil {
		return "", false, err
	}
	var hash string
	if key != "" {
		// Keys are per user, in the same namespace as task submissions' (a key
		// used for a task is "another request" here).
		owner := model.CallerOf(ctx).Name
		key = fmt.Sprintf("%d:%s:%s", len(owner), owner, key)
		hash = campaignJobHash(req)
		if id, err := c.replayedCampaignJob(ctx, req, key, hash); id != "" || err != nil {
			return id, id != "", err
		}
	}
	id, err = c.submitCampaignJob(ctx, req, key, hash)
	if errors.Is(err, store.ErrDuplicateKey) { // a concurrent retry with the same key won
		if rid, rerr := c.replayedCampaignJob(ctx, req, key, hash); rid != "" || rerr != nil {
			return rid, rid != "", rerr
		}
	}
	return id, false, err
}

// campaignJobHash is the hash stored with a campaign job's Idempotency-Key: of
// the request as decoded, with the forwarded variables' names but not their
// values (a hash of a secret would be stored where the secret never is).
func campaignJobHash(req campaign.JobRequest) string {
	keys := make([]string, 0, len(req.Spec.Env))
	for k := range req.Spec.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	spec := req.Spec
	spec.Env = nil
	b, _ := json.Marshal(struct {
		Kind        string
		RunID, Site string
		Agents      []string
		Spec        model.JobSpec
		EnvNames    []string
	}{"campaign-job", req.RunID, req.Site, req.Agents, spec, keys})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// replayedCampaignJob returns the task an earlier campaign job submission with
// this key stored ("" if none), with the site's refusal of it as the error as
// the first answer had it; ErrInvalid if that submission was another request.
func (c *Core) replayedCampaignJob(ctx context.Context, req campaign.JobRequest, key, hash string) (string, error) {
	row, err := c.store.TaskByIdempotencyKey(ctx, key)
	if errors.Is(err, store.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if row.IdempotencyHash != hash {
		return "", fmt.Errorf("%w: this Idempotency-Key was already used for a different submission (task %s): "+
			"a retry must send the same request; use a new key for a new campaign job", ErrInvalid, row.ID)
	}
	if req.Stored != nil {
		req.Stored(row.ID)
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), readAfterSubmit)
	defer cancel()
	v, err := c.CampaignJob(rctx, row.ID)
	if err != nil {
		return row.ID, err
	}
	if v.TaskState == model.TaskFailed {
		sys := ""
		if row.Target != nil {
			sys = row.Target.System
		}
		return row.ID, fmt.Errorf("task %s: %s refused the job: %s", row.ID, sys, v.Reason)
	}
	return row.ID, nil
}

// submitCampaignJob stores and submits the job (SubmitCampaignJobIdempotent has
// checked the run); key and hash are stored with the task ("" = no key).
func (c *Core) submitCampaignJob(ctx context.Context, req campaign.JobRequest, key, hash string) (string, error) {
	spec := req.Spec
	if spec.Tag == "" || spec.Partition == "" || spec.Walltime <= 0 || (spec.Command == "" && spec.Script == "") {
		return "", fmt.Errorf("campaign job of site %s: tag, partition, walltime and command are required: %w", req.Site, ErrInvalid)
	}
	target, err := c.ParseTarget(spec.System + ":" + spec.Partition)
	if err != nil {
		return "", err
	}
	spec.System = target.System
	name := spec.Name
	if name == "" {
		name = "campaign " + req.RunID + " on " + req.Site
	}
	if r := []rune(name); len(r) > model.MaxNameChars {
		name = string(r[:model.MaxNameChars])
	}
	task := model.Task{Name: name, Command: spec.Command, Script: spec.Script, Target: target, State: model.TaskPlaced,
		Owner: model.CallerOf(ctx).Name}
	if err := checkRequestText(SubmitRequest{Name: task.Name, Command: task.Command, Script: task.Script}); err != nil {
		return "", err
	}
	secret := spec.Env
	spec.Env = nil
	nodes := max(spec.Nodes, 1)
	cores := max(spec.NTasks, 1) * max(spec.CPUsPerTask, 1)
	task.Envelope = model.Envelope{Nodes: model.IntRange{Min: nodes, Max: nodes}, CPUCores: model.IntRange{Min: cores, Max: cores},
		Walltime: model.DurationRange{Min: spec.Walltime, Max: spec.Walltime}, Source: model.SourceUser,
		Rationale: "the campaign's --site " + req.Site}
	if spec.GPUs > 0 {
		task.Envelope.GPUs = model.IntRange{Min: spec.GPUs, Max: spec.GPUs}
	}
	task.ID = newTaskID()
	now := c.clock().UTC()
	task.CreatedAt, task.UpdatedAt = now, now
	pol, _ := json.Marshal(campaignPolicy())
	why := fmt.Sprintf("campaign run %s: site %s's slice [%s] runs where its --site says; it is never retried, resized or moved (its agents are tied to the run's exchange)",
		req.RunID, req.Site, strings.Join(req.Agents, " "))
	if len(secret) > 0 {
		keys := make([]string, 0, len(secret))
		for k := range secret {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		why += "; forwarded variables " + strings.Join(keys, ", ") + " are exported in the job and not stored"
	}
	evs := []model.Event{{TaskID: task.ID, Kind: "decision", Actor: model.ActorUser, System: target.System, Time: now,
		Message: fmt.Sprintf("campaign run %s: site %s's slice pinned to %s:%s by campaign launch", req.RunID, req.Site, target.System, target.Partition), Rationale: why}}
	// Marked as the run's (never replanned, never placed again after a restart) and,
	// with forwarded variables, as a task whose attempt only this call can submit.
	row := &store.TaskRow{Task: task, Policy: pol, CampaignRun: req.RunID, UnstoredEnv: len(secret) > 0,
		IdempotencyKey: key, IdempotencyHash: hash}
	if err := c.store.CreateTask(ctx, row, evs...); err != nil {
		if errors.Is(err, store.ErrFenced) {
			return "", fmt.Errorf("%w: store the campaign job of site %s: %w; retry (with the same Idempotency-Key) to reach the new leader", ErrUnavailable, req.Site, err)
		}
		return "", fmt.Errorf("store the campaign job of site %s: %w", req.Site, err)
	}
	c.audit(ctx, "task.submit", task.ID, fmt.Sprintf("campaign run %s, site %s, on %s:%s", req.RunID, req.Site, target.System, target.Partition))
	if req.Stored != nil {
		req.Stored(task.ID)
	}
	pl := &execution.Placement{System: target.System, Partition: target.Partition, Account: spec.Account, Spec: spec,
		Rationale: why, Tag: spec.Tag, Env: secret}
	// Stored: its attempt must not depend on the caller staying (a launcher's
	// Ctrl-C during sbatch is answered by cancelling the task, not by losing it).
	if err := c.engine.Dispatch(context.WithoutCancel(ctx), task.ID, pl, why); err != nil {
		return task.ID, fmt.Errorf("task %s: dispatch: %w", task.ID, err)
	}
	// A slow submit may have used up ctx's deadline: the job is queued all the same,
	// and reading what the engine recorded must not turn it into a failed launch.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), readAfterSubmit)
	defer cancel()
	v, err := c.CampaignJob(rctx, task.ID)
	if err != nil {
		return task.ID, err
	}
	if v.TaskState == model.TaskFailed {
		return task.ID, fmt.Errorf("task %s: %s refused the job: %s", task.ID, target.System, v.Reason)
	}
	return task.ID, nil
}

// readAfterSubmit bounds the store reads that follow a campaign job's submit.
const readAfterSubmit = 30 * time.Second

// CampaignJob implements campaign.Jobs: the task's state and its latest
// attempt's job.
func (c *Core) CampaignJob(ctx context.Context, taskID string) (campaign.JobView, error) {
	if c.store == nil {
		return campaign.JobView{}, fmt.Errorf("this core has no store: %w", ErrNotFound)
	}
	t, err := c.Task(ctx, taskID)
	if err != nil {
		return campaign.JobView{}, err
	}
	v := campaign.JobView{TaskID: t.ID, TaskState: t.State, Reason: t.Reason}
	if n := len(t.Attempts); n > 0 {
		a := t.Attempts[n-1]
		v.JobID, v.State, v.ExitCode = a.JobID, a.State, a.ExitCode
		if a.Reason != "" && v.Reason == "" {
			v.Reason = a.Reason
		}
	}
	return v, nil
}

// CancelCampaignJob implements campaign.Jobs: the engine cancels the task's
// job at its site (the monitor confirms it); a task that already ended is left
// as it is. A cancel the site did not take (it did not answer, or a job whose
// submit outcome is unknown could not be looked up) is not done: the error wraps
// campaign.ErrCancelPending, and so does asking again while an earlier cancel is
// still unconfirmed, so that `campaign stop` cancels the job at the site itself.
func (c *Core) CancelCampaignJob(ctx context.Context, taskID, why string) error {
	v, err := c.CampaignJob(ctx, taskID)
	if err != nil {
		return err
	}
	if v.TaskState.Final() {
		if v.State == model.JobCancelling {
			return fmt.Errorf("task %s: the cancel of job %s is not confirmed by the site yet: %w", taskID, orNone(v.JobID), campaign.ErrCancelPending)
		}
		return nil
	}
	c.audit(ctx, "task.cancel", taskID, "campaign job: "+why)
	if err := c.engine.CancelDelivered(ctx, taskID, why); err != nil {
		if errors.Is(err, execution.ErrCancelPending) {
			return cancelPending{err}
		}
		if v, verr := c.CampaignJob(ctx, taskID); verr == nil && v.TaskState.Final() && !errors.Is(err, ErrBusy) {
			if v.State == model.JobCancelling {
				return fmt.Errorf("task %s: the cancel of job %s is not confirmed by the site yet: %w", taskID, orNone(v.JobID), campaign.ErrCancelPending)
			}
			return nil // it ended meanwhile
		}
		return err
	}
	return nil
}

// cancelPending is the engine's pending cancel as campaign.ErrCancelPending.
type cancelPending struct{ err error }

func (p cancelPending) Error() string   { return p.err.Error() }
func (p cancelPending) Unwrap() []error { return []error{campaign.ErrCancelPending, p.err} }

func orNone(s string) string {
	if s == "" {
		return "(no job id yet)"
	}
	return s
}
