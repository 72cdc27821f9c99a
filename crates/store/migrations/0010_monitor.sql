-- latscope store, schema version 10: the monitor's rolling windows.
--
-- A monitor (`latscope monitor`) is one run that measures for weeks. Beside
-- the run's own rows (cumulative metrics per cell, timeline seconds,
-- episodes), it keeps one histogram per minute and per hour for each
-- metric and CPU: what happened in that window alone. Old windows are
-- deleted by the monitor's retention policy (per-minute ones after 7 days,
-- per-hour ones after a year, by default), so the table stays bounded.
-- samples and max_ns repeat the histogram's count and maximum for queries
-- that need not decode blobs.

CREATE TABLE monitor_windows (
    id            INTEGER PRIMARY KEY,
    run_id        INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    span          TEXT    NOT NULL CHECK (span IN ('minute', 'hour')),
    start_unix_ns INTEGER NOT NULL CHECK (start_unix_ns >= 0),
    name          TEXT    NOT NULL,
    cpu           INTEGER NOT NULL CHECK (cpu >= -1),
    histogram     BLOB    NOT NULL,
    samples       INTEGER NOT NULL CHECK (samples >= 0),
    max_ns        INTEGER CHECK (max_ns >= 0),
    UNIQUE (run_id, span, start_unix_ns, name, cpu)
);

CREATE INDEX monitor_windows_age ON monitor_windows (span, start_unix_ns);
