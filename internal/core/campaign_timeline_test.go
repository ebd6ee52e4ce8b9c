package core

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/agent"
	"github.com/mosaic-hpc/mosaic/internal/campaign"
	"github.com/mosaic-hpc/mosaic/internal/exchange"
	"github.com/mosaic-hpc/mosaic/internal/model"
)

// TestCampaignTimelineFromTheRunsExchange: a run whose launcher uses another
// exchange than this core's (external, or the launcher's own) has its
// timeline and counts read live from that exchange — the URL of the run
// directory, the run token of its 0600 file — while the run is not over; when
// that exchange does not answer, or the run is over, the run directory
// answers (timeline.json and the counts state.json last recorded).
func TestCampaignTimelineFromTheRunsExchange(t *testing.T) {
	c := newSimWorld(t, 1, [][2]string{{"A", ""}}).c
	root := t.TempDir()
	c.SetCampaignsRoot(root)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	srv := exchange.NewServer(exchange.Config{Logger: slog.New(slog.DiscardHandler)})
	ts := httptest.NewServer(srv)
	defer ts.Close()
	camp := model.Campaign{Name: "pair", InitialAgent: "a", Agents: []model.CampaignAgent{
		{Name: "a", AllowedPeers: []string{"b"}, Site: "alpha"}, {Name: "b", AllowedPeers: []string{"a"}, Site: "beta"}}}
	if err := srv.RegisterCampaign(ctx, "r1", camp); err != nil {
		t.Fatal(err)
	}
	tok, err := srv.IssueToken(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	clients := map[string]*agent.Client{}
	for _, n := range []string{"a", "b"} {
		cl, err := agent.New(ts.URL, agent.TokenFor(tok, "r1", n), agent.WithSite(map[string]string{"a": "alpha", "b": "beta"}[n]))
		if err != nil {
			t.Fatal(err)
		}
		if err := cl.Register(ctx, agent.AgentID("r1", n)); err != nil {
			t.Fatal(err)
		}
		clients[n] = cl
	}
	m, err := agent.NewRequest(agent.AgentID("r1", "a"), agent.AgentID("r1", "b"), map[string]string{"kind": "mosaic-text", "text": "hi"})
	if err != nil {
		t.Fatal(err)
	}
	if err := clients["a"].Send(ctx, m); err != nil {
		t.Fatal(err)
	}
	d, err := campaign.CreateRunDir(root, campaign.RunState{RunID: "r1", CampaignName: "pair", State: campaign.RunReady, ExchangeURL: ts.URL, ExchangeLocalURL: ts.URL})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.WriteToken(tok); err != nil {
		t.Fatal(err)
	}

	tl, err := c.CampaignTimeline(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if tl.Source != TimelineFromRunExchange || len(tl.Messages) != 1 || !tl.Messages[0].CrossSite || len(tl.Counts) != 2 || tl.Counts[0].Mailboxes != 1 {
		t.Fatalf("live timeline: %+v", tl)
	}
	run, err := c.CampaignRun(ctx, "r1")
	if err != nil || len(run.Counts) != 2 {
		t.Fatalf("run detail: %+v %v", run, err)
	}

	// The exchange is gone: the run directory answers, with what was recorded.
	ts.Close()
	recorded := []exchange.MessageRecord{tl.Messages[0].MessageRecord}
	if err := d.WriteJSON("timeline.json", recorded); err != nil {
		t.Fatal(err)
	}
	if err := d.Update(func(s *campaign.RunState) { s.Counts = tl.Counts }); err != nil {
		t.Fatal(err)
	}
	tl, err = c.CampaignTimeline(ctx, "r1")
	if err != nil || tl.Source != TimelineFromRunDir || len(tl.Messages) != 1 || len(tl.Counts) != 2 || tl.Counts[0].Mailboxes != 1 {
		t.Fatalf("timeline with the exchange gone: %+v %v", tl, err)
	}
}
