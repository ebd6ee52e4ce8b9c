package store

import (
	"context"
	"fmt"
	"time"
)

// AuditEntry is one line of the audit log: who did what to which target, when and
// from where. It never holds a token (only a token's display id as a target).
type AuditEntry struct {
	ID     int64     `json:"id"`
	Time   time.Time `json:"time"`
	User   string    `json:"user"`
	Action string    `json:"action"` // task.submit, task.cancel, task.replan, user.add, user.revoke, token.create, token.revoke, campaign.launch
	Target string    `json:"target,omitempty"`
	Remote string    `json:"remote,omitempty"`
	Detail string    `json:"detail,omitempty"`
}

func insertAudit(ctx context.Context, x querier, a *AuditEntry) error {
	if a == nil {
		return nil
	}
	if a.Time.IsZero() {
		a.Time = time.Now()
	}
	if _, err := x.ExecContext(ctx, `INSERT INTO audit (time, user_name, action, target, remote, detail) VALUES (?,?,?,?,?,?)`,
		nanos(a.Time), a.User, a.Action, a.Target, a.Remote, a.Detail); err != nil {
		return fmt.Errorf("store: append audit entry %s: %w", a.Action, err)
	}
	return nil
}

// AppendAudit writes one audit entry on its own (for actions whose own writes are
// not the store's, or are in another transaction).
func (s *Store) AppendAudit(ctx context.Context, a AuditEntry) error {
	return s.tx(ctx, func(tx *txn) error { return insertAudit(ctx, tx, &a) })
}

// AuditQuery filters Audit.
type AuditQuery struct {
	User     string // only this user's entries
	BeforeID int64  // only entries with a smaller id (page back); 0 = no bound
	Limit    int    // default 200, max MaxAuditPage+1 (a caller asks one more to learn whether a next page exists)
}

// MaxAuditPage is the largest page of the audit log a caller may ask for.
const MaxAuditPage = 10000

// Audit returns audit entries, newest first.
func (s *Store) Audit(ctx context.Context, q AuditQuery) ([]AuditEntry, error) {
	if q.Limit <= 0 {
		q.Limit = 200
	}
	q.Limit = min(q.Limit, MaxAuditPage+1)
	sqlq := `SELECT id, time, user_name, action, target, remote, detail FROM audit WHERE 1=1`
	var args []any
	if q.User != "" {
		sqlq += ` AND user_name = ?`
		args = append(args, q.User)
	}
	if q.BeforeID > 0 {
		sqlq += ` AND id < ?`
		args = append(args, q.BeforeID)
	}
	sqlq += ` ORDER BY id DESC LIMIT ?`
	args = append(args, q.Limit)
	rows, err := s.db.QueryContext(ctx, sqlq, args...)
	if err != nil {
		return nil, fmt.Errorf("store: read audit log: %w", err)
	}
	defer rows.Close()
	var out []AuditEntry
	for rows.Next() {
		var a AuditEntry
		var at int64
		if err := rows.Scan(&a.ID, &at, &a.User, &a.Action, &a.Target, &a.Remote, &a.Detail); err != nil {
			return nil, err
		}
		a.Time = fromNanos(at)
		out = append(out, a)
	}
	return out, rows.Err()
}
