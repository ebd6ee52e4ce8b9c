package v1

import "time"

// CampaignRunSummary is one launched campaign run in a listing (GET /api/campaigns).
type CampaignRunSummary struct {
	RunID    string    `json:"run_id"`
	Campaign string    `json:"campaign"`
	State    string    `json:"state"`
	Sites    []string  `json:"sites"`
	Created  time.Time `json:"created"`
	Updated  time.Time `json:"updated"`
}

// CampaignSite is one site of a run: its agents, job ids and state.
type CampaignSite struct {
	Name         string    `json:"name"`
	Mode         string    `json:"mode"`
	Agents       []string  `json:"agents"`
	JobID        string    `json:"job_id,omitempty"`        // the allocation attached to
	TaskID       string    `json:"task_id,omitempty"`       // the task running the submitted job
	SubmittedJob string    `json:"submitted_job,omitempty"` // the job Mosaic submitted
	Host         string    `json:"host,omitempty"`
	Login        string    `json:"login,omitempty"`
	Log          string    `json:"log,omitempty"`
	State        string    `json:"state"`
	Error        string    `json:"error,omitempty"`
	Updated      time.Time `json:"updated"`
}

// SiteCount summarises one site's message traffic in a run; Site "" collects agents
// with no known site.
type SiteCount struct {
	Site      string `json:"site"`
	Mailboxes int    `json:"mailboxes"`
	Sent      int    `json:"sent"`
	Received  int    `json:"received"`
	CrossSite int    `json:"cross_site"` // messages sent from this site to another
	Bytes     int64  `json:"bytes"`      // bytes sent from this site
}

// CampaignRunDetail is one run with its per-site status and message counts
// (GET /api/campaigns/{run}).
type CampaignRunDetail struct {
	CampaignRunSummary
	ExchangeURL  string         `json:"exchange_url"`
	Bootstrapped bool           `json:"bootstrapped"`
	Error        string         `json:"error,omitempty"`
	SiteStatus   []CampaignSite `json:"site_status"`
	Counts       []SiteCount    `json:"counts"`
}

// TimelineEntry is one delivered message of a run, tagged with its sites.
type TimelineEntry struct {
	Run      string    `json:"run"`
	Time     time.Time `json:"time"`
	Src      string    `json:"src"`  // agent/user name ("" if unnamed)
	Dest     string    `json:"dest"` // agent/user name
	SrcUID   string    `json:"src_uid"`
	DestUID  string    `json:"dest_uid"`
	SrcSite  string    `json:"src_site,omitempty"`
	DestSite string    `json:"dest_site,omitempty"`
	Kind     string    `json:"kind"` // body kind, e.g. "action-request"
	Size     int       `json:"size"` // bytes of the message JSON
	Tag      string    `json:"tag"`
	// CrossSite says the message crossed a site boundary.
	CrossSite bool `json:"cross_site"`
}

// CampaignTimeline is a run's messages merged across sites in time order
// (GET /api/campaigns/{run}/timeline).
type CampaignTimeline struct {
	RunID string `json:"run_id"`
	// Source is "exchange" (live, this core) or "run-directory".
	Source   string          `json:"source"`
	Messages []TimelineEntry `json:"messages"`
	Counts   []SiteCount     `json:"counts"`
}
