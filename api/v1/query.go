package v1

// EventQuery selects activity-log entries (the query of GET /api/events).
type EventQuery struct {
	Task     string   // only this task's events
	Since    string   // RFC 3339 or a duration back from now ("1h")
	AfterID  int64    // only newer than this id (the page is then oldest first)
	BeforeID int64    // only older than this id: EventPage.NextBefore of the previous page
	Kinds    []string // only these kinds
	Limit    int      // at most this many (default 200)
	Order    string   // "newest" (default) or "oldest" (default with AfterID)
}

// IdleQuery selects partitions with free capacity now (the query of GET /api/idle).
type IdleQuery struct {
	GPUs, GPUMemGB, Cores int
	Arch, GPUModel        string
	MaxQueue              int // at most this many pending jobs; -1 = any
	Provider, System      string
}
