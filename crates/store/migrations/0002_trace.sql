-- latscope store, schema version 2: what the tracer found (`run --trace`).
--
-- A version-1 store gains these tables empty; nothing in it changes.
-- JSON columns hold the serde form of the model types (latscope_model
-- episode.rs). seq numbers a run's episodes from 1, in order of expiry.

-- The episodes kept in full: one row per sample above the threshold, with
-- its cause breakdown (Breakdown) and stack counts ([StackCount]).
CREATE TABLE episodes (
    id         INTEGER PRIMARY KEY,
    cell_id    INTEGER NOT NULL REFERENCES cells (id) ON DELETE CASCADE,
    seq        INTEGER NOT NULL CHECK (seq > 0),
    cpu        INTEGER NOT NULL CHECK (cpu >= 0),
    expiry_ns  INTEGER NOT NULL CHECK (expiry_ns >= 0),
    offset_ns  INTEGER NOT NULL CHECK (offset_ns >= 0),
    metric     TEXT    NOT NULL,
    latency_ns INTEGER NOT NULL CHECK (latency_ns >= 0),
    breakdown  TEXT    NOT NULL CHECK (json_valid(breakdown)),
    stacks     TEXT    NOT NULL DEFAULT '[]' CHECK (json_valid(stacks)),
    UNIQUE (cell_id, seq)
);

-- The kernel events around an episode, for export to a trace viewer.
-- events is a zlib-compressed JSON array of WindowEvent; event_count repeats
-- its length so listings need not inflate it. A window belongs to a stored
-- episode and goes with it.
CREATE TABLE episode_windows (
    cell_id     INTEGER NOT NULL,
    seq         INTEGER NOT NULL,
    cpu         INTEGER NOT NULL CHECK (cpu >= 0),
    event_count INTEGER NOT NULL CHECK (event_count >= 0),
    events      BLOB    NOT NULL,
    truncated   INTEGER NOT NULL DEFAULT 0 CHECK (truncated >= 0),
    PRIMARY KEY (cell_id, seq),
    FOREIGN KEY (cell_id, seq) REFERENCES episodes (cell_id, seq) ON DELETE CASCADE
);

-- One per traced cell: the tracer's account (TraceSummary), replaced at
-- each checkpoint.
CREATE TABLE trace_summaries (
    cell_id INTEGER PRIMARY KEY REFERENCES cells (id) ON DELETE CASCADE,
    summary TEXT    NOT NULL CHECK (json_valid(summary))
);
