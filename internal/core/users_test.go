package core

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

// TestPlacementSkipsSystemsWithoutIdentity: a system whose catalog lists users (and
// so refuses others) is never chosen for another user's task: bob's task, which only
// fits there, is refused; alice's is placed there, owned by her and audited.
func TestPlacementSkipsSystemsWithoutIdentity(t *testing.T) {
	const cat = `systems:
  - name: Team
    kind: sim
    accounts: [shared]
    users: [{name: alice, account: alice-acct}]
    partitions:
      - {name: cpu, nodes: 2, cpu_cores: 8, memory_gb: 16, max_walltime: 1h, accounts: [alice-acct]}
  - name: Small
    kind: sim
    accounts: [s]
    partitions:
      - {name: cpu, nodes: 1, cpu_cores: 2, memory_gb: 4, max_walltime: 1h}
`
	c := newLoadedWorld(t, 60, cat, "Team", "Small").c
	ctx := context.Background()
	env := model.Envelope{CPUCores: model.IntRange{Min: 4, Max: 4}, Walltime: model.DurationRange{Min: model.Duration(10 * time.Minute), Max: model.Duration(10 * time.Minute)}}
	req := SubmitRequest{Name: "four", Command: "true", Envelope: &env}
	bob := model.WithCaller(ctx, model.Caller{Name: "bob"})
	if _, err := c.SubmitTask(bob, req); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "Team") {
		t.Fatalf("bob's task that fits only on Team: %v, want refused naming Team", err)
	}
	pinned := req
	pinned.Target = "Team"
	if _, err := c.SubmitTask(bob, pinned); !errors.Is(err, ErrInvalid) {
		t.Fatalf("bob's task pinned to Team: %v, want refused", err)
	}
	alice := model.WithCaller(ctx, model.Caller{Name: "alice", Remote: "10.0.0.1:5"})
	res, err := c.SubmitTask(alice, req)
	if err != nil {
		t.Fatal(err)
	}
	if res.Task.Owner != "alice" || res.Decision.Chosen == "" || !strings.HasPrefix(res.Decision.Chosen, "Team") {
		t.Fatalf("alice's task: owner %q chosen %q", res.Task.Owner, res.Decision.Chosen)
	}
	if _, err := c.Task(bob, res.Task.ID); !errors.Is(err, ErrForbidden) {
		t.Fatalf("bob reads alice's task: %v, want ErrForbidden", err)
	}
	es, err := c.Audit(ctx, AuditQuery{User: "alice"})
	if err != nil || len(es) != 1 || es[0].Action != "task.submit" || es[0].Target != res.Task.ID || es[0].Remote != "10.0.0.1:5" {
		t.Fatalf("audit %+v %v", es, err)
	}
}
