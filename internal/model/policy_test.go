package model

import (
	"strings"
	"testing"
	"time"
)

func TestPolicyValidate(t *testing.T) {
	cases := []struct {
		name string
		p    Policy
		want string // "" = valid
	}{
		{"zero is valid (defaults)", Policy{}, ""},
		{"defaults are valid", DefaultPolicy(), ""},
		{"negative wait slack", Policy{WaitSlack: Duration(-time.Minute)}, "policy.wait_slack"},
		{"outlook factor below 1", Policy{DownOutlookFactor: 0.5}, "policy.down_outlook_factor"},
		{"outlook factor huge", Policy{DownOutlookFactor: 1000}, "policy.down_outlook_factor"},
		{"negative margin", Policy{MigrateMargin: Duration(-1)}, "policy.migrate_margin"},
		{"negative reestimate", Policy{ReestimateEvery: Duration(-1)}, "policy.reestimate_every"},
		{"negative backoff", Policy{StayBackoff: Duration(-1)}, "policy.stay_backoff"},
		{"wait factor below 1", Policy{WaitFactor: 0.5}, "policy.wait_factor"},
		{"negative site_down_ticks", Policy{SiteDownTicks: -1}, "policy.site_down_ticks"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.p.Validate()
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("unexpected error %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("got %v, want an error naming %s", err, c.want)
			}
		})
	}
}

func TestWaitLimit(t *testing.T) {
	p := DefaultPolicy()
	cases := []struct{ est, want time.Duration }{
		{0, 30 * time.Minute},                // no wait expected: the slack
		{10 * time.Minute, 40 * time.Minute}, // estimate + slack wins
		{1 * time.Hour, 3 * time.Hour},       // 3 × estimate wins
		{-time.Minute, 30 * time.Minute},     // a negative estimate counts as none
		{20 * time.Minute, 60 * time.Minute}, // both equal
	}
	for _, c := range cases {
		if got := p.WaitLimit(c.est); got != c.want {
			t.Errorf("WaitLimit(%s) = %s, want %s", c.est, got, c.want)
		}
	}
	if d := (Policy{}).WithDefaults(); d.MigrateMargin.D() != 15*time.Minute || d.DownOutlookFactor != 2 || d.StayBackoff.D() != time.Hour || d.ReestimateEvery.D() != 15*time.Minute || d.WaitSlack.D() != 30*time.Minute {
		t.Fatalf("defaults %+v", d)
	}
}
