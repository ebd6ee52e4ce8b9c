package mcp_test

import (
	"testing"

	"github.com/mosaic-hpc/mosaic/internal/mcp"
)

func TestCampaignTools(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir()) // no runs launched yet
	forEachBackend(t, func(t *testing.T, s *session) {

		var st mcp.CampaignStatusOut
		s.ok("campaign_status", map[string]any{}, &st)
		if len(st.Runs) != 0 || st.Run != nil {
			t.Fatalf("no runs yet: %+v", st)
		}
		s.fails("campaign_status", map[string]any{"run": "no-such-run"}, "no-such-run")
		s.fails("campaign_status", map[string]any{"run": "../etc"}, "run")
		s.fails("campaign_status", map[string]any{"run": 7}, "")
		s.fails("campaign_timeline", map[string]any{}, "run")
		s.fails("campaign_timeline", map[string]any{"run": " "}, "run is empty")
		s.fails("campaign_timeline", map[string]any{"run": "r1", "limit": -1}, "limit")
		s.fails("campaign_timeline", map[string]any{"run": "r1", "limit": 9999}, "limit")
		s.fails("campaign_timeline", map[string]any{"run": "../x"}, "run")
	})
}
