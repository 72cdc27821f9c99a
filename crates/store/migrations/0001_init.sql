-- latscope store, schema version 1.
--
-- Times are integer nanoseconds (Unix epoch for *_unix_ns, CLOCK_MONOTONIC
-- for monotonic_*). JSON columns hold the serde form of the model types.
-- A CPU of -1 means "system-wide": NULL would make the UNIQUE constraints
-- below treat every system-wide row as distinct.

CREATE TABLE runs (
    id                 INTEGER PRIMARY KEY,
    started_unix_ns    INTEGER NOT NULL CHECK (started_unix_ns >= 0),
    ended_unix_ns      INTEGER CHECK (ended_unix_ns >= 0),
    checkpoint_unix_ns INTEGER CHECK (checkpoint_unix_ns >= 0),
    status             TEXT    NOT NULL
                       CHECK (status IN ('running', 'complete', 'interrupted', 'failed')),
    command_line       TEXT    NOT NULL DEFAULT '[]' CHECK (json_valid(command_line)),
    pid                INTEGER NOT NULL CHECK (pid >= 0),
    boot_id            TEXT    NOT NULL,
    hostname           TEXT    NOT NULL,
    tool_version       TEXT    NOT NULL,
    notes              TEXT    NOT NULL DEFAULT '[]' CHECK (json_valid(notes))
);

CREATE INDEX runs_status ON runs (status);

-- One per run: the system snapshot, with the columns people filter on
-- copied out of the JSON.
CREATE TABLE systems (
    run_id           INTEGER PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
    hostname         TEXT    NOT NULL,
    kernel_release   TEXT    NOT NULL,
    preemption_model TEXT,
    hz               INTEGER,
    clocksource      TEXT,
    cpu_count        INTEGER NOT NULL CHECK (cpu_count >= 0),
    hypervisor       INTEGER NOT NULL CHECK (hypervisor IN (0, 1)),
    info             TEXT    NOT NULL CHECK (json_valid(info))
);

CREATE INDEX systems_kernel ON systems (kernel_release, preemption_model);

-- One per run: what the run asked for and obtained (updated during the run).
CREATE TABLE capabilities (
    run_id INTEGER PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
    caps   TEXT    NOT NULL CHECK (json_valid(caps))
);

CREATE TABLE cells (
    id                 INTEGER PRIMARY KEY,
    run_id             INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    idx                INTEGER NOT NULL CHECK (idx >= 0),
    probe              TEXT    NOT NULL,
    workload           TEXT    NOT NULL,
    settings           TEXT    NOT NULL DEFAULT '{}' CHECK (json_valid(settings)),
    duration_ns        INTEGER NOT NULL DEFAULT 0 CHECK (duration_ns >= 0),
    monotonic_start_ns INTEGER NOT NULL CHECK (monotonic_start_ns >= 0),
    UNIQUE (run_id, idx)
);

CREATE INDEX cells_probe_workload ON cells (probe, workload);

-- One row per (cell, metric, CPU, kind). The 'raw' row carries the counters;
-- a 'corrected' row (coordinated-omission-corrected histogram) only its
-- histogram. samples and max_ns repeat the histogram's count and exact
-- maximum so that listings and queries need not decode blobs.
CREATE TABLE metrics (
    id               INTEGER PRIMARY KEY,
    cell_id          INTEGER NOT NULL REFERENCES cells (id) ON DELETE CASCADE,
    name             TEXT    NOT NULL,
    cpu              INTEGER NOT NULL CHECK (cpu >= -1),
    kind             TEXT    NOT NULL CHECK (kind IN ('raw', 'corrected')),
    histogram        BLOB    NOT NULL,
    samples          INTEGER NOT NULL CHECK (samples >= 0),
    max_ns           INTEGER CHECK (max_ns >= 0),
    overruns         INTEGER NOT NULL DEFAULT 0 CHECK (overruns >= 0),
    missed_deadlines INTEGER NOT NULL DEFAULT 0 CHECK (missed_deadlines >= 0),
    threshold_ns     INTEGER CHECK (threshold_ns >= 0),
    above_threshold  INTEGER CHECK (above_threshold >= 0),
    UNIQUE (cell_id, name, cpu, kind)
);

CREATE INDEX metrics_name_kind ON metrics (name, kind);

-- Per-second timelines, appended a chunk per checkpoint. data packs
-- (count, max, above) as little-endian u64 triples, one per second.
CREATE TABLE timeline_chunks (
    id           INTEGER PRIMARY KEY,
    cell_id      INTEGER NOT NULL REFERENCES cells (id) ON DELETE CASCADE,
    metric       TEXT    NOT NULL,
    cpu          INTEGER NOT NULL CHECK (cpu >= -1),
    first_second INTEGER NOT NULL CHECK (first_second >= 0),
    seconds      INTEGER NOT NULL CHECK (seconds > 0),
    data         BLOB    NOT NULL CHECK (length(data) = seconds * 24)
);

CREATE INDEX timeline_chunks_series ON timeline_chunks (cell_id, metric, cpu, first_second);
