-- latscope store, schema version 8: histograms kept at checkpoints.
--
-- `metrics` holds each metric's cumulative histogram as of the latest
-- checkpoint, replaced each time. This table keeps the cumulative
-- (uncorrected) histograms as they were at the cell's checkpoints, so that
-- the histogram of any part of a run between two checkpoints is exact (the
-- difference of two rows): the forecast refits its tail model to the first
-- part of a run and tests it on the rest, and forecasts a run that changed
-- part by part. At most 128 checkpoint times are kept per cell, evenly
-- spaced (see crates/store/src/snapshots.rs).
--
-- A store of version 7 or earlier gains this table empty; nothing in it
-- changes, and its runs simply have no snapshots (their forecasts fall back
-- to checks on the per-second maxima).

CREATE TABLE metric_snapshots (
    id        INTEGER PRIMARY KEY,
    cell_id   INTEGER NOT NULL REFERENCES cells (id) ON DELETE CASCADE,
    -- The cell's measured time at the checkpoint.
    at_ns     INTEGER NOT NULL CHECK (at_ns > 0),
    name      TEXT    NOT NULL,
    cpu       INTEGER NOT NULL CHECK (cpu >= -1),
    histogram BLOB    NOT NULL,
    UNIQUE (cell_id, at_ns, name, cpu)
);

CREATE INDEX metric_snapshots_cell ON metric_snapshots (cell_id, at_ns);

-- Which checkpoints of a cell are kept: every `every`-th of the
-- `checkpoints` seen so far (`every` doubles each time the kept ones are
-- thinned).
CREATE TABLE snapshot_schedule (
    cell_id     INTEGER PRIMARY KEY REFERENCES cells (id) ON DELETE CASCADE,
    checkpoints INTEGER NOT NULL CHECK (checkpoints >= 0),
    every       INTEGER NOT NULL CHECK (every >= 1)
);
