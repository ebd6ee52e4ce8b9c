package exchange

import (
	"sort"
	"time"

	"github.com/google/uuid"
)

// TimelineCap is how many records a backend keeps per run; older ones are
// dropped (persist the timeline elsewhere for longer runs).
const TimelineCap = 100_000

// MessageRecord is one delivered message in a run's timeline.
type MessageRecord struct {
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
func (r MessageRecord) CrossSite() bool {
	return r.SrcSite != "" && r.DestSite != "" && r.SrcSite != r.DestSite
}

// SiteCount summarises one site's traffic in a run. Site "" collects agents with
// no known site.
type SiteCount struct {
	Site      string `json:"site"`
	Mailboxes int    `json:"mailboxes"`
	Sent      int    `json:"sent"`
	Received  int    `json:"received"`
	CrossSite int    `json:"cross_site"` // messages sent from this site to another
	Bytes     int64  `json:"bytes"`      // bytes sent from this site
}

// countSites aggregates a timeline and the run's mailboxes per site, sorted by site.
func countSites(recs []MessageRecord, boxes []MailboxRecord, siteOf func(MailboxRecord) string) []SiteCount {
	m := map[string]*SiteCount{}
	get := func(s string) *SiteCount {
		c, ok := m[s]
		if !ok {
			c = &SiteCount{Site: s}
			m[s] = c
		}
		return c
	}
	for _, b := range boxes {
		get(siteOf(b)).Mailboxes++
	}
	for _, r := range recs {
		s := get(r.SrcSite)
		s.Sent++
		s.Bytes += int64(r.Size)
		if r.CrossSite() {
			s.CrossSite++
		}
		get(r.DestSite).Received++
	}
	out := make([]SiteCount, 0, len(m))
	for _, c := range m {
		out = append(out, *c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Site < out[j].Site })
	return out
}
