//! Forecasts from long monitoring (issue 35), on stores built through the
//! store API and read by the real binary: a simulated week of monitor hour
//! windows (and three minute windows) gives the observed worst case per
//! minute, hour, day and week exactly,
//! in `show`, `forecast` (text and JSON) and `report`, in place of the
//! model at the horizons it covers; and a monitor whose oldest seconds the
//! retention deleted is forecast from the part whose timeline is kept.

#![allow(clippy::unwrap_used)]

use crate::common::*;
use latscope_model::{
    metric, Capabilities, CellMeta, CellSettings, CpuId, Nanos, RunId, RunMeta, RunStatus,
    SystemInfo,
};
use latscope_stats::{Histogram, MetricResult, SecondStats, TimelineChunk};
use latscope_store::{CellId, Span, Store, Window};
use serde_json::Value;

const HOUR_NS: u64 = 3_600_000_000_000;
/// A Thursday 00:00 UTC (a multiple of a week since the epoch), so the
/// simulated week is one whole UTC week.
const WEEK_START_HOUR: u64 = 168 * 2_900;

fn meta(started: u64) -> RunMeta {
    RunMeta {
        command_line: vec!["latscope".into(), "monitor".into()],
        pid: std::process::id(),
        hostname: "testhost".into(),
        tool_version: "0.1.0".into(),
        ..RunMeta::new(RunId(0), Nanos(started))
    }
}

fn timer_cell(duration: Nanos) -> CellMeta {
    CellMeta {
        monotonic_start_ns: Nanos(1_000),
        ..CellMeta::new(
            0,
            "none",
            CellSettings::default_for("timer").unwrap(),
            duration,
        )
    }
}

/// A new store at `path` with a monitor run started at `start` (Unix ns)
/// and its one timer cell of `duration`.
fn monitor_run(path: &std::path::Path, start: u64, duration: Nanos) -> (Store, RunId, CellId) {
    let mut store = Store::open(path).unwrap();
    let run = store
        .create_run(
            &meta(start),
            &SystemInfo::default(),
            &Capabilities::default(),
        )
        .unwrap();
    let cell = store.add_cell(run, &timer_cell(duration)).unwrap();
    (store, run, cell)
}

/// `n` samples of 10–29 µs and one of `max` ns.
fn histogram(n: u64, max: u64) -> Histogram {
    let mut h = Histogram::new();
    for i in 0..n {
        h.record(10_000 + (i * 7_919) % 20_000);
    }
    h.record(max);
    h
}

/// An hour window: 100 samples of 5–9 µs and its maximum.
fn window(max: u64) -> Histogram {
    let mut h = Histogram::new();
    for i in 0..100 {
        h.record(5_000 + i * 40);
    }
    h.record(max);
    h
}

/// The known answer: hour `h` of the week peaks at 20 + (h mod 24) µs on
/// CPU 0 and 10 µs on CPU 1, except hour 100, where CPU 1 saw 2 ms.
fn hour_max(h: u64, cpu: u32) -> u64 {
    match (cpu, h) {
        (0, _) => (20 + h % 24) * 1_000,
        (_, 100) => 2_000_000,
        _ => 10_000,
    }
}

/// A monitor run of one week: cumulative metrics and 168 hour windows per
/// CPU, no timeline.
fn week_store(path: &std::path::Path) -> RunId {
    let start = WEEK_START_HOUR * HOUR_NS;
    let week = Nanos(168 * HOUR_NS);
    let (mut store, run, cell) = monitor_run(path, start, week);
    let metrics: Vec<MetricResult> = (0..2)
        .map(|cpu| MetricResult {
            histogram: histogram(200_000, 2_000_000),
            ..MetricResult::new(metric::TIMER_LATENCY, Some(CpuId(cpu)))
        })
        .collect();
    store
        .checkpoint(run, cell, week, &metrics, &[], Nanos(start + week.0))
        .unwrap();
    for h in 0..168 {
        for cpu in 0..2 {
            store
                .put_window(
                    run,
                    &Window {
                        span: Span::Hour,
                        start_unix: Nanos(start + h * HOUR_NS),
                        metric: metric::TIMER_LATENCY.into(),
                        cpu: Some(CpuId(cpu)),
                        histogram: window(hour_max(h, cpu)),
                    },
                )
                .unwrap();
        }
    }
    // The last three minutes: 12, 300 and 15 µs at most (CPU 0; CPU 1 less).
    for (k, max_us) in [12u64, 300, 15].into_iter().enumerate() {
        for cpu in 0..2 {
            store
                .put_window(
                    run,
                    &Window {
                        span: Span::Minute,
                        start_unix: Nanos(start + week.0 - (3 - k as u64) * 60_000_000_000),
                        metric: metric::TIMER_LATENCY.into(),
                        cpu: Some(CpuId(cpu)),
                        histogram: window(max_us * 1_000 - u64::from(cpu) * 500),
                    },
                )
                .unwrap();
        }
    }
    store
        .finish_run(run, RunStatus::Complete, Nanos(start + week.0), &[])
        .unwrap();
    run
}

fn us(v: &Value) -> u64 {
    v.as_u64().unwrap() / 1_000
}

#[test]
fn a_week_of_monitor_windows_gives_the_observed_hours_days_and_week_exactly() {
    let _g = crate::common::serial();
    let dir = tempfile::tempdir().unwrap();
    let path = store_in(dir.path());
    let run = week_store(&path);
    let (s, id) = (path.to_str().unwrap(), run.0.to_string());

    // Hours: 168 maxima (the larger CPU's), 20–43 µs seven times each but
    // hour 100's 2 ms: quartiles by nearest rank 26 and 38 µs, median 32.
    // Days: six of 43 µs and day 4 (hours 96–119) of 2 ms.
    let o = latscope(&["forecast", &id, "--json", "--store", s]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let doc: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let worst = &doc["cells"][0]["metrics"][0]["worst_case"];
    let hour = &worst["hour"]["monitor_blocks"];
    assert_eq!(hour["blocks"], 168);
    assert_eq!(
        [
            us(&hour["best"]),
            us(&hour["lower_quartile"]),
            us(&hour["median"]),
            us(&hour["upper_quartile"]),
            us(&hour["worst"])
        ],
        [20, 26, 32, 38, 2_000]
    );
    let day = &worst["day"]["monitor_blocks"];
    assert_eq!(day["blocks"], 7);
    assert_eq!(
        [us(&day["best"]), us(&day["median"]), us(&day["worst"])],
        [43, 43, 2_000]
    );
    assert_eq!(worst["week"]["monitor_blocks"]["blocks"], 1);
    // Observed horizons are not modelled.
    for h in ["hour", "day", "week"] {
        assert!(worst[h]["latency_ns"].is_null(), "{h}: {}", worst[h]);
        assert!(
            worst[h]["error"].as_str().unwrap().starts_with("observed"),
            "{h}"
        );
    }
    assert_eq!(doc["observed_blocks"]["hour"]["median"], 32_000);

    let o = latscope(&["forecast", &id, "--store", s]);
    let text = stdout(&o);
    assert!(
        text.contains("per hour  observed over 168 whole hours (monitor windows): median 32.0µs, quartiles 26.0µs–38.0µs, best 20.0µs, worst 2.00ms"),
        "{text}"
    );
    assert!(
        text.contains("per day   observed over 7 whole days (monitor windows): median 43.0µs"),
        "{text}"
    );

    let o = latscope(&["show", &id, "--store", s]);
    let text = stdout(&o);
    let row = |name: &str| -> Vec<String> {
        text.lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("no {name} row: {text}"))
            .split_whitespace()
            .map(str::to_string)
            .collect()
    };
    // block, measured, worst, upper quartile, median, lower quartile, best
    assert_eq!(
        row("minute "),
        ["minute", "3", "300µs", "300µs", "15.0µs", "12.0µs", "12.0µs"]
    );
    assert_eq!(
        row("hour "),
        ["hour", "168", "2.00ms", "38.0µs", "32.0µs", "26.0µs", "20.0µs"]
    );
    assert_eq!(
        row("day "),
        ["day", "7", "2.00ms", "43.0µs", "43.0µs", "43.0µs", "43.0µs"]
    );

    let html_path = dir.path().join("r.html");
    let o = latscope(&[
        "report",
        &id,
        "--html",
        html_path.to_str().unwrap(),
        "--store",
        s,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let html = std::fs::read_to_string(&html_path).unwrap();
    assert!(
        html.contains("observed over 168 whole hours (monitor windows): median 32.0µs, quartiles 26.0µs–38.0µs"),
        "the forecast's worst cases"
    );
    assert!(html.contains("upper quartile"), "the observed section");
}

/// One CPU checkpointed every 100 s for 400 s at 1,000 samples a second,
/// whose timeline chunk of seconds 0–99 the retention then deleted.
fn pruned_store(path: &std::path::Path) -> (RunId, CellId) {
    let start = WEEK_START_HOUR * HOUR_NS;
    let (mut store, run, cell) = monitor_run(path, start, Nanos::from_secs(400));
    let mut cumulative = MetricResult::new(metric::TIMER_LATENCY, Some(CpuId(0)));
    for part in 0..4u64 {
        let mut seconds = Vec::new();
        for s in 0..100u64 {
            let mut max = 0;
            for i in 0..1_000u64 {
                // A tail of one sample in 1,000 up to about 1 ms.
                let v = if i == (s * 7 + part) % 1_000 {
                    200_000 + (s * 7_919 + part * 104_729) % 800_000
                } else {
                    10_000 + (i * 7_919 + s) % 20_000
                };
                cumulative.histogram.record(v);
                max = max.max(v);
            }
            seconds.push(SecondStats {
                count: 1_000,
                max,
                above: 0,
            });
        }
        let chunk = TimelineChunk {
            metric: metric::TIMER_LATENCY.into(),
            cpu: Some(CpuId(0)),
            first_second: part * 100,
            seconds,
        };
        let at = Nanos::from_secs((part + 1) * 100);
        store
            .checkpoint(
                run,
                cell,
                at,
                std::slice::from_ref(&cumulative),
                &[chunk],
                Nanos(start + at.0),
            )
            .unwrap();
    }
    store.prune_timeline(cell, 150).unwrap();
    store
        .finish_run(
            run,
            RunStatus::Complete,
            Nanos(start + 400 * 1_000_000_000),
            &[],
        )
        .unwrap();
    (run, cell)
}

#[test]
fn a_monitor_whose_oldest_seconds_were_deleted_is_forecast_from_the_kept_part() {
    let _g = crate::common::serial();
    let dir = tempfile::tempdir().unwrap();
    let path = store_in(dir.path());
    let (run, cell) = pruned_store(&path);
    {
        let store = Store::open_existing(&path).unwrap();
        assert_eq!(store.timeline_start(cell).unwrap(), Some(100));
        let kept = store
            .load_timeline_from(cell, metric::TIMER_LATENCY, Some(CpuId(0)), 150)
            .unwrap();
        assert_eq!(kept.len(), 250, "seconds 150–399");
    }
    let (s, id) = (path.to_str().unwrap(), run.0.to_string());
    let o = latscope(&["forecast", &id, "--store", s]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    // Cut at the checkpoint at 100 s: 300 s of 1,000 samples a second.
    assert!(
        text.contains("cell 0: tail model fitted to the last 0.1 h of 0.1 h"),
        "{text}"
    );
    assert!(
        text.contains("timer.latency · 300000 samples over 300.0 s"),
        "{text}"
    );
    let o = latscope(&["forecast", &id, "--json", "--store", s]);
    let doc: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(doc["model_fitted_from"][0]["from_ns"], 100_000_000_000u64);
}

/// A monitor of `minutes` minutes on 2 CPUs: a checkpoint and a minute
/// window per CPU every minute, each minute's maximum 20 µs but minute
/// 200's, 5 ms on CPU 1 (the points' figures are checked exactly in
/// the store's `plot` tests).
fn minutes_store(path: &std::path::Path, minutes: u64) -> RunId {
    const MINUTE: u64 = 60_000_000_000;
    let start = WEEK_START_HOUR * HOUR_NS;
    let (mut store, run, cell) = monitor_run(path, start, Nanos(minutes * MINUTE));
    let mut cumulative: Vec<MetricResult> = (0..2)
        .map(|cpu| MetricResult::new(metric::TIMER_LATENCY, Some(CpuId(cpu))))
        .collect();
    for m in 0..minutes {
        for (cpu, c) in cumulative.iter_mut().enumerate() {
            let max = if m == 200 && cpu == 1 {
                5_000_000
            } else {
                20_000
            };
            let h = window(max);
            c.histogram.merge(&h);
            store
                .put_window(
                    run,
                    &Window {
                        span: Span::Minute,
                        start_unix: Nanos(start + m * MINUTE),
                        metric: metric::TIMER_LATENCY.into(),
                        cpu: Some(CpuId(cpu as u32)),
                        histogram: h,
                    },
                )
                .unwrap();
        }
        let at = Nanos((m + 1) * MINUTE);
        let cp = latscope_store::Checkpoint {
            duration: at,
            now_unix: Nanos(start + at.0),
            metrics: cumulative.clone(),
            ..Default::default()
        };
        store.write_checkpoint(run, cell, &cp).unwrap();
    }
    store
        .finish_run(
            run,
            RunStatus::Complete,
            Nanos(start + minutes * MINUTE),
            &[],
        )
        .unwrap();
    run
}

#[test]
fn a_long_monitors_percentiles_over_time_come_from_its_minute_windows() {
    let _g = crate::common::serial();
    for (minutes, source) in [
        (
            420,
            "(420 minute windows; each point 2 minute windows merged)",
        ),
        (
            300,
            "(300 checkpoint intervals; each point one checkpoint interval)",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let path = store_in(dir.path());
        let run = minutes_store(&path, minutes);
        let o = latscope(&[
            "report",
            &run.0.to_string(),
            "--html",
            "-",
            "--store",
            path.to_str().unwrap(),
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let html = stdout(&o);
        assert!(html.contains(source), "{minutes} minutes: no {source:?}");
    }
}

/// A monitor of an hour that started at 07:19 and stopped at 08:21 has
/// measured no whole hour: its two hour windows (41 and 21 minutes) are
/// not counted as observed hours, nor its partial first and last minute.
#[test]
fn partial_windows_at_the_ends_of_a_monitor_are_not_whole_blocks() {
    let _g = crate::common::serial();
    const MINUTE: u64 = 60_000_000_000;
    let dir = tempfile::tempdir().unwrap();
    let path = store_in(dir.path());
    let hour0 = WEEK_START_HOUR * HOUR_NS + 7 * HOUR_NS;
    let start = hour0 + 19 * MINUTE + 30_000_000_000;
    let end = hour0 + 81 * MINUTE + 10_000_000_000;
    let (mut store, run, cell) = monitor_run(&path, start, Nanos(end - start));
    let m = MetricResult {
        histogram: histogram(10_000, 50_000),
        ..MetricResult::new(metric::TIMER_LATENCY, Some(CpuId(1)))
    };
    store
        .checkpoint(run, cell, Nanos(end - start), &[m], &[], Nanos(end))
        .unwrap();
    for (span, at) in [(Span::Hour, hour0), (Span::Hour, hour0 + HOUR_NS)]
        .into_iter()
        .chain((19..=81).map(|k| (Span::Minute, hour0 + k * MINUTE)))
    {
        store
            .put_window(
                run,
                &Window {
                    span,
                    start_unix: Nanos(at),
                    metric: metric::TIMER_LATENCY.into(),
                    cpu: Some(CpuId(1)),
                    histogram: window(30_000),
                },
            )
            .unwrap();
    }
    store
        .finish_run(run, RunStatus::Complete, Nanos(end), &[])
        .unwrap();
    let o = latscope(&[
        "forecast",
        &run.0.to_string(),
        "--json",
        "--store",
        path.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let doc: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let blocks = &doc["observed_blocks"];
    assert_eq!(blocks["hour"]["blocks"], 0, "{blocks}");
    // Minutes 20 to 80 are whole; 19 and 81 are not.
    assert_eq!(blocks["minute"]["blocks"], 61, "{blocks}");
}
