//! The UDP probe's counts (schema version 5).
//!
//! One row per cell, a column per field of [`UdpStats`], written with an
//! upsert: each checkpoint sends the counts so far and replaces the stored
//! ones, so a run killed between checkpoints keeps the last complete set.

use crate::db::Value;
use crate::db::{Db, DbResult, OptionalExt, Row};
use latscope_model::{CpuId, Nanos, RunId, UdpPath, UdpStats};

use crate::error::classify;
use crate::require_cell_in;
use crate::{to_sql, CellId, Result, Store};
use std::path::Path;

/// The columns after `cell_id`, in the order of [`UdpStats`]'s fields.
const COLUMNS: &str = "path, sender_cpu, receiver_cpu, payload_bytes, period_ns, sent, \
     send_errors, received, lost, reordered, duplicates, overruns, skipped_sends, \
     missing_tx_sched, missing_tx_software, missing_rx_software, checked, inconsistent";

const UPSERT: &str = "INSERT INTO udp_stats (cell_id, path, sender_cpu, receiver_cpu, \
     payload_bytes, period_ns, sent, send_errors, received, lost, reordered, duplicates, \
     overruns, skipped_sends, missing_tx_sched, missing_tx_software, missing_rx_software, \
     checked, inconsistent) \
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19) \
     ON CONFLICT (cell_id) DO UPDATE SET path = excluded.path, \
     sender_cpu = excluded.sender_cpu, receiver_cpu = excluded.receiver_cpu, \
     payload_bytes = excluded.payload_bytes, period_ns = excluded.period_ns, \
     sent = excluded.sent, send_errors = excluded.send_errors, received = excluded.received, \
     lost = excluded.lost, reordered = excluded.reordered, duplicates = excluded.duplicates, \
     overruns = excluded.overruns, skipped_sends = excluded.skipped_sends, \
     missing_tx_sched = excluded.missing_tx_sched, \
     missing_tx_software = excluded.missing_tx_software, \
     missing_rx_software = excluded.missing_rx_software, checked = excluded.checked, \
     inconsistent = excluded.inconsistent";

/// The count columns (every column from `period_ns` on, in order), each
/// with what an error calls it.
const COUNTS: [(&str, &str); 14] = [
    ("period_ns", "the UDP send period"),
    ("sent", "the count of UDP datagrams sent"),
    ("send_errors", "the count of UDP send errors"),
    ("received", "the count of UDP datagrams received"),
    ("lost", "the count of UDP datagrams lost"),
    ("reordered", "the count of UDP datagrams reordered"),
    ("duplicates", "the count of UDP duplicates"),
    ("overruns", "the count of UDP sender overruns"),
    ("skipped_sends", "the count of skipped UDP sends"),
    (
        "missing_tx_sched",
        "the count of missing TX_SCHED time stamps",
    ),
    (
        "missing_tx_software",
        "the count of missing TX_SOFTWARE time stamps",
    ),
    (
        "missing_rx_software",
        "the count of missing RX_SOFTWARE time stamps",
    ),
    ("checked", "the count of UDP datagrams checked"),
    ("inconsistent", "the count of inconsistent UDP datagrams"),
];

/// The count fields of `s`, in the order of [`COUNTS`].
fn counts(s: &UdpStats) -> [u64; 14] {
    [
        s.period_ns.0,
        s.sent,
        s.send_errors,
        s.received,
        s.lost,
        s.reordered,
        s.duplicates,
        s.overruns,
        s.skipped_sends,
        s.missing_tx_sched,
        s.missing_tx_software,
        s.missing_rx_software,
        s.checked,
        s.inconsistent,
    ]
}

/// A `udp_stats` row as SQLite returns it, before range checks.
struct RawUdp {
    path: String,
    sender_cpu: i64,
    receiver_cpu: i64,
    payload_bytes: i64,
    counts: [i64; 14],
}

fn raw_udp(row: &Row) -> DbResult<RawUdp> {
    let mut counts = [0i64; 14];
    for (i, c) in counts.iter_mut().enumerate() {
        *c = row.get(4 + i)?;
    }
    Ok(RawUdp {
        path: row.get(0)?,
        sender_cpu: row.get(1)?,
        receiver_cpu: row.get(2)?,
        payload_bytes: row.get(3)?,
        counts,
    })
}

impl Store {
    /// Stores (or replaces) the UDP probe's counts for a cell. Called at
    /// each checkpoint and at the end of the cell: a later call replaces
    /// what an earlier one stored. A count beyond the store's 63-bit
    /// integers is refused (nothing is stored).
    pub fn set_udp_stats(&mut self, cell: CellId, stats: &UdpStats) -> Result<()> {
        let path = self.path.as_path();
        let tx = self
            .db
            .begin()
            .map_err(|e| classify(path, "starting a transaction", e))?;
        write_udp_stats(&tx, path, cell, stats)?;
        tx.commit()
            .map_err(|e| classify(path, "committing the UDP counts", e))
    }

    /// A cell's UDP counts; `None` for a cell of another probe (or one
    /// stored by a version before 5).
    pub(crate) fn load_udp_stats(&self, cell: i64, run: RunId) -> Result<Option<UdpStats>> {
        let raw = self
            .db
            .query_row(
                &format!("SELECT {COLUMNS} FROM udp_stats WHERE cell_id = ?1"),
                [cell],
                raw_udp,
            )
            .optional()
            .map_err(|e| self.sql("reading the UDP counts", e))?;
        let Some(raw) = raw else {
            return Ok(None);
        };
        let what = |field: &str| format!("run {run}: {field} of the UDP counts of cell {cell}");
        let path = raw
            .path
            .parse::<UdpPath>()
            .map_err(|e| self.corrupt(format!("{} is unreadable ({e})", what("path"))))?;
        let cpu = |v: i64, field: &str| {
            u32::try_from(v)
                .map(CpuId)
                .map_err(|_| self.corrupt(format!("{} is {v}", what(field))))
        };
        let sender_cpu = cpu(raw.sender_cpu, "sender CPU")?;
        let receiver_cpu = cpu(raw.receiver_cpu, "receiver CPU")?;
        let payload_bytes = u32::try_from(raw.payload_bytes).map_err(|_| {
            self.corrupt(format!("{} is {}", what("payload size"), raw.payload_bytes))
        })?;
        let mut c = [0u64; 14];
        for ((out, v), (column, _)) in c.iter_mut().zip(raw.counts).zip(COUNTS) {
            *out = self.count(v, &what(column))?;
        }
        let [period_ns, sent, send_errors, received, lost, reordered, duplicates, overruns, skipped_sends, missing_tx_sched, missing_tx_software, missing_rx_software, checked, inconsistent] =
            c;
        Ok(Some(UdpStats {
            path,
            sender_cpu,
            receiver_cpu,
            payload_bytes,
            period_ns: Nanos(period_ns),
            sent,
            send_errors,
            received,
            lost,
            reordered,
            duplicates,
            overruns,
            skipped_sends,
            missing_tx_sched,
            missing_tx_software,
            missing_rx_software,
            checked,
            inconsistent,
        }))
    }
}

/// [`Store::set_udp_stats`] inside the caller's transaction.
pub(crate) fn write_udp_stats(tx: &Db, path: &Path, cell: CellId, stats: &UdpStats) -> Result<()> {
    let mut values = [0i64; 14];
    for ((v, n), (_, what)) in values.iter_mut().zip(counts(stats)).zip(COUNTS) {
        *v = to_sql(n, what)?;
    }

    let err = |action| move |e| classify(path, action, e);
    require_cell_in(tx, path, cell)?;
    // Columns in UPSERT's order: the cell, the identifying fields, then
    // the counts in the order of COUNTS.
    let mut row: Vec<Value> = vec![
        cell.0.into(),
        stats.path.as_str().to_string().into(),
        i64::from(stats.sender_cpu.0).into(),
        i64::from(stats.receiver_cpu.0).into(),
        i64::from(stats.payload_bytes).into(),
    ];
    row.extend(values.map(Value::from));
    tx.execute(UPSERT, row)
        .map_err(err("saving the UDP counts"))?;
    Ok(())
}
