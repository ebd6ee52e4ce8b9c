-- A hash of the submission an Idempotency-Key created its task with (NULL: none, or a
-- task stored before it was kept): a retry with the same key and another request is
-- refused instead of answered with the first task.
ALTER TABLE tasks ADD COLUMN idempotency_hash TEXT;
