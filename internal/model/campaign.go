package model

// Campaign is a federated multi-agent run: a roster of agents (each one a command
// Mosaic starts on some site), who may talk to whom, which agent receives the user's
// task first, and how the agents reach the message exchange.
//
// Campaign files are JSONC (JSON with comments and trailing commas); see
// internal/campaign for the parser, validation and per-site slices.
type Campaign struct {
	Name         string          `json:"name"`
	Agents       []CampaignAgent `json:"agents"`
	InitialAgent string          `json:"initial_agent"`
	UserTask     string          `json:"user_task,omitempty"`
	// BootstrapAction is the action `campaign bootstrap` asks an Academy initial
	// agent to run with the user task as its one argument ("" = DefaultBootstrapAction).
	BootstrapAction string           `json:"bootstrap_action,omitempty"`
	Exchange        ExchangeSettings `json:"exchange,omitzero"`
}

// DefaultBootstrapAction is the action an Academy initial agent receives the
// user task with, as the seed's federated launcher calls it.
const DefaultBootstrapAction = "receive_message"

// Agent protocols: how an agent talks to the exchange.
const (
	// ProtocolMosaic (the default, also spelt "") is an agent wrapped by `mosaic
	// agent run`: the wrapper holds the mailbox; messages are JSON lines on the
	// command's stdin and fd 3.
	ProtocolMosaic = "mosaic"
	// ProtocolAcademy is a Python Academy agent: it registers and reads its
	// mailbox itself; the wrapper only starts, waits for and stops it.
	ProtocolAcademy = "academy"
)

// CampaignAgent is one agent of a campaign.
type CampaignAgent struct {
	// Name is unique within the campaign; with the run id it derives the agent's
	// mailbox uid (UUIDv5, see internal/campaign.AgentUID).
	Name string `json:"name"`
	// Command is the argv of the agent process (no shell involved).
	Command []string `json:"command"`
	// Env is extra environment for the agent process.
	Env map[string]string `json:"env,omitempty"`
	// AllowedPeers names the agents this one may send requests to. The exchange
	// enforces it when the campaign is registered with it.
	AllowedPeers []string `json:"allowed_peers,omitempty"`
	// Envelope is an optional resource request for the agent's allocation.
	Envelope *Envelope `json:"envelope,omitempty"`
	// Site is an optional placement hint (a site name from sites.yaml).
	Site string `json:"site,omitempty"`
	// Protocol is ProtocolMosaic ("" = it) or ProtocolAcademy.
	Protocol string `json:"protocol,omitempty"`
}

// ExchangeSettings says how agents of a campaign reach the message exchange.
// All fields are optional; the zero value means "Mosaic's embedded exchange with
// its in-memory backend".
type ExchangeSettings struct {
	// Type is the kind of exchange: "mosaic" (default: Mosaic's own, embedded
	// in the launcher or external with a run token) or "academy" (an external
	// Academy exchange that wants a Globus bearer token, by default Academy's
	// hosted one; "http", the seed's name for it, is the same).
	Type string `json:"type,omitempty"`
	// URL of an external exchange (Academy cloud-exchange protocol). Empty = the
	// exchange embedded in the Mosaic core (type mosaic) or Academy's hosted
	// exchange (type academy).
	URL string `json:"url,omitempty"`
	// Scope is the Globus scope whose access token an "academy" exchange wants
	// ("" = the hosted exchange's academy_exchange scope).
	Scope string `json:"scope,omitempty"`
	// ResourceServer is the Globus resource server of Scope as Globus Auth
	// reports it in token responses ("" = the uuid in the scope's URL).
	ResourceServer string `json:"resource_server,omitempty"`
	// Backend of an exchange Mosaic runs itself: "memory" (default) or "redis".
	Backend string `json:"backend,omitempty"`
	// RedisURL is the redis:// URL used when Backend is "redis".
	RedisURL string `json:"redis_url,omitempty"`
	// MaxMessageBytes caps one message (0 = exchange default, 1 MiB).
	MaxMessageBytes int64 `json:"max_message_bytes,omitempty"`
	// DiscoverTimeout bounds how long an agent waits for its peers to register.
	DiscoverTimeout Duration `json:"discover_timeout,omitempty"`
}

// Exchange types.
const (
	ExchangeTypeMosaic  = "mosaic"
	ExchangeTypeAcademy = "academy"
)

// Exchange backends.
const (
	ExchangeBackendMemory = "memory"
	ExchangeBackendRedis  = "redis"
)
