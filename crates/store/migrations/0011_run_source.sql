-- latscope store, schema version 11: runs imported from other tools.
--
-- `latscope import` reads the result files of cyclictest, oslat and rtla
-- into runs. Such a run says where it came from: the tool and its version,
-- the format and file read, the tool's own command line, the user's label
-- and when it was imported, as the JSON form of the model's RunSource. A run
-- latscope measured itself has NULL here, and so does every run of a store
-- of version 10 or earlier, which gains the column and changes in nothing
-- else.

ALTER TABLE runs ADD COLUMN source TEXT CHECK (source IS NULL OR json_valid(source));
