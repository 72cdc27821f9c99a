//! The monitor's windows: written again until they close, read back in
//! time order, deleted by age; and old timeline seconds deleted.

use super::*;
use crate::tests::backends::each_backend;
use crate::{Span, Window};

fn window(span: Span, minute: u64, metric: &str, cpu: u32, values: &[u64]) -> Window {
    Window {
        span,
        start_unix: Nanos::from_secs(1_700_000_000 - 1_700_000_000 % 3600 + minute * 60),
        metric: metric.into(),
        cpu: Some(CpuId(cpu)),
        histogram: hist(values),
    }
}

#[test]
fn windows_are_replaced_until_they_close_and_read_back_in_order() {
    each_backend(|dir| {
        let mut store = Store::open(&dir.at("s.db")).unwrap();
        let run = store.create_run(&run_meta(), &system(), &caps()).unwrap();
        let early = window(Span::Minute, 0, "timer.latency", 1, &[5_000]);
        store.put_window(run, &early).unwrap();
        // The same window later in its minute: replaced, not added.
        let grown = window(Span::Minute, 0, "timer.latency", 1, &[5_000, 9_000, 70_000]);
        store.put_window(run, &grown).unwrap();
        let other_cpu = window(Span::Minute, 0, "timer.latency", 0, &[4_000]);
        store.put_window(run, &other_cpu).unwrap();
        let next = window(Span::Minute, 1, "timer.latency", 1, &[6_000]);
        store.put_window(run, &next).unwrap();
        let hour = window(
            Span::Hour,
            0,
            "timer.latency",
            1,
            &[5_000, 9_000, 70_000, 6_000],
        );
        store.put_window(run, &hour).unwrap();

        let minutes = store.windows(run, Span::Minute, Nanos::ZERO).unwrap();
        assert_eq!(minutes, vec![other_cpu, grown.clone(), next.clone()]);
        assert_eq!(minutes[1].histogram.max(), Some(Nanos(70_000)));
        let since = store.windows(run, Span::Minute, next.start_unix).unwrap();
        assert_eq!(since, vec![next.clone()]);
        assert_eq!(
            store.windows(run, Span::Hour, Nanos::ZERO).unwrap(),
            vec![hour.clone()]
        );

        // The summary columns repeat the histogram's count and maximum.
        let (samples, max): (i64, i64) = store
            .db
            .query_row(
                "SELECT samples, max_ns FROM monitor_windows WHERE span = 'minute' AND cpu = 1 \
             ORDER BY start_unix_ns LIMIT 1",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        assert_eq!((samples, max), (3, 70_000));

        // Retention: minutes before the second one go; hours stay.
        assert_eq!(
            store.prune_windows(Span::Minute, next.start_unix).unwrap(),
            2
        );
        assert_eq!(
            store.windows(run, Span::Minute, Nanos::ZERO).unwrap(),
            vec![next]
        );
        assert_eq!(
            store.windows(run, Span::Hour, Nanos::ZERO).unwrap(),
            vec![hour]
        );

        // Deleting the run deletes its windows (foreign keys are on).
        store
            .db
            .execute("DELETE FROM runs WHERE id = ?1", [run.0])
            .unwrap();
        let left: i64 = store
            .db
            .query_row("SELECT count(*) FROM monitor_windows", [], |r| r.get(0))
            .unwrap();
        assert_eq!(left, 0);
    });
}

#[test]
fn old_timeline_seconds_are_deleted_whole_chunks_at_a_time() {
    each_backend(|dir| {
        let mut store = Store::open(&dir.at("s.db")).unwrap();
        let run = store.create_run(&run_meta(), &system(), &caps()).unwrap();
        let c = store.add_cell(run, &cell(0)).unwrap();
        let cpu0 = Some(CpuId(0));
        for (i, first) in [0u64, 10, 20].iter().enumerate() {
            store
                .checkpoint(
                    run,
                    c,
                    Nanos::from_secs(first + 10),
                    &metrics(1),
                    &[chunk("timer.latency", cpu0, *first, 10, i as u64)],
                    Nanos(10 + i as u64),
                )
                .unwrap();
        }
        // Seconds before 15: only the first chunk (0..10) ends by then.
        assert_eq!(store.prune_timeline(c, 15).unwrap(), 1);
        let run_back = store.load_run(run).unwrap();
        assert_eq!(run_back.cells.len(), 1);
        let chunks: i64 = store
            .db
            .query_row(
                "SELECT count(*) FROM timeline_chunks WHERE cell_id = ?1",
                [c.0],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(chunks, 2);
    });
}

/// A checkpoint's windows in one statement: new ones added, those already
/// stored replaced, as `put_window` one by one would.
#[test]
fn windows_put_together_are_added_and_replaced_like_one_by_one() {
    each_backend(|dir| {
        let mut store = Store::open(&dir.at("s.db")).unwrap();
        let run = store.create_run(&run_meta(), &system(), &caps()).unwrap();
        let first = [
            window(Span::Minute, 0, "timer.latency", 0, &[4_000]),
            window(Span::Minute, 0, "timer.latency", 1, &[5_000]),
            window(Span::Hour, 0, "timer.latency", 1, &[5_000]),
        ];
        store.put_windows(run, &first).unwrap();
        store.put_windows(run, &[]).unwrap();
        let second = [
            window(Span::Minute, 0, "timer.latency", 1, &[5_000, 70_000]),
            window(Span::Minute, 1, "timer.latency", 1, &[6_000]),
            window(Span::Hour, 0, "timer.latency", 1, &[5_000, 70_000, 6_000]),
        ];
        store.put_windows(run, &second).unwrap();
        let minutes = store.windows(run, Span::Minute, Nanos::ZERO).unwrap();
        assert_eq!(
            minutes,
            vec![first[0].clone(), second[0].clone(), second[1].clone()]
        );
        assert_eq!(
            store.windows(run, Span::Hour, Nanos::ZERO).unwrap(),
            vec![second[2].clone()]
        );
    });
}
