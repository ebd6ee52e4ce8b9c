package store

import (
	"context"
	"fmt"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

// HistoryPoint is one downsampled record of a partition at one bucket.
type HistoryPoint struct {
	TakenAt     time.Time `json:"taken_at"`
	System      string    `json:"system"`
	Partition   string    `json:"partition"`
	Account     string    `json:"account"`
	Health      string    `json:"health"`
	FreeGPUs    int       `json:"free_gpus"`
	TotalGPUs   int       `json:"total_gpus"`
	FreeCores   int       `json:"free_cores"`
	TotalCores  int       `json:"total_cores"`
	RunningJobs int       `json:"running_jobs"`
	PendingJobs int       `json:"pending_jobs"`
	NodesIdle   int       `json:"nodes_idle"`
	NodesDown   int       `json:"nodes_down"`
	NodesTotal  int       `json:"nodes_total"`
}

// SaveSnapshot writes a snapshot into the history, bucketed to the given resolution:
// a later snapshot in the same bucket replaces the earlier one.
func (s *Store) SaveSnapshot(ctx context.Context, snap *model.ResourceSnapshot, bucket time.Duration) error {
	if bucket <= 0 {
		bucket = time.Minute
	}
	at := snap.TakenAt.Truncate(bucket).Unix()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: save snapshot: %w", err)
	}
	defer tx.Rollback()
	st, err := tx.PrepareContext(ctx, `INSERT INTO snapshot_history
		(taken_at, system, partition, account, health, free_gpus, total_gpus, free_cores, total_cores,
		 running_jobs, pending_jobs, nodes_idle, nodes_down, nodes_total)
		VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)
		ON CONFLICT (system, partition, account, taken_at) DO UPDATE SET health = excluded.health,
		 free_gpus = excluded.free_gpus, total_gpus = excluded.total_gpus, free_cores = excluded.free_cores,
		 total_cores = excluded.total_cores, running_jobs = excluded.running_jobs, pending_jobs = excluded.pending_jobs,
		 nodes_idle = excluded.nodes_idle, nodes_down = excluded.nodes_down, nodes_total = excluded.nodes_total`)
	if err != nil {
		return err
	}
	defer st.Close()
	for i := range snap.Records {
		r := &snap.Records[i]
		if _, err := st.ExecContext(ctx, at, r.System, r.Partition, r.Account, string(r.Health),
			r.FreeGPUs, r.TotalGPUs, r.FreeCores, r.TotalCores, r.RunningJobs, r.PendingJobs,
			r.Nodes.Idle, r.Nodes.Down, r.Nodes.Total); err != nil {
			return fmt.Errorf("store: save snapshot record %s: %w", r.Key(), err)
		}
	}
	hs, err := tx.PrepareContext(ctx, `INSERT INTO system_history (taken_at, system, health, last_error, latency_ms) VALUES (?,?,?,?,?)
		ON CONFLICT (system, taken_at) DO UPDATE SET health = excluded.health, last_error = excluded.last_error,
		 latency_ms = excluded.latency_ms`)
	if err != nil {
		return err
	}
	defer hs.Close()
	for _, h := range snap.Systems {
		if _, err := hs.ExecContext(ctx, at, h.System, string(h.Health), h.LastError, h.ProbeLatencyMS); err != nil {
			return fmt.Errorf("store: save system health %s: %w", h.System, err)
		}
	}
	return tx.Commit()
}

// History returns stored points since a time, optionally for one system, oldest first,
// at most limit rows (0 = 10,000).
func (s *Store) History(ctx context.Context, system string, since time.Time, limit int) ([]HistoryPoint, error) {
	if limit <= 0 || limit > 100000 {
		limit = 10000
	}
	q := `SELECT taken_at, system, partition, account, health, free_gpus, total_gpus, free_cores, total_cores,
		running_jobs, pending_jobs, nodes_idle, nodes_down, nodes_total
		FROM snapshot_history WHERE taken_at >= ?`
	args := []any{since.Unix()}
	if system != "" {
		q += ` AND system = ?`
		args = append(args, system)
	}
	q += ` ORDER BY taken_at, system, partition, account LIMIT ?`
	args = append(args, limit)
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("store: read history: %w", err)
	}
	defer rows.Close()
	var out []HistoryPoint
	for rows.Next() {
		var p HistoryPoint
		var at int64
		if err := rows.Scan(&at, &p.System, &p.Partition, &p.Account, &p.Health, &p.FreeGPUs, &p.TotalGPUs,
			&p.FreeCores, &p.TotalCores, &p.RunningJobs, &p.PendingJobs, &p.NodesIdle, &p.NodesDown, &p.NodesTotal); err != nil {
			return nil, err
		}
		p.TakenAt = time.Unix(at, 0).UTC()
		out = append(out, p)
	}
	return out, rows.Err()
}

// PruneHistory deletes history older than a time and returns how many rows went.
func (s *Store) PruneHistory(ctx context.Context, before time.Time) (int64, error) {
	res, err := s.db.ExecContext(ctx, `DELETE FROM snapshot_history WHERE taken_at < ?`, before.Unix())
	if err != nil {
		return 0, fmt.Errorf("store: prune history: %w", err)
	}
	n, _ := res.RowsAffected()
	if _, err := s.db.ExecContext(ctx, `DELETE FROM system_history WHERE taken_at < ?`, before.Unix()); err != nil {
		return n, fmt.Errorf("store: prune system history: %w", err)
	}
	return n, nil
}
