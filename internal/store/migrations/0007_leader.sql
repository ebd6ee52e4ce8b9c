-- Team mode (docs/TEAM.md): replicas of `mosaic serve` on one store elect a leader with
-- a lease row. token is the fencing token: it grows by one whenever the holder changes,
-- and a submission's claim (the attempt row written before the call to the site)
-- commits only while the claimer's token is still the row's. expires_at and renewed_at
-- are unix nanoseconds of the holder's clock.
CREATE TABLE leader_lease (
    name       TEXT PRIMARY KEY,
    holder     TEXT    NOT NULL DEFAULT '',
    addr       TEXT    NOT NULL DEFAULT '',
    token      INTEGER NOT NULL DEFAULT 0,
    expires_at INTEGER NOT NULL DEFAULT 0,
    renewed_at INTEGER NOT NULL DEFAULT 0
);
-- The fencing token of the leader that claimed the attempt (0: laptop mode, no lease).
ALTER TABLE attempts ADD COLUMN claim_token INTEGER NOT NULL DEFAULT 0;
-- A client's Idempotency-Key of the submission that created the task (NULL: none); a
-- retry with the same key gets the same task.
ALTER TABLE tasks ADD COLUMN idempotency_key TEXT;
CREATE UNIQUE INDEX tasks_idempotency_key ON tasks (idempotency_key);
