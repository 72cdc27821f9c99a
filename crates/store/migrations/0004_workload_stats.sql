-- latscope store, schema version 4: the workload characterization (what the
-- background load did to the machine while a cell ran, sampled once a
-- second; Bernadat's Table 3).
--
-- A version-1, -2 or -3 store gains these tables empty; nothing in it
-- changes, and its cells load without a characterization.
--
-- The characterization is split in two so that a checkpoint writes only
-- what changed: the summary (means over the cell, top interrupt sources,
-- softirqs per vector, notes) is one small row replaced at each checkpoint,
-- and the samples are one row each, written once. Kept as one JSON document
-- per cell, every checkpoint of an hour-long cell would rewrite thousands of
-- samples — disk writes during the measurement, which is what a latency
-- tool must avoid causing.

-- One row per characterized cell. stats is the serde form of WorkloadStats
-- (latscope_model workload.rs) with `seconds` empty.
CREATE TABLE workload_stats (
    id      INTEGER PRIMARY KEY,
    cell_id INTEGER NOT NULL UNIQUE REFERENCES cells (id) ON DELETE CASCADE,
    stats   TEXT    NOT NULL CHECK (json_valid(stats))
);

-- The samples: `seconds[idx]` of the cell's WorkloadStats, as the serde form
-- of WorkloadSecond. A cell's rows are numbered 0, 1, ... without gaps.
CREATE TABLE workload_seconds (
    cell_id INTEGER NOT NULL REFERENCES cells (id) ON DELETE CASCADE,
    idx     INTEGER NOT NULL CHECK (idx >= 0),
    sample  TEXT    NOT NULL CHECK (json_valid(sample)),
    PRIMARY KEY (cell_id, idx)
) WITHOUT ROWID;
