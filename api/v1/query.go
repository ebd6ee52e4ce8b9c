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
// The zero value selects every partition with free capacity, whatever its queue.
type IdleQuery struct {
	GPUs, GPUMemGB, Cores int // at least this many free (0 = any)
	Arch, GPUModel        string
	// MaxQueue keeps only partitions with at most *MaxQueue pending jobs; nil = any
	// queue depth (what GET /api/idle does without max_queue). Ptr(0) asks for
	// partitions with nothing pending.
	MaxQueue         *int
	Provider, System string
}

// IdleResult is GET /api/idle's answer: the partitions, and when there are none, which
// filter removed the last ones ("Frontera@TACC has no H100 GPUs (models there: …)").
type IdleResult struct {
	Partitions  []ResourceRecord `json:"partitions"`
	Explanation string           `json:"explanation,omitempty"`
}

// Ptr returns a pointer to v, for optional fields such as IdleQuery.MaxQueue.
func Ptr[T any](v T) *T { return &v }
