-- latscope store, schema version 6: the timer probe's early wake-ups.
--
-- A store of version 5 or earlier gains this table empty; nothing in it
-- changes, and its timer cells simply have no rows here (read back as "not
-- recorded"). A wake-up before its deadline enters `timer.latency` as 0 ns
-- of lateness (so sample counts stay one per wake-up); this table keeps, per
-- CPU, how many wake-ups came early and the largest earliness, so a timer
-- that fires early is seen rather than passing for a perfect one.

-- One row per (timer cell, measured CPU), replaced at each checkpoint.
CREATE TABLE timer_stats (
    id            INTEGER PRIMARY KEY,
    cell_id       INTEGER NOT NULL REFERENCES cells (id) ON DELETE CASCADE,
    cpu           INTEGER NOT NULL CHECK (cpu >= 0),
    early_wakeups INTEGER NOT NULL CHECK (early_wakeups >= 0),
    max_early_ns  INTEGER NOT NULL CHECK (max_early_ns >= 0),
    UNIQUE (cell_id, cpu)
);
