package store

import (
	"context"
	"slices"
	"time"
)

// MaxStartHistory bounds StartHistory's answer.
const MaxStartHistory = 100000

// StartHistory returns the latest attempts (at most limit, oldest start first; limit
// ≤ 0 or over MaxStartHistory means MaxStartHistory) that both had an estimated start
// at placement and have started: the history of predicted against observed starts a
// learner of site estimates (internal/waits) is fed from when the core starts.
func (s *Store) StartHistory(ctx context.Context, limit int) ([]*StartObservation, error) {
	if limit <= 0 || limit > MaxStartHistory {
		limit = MaxStartHistory
	}
	as, err := s.queryAttempts(ctx, `WHERE est_start IS NOT NULL AND started_at IS NOT NULL ORDER BY started_at DESC, task_id COLLATE BINARY, n LIMIT ?`, limit)
	if err != nil {
		return nil, err
	}
	slices.Reverse(as)
	out := make([]*StartObservation, 0, len(as))
	for _, a := range as {
		out = append(out, &StartObservation{System: a.System, Partition: a.Partition, Created: a.CreatedAt,
			Estimated: *a.EstimatedStart, Started: *a.StartedAt})
	}
	return out, nil
}

// StartObservation is one attempt's predicted and observed start (wall-clock times).
type StartObservation struct {
	System, Partition string
	Created           time.Time // when it was submitted (its placement)
	Estimated         time.Time // when the placement expected it to start
	Started           time.Time // when it started
}
