-- A campaign launcher's slice job (docs/CAMPAIGNS.md, "Submit-mode jobs are tasks"):
-- campaign_run is the run it belongs to ('' = an ordinary task); unstored_env = 1 when
-- its job was given variables that are not stored (forwarded secrets). Such a task runs
-- its one attempt where the launcher placed it: it is never replanned or placed again,
-- and its attempt is never submitted again without the launcher's values.
ALTER TABLE tasks ADD COLUMN campaign_run TEXT NOT NULL DEFAULT '';
ALTER TABLE tasks ADD COLUMN unstored_env INTEGER NOT NULL DEFAULT 0;
