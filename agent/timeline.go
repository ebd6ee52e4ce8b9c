package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/google/uuid"
)

// TimelinePath is the route of a Mosaic exchange that answers a run's timeline
// and per-site counts (a Mosaic extension of the Academy protocol; the run's
// operator token only).
const TimelinePath = "/run/timeline"

// TimelineRecord is one delivered message of a run's timeline: who sent it to
// whom, from which site to which, its body kind and size.
type TimelineRecord struct {
	Run      string    `json:"run"`
	Time     time.Time `json:"time"`
	Src      string    `json:"src"`  // agent/user name ("" if unnamed)
	Dest     string    `json:"dest"` // agent/user name
	SrcUID   uuid.UUID `json:"src_uid"`
	DestUID  uuid.UUID `json:"dest_uid"`
	SrcSite  string    `json:"src_site,omitempty"`
	DestSite string    `json:"dest_site,omitempty"`
	Kind     string    `json:"kind"` // body kind, e.g. "action-request"
	Size     int       `json:"size"` // bytes of the message JSON
	Tag      uuid.UUID `json:"tag"`
}

// CrossSite reports whether the message crossed a site boundary.
func (r TimelineRecord) CrossSite() bool {
	return r.SrcSite != "" && r.DestSite != "" && r.SrcSite != r.DestSite
}

// SiteCount summarises one site's traffic in a run. Site "" collects mailboxes
// with no known site (e.g. the operator's bootstrap mailbox).
type SiteCount struct {
	Site      string `json:"site"`
	Mailboxes int    `json:"mailboxes"`
	Sent      int    `json:"sent"`
	Received  int    `json:"received"`
	CrossSite int    `json:"cross_site"` // messages sent from this site to another
	Bytes     int64  `json:"bytes"`      // bytes sent from this site
}

// Timeline is a run's timeline as its exchange records it: every delivered
// message in the order recorded, and the counts per site.
type Timeline struct {
	Run      string           `json:"run"`
	Messages []TimelineRecord `json:"messages"`
	Counts   []SiteCount      `json:"counts"`
}

// Timeline reads the caller's run's timeline from the exchange. It needs the
// run's (operator) token: an agent's token is refused (ErrForbidden), as is
// any token by an exchange that is not Mosaic's (ErrNotFound then, from the
// unknown route). It is one request, never retried: callers poll.
func (c *Client) Timeline(ctx context.Context) (*Timeline, error) {
	data, err := c.do(ctx, "timeline", http.MethodGet, TimelinePath, map[string]any{})
	if err != nil {
		var se *StatusError
		switch {
		case errors.Is(err, ErrForbidden) && IsAgentToken(c.token):
			return nil, fmt.Errorf("%w; read the timeline with the run's token (the launcher keeps it in the run directory's token file), not an agent's", err)
		case errors.As(err, &se) && (se.Code == http.StatusNotFound || se.Code == http.StatusMethodNotAllowed):
			return nil, fmt.Errorf("%w: exchange %s has no %s route (not a Mosaic exchange, or an older one); its timeline cannot be read", err, c.base, TimelinePath)
		}
		return nil, err
	}
	return DecodeTimeline(data)
}

// DecodeTimeline parses an answer of GET /run/timeline: a JSON object with a
// run, messages and counts; a record without its uids or time, a negative
// count or size is refused (the exchange never sends one).
func DecodeTimeline(data []byte) (*Timeline, error) {
	var t Timeline
	if err := json.Unmarshal(data, &t); err != nil {
		return nil, fmt.Errorf("exchange timeline: bad answer: %w", err)
	}
	if t.Run == "" {
		return nil, errors.New("exchange timeline: bad answer: no run")
	}
	for i, m := range t.Messages {
		if m.Time.IsZero() || m.SrcUID == uuid.Nil || m.DestUID == uuid.Nil || m.Size < 0 {
			return nil, fmt.Errorf("exchange timeline: bad answer: message %d lacks its time or uids, or has a negative size", i)
		}
		if m.Run != t.Run {
			return nil, fmt.Errorf("exchange timeline: bad answer: message %d is of run %q, not %q", i, m.Run, t.Run)
		}
	}
	for _, s := range t.Counts {
		if s.Mailboxes < 0 || s.Sent < 0 || s.Received < 0 || s.CrossSite < 0 || s.Bytes < 0 {
			return nil, fmt.Errorf("exchange timeline: bad answer: negative count for site %q", s.Site)
		}
	}
	if t.Messages == nil {
		t.Messages = []TimelineRecord{}
	}
	if t.Counts == nil {
		t.Counts = []SiteCount{}
	}
	return &t, nil
}
