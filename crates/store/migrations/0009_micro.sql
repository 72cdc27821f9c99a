-- latscope store, schema version 9: microbenchmark results
-- (`latscope micro`).
--
-- A micro run is an ordinary run whose cells have probe 'micro', one per
-- benchmark (its settings name the benchmark, the CPUs and the iteration
-- count). What a benchmark measured is a small document rather than a
-- histogram: statistics over iterations, each iteration's time per
-- operation (which `compare` resamples), counters per operation with the
-- reason a missing one is missing, interrupts per iteration. It is kept as
-- the JSON of MicroResult (latscope_model micro.rs), beside the cell, and
-- written with the cell in one transaction: a benchmark is stored whole or
-- not at all, so a run interrupted between benchmarks keeps every finished
-- one.
--
-- A store of version 8 or earlier gains these tables empty.

CREATE TABLE micro_results (
    cell_id INTEGER PRIMARY KEY REFERENCES cells (id) ON DELETE CASCADE,
    result  TEXT NOT NULL
);

-- What the whole run shares: the Null frame subtracted from every figure,
-- the caches sysfs lists, the counters and why a missing one is missing
-- (MicroContext).
CREATE TABLE micro_context (
    run_id  INTEGER PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
    context TEXT NOT NULL
);
