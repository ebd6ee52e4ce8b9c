-- Users, their API tokens (only a SHA-256 hash of each is stored), the owner of every
-- task and the audit log (docs/SECURITY.md, "Users and tokens"). Tasks stored before
-- users existed belong to the implicit laptop user 'local' (model.LocalUser).
CREATE TABLE users (
    name       TEXT PRIMARY KEY,
    admin      INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL,           -- unix nanoseconds
    revoked_at INTEGER NOT NULL DEFAULT 0  -- 0 = active
);

CREATE TABLE api_tokens (
    id         TEXT PRIMARY KEY,           -- the display id, mos_<8 characters>
    user_name  TEXT NOT NULL REFERENCES users(name),
    hash       TEXT NOT NULL UNIQUE,       -- hex SHA-256 of the whole token
    label      TEXT NOT NULL DEFAULT '',
    created_at INTEGER NOT NULL,
    revoked_at INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX api_tokens_user ON api_tokens (user_name);

CREATE TABLE audit (
    id        INTEGER PRIMARY KEY AUTOINCREMENT,
    time      INTEGER NOT NULL,
    user_name TEXT    NOT NULL,
    action    TEXT    NOT NULL,            -- task.submit, task.cancel, user.add, token.create, ...
    target    TEXT    NOT NULL DEFAULT '',
    remote    TEXT    NOT NULL DEFAULT '',
    detail    TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX audit_time ON audit (time);

ALTER TABLE tasks ADD COLUMN owner TEXT NOT NULL DEFAULT 'local';
CREATE INDEX tasks_owner ON tasks (owner, created_at);
