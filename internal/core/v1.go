package core

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	v1 "github.com/mosaic-hpc/mosaic/api/v1"
	"github.com/mosaic-hpc/mosaic/internal/campaign"
	"github.com/mosaic-hpc/mosaic/internal/errs"
	"github.com/mosaic-hpc/mosaic/internal/exchange"
	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/scheduler"
	"github.com/mosaic-hpc/mosaic/internal/scheduler/draft"
	"github.com/mosaic-hpc/mosaic/internal/store"
)

// This file is the one place internal types map onto the public wire types of api/v1.
// Every surface answers with v1 values built here, so the JSON a type produces is the
// same whichever surface sends it. Structs whose fields are plain values convert
// directly (v1.X(x)): the compiler then refuses a field added on one side only. The
// rest are copied field by field; TestV1JSONMatchesInternal fills every field of the
// internal types and fails when a mapped value's JSON differs (a forgotten field).
//
// A task's stored decision trace travels as the JSON the core stored (no decoding on
// a read); a fresh decision is explained, then copied.

// V1Envelope maps an envelope.
func V1Envelope(e model.Envelope) v1.Envelope {
	return v1.Envelope{
		GPUs:         v1.IntRange(e.GPUs),
		CPUCores:     v1.IntRange(e.CPUCores),
		MemoryGB:     v1.IntRange(e.MemoryGB),
		Walltime:     v1.DurationRange{Min: v1.Duration(e.Walltime.Min), Max: v1.Duration(e.Walltime.Max)},
		Nodes:        v1.IntRange(e.Nodes),
		Constraints:  v1Constraints(e.Constraints),
		Objective:    string(e.Objective),
		MaxQueueWait: v1.Duration(e.MaxQueueWait),
		Source:       e.Source,
		Confidence:   e.Confidence,
		Rationale:    e.Rationale,
	}
}

func v1Constraints(c model.Constraints) v1.Constraints {
	return v1.Constraints{Arch: c.Arch, GPUModels: c.GPUModels, AvoidGPUModels: c.AvoidGPUModels,
		MinGPUMemoryGB: c.MinGPUMemoryGB, Container: (*v1.Container)(c.Container), Features: c.Features, AvoidSystems: c.AvoidSystems}
}

// EnvelopeFromV1 maps a wire envelope back (the in-process MCP backend submits it).
func EnvelopeFromV1(e v1.Envelope) model.Envelope {
	c := e.Constraints
	return model.Envelope{
		GPUs:     model.IntRange(e.GPUs),
		CPUCores: model.IntRange(e.CPUCores),
		MemoryGB: model.IntRange(e.MemoryGB),
		Walltime: model.DurationRange{Min: model.Duration(e.Walltime.Min), Max: model.Duration(e.Walltime.Max)},
		Nodes:    model.IntRange(e.Nodes),
		Constraints: model.Constraints{Arch: c.Arch, GPUModels: c.GPUModels, AvoidGPUModels: c.AvoidGPUModels,
			MinGPUMemoryGB: c.MinGPUMemoryGB, Container: (*model.Container)(c.Container), Features: c.Features, AvoidSystems: c.AvoidSystems},
		Objective:    model.Objective(e.Objective),
		MaxQueueWait: model.Duration(e.MaxQueueWait),
		Source:       e.Source,
		Confidence:   e.Confidence,
		Rationale:    e.Rationale,
	}
}

// V1Policy maps a continuation policy.
func V1Policy(p model.Policy) v1.Policy {
	return v1.Policy{MaxAttempts: p.MaxAttempts, MaxMigrations: p.MaxMigrations, RetryFailed: p.RetryFailed,
		RetryTransient: p.RetryTransient, ResizeOnTimeout: p.ResizeOnTimeout, ResizeOnOOM: p.ResizeOnOOM,
		Growth: p.Growth, MigrateOnWait: p.MigrateOnWait, WaitFactor: p.WaitFactor, WaitSlack: v1.Duration(p.WaitSlack),
		SiteDownTicks: p.SiteDownTicks, LostGrace: v1.Duration(p.LostGrace), DownOutlookFactor: p.DownOutlookFactor,
		MigrateMargin: v1.Duration(p.MigrateMargin), ReestimateEvery: v1.Duration(p.ReestimateEvery), StayBackoff: v1.Duration(p.StayBackoff)}
}

func policyFromV1(p v1.Policy) model.Policy {
	return model.Policy{MaxAttempts: p.MaxAttempts, MaxMigrations: p.MaxMigrations, RetryFailed: p.RetryFailed,
		RetryTransient: p.RetryTransient, ResizeOnTimeout: p.ResizeOnTimeout, ResizeOnOOM: p.ResizeOnOOM,
		Growth: p.Growth, MigrateOnWait: p.MigrateOnWait, WaitFactor: p.WaitFactor, WaitSlack: model.Duration(p.WaitSlack),
		SiteDownTicks: p.SiteDownTicks, LostGrace: model.Duration(p.LostGrace), DownOutlookFactor: p.DownOutlookFactor,
		MigrateMargin: model.Duration(p.MigrateMargin), ReestimateEvery: model.Duration(p.ReestimateEvery), StayBackoff: model.Duration(p.StayBackoff)}
}

// V1SubmitRequest maps a submission onto the wire.
func V1SubmitRequest(r SubmitRequest) v1.SubmitRequest {
	out := v1.SubmitRequest{Name: r.Name, Command: r.Command, Script: r.Script, Description: r.Description,
		AutoEnvelope: r.AutoEnvelope, Target: r.Target, Objective: string(r.Objective), DryRun: r.DryRun}
	if r.Envelope != nil {
		e := V1Envelope(*r.Envelope)
		out.Envelope = &e
	}
	if r.Policy != nil {
		p := V1Policy(*r.Policy)
		out.Policy = &p
	}
	return out
}

// SubmitRequestFromV1 maps a wire submission back.
func SubmitRequestFromV1(r v1.SubmitRequest) SubmitRequest {
	out := SubmitRequest{Name: r.Name, Command: r.Command, Script: r.Script, Description: r.Description,
		AutoEnvelope: r.AutoEnvelope, Target: r.Target, Objective: model.Objective(r.Objective), DryRun: r.DryRun}
	if r.Envelope != nil {
		e := EnvelopeFromV1(*r.Envelope)
		out.Envelope = &e
	}
	if r.Policy != nil {
		p := policyFromV1(*r.Policy)
		out.Policy = &p
	}
	return out
}

// V1SubmitResult maps a submission's answer.
func V1SubmitResult(r *SubmitResult) *v1.SubmitResult {
	out := &v1.SubmitResult{DryRun: r.DryRun}
	if r.Task != nil {
		out.Task = V1TaskDetail(r.Task)
	}
	if r.Decision != nil {
		out.Decision = V1Decision(r.Decision)
	}
	return out
}

// V1Decision maps a placement decision. It explains the decision first (as encoding
// it does), so every candidate has every rule's verdict; like Explain, call it before
// sharing the decision between goroutines.
func V1Decision(d *scheduler.Decision) *v1.Decision {
	d.Explain()
	out := &v1.Decision{TaskID: d.TaskID, TaskName: d.TaskName, Objective: string(d.Objective),
		Envelope: V1Envelope(d.Envelope), Mode: d.Mode, Target: (*v1.Target)(d.Target), Exclude: d.Exclude,
		SnapshotSeq: d.SnapshotSeq, SnapshotAt: d.SnapshotAt, DecidedAt: d.DecidedAt, Rules: d.Rules, Ranker: d.Ranker,
		FallbackReason: d.FallbackReason, Chosen: d.Chosen, Spec: v1SpecPtr(d.Spec), Rationale: d.Rationale}
	if d.Candidates != nil {
		out.Candidates = make([]*v1.Candidate, len(d.Candidates))
		for i, c := range d.Candidates {
			out.Candidates[i] = v1Candidate(c)
		}
	}
	return out
}

func v1Candidate(c *scheduler.Candidate) *v1.Candidate {
	out := &v1.Candidate{System: c.System, Partition: c.Partition, Account: c.Account, SystemHealth: string(c.SystemHealth),
		Feasible: c.Feasible, Sizing: v1SpecPtr(c.Sizing), SizingNote: c.SizingNote, WalltimeNote: c.WalltimeNote,
		Scores: v1.Scores(c.Scores), EstWait: v1.Duration(c.EstWait), WaitSource: c.WaitSource, CostSU: c.CostSU,
		OverWait: c.OverWait, HeuristicRank: c.HeuristicRank, AIRank: c.AIRank, AIReason: c.AIReason, Rank: c.Rank}
	if c.SiteWait != nil {
		sw := v1.Duration(*c.SiteWait)
		out.SiteWait = &sw
	}
	if c.Verdicts != nil {
		out.Verdicts = make([]v1.Verdict, len(c.Verdicts))
		for i, v := range c.Verdicts {
			out.Verdicts[i] = v1.Verdict(v)
		}
	}
	return out
}

func v1SpecPtr(s *model.JobSpec) *v1.JobSpec {
	if s == nil {
		return nil
	}
	out := v1Spec(*s)
	return &out
}

func v1Spec(s model.JobSpec) v1.JobSpec {
	return v1.JobSpec{Tag: s.Tag, Name: s.Name, System: s.System, Partition: s.Partition, Account: s.Account,
		Nodes: s.Nodes, NTasks: s.NTasks, CPUsPerTask: s.CPUsPerTask, GPUs: s.GPUs, GPUsPerNode: s.GPUsPerNode,
		GPUModel: s.GPUModel, MemoryGB: s.MemoryGB, Walltime: v1.Duration(s.Walltime), Command: s.Command,
		Script: s.Script, Env: s.Env, WorkDir: s.WorkDir, Container: (*v1.Container)(s.Container), Nice: s.Nice, NoSiteEnvScript: s.NoSiteEnvScript}
}

// V1Task maps a task.
func V1Task(t model.Task) v1.Task {
	return v1.Task{ID: t.ID, Name: t.Name, Command: t.Command, Script: t.Script, Description: t.Description,
		Envelope: V1Envelope(t.Envelope), Target: (*v1.Target)(t.Target), State: string(t.State), Reason: t.Reason,
		Owner: t.Owner, CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt}
}

// V1Attempt maps an attempt.
func V1Attempt(a *model.Attempt) *v1.Attempt {
	return &v1.Attempt{TaskID: a.TaskID, N: a.N, Tag: a.Tag, System: a.System, Partition: a.Partition,
		Account: a.Account, Spec: v1Spec(a.Spec), Script: a.Script, JobID: a.JobID, State: string(a.State),
		RawState: a.RawState, ExitCode: a.ExitCode, Reason: a.Reason, CreatedAt: a.CreatedAt,
		EstimatedStart: a.EstimatedStart, StartedAt: a.StartedAt, EndedAt: a.EndedAt}
}

// V1TaskDetail maps a task with its attempts and its stored decision trace.
func V1TaskDetail(t *TaskDetail) *v1.TaskDetail {
	out := &v1.TaskDetail{Task: V1Task(t.Task), Policy: V1Policy(t.Policy), Decision: t.Decision, DraftFallback: t.DraftFallback}
	if t.Attempts != nil {
		out.Attempts = make([]*v1.Attempt, len(t.Attempts))
		for i, a := range t.Attempts {
			out.Attempts[i] = V1Attempt(a)
		}
	}
	return out
}

// V1TaskSummaries maps the task list.
func V1TaskSummaries(ts []TaskSummary) []v1.TaskSummary {
	if ts == nil {
		return nil
	}
	out := make([]v1.TaskSummary, len(ts))
	for i, t := range ts {
		out[i] = v1.TaskSummary{ID: t.ID, Name: t.Name, State: string(t.State), System: t.System, Partition: t.Partition,
			JobID: t.JobID, JobState: string(t.JobState), Attempts: t.Attempts, Sizing: t.Sizing, Pinned: t.Pinned,
			Reason: t.Reason, Owner: t.Owner, CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt}
	}
	return out
}

// V1Logs maps an attempt's log tails.
func V1Logs(l *JobLogs) *v1.Logs {
	return &v1.Logs{JobID: l.JobID, StdoutPath: l.StdoutPath, StderrPath: l.StderrPath, Stdout: l.Stdout,
		Stderr: l.Stderr, Truncated: l.Truncated, TaskID: l.TaskID, Attempt: l.Attempt, System: l.System,
		Host: l.Host, JobState: string(l.JobState), Note: l.Note}
}

// V1Event maps an activity-log entry.
func V1Event(e model.Event) v1.Event {
	return v1.Event{ID: e.ID, Time: e.Time, TaskID: e.TaskID, Attempt: e.Attempt, System: e.System, Kind: e.Kind,
		Message: e.Message, Rationale: e.Rationale, Actor: string(e.Actor)}
}

// V1Events maps activity-log entries.
func V1Events(es []model.Event) []v1.Event {
	if es == nil {
		return nil
	}
	out := make([]v1.Event, len(es))
	for i, e := range es {
		out[i] = V1Event(e)
	}
	return out
}

// V1EventPage maps a page of the activity log.
func V1EventPage(p *EventPage) *v1.EventPage {
	return &v1.EventPage{Events: V1Events(p.Events), NextBefore: p.NextBefore, NextAfter: p.NextAfter, LastID: p.LastID}
}

// V1Draft maps a drafted envelope and the drafter that wrote it.
func V1Draft(r draft.Result, drafter string) *v1.DraftResult {
	return &v1.DraftResult{Envelope: V1Envelope(r.Envelope), FallbackReason: r.FallbackReason, Drafter: drafter}
}

// V1Record maps a resource record.
func V1Record(r *model.ResourceRecord) v1.ResourceRecord {
	return v1.ResourceRecord{Timestamp: r.Timestamp, Provider: r.Provider, Endpoint: r.Endpoint, System: r.System,
		Partition: r.Partition, Account: r.Account, Arch: r.Arch, CPUCoresPerNode: r.CPUCoresPerNode,
		MemoryPerNodeGB: r.MemoryPerNodeGB, GPUModel: r.GPUModel, GPUsPerNode: r.GPUsPerNode, GPUMemoryGB: r.GPUMemoryGB,
		Nodes: v1.NodeCounts(r.Nodes), TotalGPUs: r.TotalGPUs, FreeGPUs: r.FreeGPUs, TotalCores: r.TotalCores,
		FreeCores: r.FreeCores, RunningJobs: r.RunningJobs, PendingJobs: r.PendingJobs, MyRunningJobs: r.MyRunningJobs,
		MyPendingJobs: r.MyPendingJobs, WalltimeCap: v1.Duration(r.WalltimeCap), MaxNodesPerJob: r.MaxNodesPerJob,
		MaxRunningPerUser: r.MaxRunningPerUser, MaxSubmitPerUser: r.MaxSubmitPerUser, Exclusive: r.Exclusive,
		ChargeFactor: r.ChargeFactor, ContainerRuntimes: r.ContainerRuntimes, Features: r.Features,
		Health: string(r.Health), LastError: r.LastError, ProbeLatencyMS: r.ProbeLatencyMS}
}

// V1Records maps resource records.
func V1Records(rs []model.ResourceRecord) []v1.ResourceRecord {
	if rs == nil {
		return nil
	}
	out := make([]v1.ResourceRecord, len(rs))
	for i := range rs {
		out[i] = V1Record(&rs[i])
	}
	return out
}

// V1SystemHealth maps a system's probe state.
func V1SystemHealth(h model.SystemHealth) v1.SystemHealth {
	return v1.SystemHealth{System: h.System, Provider: h.Provider, Endpoint: h.Endpoint, Health: string(h.Health),
		LastError: h.LastError, ProbeLatencyMS: h.ProbeLatencyMS, LastProbe: h.LastProbe, LastSuccess: h.LastSuccess,
		ConsecutiveBad: h.ConsecutiveBad}
}

func v1Systems(hs []model.SystemHealth) []v1.SystemHealth {
	if hs == nil {
		return nil
	}
	out := make([]v1.SystemHealth, len(hs))
	for i, h := range hs {
		out[i] = V1SystemHealth(h)
	}
	return out
}

// V1Snapshot maps the merged federation snapshot.
func V1Snapshot(s *model.ResourceSnapshot) *v1.ResourceSnapshot {
	return &v1.ResourceSnapshot{TakenAt: s.TakenAt, Seq: s.Seq, Systems: v1Systems(s.Systems), Records: V1Records(s.Records)}
}

// V1History maps stored partition history.
func V1History(ps []store.HistoryPoint) []v1.HistoryPoint {
	if ps == nil {
		return nil
	}
	out := make([]v1.HistoryPoint, len(ps))
	for i, p := range ps {
		out[i] = v1.HistoryPoint(p)
	}
	return out
}

// V1Status maps the queue-status view.
func V1Status(s *Status) *v1.Status {
	out := &v1.Status{TakenAt: s.TakenAt, Systems: v1Systems(s.Systems)}
	if s.Rows != nil {
		out.Rows = make([]v1.StatusRow, len(s.Rows))
		for i, r := range s.Rows {
			out.Rows[i] = v1.StatusRow{System: r.System, Partition: r.Partition, Health: string(r.Health),
				GPUModel: r.GPUModel, FreeGPUs: r.FreeGPUs, TotalGPUs: r.TotalGPUs, FreeCores: r.FreeCores,
				TotalCores: r.TotalCores, BusyPercent: r.BusyPercent, Nodes: v1.NodeCounts(r.Nodes), Running: r.Running,
				Pending: r.Pending, MyRunning: r.MyRunning, MyPending: r.MyPending, WalltimeCap: v1.Duration(r.WalltimeCap),
				Wait: r.Wait}
		}
	}
	return out
}

// V1About maps the core's version and configuration.
func V1About(a About) v1.About {
	return v1.About{Version: a.Version, Commit: a.Commit, GoVersion: a.GoVersion, Catalog: a.Catalog, Systems: a.Systems,
		Tick: a.Tick, Store: a.Store, Ranker: a.Ranker, Drafter: a.Drafter, Rules: a.Rules, Started: a.Started,
		Sim: (*v1.SimClock)(a.Sim)}
}

// V1ResourceDetail maps one system's detail.
func V1ResourceDetail(d *ResourceDetail) *v1.ResourceDetail {
	return &v1.ResourceDetail{System: V1SystemHealth(d.System), Kind: d.Kind, Dialect: d.Dialect, Host: d.Host,
		Endpoint: d.Endpoint, Accounts: d.Accounts, WorkDir: d.WorkDir, Machine: d.Machine, Partitions: V1Records(d.Partitions)}
}

// V1SiteEnv maps what a look at a login node found.
func V1SiteEnv(e SiteEnv) v1.SiteEnv { return v1.SiteEnv(e) }

// V1ExecResult maps a look-around command's output.
func V1ExecResult(r ExecResult) v1.ExecResult { return v1.ExecResult(r) }

// V1CampaignRuns maps the campaign-run listing.
func V1CampaignRuns(rs []CampaignRunSummary) []v1.CampaignRunSummary {
	if rs == nil {
		return nil
	}
	out := make([]v1.CampaignRunSummary, len(rs))
	for i, r := range rs {
		out[i] = v1.CampaignRunSummary(r)
	}
	return out
}

func v1Counts(cs []exchange.SiteCount) []v1.SiteCount {
	if cs == nil {
		return nil
	}
	out := make([]v1.SiteCount, len(cs))
	for i, c := range cs {
		out[i] = v1.SiteCount(c)
	}
	return out
}

// V1CampaignRun maps one run's detail.
func V1CampaignRun(d *CampaignRunDetail) *v1.CampaignRunDetail {
	out := &v1.CampaignRunDetail{CampaignRunSummary: v1.CampaignRunSummary(d.CampaignRunSummary), ExchangeURL: d.ExchangeURL,
		Bootstrapped: d.Bootstrapped, Error: d.Error, Counts: v1Counts(d.Counts)}
	if d.SiteStatus != nil {
		out.SiteStatus = make([]v1.CampaignSite, len(d.SiteStatus))
		for i, s := range d.SiteStatus {
			out.SiteStatus[i] = v1.CampaignSite(s)
		}
	}
	return out
}

// V1CampaignTimeline maps a run's merged message timeline.
func V1CampaignTimeline(t *CampaignTimeline) *v1.CampaignTimeline {
	out := &v1.CampaignTimeline{RunID: t.RunID, Source: t.Source, Counts: v1Counts(t.Counts)}
	if t.Messages != nil {
		out.Messages = make([]v1.TimelineEntry, len(t.Messages))
		for i, m := range t.Messages {
			out.Messages[i] = v1.TimelineEntry{Run: m.Run, Time: m.Time, Src: m.Src, Dest: m.Dest,
				SrcUID: m.SrcUID.String(), DestUID: m.DestUID.String(), SrcSite: m.SrcSite, DestSite: m.DestSite,
				Kind: m.Kind, Size: m.Size, Tag: m.Tag.String(), CrossSite: m.CrossSite}
		}
	}
	return out
}

// V1Error maps an error of the core onto the problem the API answers with: the HTTP
// status that fits it and the message intact. A *v1.Error passes through.
func V1Error(err error) *v1.Error {
	if err == nil {
		return nil
	}
	var ve *v1.Error
	if errors.As(err, &ve) {
		return ve
	}
	msg := err.Error()
	status := http.StatusInternalServerError
	var re *RefusedError
	switch {
	case errors.Is(err, ErrUnavailable):
		status = http.StatusServiceUnavailable
	case errors.As(err, &re):
		// A look-around refusal: 400 malformed, 403 secrets or outside the workdir,
		// 409 a target in the way, 413 too large.
		switch re.Kind {
		case RefusedForbidden:
			status = http.StatusForbidden
		case RefusedConflict:
			status = http.StatusConflict
		case RefusedTooLarge:
			status = http.StatusRequestEntityTooLarge
		default:
			status = http.StatusBadRequest
		}
	case errors.Is(err, ErrUnauthenticated):
		status = http.StatusUnauthorized
	case errors.Is(err, ErrForbidden):
		status = http.StatusForbidden
	case errors.Is(err, ErrNotFound):
		status = http.StatusNotFound
	case errors.Is(err, errs.ErrSiteDown), errors.Is(err, errs.ErrTransient):
		// A site that cannot be reached (or was briefly busy) now: 503, also when the
		// operation wrapped it as a refused request.
		status = http.StatusServiceUnavailable
	case errors.Is(err, errs.ErrNeedsLogin):
		status = http.StatusBadGateway // the site refused Mosaic's credentials
	case errors.Is(err, ErrSiteFailed):
		status = http.StatusBadGateway // reached, but it failed the request
	case errors.Is(err, ErrNotReady):
		status, msg = http.StatusServiceUnavailable, msg+"; retry in a few seconds"
	case errors.Is(err, ErrInvalid):
		status = http.StatusUnprocessableEntity
	case errors.Is(err, ErrBusy):
		status = http.StatusConflict
	}
	return &v1.Error{Status: status, Title: http.StatusText(status), Detail: msg}
}

// refused is a 422 answer for a malformed query parameter.
func refused(format string, args ...any) *v1.Error {
	return &v1.Error{Status: http.StatusUnprocessableEntity, Title: http.StatusText(http.StatusUnprocessableEntity),
		Detail: fmt.Sprintf(format, args...)}
}

// ParseSince reads an RFC 3339 time or a duration back from now; "" is an hour ago.
func ParseSince(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return now.Add(-time.Hour), nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	d, err := model.ParseDuration(s)
	if err != nil || d < 0 {
		return time.Time{}, refused("since=%q: want an RFC 3339 time or a duration such as 1h", s)
	}
	return now.Add(-d.D()), nil
}

// EventQueryFromV1 reads a wire event query: order newest (the default without
// after_id) or oldest, since as ParseSince reads it.
func EventQueryFromV1(f v1.EventQuery, now time.Time) (EventQuery, error) {
	q := EventQuery{TaskID: f.Task, AfterID: f.AfterID, BeforeID: f.BeforeID, Kinds: f.Kinds, Limit: f.Limit}
	switch strings.TrimSpace(f.Order) {
	case "newest":
		q.Newest = true
	case "oldest":
	case "":
		q.Newest = f.AfterID == 0
	default:
		return q, refused("order=%q: want newest or oldest", f.Order)
	}
	if f.Since != "" {
		t, err := ParseSince(f.Since, now)
		if err != nil {
			return q, err
		}
		q.Since = t
	}
	return q, nil
}

// IdleFilterFromV1 reads a wire idle query: a nil MaxQueue (or a negative one) is any
// queue depth.
func IdleFilterFromV1(f v1.IdleQuery) IdleFilter {
	maxQueue := -1
	if f.MaxQueue != nil && *f.MaxQueue >= 0 {
		maxQueue = *f.MaxQueue
	}
	return IdleFilter{GPUs: f.GPUs, GPUMemGB: f.GPUMemGB, Cores: f.Cores, Arch: f.Arch, GPUModel: f.GPUModel,
		MaxQueue: maxQueue, Provider: f.Provider, System: f.System}
}

// JobSpecFromV1 maps a wire job spec back (the CLI renders sizings with its methods).
func JobSpecFromV1(s v1.JobSpec) model.JobSpec {
	return model.JobSpec{Tag: s.Tag, Name: s.Name, System: s.System, Partition: s.Partition, Account: s.Account,
		Nodes: s.Nodes, NTasks: s.NTasks, CPUsPerTask: s.CPUsPerTask, GPUs: s.GPUs, GPUsPerNode: s.GPUsPerNode,
		GPUModel: s.GPUModel, MemoryGB: s.MemoryGB, Walltime: model.Duration(s.Walltime), Command: s.Command,
		Script: s.Script, Env: s.Env, WorkDir: s.WorkDir, Container: (*model.Container)(s.Container), Nice: s.Nice, NoSiteEnvScript: s.NoSiteEnvScript}
}

// DecisionFromV1 reads a wire decision back into the scheduler's type (the CLI prints
// its candidate table with it), through the JSON trace both share.
func DecisionFromV1(d *v1.Decision) (*scheduler.Decision, error) {
	b, err := json.Marshal(d)
	if err != nil {
		return nil, err
	}
	var out scheduler.Decision
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("reading the decision trace: %w", err)
	}
	return &out, nil
}

// ---- Campaign jobs (POST/GET /api/campaign-jobs): a launcher's submit-mode
// slice jobs run by the core that owns the store. ----

// CampaignJobRequestFromV1 maps a wire campaign job request (the forwarded
// environment, Spec.Env, travels in it).
func CampaignJobRequestFromV1(r v1.CampaignJobRequest) campaign.JobRequest {
	return campaign.JobRequest{RunID: r.RunID, Site: r.Site, Agents: r.Agents, Spec: JobSpecFromV1(r.Spec)}
}

// V1CampaignJobRequest maps a launcher's campaign job request onto the wire (its
// Stored callback stays with the caller).
func V1CampaignJobRequest(r campaign.JobRequest) v1.CampaignJobRequest {
	return v1.CampaignJobRequest{RunID: r.RunID, Site: r.Site, Agents: r.Agents, Spec: v1Spec(r.Spec)}
}

// V1CampaignJob maps a campaign job's view.
func V1CampaignJob(v campaign.JobView) v1.CampaignJob {
	return v1.CampaignJob{TaskID: v.TaskID, TaskState: string(v.TaskState), JobID: v.JobID, State: string(v.State),
		ExitCode: v.ExitCode, Reason: v.Reason}
}

// CampaignJobFromV1 maps a wire campaign job view back.
func CampaignJobFromV1(v v1.CampaignJob) campaign.JobView {
	return campaign.JobView{TaskID: v.TaskID, TaskState: model.TaskState(v.TaskState), JobID: v.JobID,
		State: model.JobState(v.State), ExitCode: v.ExitCode, Reason: v.Reason}
}
