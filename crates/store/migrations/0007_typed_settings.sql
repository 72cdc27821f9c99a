-- latscope store, schema version 7: typed cell settings.
--
-- A cell's `settings` JSON now names its probe under "probe" (the serde tag
-- of latscope_model::CellSettings), so the value describes itself without
-- the `probe` column. Builds up to schema 6 wrote the same flat object
-- without the tag: this step adds it from the cell's `probe` column and
-- changes nothing else (every other key keeps its name and meaning).
--
-- A value that is not a JSON object is left as it is, so that one damaged
-- cell cannot stop the whole store from opening; reading that cell gives a
-- clear "unreadable settings" error instead. The column's CHECK already
-- demands valid JSON; the CASE (SQLite does not promise to short-circuit
-- AND) keeps json_type from failing the migration should a value slip by.
UPDATE cells
SET settings = json_set(settings, '$.probe', probe)
WHERE CASE
    WHEN json_valid(settings) THEN
        json_type(settings) = 'object' AND json_type(settings, '$.probe') IS NULL
    ELSE 0
END;
