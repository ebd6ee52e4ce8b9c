-- Downsampled federation history: one row per (partition record, bucket).
CREATE TABLE snapshot_history (
    taken_at     INTEGER NOT NULL,          -- unix seconds, start of the bucket
    system       TEXT    NOT NULL,
    partition    TEXT    NOT NULL,
    account      TEXT    NOT NULL DEFAULT '',
    health       TEXT    NOT NULL,
    free_gpus    INTEGER NOT NULL,
    total_gpus   INTEGER NOT NULL,
    free_cores   INTEGER NOT NULL,
    total_cores  INTEGER NOT NULL,
    running_jobs INTEGER NOT NULL,
    pending_jobs INTEGER NOT NULL,
    nodes_idle   INTEGER NOT NULL,
    nodes_down   INTEGER NOT NULL,
    nodes_total  INTEGER NOT NULL,
    PRIMARY KEY (system, partition, account, taken_at)
) WITHOUT ROWID;

CREATE INDEX snapshot_history_time ON snapshot_history (taken_at);

-- Per-system probe health over time (outages show up in the history).
CREATE TABLE system_history (
    taken_at   INTEGER NOT NULL,
    system     TEXT    NOT NULL,
    health     TEXT    NOT NULL,
    last_error TEXT    NOT NULL DEFAULT '',
    latency_ms INTEGER NOT NULL,
    PRIMARY KEY (system, taken_at)
) WITHOUT ROWID;
