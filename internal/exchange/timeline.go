package exchange

import (
	"net/http"
	"sort"

	"github.com/mosaic-hpc/mosaic/agent"
)

// TimelineCap is how many records a backend keeps per run; older ones are
// dropped (persist the timeline elsewhere for longer runs).
const TimelineCap = 100_000

// MessageRecord is one delivered message in a run's timeline (the wire type of
// GET /run/timeline, defined by the public agent SDK).
type MessageRecord = agent.TimelineRecord

// SiteCount summarises one site's traffic in a run. Site "" collects agents with
// no known site.
type SiteCount = agent.SiteCount

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

// handleTimeline answers the caller's run's timeline and per-site counts
// (GET /run/timeline, a Mosaic extension; agent.Client.Timeline reads it). Only
// the run's operator token may read it: an agent sees its own mailbox only.
// A body is optional (the SDK sends "{}", like on every route).
func (s *Server) handleTimeline(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength != 0 {
		if _, ok := s.readBody(w, r, maxControlBody); !ok {
			return
		}
	}
	p := principalOf(r)
	if !p.Operator() {
		httpError(w, http.StatusForbidden, "The timeline is the run operator's: send the run's token (the launcher keeps it in the run directory's token file), not an agent's.")
		return
	}
	recs, err := s.TimelineContext(r.Context(), p.Run)
	if err != nil {
		s.backendError(w, err)
		return
	}
	counts, err := s.SiteCounts(r.Context(), p.Run)
	if err != nil {
		s.backendError(w, err)
		return
	}
	if recs == nil {
		recs = []MessageRecord{}
	}
	writeJSON(w, agent.Timeline{Run: p.Run, Messages: recs, Counts: counts})
}
