//! The histogram rows of the frequent kinds (vector, softirq and NMI
//! times): timer.bpf.c's `row_tables` and `hist_rows`, mapped read-write
//! and drained in place, with no system call per key.
//!
//! Each traced CPU (ring) has two tables, one per histogram set; table
//! `ring * 2 + set` owns rows `table * per_table ..`. A row holds the
//! 1024 HDR counters of one (fixed slot, HDR row) pair, labelled in its
//! first word; the table holds the number of rows claimed, the slots'
//! exact totals and which row holds which pair. The layouts here are the C
//! structs' (`struct row_table`, `struct hist_row`); a mismatch would make
//! the live test's bucket counts disagree with its exact totals
//! (`tests/bpf_live.rs`).

use std::os::fd::BorrowedFd;
use std::sync::atomic::Ordering;

use super::mapping::Mapping;
use super::{BpfHistBucket, BpfHistKind, BpfHistTotal};
use crate::error::PlatformError;

/// HDR rows in latscope's layout: 27 × 1024 counters (`HDR_ROWS`).
const HDR_ROWS: usize = 27;
/// Counters per row (`HDR_ROW_LEN`).
const ROW_LEN: usize = 1024;
/// Fixed slots: 4 kinds × 16 sources (`FIXED_SLOTS`).
const FIXED_SLOTS: usize = 64;
/// (slot, HDR row) pairs (`ROW_IDS`).
const ROW_IDS: usize = FIXED_SLOTS * HDR_ROWS;
/// `struct hist_row`: the label, then the counters.
pub(super) const ROW_BYTES: usize = 8 + ROW_LEN * 8;
/// `struct row_table`: `used`, the totals (4 × u64 each), the row index
/// (u16 each).
pub(super) const TABLE_BYTES: usize = 8 + FIXED_SLOTS * 32 + ROW_IDS * 2;
const TOTALS_AT: usize = 8;
const ROW_OF_AT: usize = TOTALS_AT + FIXED_SLOTS * 32;
const _: () = assert!(ROW_BYTES.is_multiple_of(8) && TABLE_BYTES.is_multiple_of(8));

/// The kind and source of fixed slot `slot` (`fixed_slot` in timer.bpf.c).
fn slot_kind(slot: usize) -> Option<(BpfHistKind, u64)> {
    let kind = *BpfHistKind::FIXED.get(slot / 16)?;
    Some((kind, (slot % 16) as u64))
}

/// The row tables and rows of every traced CPU, mapped.
pub(super) struct Rows {
    tables: Mapping,
    rows: Mapping,
    rings: usize,
    /// Rows per table (`rows_per_table`).
    per_table: usize,
}

impl Rows {
    /// Maps `row_tables` (`rings` × 2 tables) and `hist_rows`
    /// (`per_table` rows a table).
    pub(super) fn map(
        tables: BorrowedFd<'_>,
        rows: BorrowedFd<'_>,
        rings: usize,
        per_table: usize,
    ) -> Result<Rows, PlatformError> {
        Ok(Rows {
            tables: Mapping::read_write(
                tables,
                rings * 2 * TABLE_BYTES,
                "the histogram row tables",
            )?,
            rows: Mapping::read_write(
                rows,
                rings * 2 * per_table * ROW_BYTES,
                "the histogram rows",
            )?,
            rings,
            per_table,
        })
    }

    /// Reads and zeroes set `set` of every ring (the set the programs left
    /// a drain interval ago): its counts go to `buckets` (one entry per
    /// non-zero counter and ring), its totals, summed over the rings, to
    /// `totals`. A counter is taken with an atomic swap, so an add that
    /// lands while the set is drained is kept for the next drain, not lost.
    pub(super) fn drain(
        &self,
        set: usize,
        buckets: &mut Vec<BpfHistBucket>,
        totals: &mut Vec<BpfHistTotal>,
    ) {
        let mut sums: [Option<BpfHistTotal>; FIXED_SLOTS] = [None; FIXED_SLOTS];
        for ring in 0..self.rings {
            let table = ring * 2 + set;
            let tab = table * TABLE_BYTES;
            let used = self.tables.u64_at(tab).load(Ordering::Acquire);
            let claimed = usize::try_from(used).map_or(self.per_table, |u| u.min(self.per_table));
            for k in 0..claimed {
                let row = (table * self.per_table + k) * ROW_BYTES;
                let label = self.rows.u64_at(row).load(Ordering::Acquire);
                let Some(id) = usize::try_from(label).ok().and_then(|l| l.checked_sub(1)) else {
                    continue;
                };
                if id >= ROW_IDS {
                    continue;
                }
                let Some((kind, source)) = slot_kind(id / HDR_ROWS) else {
                    continue;
                };
                let first = (id % HDR_ROWS) * ROW_LEN;
                for j in 0..ROW_LEN {
                    let c = self.rows.u64_at(row + 8 + j * 8);
                    if c.load(Ordering::Relaxed) == 0 {
                        continue;
                    }
                    let count = c.swap(0, Ordering::AcqRel);
                    if count > 0 {
                        buckets.push(BpfHistBucket {
                            kind,
                            source,
                            index: (first + j) as u32,
                            count,
                        });
                    }
                }
                self.rows.u64_at(row).store(0, Ordering::Release);
                self.tables
                    .u16_at(tab + ROW_OF_AT + id * 2)
                    .store(0, Ordering::Release);
            }
            for (slot, sum) in sums.iter_mut().enumerate() {
                let at = tab + TOTALS_AT + slot * 32;
                if self.tables.u64_at(at).load(Ordering::Relaxed) == 0 {
                    continue;
                }
                let count = self.tables.u64_at(at).swap(0, Ordering::AcqRel);
                let s = self.tables.u64_at(at + 8).swap(0, Ordering::AcqRel);
                let min = self.tables.u64_at(at + 16).swap(0, Ordering::AcqRel);
                let max = self.tables.u64_at(at + 24).swap(0, Ordering::AcqRel);
                let Some((kind, source)) = slot_kind(slot) else {
                    continue;
                };
                if count == 0 {
                    continue;
                }
                sum.get_or_insert(BpfHistTotal::empty(kind, source))
                    .add(count, s, min, max);
            }
            self.tables.u64_at(tab).store(0, Ordering::Release);
        }
        for t in sums.into_iter().flatten() {
            merge_total(totals, t);
        }
    }
}

/// Adds `t` to the entry of its (kind, source) in `totals`, or appends it.
pub(super) fn merge_total(totals: &mut Vec<BpfHistTotal>, t: BpfHistTotal) {
    match totals
        .iter_mut()
        .find(|e| e.kind == t.kind && e.source == t.source)
    {
        Some(e) => e.add(t.count, t.sum, t.min, t.max),
        None => totals.push(t),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_name_the_fixed_kinds_in_blocks_of_16() {
        assert_eq!(slot_kind(0), Some((BpfHistKind::VectorExec, 0)));
        assert_eq!(slot_kind(17), Some((BpfHistKind::SoftirqExec, 1)));
        assert_eq!(slot_kind(35), Some((BpfHistKind::SoftirqDelay, 3)));
        assert_eq!(slot_kind(48), Some((BpfHistKind::Nmi, 0)));
        assert_eq!(slot_kind(64), None);
    }

    #[test]
    fn totals_of_one_key_merge_into_one_entry() {
        let t = |count, min, max| BpfHistTotal {
            kind: BpfHistKind::VectorExec,
            source: 0,
            count,
            sum: count * 10,
            min,
            max,
        };
        let mut v = vec![t(2, 5, 15)];
        merge_total(&mut v, t(3, 2, 12));
        merge_total(
            &mut v,
            BpfHistTotal {
                source: 1,
                ..t(1, 1, 1)
            },
        );
        assert_eq!(v.len(), 2);
        assert_eq!((v[0].count, v[0].sum, v[0].min, v[0].max), (5, 50, 2, 15));
    }
}
