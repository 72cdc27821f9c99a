-- latscope store, schema version 5: the UDP probe's counts
-- (`run --probe udp`).
--
-- A version-1 to -4 store gains this table empty; nothing in it changes,
-- and its cells load without UDP counts. The probe's latencies are the
-- ordinary `udp.*` rows of `metrics` and `timeline_chunks`; this table holds
-- what it counted beside them: datagrams sent, received, lost, reordered,
-- duplicated, and those that lacked a kernel time stamp.

-- One row per UDP cell, replaced at each checkpoint and at the end. One
-- column per field of UdpStats (latscope_model udp.rs): the counts are few
-- and fixed, and as columns they can be queried without parsing JSON.
CREATE TABLE udp_stats (
    cell_id             INTEGER PRIMARY KEY REFERENCES cells (id) ON DELETE CASCADE,
    path                TEXT    NOT NULL,
    sender_cpu          INTEGER NOT NULL CHECK (sender_cpu >= 0),
    receiver_cpu        INTEGER NOT NULL CHECK (receiver_cpu >= 0),
    payload_bytes       INTEGER NOT NULL CHECK (payload_bytes >= 0),
    period_ns           INTEGER NOT NULL CHECK (period_ns >= 0),
    sent                INTEGER NOT NULL CHECK (sent >= 0),
    send_errors         INTEGER NOT NULL CHECK (send_errors >= 0),
    received            INTEGER NOT NULL CHECK (received >= 0),
    lost                INTEGER NOT NULL CHECK (lost >= 0),
    reordered           INTEGER NOT NULL CHECK (reordered >= 0),
    duplicates          INTEGER NOT NULL CHECK (duplicates >= 0),
    overruns            INTEGER NOT NULL CHECK (overruns >= 0),
    skipped_sends       INTEGER NOT NULL CHECK (skipped_sends >= 0),
    missing_tx_sched    INTEGER NOT NULL CHECK (missing_tx_sched >= 0),
    missing_tx_software INTEGER NOT NULL CHECK (missing_tx_software >= 0),
    missing_rx_software INTEGER NOT NULL CHECK (missing_rx_software >= 0),
    checked             INTEGER NOT NULL CHECK (checked >= 0),
    inconsistent        INTEGER NOT NULL CHECK (inconsistent >= 0)
);
