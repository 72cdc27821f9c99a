//! The histograms kept at checkpoints: what is stored, how many, and that
//! they read back as written.

use super::checkpoint::open_with_cell;
use super::*;
use crate::tests::backends::each_backend;

fn at(store: &mut Store, run: RunId, c: CellId, ms: u64, scale: u64) {
    store
        .checkpoint(
            run,
            c,
            Nanos(ms * 1_000_000),
            &metrics(scale),
            &[],
            Nanos(1),
        )
        .unwrap();
}

/// How many checkpoints' histograms `c` keeps, counted by the database
/// (reading them all back after each of hundreds of checkpoints made the
/// long-run test below take 23 s).
fn kept(store: &Store, c: CellId) -> usize {
    let n: i64 = store
        .db
        .query_row(
            "SELECT COUNT(DISTINCT at_ns) FROM metric_snapshots WHERE cell_id = ?1",
            [c.0],
            |r| r.get(0),
        )
        .unwrap();
    n as usize
}

fn times(store: &Store, c: CellId) -> Vec<u64> {
    store
        .load_snapshots(c)
        .unwrap()
        .iter()
        .map(|s| s.at.0 / 1_000_000)
        .collect()
}

#[test]
fn each_checkpoint_keeps_its_uncorrected_histograms() {
    each_backend(|dir| {
        let (mut store, run, c) = open_with_cell(&dir.at("s.db"));
        for (i, ms) in [10_000, 20_000, 30_000].into_iter().enumerate() {
            at(&mut store, run, c, ms, i as u64 + 1);
        }
        let kept = store.load_snapshots(c).unwrap();
        assert_eq!(kept.len(), 3);
        for (i, s) in kept.iter().enumerate() {
            assert_eq!(s.at, Nanos::from_secs(10 * (i as u64 + 1)));
            let want: Vec<MetricResult> = sorted(metrics(i as u64 + 1))
                .into_iter()
                .map(|m| MetricResult {
                    histogram: m.histogram,
                    ..MetricResult::new(&m.name, m.cpu)
                })
                .collect();
            assert_eq!(s.metrics, want, "snapshot {i}");
        }
        // The same time again, or an earlier one, stores nothing and fails
        // nothing.
        at(&mut store, run, c, 30_000, 9);
        at(&mut store, run, c, 25_000, 9);
        assert_eq!(times(&store, c), [10_000, 20_000, 30_000]);
        assert_eq!(store.load_snapshots(c).unwrap()[2].metrics[0].histogram, {
            sorted(metrics(3))[0].histogram.clone()
        });
    });
}

/// Checkpoints every 10 s (each a little late) for 50 minutes: all kept up
/// to 128, then every second one, then every fourth; the spacing stays
/// even however late each checkpoint came.
#[test]
fn a_long_run_keeps_at_most_128_evenly_spaced() {
    each_backend(|dir| {
        let (mut store, run, c) = open_with_cell(&dir.at("s.db"));
        for i in 1..=300u64 {
            at(&mut store, run, c, i * 10_000 + (i * 7) % 5, 1);
            let n = kept(&store, c);
            assert!(n <= MAX_SNAPSHOTS, "{n} after checkpoint {i}");
            if i == 128 {
                assert_eq!(n, 128);
            }
            if i == 129 {
                assert_eq!(n, 64, "thinned to every second one");
            }
        }
        // The 129th thinned them to the 2nd, 4th, ... 128th; the 258th to every
        // fourth (4th ... 256th); then 260th ... 300th.
        let t: Vec<u64> = times(&store, c).iter().map(|ms| ms / 1000).collect();
        let want: Vec<u64> = (1..=75).map(|k| k * 40).collect();
        assert_eq!(t, want);
    });
}

#[test]
fn a_cell_without_snapshots_and_a_deleted_cell() {
    each_backend(|dir| {
        let (mut store, run, c) = open_with_cell(&dir.at("s.db"));
        assert!(store.load_snapshots(c).unwrap().is_empty());
        at(&mut store, run, c, 10_000, 1);
        // An empty checkpoint (no metrics yet) keeps nothing.
        store
            .checkpoint(run, c, Nanos::from_secs(20), &[], &[], Nanos(1))
            .unwrap();
        assert_eq!(times(&store, c), [10_000]);
        store
            .db
            .execute("DELETE FROM cells WHERE id = ?1", [c.0])
            .unwrap();
        let left: i64 = store
            .db
            .query_row("SELECT count(*) FROM metric_snapshots", [], |r| r.get(0))
            .unwrap();
        assert_eq!(left, 0, "the snapshots go with their cell");
        assert!(matches!(
            store.load_snapshots(c),
            Err(StoreError::NoSuchCell(_))
        ));
    });
}

#[test]
fn a_damaged_snapshot_is_a_clear_error() {
    each_backend(|dir| {
        let (mut store, run, c) = open_with_cell(&dir.at("s.db"));
        at(&mut store, run, c, 10_000, 1);
        store
            .db
            .execute("UPDATE metric_snapshots SET histogram = ?1", [vec![0u8]])
            .unwrap();
        let e = store.load_snapshots(c).unwrap_err();
        assert!(matches!(e, StoreError::Corrupt { .. }), "{e}");
        assert!(e.to_string().contains("snapshot of"), "{e}");
    });
}

/// Schema 14: cumulative histograms and snapshots are stored compressed,
/// and the LSH1 blobs an older store holds still read as they are.
#[test]
fn histograms_are_stored_compressed_and_older_lsh1_blobs_still_read() {
    each_backend(|dir| {
        let (mut store, run, c) = open_with_cell(&dir.at("s.db"));
        let mut big = metrics(1);
        for (i, m) in big.iter_mut().enumerate() {
            for k in 0..20_000u64 {
                m.histogram.record(5_000 + (k * 7_919 + i as u64) % 400_000);
            }
        }
        store
            .checkpoint(run, c, Nanos::from_secs(10), &big, &[], Nanos(1))
            .unwrap();
        let blobs = |table: &str| -> Vec<(i64, Vec<u8>)> {
            store
                .db
                .query_map(
                    &format!("SELECT id, histogram FROM {table} WHERE cell_id = ?1"),
                    [c.0],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .unwrap()
        };
        for table in ["metrics", "metric_snapshots"] {
            for (_, blob) in blobs(table) {
                assert!(!blob.starts_with(b"LSH1"), "{table} holds LSH1");
            }
        }
        let stored: usize = blobs("metrics").iter().map(|(_, b)| b.len()).sum();
        let lsh1: usize = big
            .iter()
            .map(|m| {
                m.histogram.to_bytes().len()
                    + m.corrected.as_ref().map_or(0, |h| h.to_bytes().len())
            })
            .sum();
        assert!(
            stored * 10 < lsh1 * 7,
            "{stored} bytes stored for {lsh1} of LSH1"
        );
        let want = store.load_run(run).unwrap().cells[0].metrics.clone();
        assert_eq!(want, sorted(big.clone()));
        let snapshots = store.load_snapshots(c).unwrap();
        // As a store of schema 13 or earlier holds them: LSH1 as it is.
        for table in ["metrics", "metric_snapshots"] {
            for (id, blob) in blobs(table) {
                let raw = crate::codec::decode_histogram(&blob).unwrap().to_bytes();
                store
                    .db
                    .execute(
                        &format!("UPDATE {table} SET histogram = ?1 WHERE id = ?2"),
                        crate::db::params![raw, id],
                    )
                    .unwrap();
            }
        }
        assert!(blobs("metrics").iter().all(|(_, b)| b.starts_with(b"LSH1")));
        assert_eq!(store.load_run(run).unwrap().cells[0].metrics, want);
        assert_eq!(store.load_snapshots(c).unwrap(), snapshots);
    });
}
