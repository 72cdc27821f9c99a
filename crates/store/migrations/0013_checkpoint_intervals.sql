-- latscope store, schema version 13: one interval histogram per checkpoint.
--
-- `metrics` holds each metric's cumulative histogram as of the latest
-- checkpoint, and `metric_snapshots` a thinned set of earlier ones (at most
-- 128 per cell). This table keeps, for the metrics an HdrHistogram interval
-- log and the percentiles over time need (timer.latency, noise.gap and the
-- udp.* ones; see crates/store/src/intervals.rs), what each checkpoint added:
-- the histogram of the samples recorded since the cell's previous stored
-- checkpoint, per CPU. `latscope export --format hdr` writes one interval
-- per row, as jHiccup's logs have one per reporting interval.
--
-- start_ns and end_ns are the cell's measured time, start_unix_ns and
-- end_unix_ns the wall clock. samples and max_ns repeat the histogram's
-- count and maximum for queries that need not decode blobs. The histogram
-- is zlib over latscope's LSH1 encoding (see the module for why).
--
-- A store of version 12 or earlier gains these tables empty: its runs have
-- no intervals, and their HDR export falls back to one interval per cell.
-- (IF NOT EXISTS: a store set back to an earlier version by hand, as the
-- migration tests do, keeps what it has.)

CREATE TABLE IF NOT EXISTS metric_intervals (
    id            INTEGER PRIMARY KEY,
    cell_id       INTEGER NOT NULL REFERENCES cells (id) ON DELETE CASCADE,
    name          TEXT    NOT NULL,
    cpu           INTEGER NOT NULL CHECK (cpu >= -1),
    start_ns      INTEGER NOT NULL CHECK (start_ns >= 0),
    end_ns        INTEGER NOT NULL CHECK (end_ns >= start_ns),
    start_unix_ns INTEGER NOT NULL CHECK (start_unix_ns >= 0),
    end_unix_ns   INTEGER NOT NULL CHECK (end_unix_ns >= start_unix_ns),
    samples       INTEGER NOT NULL CHECK (samples >= 0),
    max_ns        INTEGER CHECK (max_ns >= 0),
    histogram     BLOB    NOT NULL,
    UNIQUE (cell_id, name, cpu, end_ns)
);

-- The monitor's retention deletes by age.
CREATE INDEX IF NOT EXISTS metric_intervals_age ON metric_intervals (end_unix_ns);

-- The bounds of each cell's latest interval: where the next one starts, and
-- the mark of a cell whose checkpoints keep intervals (a cell without one
-- was stored before version 13, or imported).
CREATE TABLE IF NOT EXISTS interval_marks (
    cell_id       INTEGER PRIMARY KEY REFERENCES cells (id) ON DELETE CASCADE,
    start_ns      INTEGER NOT NULL CHECK (start_ns >= 0),
    end_ns        INTEGER NOT NULL CHECK (end_ns >= start_ns),
    start_unix_ns INTEGER NOT NULL CHECK (start_unix_ns >= 0),
    end_unix_ns   INTEGER NOT NULL CHECK (end_unix_ns >= start_unix_ns)
);
