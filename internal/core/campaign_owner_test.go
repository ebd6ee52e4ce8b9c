package core

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/campaign"
	"github.com/mosaic-hpc/mosaic/internal/model"
)

// TestCampaignRunsHaveOwners: alice's run is hers. Bob is refused an operator token or
// a new peer policy for it, its status and its timeline (403); he does not see it
// listed, nor a run launched from the laptop; an admin sees and steers both; the
// policy change is audited.
func TestCampaignRunsHaveOwners(t *testing.T) {
	c := newSimWorld(t, 1, [][2]string{{"A", ""}}).c
	root := t.TempDir()
	c.SetCampaignsRoot(root)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	alice := model.WithCaller(ctx, model.Caller{Name: "alice"})
	bob := model.WithCaller(ctx, model.Caller{Name: "bob"})
	admin := model.WithCaller(ctx, model.Caller{Name: "boss", Admin: true})
	camp := model.Campaign{Name: "pair", InitialAgent: "a", Agents: []model.CampaignAgent{
		{Name: "a", AllowedPeers: []string{"b"}}, {Name: "b", AllowedPeers: []string{"a"}}}}
	if _, err := c.CampaignToken(alice, "r1", &camp); err != nil {
		t.Fatal(err)
	}
	for _, rid := range []string{"r1", "laptop"} {
		if _, err := campaign.CreateRunDir(root, campaign.RunState{RunID: rid, CampaignName: "pair", State: campaign.RunReady}); err != nil {
			t.Fatal(err)
		}
	}
	open := camp
	open.Agents = []model.CampaignAgent{{Name: "a", AllowedPeers: []string{"b", "x"}}, {Name: "b", AllowedPeers: []string{"a"}}, {Name: "x"}}
	if _, err := c.CampaignToken(bob, "r1", &open); !errors.Is(err, ErrForbidden) {
		t.Fatalf("bob's policy for alice's run: %v, want ErrForbidden", err)
	}
	if _, err := c.CampaignToken(bob, "r1", nil); !errors.Is(err, ErrForbidden) {
		t.Fatalf("bob's token for alice's run: %v, want ErrForbidden", err)
	}
	if _, err := c.CampaignToken(bob, "laptop", nil); !errors.Is(err, ErrForbidden) {
		t.Fatalf("bob's token for the laptop's run: %v, want ErrForbidden", err)
	}
	if _, err := c.CampaignRun(bob, "r1"); !errors.Is(err, ErrForbidden) {
		t.Fatalf("bob reads alice's run: %v, want ErrForbidden", err)
	}
	if _, err := c.CampaignTimeline(bob, "r1"); !errors.Is(err, ErrForbidden) {
		t.Fatalf("bob reads alice's timeline: %v, want ErrForbidden", err)
	}
	if _, err := c.CampaignRun(alice, "r1"); err != nil {
		t.Fatalf("alice reads her run: %v", err)
	}
	if _, err := c.CampaignToken(admin, "r1", nil); err != nil {
		t.Fatalf("an admin's token for alice's run: %v", err)
	}
	list := func(ctx context.Context) []string {
		rs, err := c.CampaignRuns(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, r := range rs {
			ids = append(ids, r.RunID)
		}
		return ids
	}
	if got := list(bob); len(got) != 0 {
		t.Fatalf("bob lists %v, want none", got)
	}
	if got := list(alice); len(got) != 1 || got[0] != "r1" {
		t.Fatalf("alice lists %v, want [r1]", got)
	}
	if got := list(admin); len(got) != 2 {
		t.Fatalf("an admin lists %v, want both", got)
	}
	es, err := c.Audit(ctx, AuditQuery{User: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	var policy bool
	for _, e := range es {
		policy = policy || e.Action == "campaign.policy" && e.Target == "r1"
	}
	if !policy {
		t.Fatalf("alice's policy registration is not audited: %+v", es)
	}
}
