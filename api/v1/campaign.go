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
	// Source is "exchange" (live, this core), "run-exchange" (live, the exchange
	// the run's launcher uses) or "run-directory" (its timeline.json).
	Source   string          `json:"source"`
	Messages []TimelineEntry `json:"messages"`
	Counts   []SiteCount     `json:"counts"`
}

// Campaign declares a multi-agent run: its agents, which of them starts, and how they
// reach the message exchange (the campaign file `mosaic campaign launch` reads).
type Campaign struct {
	Name         string          `json:"name"`
	Agents       []CampaignAgent `json:"agents"`
	InitialAgent string          `json:"initial_agent"`
	UserTask     string          `json:"user_task,omitempty"`
	// BootstrapAction is the action an Academy initial agent is asked to run with
	// the user task ("" = receive_message).
	BootstrapAction string           `json:"bootstrap_action,omitempty"`
	Exchange        ExchangeSettings `json:"exchange,omitzero"`
}

// CampaignAgent is one agent of a campaign.
type CampaignAgent struct {
	// Name is unique within the campaign; with the run id it derives the agent's
	// mailbox uid.
	Name string `json:"name"`
	// Command is the argv of the agent process (no shell involved).
	Command []string `json:"command"`
	// Env is extra environment for the agent process.
	Env map[string]string `json:"env,omitempty"`
	// AllowedPeers names the agents this one may send requests to; the exchange
	// enforces it when the campaign is registered with it.
	AllowedPeers []string `json:"allowed_peers,omitempty"`
	// Envelope is an optional resource request for the agent's allocation.
	Envelope *Envelope `json:"envelope,omitempty"`
	// Site is an optional placement hint (a site name from sites.yaml).
	Site string `json:"site,omitempty"`
	// Protocol is "mosaic" ("" = it: wrapped by `mosaic agent run`) or "academy" (a
	// Python Academy agent that registers and reads its own mailbox).
	Protocol string `json:"protocol,omitempty"`
}

// ExchangeSettings say how agents of a campaign reach the message exchange; the zero
// value is the core's embedded exchange with its in-memory backend.
type ExchangeSettings struct {
	Type            string   `json:"type,omitempty"`              // mosaic (default) or academy (Globus-authenticated Academy exchange)
	URL             string   `json:"url,omitempty"`               // an external exchange; "" = the core's (academy: the hosted one)
	Scope           string   `json:"scope,omitempty"`             // academy: the Globus scope ("" = the hosted exchange's)
	ResourceServer  string   `json:"resource_server,omitempty"`   // academy: the scope's resource server ("" = from the scope URL)
	Backend         string   `json:"backend,omitempty"`           // memory (default) or redis
	RedisURL        string   `json:"redis_url,omitempty"`         // with Backend redis
	MaxMessageBytes int64    `json:"max_message_bytes,omitempty"` // 0 = the exchange's default, 1 MiB
	DiscoverTimeout Duration `json:"discover_timeout,omitempty"`  // how long an agent waits for its peers
}

// CampaignTokenRequest is the body of POST /api/campaigns/{run}/token. With a
// campaign the exchange enforces it for the run (each declared agent gets its own
// token that opens only its own mailbox and sends only to its allowed peers); without
// one the token acts for every mailbox of the run.
type CampaignTokenRequest struct {
	Campaign *Campaign `json:"campaign,omitempty"`
}

// CampaignTokenResponse is the answer of POST /api/campaigns/{run}/token.
type CampaignTokenResponse struct {
	RunID string `json:"run_id"`
	// ExchangePath is where the exchange is mounted on the core (agents use
	// http://HOST:PORT + ExchangePath as MOSAIC_EXCHANGE_URL).
	ExchangePath string `json:"exchange_path" doc:"Path of the exchange on this server; agents use http://HOST:PORT/exchange"`
	// Token is the run (operator) token, for MOSAIC_EXCHANGE_TOKEN; shown once. Each
	// agent's own token is derived from it.
	Token string `json:"token" doc:"The run token (operator) for MOSAIC_EXCHANGE_TOKEN; shown once. Each agent's own token is derived from it (mosaic agent run and spawn-site do it)"`
}
