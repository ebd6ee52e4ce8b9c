-- Where each attempt's job writes stdout/stderr (JSON model.JobOutput; '' = not recorded):
-- logs must be readable after a restart, when no provider holds the job in memory.
ALTER TABLE attempts ADD COLUMN output TEXT NOT NULL DEFAULT '';
