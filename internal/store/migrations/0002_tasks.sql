-- Tasks, their attempts and the event log. Every state change is one transaction that
-- also appends its event.
CREATE TABLE tasks (
    id               TEXT PRIMARY KEY,
    name             TEXT NOT NULL,
    command          TEXT NOT NULL DEFAULT '',
    script           TEXT NOT NULL DEFAULT '',
    description      TEXT NOT NULL DEFAULT '',
    envelope         TEXT NOT NULL,              -- JSON model.Envelope
    target_system    TEXT NOT NULL DEFAULT '',
    target_partition TEXT NOT NULL DEFAULT '',
    policy           TEXT NOT NULL DEFAULT '{}', -- JSON continuation policy
    state            TEXT NOT NULL,
    reason           TEXT NOT NULL DEFAULT '',
    decision         TEXT NOT NULL DEFAULT '',   -- JSON decision trace of the latest placement
    created_at       INTEGER NOT NULL,           -- unix nanoseconds
    updated_at       INTEGER NOT NULL
);
CREATE INDEX tasks_state ON tasks (state);

CREATE TABLE attempts (
    task_id    TEXT    NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,
    n          INTEGER NOT NULL,
    tag        TEXT    NOT NULL UNIQUE,   -- mosaic-<task>-<n>: the job name, the idempotency key
    system     TEXT    NOT NULL,
    partition  TEXT    NOT NULL,
    account    TEXT    NOT NULL DEFAULT '',
    spec       TEXT    NOT NULL,          -- JSON model.JobSpec
    script     TEXT    NOT NULL DEFAULT '',
    job_id     TEXT    NOT NULL DEFAULT '',
    state      TEXT    NOT NULL,
    raw_state  TEXT    NOT NULL DEFAULT '',
    exit_code  INTEGER,
    reason     TEXT    NOT NULL DEFAULT '',
    created_at INTEGER NOT NULL,
    started_at INTEGER,
    ended_at   INTEGER,
    PRIMARY KEY (task_id, n)
);
CREATE INDEX attempts_state ON attempts (state);
CREATE INDEX attempts_system_job ON attempts (system, job_id);

CREATE TABLE events (
    id        INTEGER PRIMARY KEY AUTOINCREMENT,
    time      INTEGER NOT NULL,
    task_id   TEXT    NOT NULL DEFAULT '',
    attempt   INTEGER NOT NULL DEFAULT 0,
    system    TEXT    NOT NULL DEFAULT '',
    kind      TEXT    NOT NULL,
    message   TEXT    NOT NULL,
    rationale TEXT    NOT NULL DEFAULT '',
    actor     TEXT    NOT NULL
);
CREATE INDEX events_task ON events (task_id, id);
