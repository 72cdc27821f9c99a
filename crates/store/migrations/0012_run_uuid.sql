-- latscope store, schema version 12: a globally unique id per run.
--
-- Run numbers are per store. A run copied to another store (`latscope
-- push`, `latscope pull`) keeps its uuid there, so copying it again finds
-- it instead of storing it twice, whichever numbers the two stores gave it.
-- Runs of older stores get a random (version 4) uuid here; new runs get one
-- when they are created.

ALTER TABLE runs ADD COLUMN uuid TEXT;

UPDATE runs SET uuid = (
    SELECT substr(h, 1, 8) || '-' || substr(h, 9, 4) || '-4' || substr(h, 14, 3) || '-' ||
           substr('89ab', 1 + (abs(random()) % 4), 1) || substr(h, 18, 3) || '-' || substr(h, 21, 12)
    FROM (SELECT lower(hex(randomblob(16))) AS h)
)
WHERE uuid IS NULL;

CREATE UNIQUE INDEX runs_uuid ON runs (uuid);
