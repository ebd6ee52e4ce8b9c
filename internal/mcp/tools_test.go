package mcp_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "github.com/mosaic-hpc/mosaic/api/v1"
	"github.com/mosaic-hpc/mosaic/client"
	"github.com/mosaic-hpc/mosaic/internal/mcp"
)

var allTools = []string{"list_resources", "find_idle", "draft_envelope", "submit_task", "get_task", "list_tasks",
	"wait_task", "cancel_task", "replan_task", "recent_events", "task_logs", "system_env"}

// smallEnvelope fits any CPU partition of the demo federation.
var smallEnvelope = map[string]any{
	"cpu_cores": map[string]any{"min": 1, "max": 1},
	"memory_gb": map[string]any{"min": 1, "max": 1},
	"walltime":  map[string]any{"min": "10m", "max": "10m"},
}

func TestToolsAreListedWithSchemas(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *session) {
		res, err := s.cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tool := range res.Tools {
			names = append(names, tool.Name)
			if tool.Description == "" || tool.InputSchema == nil || tool.OutputSchema == nil || tool.Annotations == nil {
				t.Errorf("%s: want a description, input and output schemas and annotations", tool.Name)
				continue
			}
			// MCP clients (the TypeScript SDK among them) insist on plain object schemas.
			for kind, sch := range map[string]any{"input": tool.InputSchema, "output": tool.OutputSchema} {
				m, _ := sch.(map[string]any)
				if m["type"] != "object" {
					t.Errorf("%s: %s schema type is %v, want \"object\"", tool.Name, kind, m["type"])
				}
			}
		}
		for _, want := range allTools {
			if !slices.Contains(names, want) {
				t.Errorf("tool %s missing; have %v", want, names)
			}
		}
		if init := s.cs.InitializeResult(); init == nil || !strings.Contains(init.Instructions, "submit_task") {
			t.Error("the server must send instructions naming the workflow")
		}
	})
}

func TestPoolTools(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *session) {

		var all mcp.ListResourcesOut
		s.ok("list_resources", map[string]any{}, &all)
		if len(all.Systems) != 6 || len(all.Records) == 0 {
			t.Fatalf("want 6 systems with records, got %d systems, %d records", len(all.Systems), len(all.Records))
		}
		var delta mcp.ListResourcesOut
		s.ok("list_resources", map[string]any{"system": "delta", "gpu_only": true}, &delta)
		if len(delta.Systems) != 1 || len(delta.Records) == 0 {
			t.Fatalf("delta, GPU only: %d systems, %d records", len(delta.Systems), len(delta.Records))
		}
		for _, r := range delta.Records {
			if r.System != delta.Systems[0].System || r.GPUsPerNode == 0 {
				t.Errorf("filter leaked %s/%s (gpus/node %d)", r.System, r.Partition, r.GPUsPerNode)
			}
		}
		s.fails("list_resources", map[string]any{"system": "nosuch"}, "nosuch", "known systems", "Delta@NCSA")
		s.fails("list_resources", map[string]any{"sytem": "delta"}, "sytem")     // unknown argument
		s.fails("list_resources", map[string]any{"gpu_only": "yes"}, "gpu_only") // wrong type

		var idle mcp.FindIdleOut
		s.ok("find_idle", map[string]any{"gpus": 1}, &idle)
		if idle.Count == 0 || idle.Count != len(idle.Partitions) {
			t.Fatalf("find_idle gpus=1: count %d, %d partitions", idle.Count, len(idle.Partitions))
		}
		for _, r := range idle.Partitions {
			if r.FreeGPUs < 1 {
				t.Errorf("%s/%s has %d free GPUs", r.System, r.Partition, r.FreeGPUs)
			}
		}
		var none mcp.FindIdleOut
		s.ok("find_idle", map[string]any{"gpus": 100000}, &none)
		if none.Count != 0 {
			t.Errorf("100000 free GPUs in one partition: %d matches", none.Count)
		}
		var shallow mcp.FindIdleOut
		s.ok("find_idle", map[string]any{"cores": 1, "max_queue": 0}, &shallow)
		for _, r := range shallow.Partitions {
			if r.PendingJobs > 0 {
				t.Errorf("max_queue 0 let through %s/%s with %d pending", r.System, r.Partition, r.PendingJobs)
			}
		}
		// gpu_mem (the HTTP query's and the CLI's --gpu-mem) and its deprecated name gpu_mem_gb.
		var big, bigOld mcp.FindIdleOut
		s.ok("find_idle", map[string]any{"gpus": 1, "gpu_mem": 80}, &big)
		s.ok("find_idle", map[string]any{"gpus": 1, "gpu_mem_gb": 80}, &bigOld)
		if big.Count == 0 || big.Count >= idle.Count || big.Count != bigOld.Count {
			t.Errorf("find_idle gpu_mem 80: %d partitions, gpu_mem_gb 80: %d, any memory: %d", big.Count, bigOld.Count, idle.Count)
		}
		for _, r := range big.Partitions {
			if r.GPUMemoryGB < 80 {
				t.Errorf("gpu_mem 80 let through %s/%s with %d GB GPUs", r.System, r.Partition, r.GPUMemoryGB)
			}
		}
		s.fails("find_idle", map[string]any{"gpu_mem": 40, "gpu_mem_gb": 80}, "disagree", "give gpu_mem only")
		s.fails("find_idle", map[string]any{"gpu_mem": -1}, "negative")
		s.fails("find_idle", map[string]any{"gpus": -1}, "negative")
		s.fails("find_idle", map[string]any{"max_queue": -2}, "max_queue")
		s.fails("find_idle", map[string]any{"arch": "sparc"}, "x86_64")
		s.fails("find_idle", map[string]any{"provider": "pbs"}, "sim, ssh, local or globus")
		s.fails("find_idle", map[string]any{"gpus": "four"}, "gpus")

		s.fails("system_env", map[string]any{"system": "delta"}, "sim", "login node")
		s.fails("system_env", map[string]any{"system": ""}, "system is empty")
		s.fails("system_env", map[string]any{}, "system")
		s.fails("system_env", map[string]any{"system": "nosuch"}, "nosuch")
	})
}

func TestTaskLifecycle(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *session) {

		var draft mcp.DraftEnvelopeOut
		s.ok("draft_envelope", map[string]any{"name": "ft", "description": "fine-tune a 7B language model on 4 GPUs for about 3 hours"}, &draft)
		if draft.Envelope.GPUs.Min < 1 || draft.Envelope.Walltime.Min <= 0 || draft.Drafter == "" || draft.Envelope.Source == "" {
			t.Fatalf("draft: %+v", draft)
		}
		s.fails("draft_envelope", map[string]any{"description": "  "}, "description is empty")
		s.fails("draft_envelope", map[string]any{"description": strings.Repeat("x", 20001)}, "at most 20000")
		s.fails("draft_envelope", map[string]any{"name": "x"}, "description")

		// Dry run: a decision, no task.
		var dry mcp.SubmitTaskOut
		s.ok("submit_task", map[string]any{"name": "dry", "command": "echo hi", "envelope": smallEnvelope, "dry_run": true}, &dry)
		if !dry.DryRun || dry.Task != nil || dry.Trace.Chosen == "" || dry.Trace.Feasible == 0 || dry.Trace.Mode != "auto" {
			t.Fatalf("dry run: %+v", dry)
		}
		if c := dry.Trace.Candidates[0]; !c.Feasible || c.Rank != 1 || c.Scores == nil || c.Key != dry.Trace.Chosen {
			t.Errorf("first candidate is not the chosen, ranked, scored one: %+v", c)
		}
		if len(dry.Trace.Rules) == 0 || dry.Trace.Rationale == "" || dry.Trace.Spec == nil {
			t.Errorf("trace lacks rules, rationale or spec: %+v", dry.Trace)
		}

		// Pinned dry run with the full trace: every candidate carries every verdict.
		var pinned mcp.SubmitTaskOut
		s.ok("submit_task", map[string]any{"name": "pin", "command": "echo hi", "envelope": smallEnvelope, "dry_run": true,
			"target": "anvil", "full_trace": true}, &pinned)
		if pinned.Trace.Mode != "pinned" || !strings.HasPrefix(pinned.Trace.Chosen, "Anvil") {
			t.Fatalf("pinned to anvil: mode %s, chosen %s", pinned.Trace.Mode, pinned.Trace.Chosen)
		}
		for _, c := range pinned.Trace.Candidates {
			if len(c.Verdicts) == 0 {
				t.Fatalf("full trace: %s has no verdicts", c.Key)
			}
			if !c.Feasible && len(c.Failed) == 0 {
				t.Fatalf("infeasible %s names no failed rule", c.Key)
			}
		}

		// Bad submissions come back as tool errors saying what to change.
		s.fails("submit_task", map[string]any{"name": "x", "envelope": smallEnvelope}, "command")
		s.fails("submit_task", map[string]any{"command": "echo", "envelope": smallEnvelope}, "name")
		s.fails("submit_task", map[string]any{"name": "x", "command": "echo"}, "envelope")
		s.fails("submit_task", map[string]any{"name": "x", "command": "echo", "envelope": smallEnvelope, "objective": "cheapest"}, "objective", "min_cost")
		s.fails("submit_task", map[string]any{"name": "x", "command": "echo", "envelope": smallEnvelope, "target": "delta:nopart"}, "refused", "no partition")
		s.fails("submit_task", map[string]any{"name": "x", "command": "echo", "envelope": smallEnvelope, "target": "atlantis"}, "atlantis")
		s.fails("submit_task", map[string]any{"name": "x", "command": "echo",
			"envelope": map[string]any{"gpus": map[string]any{"min": 100000}, "walltime": map[string]any{"min": "1h"}}}, "refused")
		s.fails("submit_task", map[string]any{"name": "x", "command": "echo",
			"envelope": map[string]any{"walltime": map[string]any{"min": "forever"}}}, "forever")
		s.fails("submit_task", map[string]any{"name": "x", "command": "echo", "envelope": "small"}, "envelope")

		// A real task: submit, wait with progress, read it back, its logs and events.
		var sub mcp.SubmitTaskOut
		s.ok("submit_task", map[string]any{"name": "hello", "command": "sleep 1; echo hi from mosaic", "envelope": smallEnvelope}, &sub)
		if sub.DryRun || sub.Task == nil || sub.Task.ID == "" || sub.Trace.Chosen == "" {
			t.Fatalf("submit: %+v", sub)
		}
		id := sub.Task.ID
		res := s.call("wait_task", map[string]any{"id": id, "timeout_seconds": 60}, "wait-1")
		if res.IsError {
			t.Fatalf("wait_task: %s", text(res))
		}
		var waited mcp.WaitTaskOut
		decode(t, res, &waited)
		if !waited.Reached || waited.Task.State != "succeeded" || !waited.Task.Final {
			t.Fatalf("wait_task: reached=%v state=%s reason=%s progress=%v", waited.Reached, waited.Task.State, waited.Task.Reason, waited.Progress)
		}
		if len(waited.Progress) == 0 {
			t.Error("wait_task reported no progress")
		}
		s.mu.Lock()
		got := len(s.progress)
		for _, p := range s.progress {
			if p.ProgressToken != "wait-1" || p.Message == "" {
				t.Errorf("progress notification %+v", p)
			}
		}
		s.mu.Unlock()
		if got == 0 {
			t.Error("no progress notifications although the call carried a progress token")
		}

		var task mcp.TaskView
		s.ok("get_task", map[string]any{"id": id}, &task)
		if task.State != "succeeded" || len(task.Attempts) == 0 || task.Trace == nil || task.Trace.Chosen == "" || task.Next == "" {
			t.Fatalf("get_task: %+v", task)
		}
		if a := task.Attempts[len(task.Attempts)-1]; a.JobID == "" || a.State != "succeeded" {
			t.Errorf("attempt: %+v", a)
		}
		s.fails("get_task", map[string]any{"id": "nosuchid"}, "not found", "nosuchid")
		s.fails("get_task", map[string]any{"id": ""}, "id is empty")
		s.fails("get_task", map[string]any{}, "id")
		s.fails("get_task", map[string]any{"id": strings.Repeat("x", 100)}, "characters")

		var logs client.Logs
		s.ok("task_logs", map[string]any{"id": id}, &logs)
		if !strings.Contains(logs.Stdout, "hi from mosaic") {
			t.Errorf("stdout %q lacks the command's output", logs.Stdout)
		}
		s.fails("task_logs", map[string]any{"id": id, "attempt": -1}, "attempt")
		s.fails("task_logs", map[string]any{"id": id, "tail": 1 << 30}, "tail")
		// tail_bytes is the deprecated name of tail: still accepted, and the two must agree.
		var short, shortOld client.Logs
		s.ok("task_logs", map[string]any{"id": id, "tail": 4}, &short)
		s.ok("task_logs", map[string]any{"id": id, "tail_bytes": 4}, &shortOld)
		if len(short.Stdout) > 4 || short.Stdout != shortOld.Stdout {
			t.Errorf("tail 4 gave %q, tail_bytes 4 gave %q", short.Stdout, shortOld.Stdout)
		}
		s.fails("task_logs", map[string]any{"id": id, "tail_bytes": 1 << 30}, "tail")
		s.fails("task_logs", map[string]any{"id": id, "tail": 4, "tail_bytes": 8}, "disagree", "give tail only")
		s.fails("task_logs", map[string]any{"id": "nosuchid"}, "not found")

		var evs mcp.RecentEventsOut
		s.ok("recent_events", map[string]any{"task": id}, &evs)
		kinds := map[string]bool{}
		for _, e := range evs.Events {
			kinds[e.Kind] = true
			if e.TaskID != id {
				t.Errorf("event of task %s leaked into the filter for %s", e.TaskID, id)
			}
		}
		if !kinds["decision"] || evs.Count != len(evs.Events) || evs.LastID == 0 {
			t.Errorf("events: kinds %v, count %d, last id %d", kinds, evs.Count, evs.LastID)
		}
		var after mcp.RecentEventsOut
		s.ok("recent_events", map[string]any{"task": id, "after_id": evs.LastID}, &after)
		if after.Count != 0 {
			t.Errorf("after_id = last_id returned %d events", after.Count)
		}
		var decisions mcp.RecentEventsOut
		s.ok("recent_events", map[string]any{"kind": []string{"decision"}, "since": "1h", "limit": 1}, &decisions)
		if decisions.Count != 1 || decisions.Events[0].Kind != "decision" {
			t.Errorf("kind filter with limit 1: %+v", decisions)
		}
		// kinds and before_id are the deprecated names of kind and before.
		var decisionsOld mcp.RecentEventsOut
		s.ok("recent_events", map[string]any{"kinds": []string{"decision"}, "since": "1h", "limit": 1}, &decisionsOld)
		if decisionsOld.Count != 1 || decisionsOld.Events[0].ID != decisions.Events[0].ID {
			t.Errorf("kinds (deprecated) and kind disagree: %+v vs %+v", decisionsOld, decisions)
		}
		s.fails("recent_events", map[string]any{"kind": []string{"decision"}, "kinds": []string{"draft"}}, "disagree", "give kind only")
		var older, olderOld mcp.RecentEventsOut
		s.ok("recent_events", map[string]any{"task": id, "before": evs.LastID}, &older)
		s.ok("recent_events", map[string]any{"task": id, "before_id": evs.LastID}, &olderOld)
		if older.Count == 0 || older.Count != olderOld.Count || older.LastID >= evs.LastID {
			t.Errorf("before %d: %d events (last %d); before_id: %d events", evs.LastID, older.Count, older.LastID, olderOld.Count)
		}
		s.fails("recent_events", map[string]any{"before": 5, "before_id": 6}, "disagree", "give before only")
		s.fails("recent_events", map[string]any{"kind": []string{"explosion"}}, "explosion", "decision")
		s.fails("recent_events", map[string]any{"kinds": []string{"explosion"}}, "explosion", "decision")
		s.fails("recent_events", map[string]any{"since": "yesterday"}, "since")
		s.fails("recent_events", map[string]any{"limit": 5000}, "limit")
		s.fails("recent_events", map[string]any{"task": "nosuchid"}, "not found")

		var list mcp.ListTasksOut
		s.ok("list_tasks", map[string]any{"state": []string{"succeeded"}}, &list)
		if list.Count != 1 || list.Tasks[0].ID != id || list.Tasks[0].JobID == "" {
			t.Errorf("list_tasks succeeded: %+v", list)
		}
		var listOld mcp.ListTasksOut // states: the deprecated name of state
		s.ok("list_tasks", map[string]any{"states": []string{"succeeded"}}, &listOld)
		if listOld.Count != 1 || listOld.Tasks[0].ID != id {
			t.Errorf("list_tasks states (deprecated) succeeded: %+v", listOld)
		}
		s.fails("list_tasks", map[string]any{"state": []string{"succeeded"}, "states": []string{"failed"}}, "disagree", "give state only")
		var none mcp.ListTasksOut
		s.ok("list_tasks", map[string]any{"states": []string{"running", "queued"}, "limit": 5}, &none)
		if none.Count != 0 {
			t.Errorf("list_tasks running/queued after the only task finished: %+v", none)
		}
		s.fails("list_tasks", map[string]any{"state": []string{"done"}}, "done", "succeeded")
		s.fails("list_tasks", map[string]any{"states": []string{"done"}}, "done", "succeeded")
		s.fails("list_tasks", map[string]any{"state": "running"}, "state")
		s.fails("list_tasks", map[string]any{"limit": 501}, "limit")
		s.fails("list_tasks", map[string]any{"states": "running"}, "states")

		// Final tasks cannot be cancelled.
		s.fails("cancel_task", map[string]any{"id": id}, "refused")
	})
}

func TestWaitCancelReplan(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *session) {

		// A job that needs a whole busy partition waits in the queue.
		var all mcp.ListResourcesOut
		s.ok("list_resources", map[string]any{}, &all)
		var busy *v1.ResourceRecord
		for i, r := range all.Records {
			if r.GPUsPerNode == 0 && r.Nodes.Down == 0 && r.Nodes.Allocated+r.Nodes.Mixed > 0 && r.MaxNodesPerJob >= r.Nodes.Total {
				busy = &all.Records[i]
				break
			}
		}
		if busy == nil {
			t.Fatal("the demo federation has no busy CPU partition that allows whole-partition jobs")
		}
		whole := map[string]any{
			"nodes":     map[string]any{"min": busy.Nodes.Total, "max": busy.Nodes.Total},
			"cpu_cores": map[string]any{"min": busy.TotalCores, "max": busy.TotalCores},
			"walltime":  map[string]any{"min": "1h", "max": "1h"},
		}
		var big mcp.SubmitTaskOut
		s.ok("submit_task", map[string]any{"name": "whole-partition", "command": "echo big", "envelope": whole,
			"target": busy.System + ":" + busy.Partition}, &big)
		id := big.Task.ID

		// A bounded wait that times out is not an error.
		start := time.Now()
		var w mcp.WaitTaskOut
		s.ok("wait_task", map[string]any{"id": id, "timeout_seconds": 1, "until": "running"}, &w)
		if w.Reached || w.Task.Final || !strings.Contains(w.Task.Next, "wait_task again") {
			t.Fatalf("1s wait for a whole busy partition: reached=%v state=%s next=%q", w.Reached, w.Task.State, w.Task.Next)
		}
		if el := time.Since(start); el > 10*time.Second {
			t.Errorf("a 1s wait took %s", el)
		}
		s.fails("wait_task", map[string]any{"id": id, "timeout_seconds": 100000}, "timeout_seconds")
		s.fails("wait_task", map[string]any{"id": id, "until": "forever"}, "until")
		s.fails("wait_task", map[string]any{"id": "nosuchid", "timeout_seconds": 1}, "not found")

		// Replanning a queued task places it again (the pin keeps it on the same partition).
		var re mcp.TaskView
		s.ok("replan_task", map[string]any{"id": id}, &re)
		if re.ID != id || re.Final {
			t.Fatalf("replan: %+v", re)
		}
		var evs mcp.RecentEventsOut
		s.ok("recent_events", map[string]any{"task": id, "kinds": []string{"replan"}}, &evs)
		if evs.Count == 0 {
			t.Error("replan_task left no replan event")
		}
		s.fails("replan_task", map[string]any{"id": "nosuchid"}, "not found")
		s.fails("replan_task", map[string]any{"id": id, "clear_target": "yes"}, "clear_target")

		var c mcp.TaskView
		s.ok("cancel_task", map[string]any{"id": id}, &c)
		var done mcp.WaitTaskOut
		s.ok("wait_task", map[string]any{"id": id, "timeout_seconds": 60}, &done)
		if done.Task.State != "cancelled" || !done.Reached {
			t.Fatalf("after cancel_task: %s (%s)", done.Task.State, done.Task.Reason)
		}
		s.fails("cancel_task", map[string]any{"id": "nosuchid"}, "not found")
		s.fails("cancel_task", map[string]any{}, "id")

		// A running task cannot be replanned; the error says what to do instead.
		sleeper := map[string]any{"cpu_cores": map[string]any{"min": 1}, "walltime": map[string]any{"min": "2h"}}
		var sub mcp.SubmitTaskOut
		s.ok("submit_task", map[string]any{"name": "sleeper", "command": "sleep 120", "envelope": sleeper}, &sub)
		var running mcp.WaitTaskOut
		s.ok("wait_task", map[string]any{"id": sub.Task.ID, "until": "running", "timeout_seconds": 60}, &running)
		if !running.Reached || running.Task.State != "running" {
			t.Fatalf("until running: reached=%v state=%s", running.Reached, running.Task.State)
		}
		s.fails("replan_task", map[string]any{"id": sub.Task.ID, "clear_target": true}, "cancel it first")
		s.ok("cancel_task", map[string]any{"id": sub.Task.ID}, &c)
	})
}

func TestNoCoreSaysHowToStartOne(t *testing.T) {
	cl, err := client.New("http://"+deadAddr(t), "tok")
	if err != nil {
		t.Fatal(err)
	}
	s := connect(t, mcp.Static(cl))
	for _, name := range allTools {
		args := map[string]any{"name": "x", "command": "echo", "envelope": smallEnvelope}
		switch name {
		case "list_resources":
			args = map[string]any{}
		case "find_idle":
			args = map[string]any{"gpus": 1}
		case "recent_events", "list_tasks":
			args = map[string]any{"limit": 5}
		case "get_task", "wait_task", "cancel_task", "replan_task", "task_logs":
			args = map[string]any{"id": "abc"}
		case "system_env":
			args = map[string]any{"system": "delta"}
		case "draft_envelope":
			args = map[string]any{"description": "x"}
		}
		s.fails(name, args, "mosaic serve")
	}
	// A connect failure (no token yet) is reported the same way.
	s2 := connect(t, func(context.Context) (mcp.Backend, error) {
		return nil, client.ErrNoCore
	})
	s2.fails("list_resources", map[string]any{}, "mosaic serve")
}
