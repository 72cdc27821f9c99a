-- latscope store, schema version 3: the noise probe's per-CPU figures
-- (`run --probe noise`).
--
-- A version-1 or version-2 store gains this table empty; nothing in it
-- changes. The interruptions themselves are the ordinary `noise.gap` rows of
-- `metrics` and `timeline_chunks`; this table holds what the probe measured
-- beside them on each CPU (active time, iterations, base iteration, noise
-- per cause class, steal time, findings).

-- One row per (noise cell, measured CPU), replaced at each checkpoint.
-- stats is the serde form of NoiseCpuStats (latscope_model noise.rs); cpu
-- repeats its `cpu` so rows can be found and ordered without parsing JSON.
CREATE TABLE noise_stats (
    id      INTEGER PRIMARY KEY,
    cell_id INTEGER NOT NULL REFERENCES cells (id) ON DELETE CASCADE,
    cpu     INTEGER NOT NULL CHECK (cpu >= 0),
    stats   TEXT    NOT NULL CHECK (json_valid(stats)),
    UNIQUE (cell_id, cpu)
);
