package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

// TaskRow is a task with its stored decision trace and continuation policy (opaque JSON
// to the store).
type TaskRow struct {
	model.Task
	Decision json.RawMessage `json:"decision,omitempty"`
	Policy   json.RawMessage `json:"policy,omitempty"`
	// CampaignRun is the campaign run whose launcher submitted the task ("" for an
	// ordinary task): it runs once where the launcher placed it, so it is never
	// replanned or placed again.
	CampaignRun string `json:"campaign_run,omitempty"`
	// UnstoredEnv: the task's job was given variables that are not stored (a
	// campaign's forwarded secrets), so its attempt cannot be submitted again by
	// anyone but the process that holds them.
	UnstoredEnv bool `json:"unstored_env,omitempty"`
	// IdempotencyKey is the client's Idempotency-Key of the submission that created
	// the task ("" = none); unique: CreateTask refuses a second task with the same key
	// with ErrDuplicateKey (TaskByIdempotencyKey finds the first).
	IdempotencyKey string `json:"-"`
	// IdempotencyHash is a hash of the request that came with IdempotencyKey (stored
	// with it; read by TaskByIdempotencyKey only): a retry must send the same one.
	IdempotencyHash string `json:"-"`
}

// ErrDuplicateKey is wrapped by CreateTask's error when a task with the same
// idempotency key exists.
var ErrDuplicateKey = errors.New("a task with this idempotency key exists")

func nanos(t time.Time) int64 { return t.UnixNano() }
func fromNanos(n int64) time.Time {
	return time.Unix(0, n).UTC()
}

func insertEvents(ctx context.Context, x querier, evs []model.Event) ([]int64, error) {
	ids := make([]int64, 0, len(evs))
	for _, e := range evs {
		if e.Time.IsZero() {
			e.Time = time.Now()
		}
		var id int64
		if err := x.QueryRowContext(ctx, `INSERT INTO events (time, task_id, attempt, system, kind, message, rationale, actor)
			VALUES (?,?,?,?,?,?,?,?) RETURNING id`, nanos(e.Time), e.TaskID, e.Attempt, e.System, e.Kind, e.Message, e.Rationale, string(e.Actor)).Scan(&id); err != nil {
			return nil, fmt.Errorf("store: append event: %w", err)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// tx runs fn in one write transaction. Write the queries in fn with `?`
// placeholders, as everywhere in the store: tx rebinds them for PostgreSQL.
//
// Write transactions run one at a time on both backends: SQLite's BEGIN IMMEDIATE
// takes the database's write lock, and on PostgreSQL tx first takes the store's
// writer lock (pg_advisory_xact_lock, released at commit or rollback). Event ids are
// assigned at insert, so this is what makes them commit in id order: EventQuery's
// cursors never skip an event that a slower transaction committed later.
func (s *Store) tx(ctx context.Context, fn func(*txn) error) error {
	return s.inTx(ctx, s.db.d == dialectPostgres, fn)
}

// inTx runs fn in one transaction, first taking the PostgreSQL writer lock when
// writerLock is set (tx; a lease step does without, leader.go).
func (s *Store) inTx(ctx context.Context, writerLock bool, fn func(*txn) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: begin: %w", err)
	}
	if writerLock {
		// lock_timeout bounds the wait (SET LOCAL: for this transaction only).
		if _, err := tx.ExecContext(ctx, `SELECT set_config('lock_timeout', ?, true)`,
			strconv.FormatInt(pgWriterLockTimeout.Milliseconds(), 10)); err != nil {
			tx.Rollback()
			return fmt.Errorf("store %s: set lock_timeout: %w", s.path, err)
		}
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(?)`, pgWriterLockKey); err != nil {
			tx.Rollback()
			return writerLockError(s.path, err)
		}
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: commit: %w", err)
	}
	return nil
}

// CreateTask inserts a task and its events in one transaction.
func (s *Store) CreateTask(ctx context.Context, t *TaskRow, evs ...model.Event) error {
	env, err := json.Marshal(t.Envelope)
	if err != nil {
		return err
	}
	pol := t.Policy
	if len(pol) == 0 {
		pol = json.RawMessage("{}")
	}
	var ts, tp string
	if t.Target != nil {
		ts, tp = t.Target.System, t.Target.Partition
	}
	var key, hash sql.NullString
	if t.IdempotencyKey != "" {
		key = sql.NullString{String: t.IdempotencyKey, Valid: true}
		hash = sql.NullString{String: t.IdempotencyHash, Valid: t.IdempotencyHash != ""}
	}
	return s.tx(ctx, func(tx *txn) error {
		if _, err := s.fence(ctx, tx); err != nil {
			return err // team mode: only the leader stores tasks
		}
		if key.Valid {
			var n int
			if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM tasks WHERE idempotency_key=?`, key).Scan(&n); err != nil {
				return fmt.Errorf("store: create task %s: %w", t.ID, err)
			}
			if n > 0 {
				return fmt.Errorf("store: create task %s: %w", t.ID, ErrDuplicateKey)
			}
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO tasks (id, name, command, script, description, envelope, target_system,
			target_partition, policy, state, reason, decision, created_at, updated_at, campaign_run, unstored_env, owner, idempotency_key, idempotency_hash) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`,
			t.ID, t.Name, t.Command, t.Script, t.Description, string(env), ts, tp, string(pol), string(t.State), t.Reason,
			string(t.Decision), nanos(t.CreatedAt), nanos(t.UpdatedAt), t.CampaignRun, t.UnstoredEnv, ownerOf(t.Owner), key, hash); err != nil {
			if key.Valid && isUniqueViolation(err) {
				return fmt.Errorf("store: create task %s: %w", t.ID, ErrDuplicateKey)
			}
			return fmt.Errorf("store: create task %s: %w", t.ID, err)
		}
		_, err := insertEvents(ctx, tx, evs)
		return err
	})
}

// TaskUpdate changes a task; nil fields stay as they are.
type TaskUpdate struct {
	State    *model.TaskState
	Reason   *string
	Decision json.RawMessage
	Envelope *model.Envelope
	Target   **model.Target // pointer to nil clears the pin
}

// UpdateTask applies an update and appends events in one transaction.
func (s *Store) UpdateTask(ctx context.Context, id string, u TaskUpdate, evs ...model.Event) error {
	return s.tx(ctx, func(tx *txn) error {
		if _, err := s.fence(ctx, tx); err != nil {
			return err // team mode: a deposed replica writes nothing (see UpdateAttempt)
		}
		now := nanos(time.Now())
		if u.State != nil {
			if _, err := tx.ExecContext(ctx, `UPDATE tasks SET state=?, updated_at=? WHERE id=?`, string(*u.State), now, id); err != nil {
				return err
			}
		}
		if u.Reason != nil {
			if _, err := tx.ExecContext(ctx, `UPDATE tasks SET reason=?, updated_at=? WHERE id=?`, *u.Reason, now, id); err != nil {
				return err
			}
		}
		if u.Decision != nil {
			if _, err := tx.ExecContext(ctx, `UPDATE tasks SET decision=?, updated_at=? WHERE id=?`, string(u.Decision), now, id); err != nil {
				return err
			}
		}
		if u.Envelope != nil {
			b, _ := json.Marshal(u.Envelope)
			if _, err := tx.ExecContext(ctx, `UPDATE tasks SET envelope=?, updated_at=? WHERE id=?`, string(b), now, id); err != nil {
				return err
			}
		}
		if u.Target != nil {
			var ts, tp string
			if *u.Target != nil {
				ts, tp = (*u.Target).System, (*u.Target).Partition
			}
			if _, err := tx.ExecContext(ctx, `UPDATE tasks SET target_system=?, target_partition=?, updated_at=? WHERE id=?`, ts, tp, now, id); err != nil {
				return err
			}
		}
		_, err := insertEvents(ctx, tx, evs)
		return err
	})
}

const taskCols = `id, name, command, script, description, envelope, target_system, target_partition, policy, state, reason, decision, created_at, updated_at, campaign_run, unstored_env, owner`

// ownerOf is the owner stored for a task: LocalUser when none is given.
func ownerOf(o string) string {
	if o == "" {
		return model.LocalUser
	}
	return o
}

func scanTask(sc interface{ Scan(...any) error }) (*TaskRow, error) {
	var t TaskRow
	var env, ts, tp, pol, state, dec string
	var created, updated int64
	if err := sc.Scan(&t.ID, &t.Name, &t.Command, &t.Script, &t.Description, &env, &ts, &tp, &pol, &state, &t.Reason, &dec, &created, &updated, &t.CampaignRun, &t.UnstoredEnv, &t.Owner); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(env), &t.Envelope); err != nil {
		return nil, fmt.Errorf("store: task %s: bad envelope JSON: %w", t.ID, err)
	}
	if ts != "" {
		t.Target = &model.Target{System: ts, Partition: tp}
	}
	t.State = model.TaskState(state)
	if dec != "" {
		t.Decision = json.RawMessage(dec)
	}
	t.Policy = json.RawMessage(pol)
	t.CreatedAt, t.UpdatedAt = fromNanos(created), fromNanos(updated)
	return &t, nil
}

// Task returns one task.
func (s *Store) Task(ctx context.Context, id string) (*TaskRow, error) {
	t, err := scanTask(s.db.QueryRowContext(ctx, `SELECT `+taskCols+` FROM tasks WHERE id=?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("task %q: %w", id, ErrNotFound)
	}
	return t, err
}

// TaskByIdempotencyKey returns the task a submission with this key created.
func (s *Store) TaskByIdempotencyKey(ctx context.Context, key string) (*TaskRow, error) {
	t, err := scanTask(s.db.QueryRowContext(ctx, `SELECT `+taskCols+` FROM tasks WHERE idempotency_key=?`, key))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("task with idempotency key: %w", ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	var hash sql.NullString
	if err := s.db.QueryRowContext(ctx, `SELECT idempotency_hash FROM tasks WHERE id=?`, t.ID).Scan(&hash); err != nil {
		return nil, fmt.Errorf("store: task %s: idempotency hash: %w", t.ID, err)
	}
	t.IdempotencyKey, t.IdempotencyHash = key, hash.String
	return t, nil
}

// Tasks lists tasks, newest first, optionally only those in given states.
func (s *Store) Tasks(ctx context.Context, states []model.TaskState, limit int) ([]*TaskRow, error) {
	return s.TasksOf(ctx, "", states, limit)
}

// TasksOf is Tasks of one owner ("" = every owner).
func (s *Store) TasksOf(ctx context.Context, owner string, states []model.TaskState, limit int) ([]*TaskRow, error) {
	if limit <= 0 || limit > 10000 {
		limit = 1000
	}
	q := `SELECT ` + taskCols + ` FROM tasks WHERE 1=1`
	var args []any
	if owner != "" {
		q += ` AND owner = ?`
		args = append(args, owner)
	}
	if len(states) > 0 {
		q += ` AND state IN (`
		for i, st := range states {
			if i > 0 {
				q += ","
			}
			q += "?"
			args = append(args, string(st))
		}
		q += `)`
	}
	q += ` ORDER BY created_at DESC, id COLLATE BINARY LIMIT ?`
	args = append(args, limit)
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("store: list tasks: %w", err)
	}
	defer rows.Close()
	var out []*TaskRow
	for rows.Next() {
		t, err := scanTask(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// CreateAttempt writes an attempt (normally in state submitting, before the submit call)
// and its events in one transaction. The tag is unique: a second attempt with the same
// tag is refused, which is what keeps a crash from producing two jobs.
func (s *Store) CreateAttempt(ctx context.Context, a *model.Attempt, evs ...model.Event) error {
	spec, err := json.Marshal(a.Spec)
	if err != nil {
		return err
	}
	return s.tx(ctx, func(tx *txn) error {
		// The claim: in team mode it commits only under the current leader's token.
		claim, err := s.fence(ctx, tx)
		if err != nil {
			return err
		}
		var est sql.NullInt64
		if a.EstimatedStart != nil {
			est = sql.NullInt64{Int64: nanos(*a.EstimatedStart), Valid: true}
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO attempts (task_id, n, tag, system, partition, account, spec, script, job_id,
			state, raw_state, reason, created_at, est_start, claim_token) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`,
			a.TaskID, a.N, a.Tag, a.System, a.Partition, a.Account, string(spec), a.Script, a.JobID,
			string(a.State), a.RawState, a.Reason, nanos(a.CreatedAt), est, claim); err != nil {
			if isUniqueViolation(err) {
				return fmt.Errorf("store: create attempt %s: %w (%w)", a.Tag, ErrDuplicate, err)
			}
			return fmt.Errorf("store: create attempt %s: %w", a.Tag, err)
		}
		_, err = insertEvents(ctx, tx, evs)
		return err
	})
}

// AttemptUpdate changes an attempt; nil fields stay as they are.
type AttemptUpdate struct {
	JobID    *string
	State    *model.JobState
	RawState *string
	ExitCode *int
	Reason   *string
	Script   *string
	Started  *time.Time
	Ended    *time.Time
	// Output is where the job writes stdout/stderr (see AttemptOutput).
	Output *model.JobOutput
}

// UpdateAttempt applies an update and appends events in one transaction.
//
// In team mode it is fenced like a claim: a replica whose lease token is stale
// (deposed) writes nothing and gets ErrFenced.
func (s *Store) UpdateAttempt(ctx context.Context, taskID string, n int, u AttemptUpdate, evs ...model.Event) error {
	return s.tx(ctx, func(tx *txn) error {
		if _, err := s.fence(ctx, tx); err != nil {
			return err
		}
		set := func(col string, v any) error {
			_, err := tx.ExecContext(ctx, `UPDATE attempts SET `+col+`=? WHERE task_id=? AND n=?`, v, taskID, n)
			if err != nil {
				return fmt.Errorf("store: update attempt %s/%d %s: %w", taskID, n, col, err)
			}
			return nil
		}
		var errs []error
		if u.JobID != nil {
			errs = append(errs, set("job_id", *u.JobID))
		}
		if u.State != nil {
			errs = append(errs, set("state", string(*u.State)))
		}
		if u.RawState != nil {
			errs = append(errs, set("raw_state", *u.RawState))
		}
		if u.ExitCode != nil {
			errs = append(errs, set("exit_code", *u.ExitCode))
		}
		if u.Reason != nil {
			errs = append(errs, set("reason", *u.Reason))
		}
		if u.Script != nil {
			errs = append(errs, set("script", *u.Script))
		}
		if u.Started != nil {
			errs = append(errs, set("started_at", nanos(*u.Started)))
		}
		if u.Ended != nil {
			errs = append(errs, set("ended_at", nanos(*u.Ended)))
		}
		if u.Output != nil {
			b, err := json.Marshal(u.Output)
			if err != nil {
				return fmt.Errorf("store: attempt %s/%d output: %w", taskID, n, err)
			}
			errs = append(errs, set("output", string(b)))
		}
		if err := errors.Join(errs...); err != nil {
			return err
		}
		_, err := insertEvents(ctx, tx, evs)
		return err
	})
}

const attemptCols = `task_id, n, tag, system, partition, account, spec, script, job_id, state, raw_state, exit_code, reason, created_at, started_at, ended_at, est_start`

func scanAttempt(sc interface{ Scan(...any) error }) (*model.Attempt, error) {
	var a model.Attempt
	var spec, state string
	var exit, started, ended, est sql.NullInt64
	var created int64
	if err := sc.Scan(&a.TaskID, &a.N, &a.Tag, &a.System, &a.Partition, &a.Account, &spec, &a.Script, &a.JobID, &state,
		&a.RawState, &exit, &a.Reason, &created, &started, &ended, &est); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(spec), &a.Spec); err != nil {
		return nil, fmt.Errorf("store: attempt %s: bad spec JSON: %w", a.Tag, err)
	}
	a.State = model.JobState(state)
	if exit.Valid {
		v := int(exit.Int64)
		a.ExitCode = &v
	}
	a.CreatedAt = fromNanos(created)
	if started.Valid {
		t := fromNanos(started.Int64)
		a.StartedAt = &t
	}
	if ended.Valid {
		t := fromNanos(ended.Int64)
		a.EndedAt = &t
	}
	if est.Valid {
		t := fromNanos(est.Int64)
		a.EstimatedStart = &t
	}
	return &a, nil
}

func (s *Store) queryAttempts(ctx context.Context, where string, args ...any) ([]*model.Attempt, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+attemptCols+` FROM attempts `+where, args...)
	if err != nil {
		return nil, fmt.Errorf("store: read attempts: %w", err)
	}
	defer rows.Close()
	var out []*model.Attempt
	for rows.Next() {
		a, err := scanAttempt(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// Attempts returns a task's attempts in order.
func (s *Store) Attempts(ctx context.Context, taskID string) ([]*model.Attempt, error) {
	return s.queryAttempts(ctx, `WHERE task_id=? ORDER BY n`, taskID)
}

// AttemptOutput returns where attempt n of a task writes its stdout and stderr, as
// recorded when the site accepted the job; nil when it was not recorded (attempts
// written before the location was stored, or not accepted by a site).
func (s *Store) AttemptOutput(ctx context.Context, taskID string, n int) (*model.JobOutput, error) {
	var raw string
	err := s.db.QueryRowContext(ctx, `SELECT output FROM attempts WHERE task_id=? AND n=?`, taskID, n).Scan(&raw)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("attempt %d of task %q: %w", n, taskID, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("store: read output location of attempt %s/%d: %w", taskID, n, err)
	}
	if raw == "" {
		return nil, nil
	}
	var out model.JobOutput
	if err := json.Unmarshal([]byte(raw), &out); err != nil {
		return nil, fmt.Errorf("store: attempt %s/%d: bad output JSON: %w", taskID, n, err)
	}
	return &out, nil
}

// OpenAttempts returns attempts that are submitting or active at a site (not final),
// oldest first: what the monitor follows and what recovery reconciles.
func (s *Store) OpenAttempts(ctx context.Context) ([]*model.Attempt, error) {
	return s.queryAttempts(ctx, `WHERE state NOT IN ('succeeded','failed','timeout','out_of_memory','node_fail','boot_fail',
		'cancelled','preempted','deadline','lost','submit_error') ORDER BY created_at, task_id COLLATE BINARY, n`)
}

// AppendEvents adds events outside any other change.
func (s *Store) AppendEvents(ctx context.Context, evs ...model.Event) ([]int64, error) {
	var ids []int64
	err := s.tx(ctx, func(tx *txn) error {
		var err error
		ids, err = insertEvents(ctx, tx, evs)
		return err
	})
	return ids, err
}

// EventQuery filters Events. AfterID and BeforeID are exclusive cursors: a page read
// newest first continues with BeforeID = the smallest id it returned, one read oldest
// first with AfterID = the largest. Ids only grow (AUTOINCREMENT on SQLite, an
// identity column on PostgreSQL; one writer at a time), so neither cursor skips or repeats an event, across restarts too.
type EventQuery struct {
	TaskID   string
	AfterID  int64     // only events with a larger id
	BeforeID int64     // only events with a smaller id (0 = no bound)
	Since    time.Time // only events at or after this time
	Kinds    []string
	Limit    int // default 200, max 10000
	Newest   bool
	// Owner, when set, keeps only events of that user's tasks and events of no task
	// (the federation's own: probes, site health).
	Owner string
}

// Events returns events in id order (or newest first with Newest).
func (s *Store) Events(ctx context.Context, q EventQuery) ([]model.Event, error) {
	if q.Limit <= 0 {
		q.Limit = 200
	}
	if q.Limit > 10000 {
		q.Limit = 10000
	}
	sqlq := `SELECT id, time, task_id, attempt, system, kind, message, rationale, actor FROM events WHERE id > ?`
	args := []any{q.AfterID}
	if q.BeforeID > 0 {
		sqlq += ` AND id < ?`
		args = append(args, q.BeforeID)
	}
	if q.TaskID != "" {
		sqlq += ` AND task_id = ?`
		args = append(args, q.TaskID)
	}
	if q.Owner != "" {
		sqlq += ` AND (task_id = '' OR task_id IN (SELECT id FROM tasks WHERE owner = ?))`
		args = append(args, q.Owner)
	}
	if !q.Since.IsZero() {
		sqlq += ` AND time >= ?`
		args = append(args, nanos(q.Since))
	}
	if len(q.Kinds) > 0 {
		sqlq += ` AND kind IN (`
		for i, k := range q.Kinds {
			if i > 0 {
				sqlq += ","
			}
			sqlq += "?"
			args = append(args, k)
		}
		sqlq += `)`
	}
	if q.Newest {
		sqlq += ` ORDER BY id DESC LIMIT ?`
	} else {
		sqlq += ` ORDER BY id LIMIT ?`
	}
	args = append(args, q.Limit)
	rows, err := s.db.QueryContext(ctx, sqlq, args...)
	if err != nil {
		return nil, fmt.Errorf("store: read events: %w", err)
	}
	defer rows.Close()
	var out []model.Event
	for rows.Next() {
		var e model.Event
		var at int64
		var actor string
		if err := rows.Scan(&e.ID, &at, &e.TaskID, &e.Attempt, &e.System, &e.Kind, &e.Message, &e.Rationale, &actor); err != nil {
			return nil, err
		}
		e.Time = fromNanos(at)
		e.Actor = model.Actor(actor)
		out = append(out, e)
	}
	return out, rows.Err()
}

// AppendEventsErr is AppendEvents for callers that need only the error.
func (s *Store) AppendEventsErr(ctx context.Context, evs ...model.Event) error {
	_, err := s.AppendEvents(ctx, evs...)
	return err
}
