-- When the placement expected an attempt to start: the monitor's yardstick for queue-wait overruns.
ALTER TABLE attempts ADD COLUMN est_start INTEGER;
