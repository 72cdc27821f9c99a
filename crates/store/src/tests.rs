use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use latscope_model::{
    Breakdown, Capabilities, Cause, CauseKind, CauseTotal, CellMeta, CellSettings, CommonSettings,
    CpuId, CpuPercent, DiskRates, Episode, EpisodeWindow, IdleState, InterruptSource, Nanos,
    NetRates, NoiseClass, NoiseClock, NoiseCpuStats, NoiseSettings, PhaseName, Policy, RunId,
    RunMeta, RunStatus, StackCount, SystemInfo, TimerApiName, TimerCpuStats, TimerSettings,
    TraceSummary, UdpPath, UdpSettings, UdpStats, WindowEvent, WorkloadSecond, WorkloadStats,
};
use latscope_record::{Histogram, MetricResult, SecondStats, TimelineChunk};

use super::*;
use backends::each_backend;

fn current_boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

fn run_meta() -> RunMeta {
    RunMeta {
        command_line: vec!["latscope".into(), "run".into(), "--for".into(), "8s".into()],
        pid: std::process::id(),
        boot_id: current_boot_id(),
        hostname: "testhost".into(),
        tool_version: "0.1.0".into(),
        notes: vec!["first note".into()],
        ..RunMeta::new(RunId(999), Nanos(1_700_000_000_000_000_000))
    }
}

fn system() -> SystemInfo {
    SystemInfo {
        hostname: "testhost".into(),
        machine_id: Some("3d1219c7c4c5404aaa1f6d2a48adfda4".into()),
        kernel_release: "6.18.0-test".into(),
        kernel_version: "#1 SMP PREEMPT_DYNAMIC".into(),
        preemption_model: Some("none".into()),
        preemption_source: Some("debugfs".into()),
        hz: Some(250),
        clocksource: Some("tsc".into()),
        available_clocksources: vec!["tsc".into(), "hpet".into()],
        cpu_model: Some("Test CPU".into()),
        cpu_count: 2,
        cpus_online: "0-1".into(),
        smt_active: Some(false),
        cpufreq_governors: BTreeMap::from([(0, "performance".into()), (1, "powersave".into())]),
        cpuidle_driver: Some("acpi_idle".into()),
        cpuidle_governor: Some("menu".into()),
        cpuidle_states: vec![IdleState {
            name: "C1".into(),
            latency_us: 2,
            disabled: false,
        }],
        hypervisor: true,
        hypervisor_vendor: Some("KVM".into()),
        kernel_cmdline: "console=ttyS0".into(),
        isolcpus: None,
        nohz_full: Some("1".into()),
        rcu_nocbs: None,
        rt_runtime_us: Some(950_000),
        rt_period_us: Some(1_000_000),
        tsc_constant_nonstop: true,
        granularity: latscope_model::TimerGranularity {
            monotonic_res_ns: Some(1),
            coarse_res_ns: Some(4_000_000),
            hres_active: Some(true),
            hres_source: Some("timer_list".into()),
            hres_inactive_cpus: vec![],
            default_slack_ns: Some(50_000),
        },
        // Stored with the snapshot and read back whole (`latscope check`).
        hazards: vec![latscope_model::Hazard {
            id: "preemption".into(),
            severity: latscope_model::Severity::Hazard,
            title: "preemption model none".into(),
            detail: "kernel code is never preempted".into(),
            remedy: "boot with preempt=full".into(),
        }],
    }
}

fn caps() -> Capabilities {
    Capabilities {
        root: true,
        cap_sys_nice: true,
        cap_ipc_lock: true,
        rlimit_rtprio: u64::MAX,
        rt_priority: true,
        mlock: true,
        dma_latency: false,
        timer_slack_ns: Some(1),
        tracepoints: false,
        stack_samples: false,
        missing: vec!["/dev/cpu_dma_latency: permission denied".into()],
    }
}

fn cell(index: u32) -> CellMeta {
    CellMeta {
        monotonic_start_ns: Nanos(123_456_789),
        ..CellMeta::new(
            index,
            if index == 0 { "idle" } else { "compile" },
            CellSettings::Timer(TimerSettings {
                period_ns: Nanos::from_millis(1),
                common: CommonSettings {
                    priority: 80,
                    cpus: "0-1".into(),
                    clock_read_ns: 25,
                    ..CommonSettings::default()
                },
                ..TimerSettings::default()
            }),
            Nanos::ZERO,
        )
    }
}

fn hist(values: &[u64]) -> Histogram {
    let mut h = Histogram::new();
    for &v in values {
        h.record(v);
    }
    h
}

fn metrics(scale: u64) -> Vec<MetricResult> {
    let mut lat0 = MetricResult::new("timer.latency", Some(CpuId(0)));
    lat0.histogram = hist(&[1_000 * scale, 2_000 * scale, 50_000 * scale]);
    lat0.corrected = Some(hist(&[
        1_000 * scale,
        2_000 * scale,
        50_000 * scale,
        49_000 * scale,
    ]));
    lat0.overruns = 1;
    lat0.missed_deadlines = 1;
    lat0.threshold = Some(Nanos(10_000));
    lat0.above_threshold = Some(1);
    let mut lat1 = MetricResult::new("timer.latency", Some(CpuId(1)));
    lat1.histogram = hist(&[3_000 * scale]);
    let mut sys = MetricResult::new("noise.gap", None);
    sys.histogram = hist(&[700, 800]);
    // Deliberately out of order: the store sorts by name then CPU.
    vec![lat1, sys, lat0]
}

fn sorted(mut m: Vec<MetricResult>) -> Vec<MetricResult> {
    m.sort_by(|a, b| (&a.name, a.cpu).cmp(&(&b.name, b.cpu)));
    m
}

fn chunk(metric: &str, cpu: Option<CpuId>, first: u64, n: u64, base: u64) -> TimelineChunk {
    TimelineChunk {
        metric: metric.into(),
        cpu,
        first_second: first,
        seconds: (0..n)
            .map(|i| SecondStats {
                count: 1000 + base + i,
                max: 5_000 + base + i,
                above: base,
            })
            .collect(),
    }
}

fn always_alive(_: &RunMeta) -> bool {
    true
}

fn one_line(e: &StoreError) -> String {
    let text = e.to_string();
    assert!(!text.contains('\n'), "multi-line error: {text:?}");
    text
}

fn write_file(path: &Path, bytes: &[u8]) {
    std::fs::write(path, bytes).unwrap();
}

// ---------------------------------------------------------------- schema

#[test]
fn migrations_build_the_schema_on_an_empty_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    let store = Store::open(&path).unwrap();
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
    drop(store);

    let versions = schema::migration_versions();
    assert!(!versions.is_empty());
    for (i, (v, _)) in versions.iter().enumerate() {
        assert_eq!(*v as usize, i + 1, "migrations must be numbered 1, 2, ...");
    }
    assert_eq!(versions.len() as u32, SCHEMA_VERSION);

    let conn = rusqlite::Connection::open(&path).unwrap();
    let app: i32 = conn
        .query_row("PRAGMA application_id", [], |r| r.get(0))
        .unwrap();
    assert_eq!(app, 0x4C41_5453);
    let uv: u32 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(uv, SCHEMA_VERSION);
    let jm: String = conn
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(jm, "wal");
    let mut stmt = conn
        .prepare("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name")
        .unwrap();
    let tables: Vec<String> = stmt
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(
        tables,
        [
            "capabilities",
            "cells",
            "episode_windows",
            "episodes",
            "interval_marks",
            "metric_intervals",
            "metric_snapshots",
            "metrics",
            "micro_context",
            "micro_results",
            "monitor_windows",
            "noise_stats",
            "runs",
            "snapshot_schedule",
            "systems",
            "timeline_chunks",
            "timer_stats",
            "trace_summaries",
            "udp_stats",
            "workload_seconds",
            "workload_stats"
        ]
    );
    let fk_targets: Vec<(String, String)> = [
        "systems",
        "capabilities",
        "cells",
        "metrics",
        "metric_snapshots",
        "snapshot_schedule",
        "timeline_chunks",
        "episodes",
        "episode_windows",
        "trace_summaries",
        "noise_stats",
        "udp_stats",
        "workload_stats",
        "workload_seconds",
        "micro_results",
        "micro_context",
        "monitor_windows",
        "metric_intervals",
        "interval_marks",
    ]
    .iter()
    .map(|t| {
        conn.query_row(&format!("PRAGMA foreign_key_list({t})"), [], |r| {
            Ok((t.to_string(), r.get::<_, String>(2)?))
        })
        .unwrap()
    })
    .collect();
    for (t, target) in fk_targets {
        let want = match t.as_str() {
            "metrics" | "metric_snapshots" | "snapshot_schedule" | "timeline_chunks"
            | "episodes" | "trace_summaries" | "noise_stats" | "udp_stats" | "workload_stats"
            | "workload_seconds" | "micro_results" | "metric_intervals" | "interval_marks" => {
                "cells"
            }
            "episode_windows" => "episodes",
            _ => "runs",
        };
        assert_eq!(target, want, "foreign key of {t}");
    }
    drop(stmt);
    drop(conn);

    // Reopening an up-to-date store changes nothing.
    let store = Store::open(&path).unwrap();
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
    assert!(store.list_runs().unwrap().is_empty());
}

#[test]
fn schema_enforces_its_constraints() {
    each_backend(|dir| {
        let path = dir.at("s.db");
        let mut store = Store::open(&path).unwrap();
        let run = store.create_run(&run_meta(), &system(), &caps()).unwrap();
        let c = store.add_cell(run, &cell(0)).unwrap();
        let conn = &store.db;
        // Bad status, dangling foreign key, bad kind: all refused.
        assert!(conn
            .execute("UPDATE runs SET status = 'bogus' WHERE id = ?1", [run.0])
            .is_err());
        assert!(conn
        .execute(
            "INSERT INTO cells (run_id, idx, probe, workload, monotonic_start_ns) VALUES (4242, 0, 'p', 'w', 0)",
            [],
        )
        .is_err());
        assert!(conn
        .execute(
            "INSERT INTO metrics (cell_id, name, cpu, kind, histogram, samples) VALUES (?1, 'x', -1, 'odd', ?2, 0)",
            crate::db::params![c.0, vec![0u8]],
        )
        .is_err());
        // System-wide rows collide with each other in the unique key.
        conn.execute(
        "INSERT INTO metrics (cell_id, name, cpu, kind, histogram, samples) VALUES (?1, 'x', -1, 'raw', ?2, 0)",
        crate::db::params![c.0, vec![0u8]],
    )
    .unwrap();
        assert!(conn
        .execute(
            "INSERT INTO metrics (cell_id, name, cpu, kind, histogram, samples) VALUES (?1, 'x', -1, 'raw', ?2, 0)",
            crate::db::params![c.0, vec![0u8]],
        )
        .is_err());
    });
}

// ---------------------------------------------------------------- refusing wrong files

#[test]
fn a_non_sqlite_file_is_refused_and_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = Vec::new();
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for _ in 0..8192 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        bytes.push(x as u8);
    }
    for (name, content) in [
        ("random.bin", bytes.as_slice()),
        ("notes.txt", b"hello, not a database\n".as_slice()),
        ("fake.db", b"SQLite format 3\0 but far too short".as_slice()),
    ] {
        let path = dir.path().join(name);
        write_file(&path, content);
        for result in [Store::open(&path), Store::open_existing(&path)] {
            let e = result.unwrap_err();
            assert!(matches!(e, StoreError::NotAStore { .. }), "{name}: {e:?}");
            let text = one_line(&e);
            assert!(text.contains(&path.display().to_string()), "{text}");
            assert!(text.contains("not a latscope store"), "{text}");
        }
        assert_eq!(
            std::fs::read(&path).unwrap(),
            content,
            "{name} was modified"
        );
    }
    let only: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(only.len(), 3, "no side files may be created");
}

#[test]
fn another_programs_sqlite_database_is_refused_and_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("other.db");
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch("CREATE TABLE people (name TEXT); INSERT INTO people VALUES ('ada');")
            .unwrap();
    }
    let before = std::fs::read(&path).unwrap();
    for result in [Store::open(&path), Store::open_existing(&path)] {
        let e = result.unwrap_err();
        assert!(matches!(e, StoreError::ForeignDatabase { .. }), "{e:?}");
        let text = one_line(&e);
        assert!(text.contains("not a latscope store"), "{text}");
        assert!(text.contains(&path.display().to_string()), "{text}");
    }
    assert_eq!(std::fs::read(&path).unwrap(), before);

    // Same when it is marked with another application id but has no tables.
    let marked = dir.path().join("marked.db");
    {
        let conn = rusqlite::Connection::open(&marked).unwrap();
        conn.pragma_update(None, "application_id", 1234).unwrap();
        conn.pragma_update(None, "user_version", 7).unwrap();
    }
    let before = std::fs::read(&marked).unwrap();
    assert!(matches!(
        Store::open(&marked).unwrap_err(),
        StoreError::ForeignDatabase { .. }
    ));
    assert_eq!(std::fs::read(&marked).unwrap(), before);
}

#[test]
fn a_newer_schema_is_refused_and_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("new.db");
    {
        let mut s = Store::open(&path).unwrap();
        s.create_run(&run_meta(), &system(), &caps()).unwrap();
    }
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.pragma_update(None, "user_version", SCHEMA_VERSION + 1)
            .unwrap();
    }
    let before = std::fs::read(&path).unwrap();
    for result in [Store::open(&path), Store::open_existing(&path)] {
        let e = result.unwrap_err();
        match &e {
            StoreError::NewerSchema {
                found, supported, ..
            } => {
                assert_eq!(*found, SCHEMA_VERSION + 1);
                assert_eq!(*supported, SCHEMA_VERSION);
            }
            other => panic!("expected NewerSchema, got {other:?}"),
        }
        let text = one_line(&e);
        assert!(text.contains(&format!("{}", SCHEMA_VERSION + 1)), "{text}");
        assert!(
            text.contains(&format!("version {SCHEMA_VERSION}")),
            "{text}"
        );
        assert!(text.contains("upgrade latscope"), "{text}");
    }
    assert_eq!(std::fs::read(&path).unwrap(), before);
}

#[test]
fn bad_paths_give_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();

    let nowhere = dir.path().join("no/such/dir/s.db");
    let e = Store::open(&nowhere).unwrap_err();
    let text = one_line(&e);
    assert!(matches!(e, StoreError::Open { .. }), "{e:?}");
    assert!(text.contains(&nowhere.display().to_string()), "{text}");
    assert!(text.contains("does not exist"), "{text}");
    assert!(!dir.path().join("no").exists());

    let e = Store::open(dir.path()).unwrap_err();
    assert!(matches!(e, StoreError::IsDirectory { .. }), "{e:?}");
    one_line(&e);

    let missing = dir.path().join("missing.db");
    let e = Store::open_existing(&missing).unwrap_err();
    assert!(matches!(e, StoreError::Missing { .. }), "{e:?}");
    assert!(one_line(&e).contains(&missing.display().to_string()));
    assert!(!missing.exists(), "open_existing must not create the file");

    let empty = dir.path().join("empty.db");
    write_file(&empty, b"");
    let e = Store::open_existing(&empty).unwrap_err();
    assert!(matches!(e, StoreError::NotAStore { .. }), "{e:?}");
    assert_eq!(std::fs::read(&empty).unwrap(), b"");
    // For writing, an empty file is a new store.
    Store::open(&empty).unwrap();

    let file_as_dir = dir.path().join("plain");
    write_file(&file_as_dir, b"x");
    let e = Store::open(&file_as_dir.join("s.db")).unwrap_err();
    assert!(one_line(&e).contains("not a directory"), "{e}");
}

#[test]
fn unwritable_locations_give_one_line_errors() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let locked = dir.path().join("locked");
    std::fs::create_dir(&locked).unwrap();
    let store_path = dir.path().join("ro.db");
    Store::open(&store_path).unwrap();
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o555)).unwrap();
    std::fs::set_permissions(&store_path, std::fs::Permissions::from_mode(0o444)).unwrap();
    // Root ignores permission bits: then there is nothing to test.
    if std::fs::write(locked.join("probe"), b"").is_ok() {
        eprintln!("skipped: needs a non-root user (permission bits are not enforced)");
        return;
    }
    let e = Store::open(&locked.join("s.db")).unwrap_err();
    assert!(one_line(&e).contains("locked"), "{e}");
    let e = Store::open(&store_path).unwrap_err();
    assert!(matches!(e, StoreError::ReadOnly { .. }), "{e:?}");
    one_line(&e);
    // Reading a read-only store with the current schema works.
    let s = Store::open_existing(&store_path).unwrap();
    assert!(s.list_runs().unwrap().is_empty());
}

#[test]
fn a_blank_sqlite_database_becomes_a_store_only_when_opened_for_writing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("blank.db");
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        // Forces the file to be written without creating anything in it.
        conn.execute_batch("PRAGMA page_size = 4096; VACUUM;")
            .unwrap();
    }
    assert!(std::fs::metadata(&path).unwrap().len() > 0);
    let e = Store::open_existing(&path).unwrap_err();
    assert!(matches!(e, StoreError::NotAStore { .. }), "{e:?}");
    let s = Store::open(&path).unwrap();
    assert_eq!(s.schema_version().unwrap(), SCHEMA_VERSION);
}

// ---------------------------------------------------------------- writing and reading

#[test]
fn a_full_run_round_trips() {
    each_backend(|dir| {
        let path = dir.at("s.db");
        let mut store = Store::open(&path).unwrap();
        let meta = run_meta();
        let run = store.create_run(&meta, &system(), &caps()).unwrap();
        let mut caps2 = caps();
        caps2.rt_priority = false;
        caps2.missing.push("SCHED_FIFO refused".into());
        store.update_capabilities(run, &caps2).unwrap();

        let c0 = store.add_cell(run, &cell(0)).unwrap();
        let c1 = store.add_cell(run, &cell(1)).unwrap();
        store
            .checkpoint(
                run,
                c1,
                Nanos::from_secs(4),
                &metrics(2),
                &[],
                Nanos(1_700_000_004_000_000_000),
            )
            .unwrap();
        store
            .checkpoint(
                run,
                c0,
                Nanos::from_secs(8),
                &metrics(1),
                &[],
                Nanos(1_700_000_008_000_000_000),
            )
            .unwrap();
        store
            .finish_run(
                run,
                RunStatus::Complete,
                Nanos(1_700_000_009_000_000_000),
                &["done".into()],
            )
            .unwrap();
        drop(store);

        let store = Store::open_existing(&path).unwrap();
        let loaded = store.load_run(run).unwrap();

        let mut want_meta = meta.clone();
        want_meta.id = run;
        want_meta.status = RunStatus::Complete;
        want_meta.ended_unix_ns = Some(Nanos(1_700_000_009_000_000_000));
        want_meta.checkpoint_unix_ns = Some(Nanos(1_700_000_008_000_000_000));
        want_meta.notes = vec!["first note".into(), "done".into()];
        assert_eq!(loaded.meta, want_meta);
        assert_eq!(loaded.system, system());
        assert_eq!(loaded.capabilities, caps2);
        assert_eq!(loaded.cells.len(), 2);

        let mut want_c0 = cell(0);
        want_c0.duration_ns = Nanos::from_secs(8);
        let mut want_c1 = cell(1);
        want_c1.duration_ns = Nanos::from_secs(4);
        assert_eq!(loaded.cells[0].meta, want_c0);
        assert_eq!(loaded.cells[1].meta, want_c1);
        assert_eq!(loaded.cells[0].metrics, sorted(metrics(1)));
        assert_eq!(loaded.cells[1].metrics, sorted(metrics(2)));
        // System-wide first, then CPUs in order; corrected and thresholds kept.
        let names: Vec<_> = loaded.cells[0]
            .metrics
            .iter()
            .map(|m| (m.name.as_str(), m.cpu))
            .collect();
        assert_eq!(
            names,
            [
                ("noise.gap", None),
                ("timer.latency", Some(CpuId(0))),
                ("timer.latency", Some(CpuId(1)))
            ]
        );
        let lat0 = &loaded.cells[0].metrics[1];
        assert_eq!(lat0.corrected.as_ref().map(Histogram::count), Some(4));
        assert_eq!(lat0.threshold, Some(Nanos(10_000)));
        assert_eq!(lat0.above_threshold, Some(1));
        assert_eq!(store.cell_ids(run).unwrap(), vec![c0, c1]);
    });
}

#[test]
fn checkpoints_replace_metrics_and_append_timeline_chunks() {
    each_backend(|dir| {
        let mut store = Store::open(&dir.at("s.db")).unwrap();
        let run = store.create_run(&run_meta(), &system(), &caps()).unwrap();
        let c = store.add_cell(run, &cell(0)).unwrap();
        let cpu0 = Some(CpuId(0));

        store
            .checkpoint(
                run,
                c,
                Nanos::from_secs(3),
                &metrics(1),
                &[chunk("timer.latency", cpu0, 0, 3, 0)],
                Nanos(10),
            )
            .unwrap();
        store
            .checkpoint(
                run,
                c,
                Nanos::from_secs(7),
                &metrics(3),
                &[
                    // Seconds 3..5 are missing (a stalled reader): they read as empty.
                    chunk("timer.latency", cpu0, 5, 2, 100),
                    chunk("noise.gap", None, 0, 1, 7),
                    TimelineChunk {
                        metric: "timer.latency".into(),
                        cpu: cpu0,
                        first_second: 9,
                        seconds: vec![],
                    },
                ],
                Nanos(20),
            )
            .unwrap();

        let rows: i64 = store
            .db
            .query_row(
                "SELECT count(*) FROM metrics WHERE cell_id = ?1",
                [c.0],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(rows, 4, "3 raw rows + 1 corrected row, no duplicates");
        let loaded = store.load_run(run).unwrap();
        assert_eq!(loaded.cells[0].metrics, sorted(metrics(3)));
        assert_eq!(loaded.cells[0].meta.duration_ns, Nanos::from_secs(7));
        assert_eq!(loaded.meta.checkpoint_unix_ns, Some(Nanos(20)));

        let tl = store.load_timeline(c, "timer.latency", cpu0).unwrap();
        let mut want = chunk("timer.latency", cpu0, 0, 3, 0).seconds;
        want.extend([SecondStats::default(); 2]);
        want.extend(chunk("timer.latency", cpu0, 5, 2, 100).seconds);
        assert_eq!(tl, want);
        assert_eq!(
            store.load_timeline(c, "noise.gap", None).unwrap(),
            chunk("noise.gap", None, 0, 1, 7).seconds
        );
        assert!(store
            .load_timeline(c, "timer.latency", Some(CpuId(1)))
            .unwrap()
            .is_empty());
        assert!(matches!(
            store.load_timeline(CellId(4242), "timer.latency", cpu0),
            Err(StoreError::NoSuchCell(CellId(4242)))
        ));

        // A later chunk that overlaps an earlier one wins for the seconds it covers.
        store
            .checkpoint(
                run,
                c,
                Nanos::from_secs(8),
                &metrics(3),
                &[chunk("timer.latency", cpu0, 1, 1, 500)],
                Nanos(30),
            )
            .unwrap();
        let tl = store.load_timeline(c, "timer.latency", cpu0).unwrap();
        assert_eq!(tl.len(), 7);
        assert_eq!(tl[1], chunk("timer.latency", cpu0, 1, 1, 500).seconds[0]);
        assert_eq!(tl[0], want[0]);

        // An empty metric list clears the cell's metrics.
        store
            .checkpoint(run, c, Nanos::from_secs(8), &[], &[], Nanos(40))
            .unwrap();
        assert!(store.load_run(run).unwrap().cells[0].metrics.is_empty());
    });
}

#[test]
fn mistakes_in_calls_give_clear_errors() {
    each_backend(|dir| {
        let mut store = Store::open(&dir.at("s.db")).unwrap();
        let r1 = store.create_run(&run_meta(), &system(), &caps()).unwrap();
        let r2 = store.create_run(&run_meta(), &system(), &caps()).unwrap();
        let c1 = store.add_cell(r1, &cell(0)).unwrap();

        let e = store.add_cell(r1, &cell(0)).unwrap_err();
        assert!(
            matches!(e, StoreError::DuplicateCell { index: 0, .. }),
            "{e:?}"
        );
        let e = store.add_cell(RunId(77), &cell(0)).unwrap_err();
        assert!(matches!(e, StoreError::NotFound(RunId(77))), "{e:?}");
        let e = store
            .checkpoint(r2, c1, Nanos(1), &[], &[], Nanos(1))
            .unwrap_err();
        assert!(matches!(e, StoreError::CellNotInRun { .. }), "{e:?}");
        let e = store
            .checkpoint(r1, CellId(99), Nanos(1), &[], &[], Nanos(1))
            .unwrap_err();
        assert!(matches!(e, StoreError::NoSuchCell(CellId(99))), "{e:?}");
        let e = store
            .finish_run(RunId(77), RunStatus::Complete, Nanos(1), &[])
            .unwrap_err();
        assert!(matches!(e, StoreError::NotFound(RunId(77))), "{e:?}");
        let e = store.update_capabilities(RunId(77), &caps()).unwrap_err();
        assert!(matches!(e, StoreError::NotFound(RunId(77))), "{e:?}");
        let e = store.load_run(RunId(77)).unwrap_err();
        assert!(matches!(e, StoreError::NotFound(RunId(77))), "{e:?}");
        let e = store.cell_ids(RunId(77)).unwrap_err();
        assert!(matches!(e, StoreError::NotFound(RunId(77))), "{e:?}");

        let mut big = run_meta();
        big.started_unix_ns = Nanos(u64::MAX);
        let e = store.create_run(&big, &system(), &caps()).unwrap_err();
        assert!(matches!(e, StoreError::OutOfRange { .. }), "{e:?}");
        one_line(&e);
        // Nothing half-written by the failed calls.
        assert_eq!(store.list_runs().unwrap().len(), 2);

        // A failed checkpoint (duplicate metric) leaves the previous one intact.
        store
            .checkpoint(r1, c1, Nanos(5), &metrics(1), &[], Nanos(5))
            .unwrap();
        let mut dup = metrics(2);
        dup.push(dup[0].clone());
        assert!(store
            .checkpoint(r1, c1, Nanos(6), &dup, &[], Nanos(6))
            .is_err());
        let loaded = store.load_run(r1).unwrap();
        assert_eq!(loaded.cells[0].metrics, sorted(metrics(1)));
        assert_eq!(loaded.cells[0].meta.duration_ns, Nanos(5));
    });
}

#[test]
fn list_runs_in_order_with_headlines() {
    each_backend(|dir| {
        let mut store = Store::open(&dir.at("s.db")).unwrap();
        store.set_liveness_probe(always_alive);
        assert!(store.list_runs().unwrap().is_empty());

        let mut ids = Vec::new();
        for i in 0..3u64 {
            let mut meta = run_meta();
            meta.started_unix_ns = Nanos(1_000 + i);
            let mut sys = system();
            sys.kernel_release = format!("6.{i}.0");
            let run = store.create_run(&meta, &sys, &caps()).unwrap();
            ids.push(run);
            if i != 1 {
                let c0 = store.add_cell(run, &cell(0)).unwrap();
                let c1 = store.add_cell(run, &cell(1)).unwrap();
                store
                    .checkpoint(run, c0, Nanos(1), &metrics(1), &[], Nanos(2))
                    .unwrap();
                store
                    .checkpoint(run, c1, Nanos(1), &metrics(i + 1), &[], Nanos(2))
                    .unwrap();
            }
        }
        store
            .finish_run(ids[0], RunStatus::Complete, Nanos(5_000), &[])
            .unwrap();

        let list = store.list_runs().unwrap();
        let got: Vec<_> = list.iter().map(|l| l.meta.id).collect();
        assert_eq!(got, ids);
        assert!(ids.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(list[0].meta.status, RunStatus::Complete);
        assert_eq!(list[1].meta.status, RunStatus::Running);
        assert_eq!(list[2].system_kernel, "6.2.0");
        assert_eq!(
            list[0].cells,
            vec![cell(0), cell(1)]
                .into_iter()
                .map(|mut c| {
                    c.duration_ns = Nanos(1);
                    c
                })
                .collect::<Vec<_>>()
        );
        assert!(list[1].cells.is_empty());
        // Max over raw timer.latency rows (the corrected ones are not larger
        // here, noise.gap is not counted).
        assert_eq!(list[0].max_timer_latency, Some(Nanos(50_000)));
        assert_eq!(list[1].max_timer_latency, None);
        assert_eq!(list[2].max_timer_latency, Some(Nanos(150_000)));
    });
}

#[test]
fn resolve_latest_numbers_and_garbage() {
    each_backend(|dir| {
        let mut store = Store::open(&dir.at("s.db")).unwrap();
        assert!(matches!(store.resolve("latest"), Err(StoreError::NoRuns)));
        assert_eq!(store.latest_run().unwrap(), None);
        let a = store.create_run(&run_meta(), &system(), &caps()).unwrap();
        let b = store.create_run(&run_meta(), &system(), &caps()).unwrap();
        assert_eq!(store.latest_run().unwrap(), Some(b));
        assert_eq!(store.resolve("latest").unwrap(), b);
        assert_eq!(store.resolve(" LATEST ").unwrap(), b);
        assert_eq!(store.resolve(&a.0.to_string()).unwrap(), a);
        let e = store.resolve("7").unwrap_err();
        assert!(matches!(e, StoreError::NotFound(RunId(7))), "{e:?}");
        assert!(one_line(&e).contains('7'));
        for bad in ["abc", "", "-1", "0", "1.5", "99999999999999999999"] {
            let e = store.resolve(bad).unwrap_err();
            assert!(
                matches!(&e, StoreError::BadRunId(t) if t == bad),
                "{bad}: {e:?}"
            );
            one_line(&e);
        }
    });
}

// ---------------------------------------------------------------- crashes and liveness

#[test]
fn effective_status_marks_dead_running_runs_interrupted() {
    let meta = run_meta();
    let alive = effective_status(meta.clone(), |_| true);
    assert_eq!(alive, meta);
    let dead = effective_status(meta.clone(), |_| false);
    assert_eq!(dead.status, RunStatus::Interrupted);
    assert_eq!(
        dead.notes.last().map(String::as_str),
        Some(INTERRUPTED_NOTE)
    );
    let mut done = meta;
    done.status = RunStatus::Complete;
    assert_eq!(effective_status(done.clone(), |_| false), done);
}

#[test]
fn process_liveness_checks_boot_pid_and_name() {
    let mut meta = run_meta();
    let self_is_latscope = std::fs::read_to_string("/proc/self/comm")
        .map(|c| c.starts_with("latscope"))
        .unwrap_or(false);
    assert_eq!(process_is_alive(&meta), self_is_latscope);
    meta.pid = u32::MAX; // no such process
    assert!(!process_is_alive(&meta));
    meta.pid = 1; // exists, but is not latscope
    assert!(!process_is_alive(&meta));
    let mut other_boot = run_meta();
    other_boot.boot_id = "00000000-0000-0000-0000-000000000000".into();
    if !current_boot_id().is_empty() {
        assert!(!process_is_alive(&other_boot));
    }
}

#[test]
fn a_store_abandoned_mid_run_is_readable_up_to_its_last_checkpoint() {
    each_backend(|dir| {
        let path = dir.at("s.db");
        let (run, c) = {
            let mut store = Store::open(&path).unwrap();
            let mut meta = run_meta();
            meta.pid = u32::MAX; // a process that no longer exists
            let run = store.create_run(&meta, &system(), &caps()).unwrap();
            let c = store.add_cell(run, &cell(0)).unwrap();
            store
                .checkpoint(
                    run,
                    c,
                    Nanos::from_secs(2),
                    &metrics(1),
                    &[chunk("timer.latency", Some(CpuId(0)), 0, 2, 0)],
                    Nanos(99),
                )
                .unwrap();
            // No finish_run: the Store is dropped as a dying process would.
            (run, c)
        };
        let store = Store::open_existing(&path).unwrap();
        let loaded = store.load_run(run).unwrap();
        assert_eq!(loaded.meta.status, RunStatus::Interrupted);
        assert_eq!(
            loaded.meta.notes.last().map(String::as_str),
            Some(INTERRUPTED_NOTE)
        );
        assert_eq!(loaded.cells[0].metrics, sorted(metrics(1)));
        assert_eq!(
            store
                .load_timeline(c, "timer.latency", Some(CpuId(0)))
                .unwrap()
                .len(),
            2
        );
        let list = store.list_runs().unwrap();
        assert_eq!(list[0].meta.status, RunStatus::Interrupted);
        // The row itself still says running: reading never rewrites it.
        let stored: String = store
            .db
            .query_row("SELECT status FROM runs WHERE id = ?1", [run.0], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(stored, "running");
    });
}

const CHILD_ENV: &str = "LATSCOPE_STORE_TEST_CHILD_DB";

/// Runs only as the child of `a_killed_writer_leaves_a_readable_store`:
/// writes a run, checkpoints, says so, then keeps checkpointing until killed.
#[test]
#[ignore = "helper process for a_killed_writer_leaves_a_readable_store"]
fn child_writer_until_killed() {
    let Ok(path) = std::env::var(CHILD_ENV) else {
        return;
    };
    let mut store = Store::open(Path::new(&path)).unwrap();
    let run = store.create_run(&run_meta(), &system(), &caps()).unwrap();
    let c = store.add_cell(run, &cell(0)).unwrap();
    store
        .checkpoint(run, c, Nanos(1), &metrics(1), &[], Nanos(1))
        .unwrap();
    println!("CHECKPOINTED");
    let mut n = 1;
    loop {
        n += 1;
        // Keeps writing the same data so the parent's assertion holds
        // whichever transaction the kill interrupts.
        store
            .checkpoint(
                run,
                c,
                Nanos(n),
                &metrics(1),
                &[chunk("timer.latency", Some(CpuId(0)), n, 1, 0)],
                Nanos(n),
            )
            .unwrap();
    }
}

#[test]
fn a_killed_writer_leaves_a_readable_store() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("killed.db");
    let exe = std::env::current_exe().unwrap();
    let mut child = Command::new(exe)
        .args([
            "--exact",
            "tests::child_writer_until_killed",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, &path)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut lines = BufReader::new(stdout).lines();
    let ready = lines.any(|l| l.map(|l| l.contains("CHECKPOINTED")).unwrap_or(false));
    assert!(ready, "child did not checkpoint");
    std::thread::sleep(Duration::from_millis(100));
    child.kill().unwrap(); // SIGKILL, mid-transaction most likely
    child.wait().unwrap();

    let store = Store::open_existing(&path).unwrap();
    // The child's pid is gone (reaped above); the default probe sees that.
    let run = store.resolve("latest").unwrap();
    let loaded = store.load_run(run).unwrap();
    assert_eq!(loaded.meta.status, RunStatus::Interrupted);
    assert_eq!(loaded.cells[0].metrics, sorted(metrics(1)));
    let duration = loaded.cells[0].meta.duration_ns.0;
    assert!(duration >= 1);
    assert!(loaded.meta.checkpoint_unix_ns.is_some());
    // The timeline holds exactly the committed chunks: one per checkpoint after the first.
    let tl = store
        .load_timeline(CellId(1), "timer.latency", Some(CpuId(0)))
        .unwrap();
    assert_eq!(tl.len() as u64, duration + 1);
    // And the store is still writable afterwards.
    drop(store);
    let mut store = Store::open(&path).unwrap();
    store
        .finish_run(run, RunStatus::Interrupted, Nanos(5), &["killed".into()])
        .unwrap();
    store.set_liveness_probe(|_| false);
    assert_eq!(
        store.load_run(run).unwrap().meta.notes,
        vec!["first note", "killed"]
    );
}

#[test]
fn a_reader_and_a_writer_work_at_the_same_time() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    let mut writer = Store::open(&path).unwrap();
    let run = writer.create_run(&run_meta(), &system(), &caps()).unwrap();
    let c = writer.add_cell(run, &cell(0)).unwrap();
    writer
        .checkpoint(run, c, Nanos(0), &metrics(1), &[], Nanos(0))
        .unwrap();

    let reader = Store::open_existing(&path).unwrap();
    let handle = std::thread::spawn(move || {
        for i in 1..=200u64 {
            writer
                .checkpoint(
                    run,
                    c,
                    Nanos(i),
                    &metrics(1 + i % 3),
                    &[chunk("timer.latency", Some(CpuId(0)), i, 1, i)],
                    Nanos(i),
                )
                .unwrap();
        }
        writer
            .finish_run(run, RunStatus::Complete, Nanos(1_000), &[])
            .unwrap();
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut reads = 0;
    let mut last_duration = 0;
    loop {
        let loaded = reader.load_run(run).unwrap();
        // Every read sees a whole checkpoint: 3 metrics, never a half-replaced set.
        assert_eq!(loaded.cells[0].metrics.len(), 3);
        let d = loaded.cells[0].meta.duration_ns.0;
        assert!(d >= last_duration, "time went backwards");
        last_duration = d;
        assert_eq!(reader.list_runs().unwrap().len(), 1);
        reads += 1;
        if loaded.meta.status == RunStatus::Complete || Instant::now() > deadline {
            break;
        }
    }
    handle.join().unwrap();
    assert!(reads > 1);
    assert_eq!(
        reader.load_run(run).unwrap().meta.status,
        RunStatus::Complete
    );
    assert_eq!(
        reader
            .load_timeline(c, "timer.latency", Some(CpuId(0)))
            .unwrap()
            .len(),
        201
    );
}

// ---------------------------------------------------------------- trace (schema version 2)

fn episode(seq: u32, cpu: u32, latency: u64) -> Episode {
    Episode {
        seq,
        cpu: CpuId(cpu),
        metric: "timer.latency".into(),
        expiry_ns: Nanos(5_000_000_000 + u64::from(seq) * 1_000_000),
        offset_ns: Nanos(u64::from(seq) * 1_000_000),
        latency_ns: Nanos(latency),
        breakdown: Breakdown {
            irq_ns: Nanos(5_000),
            sched_ns: Nanos(latency.saturating_sub(10_000)),
            return_ns: Nanos(5_000),
            idle_at_expiry: seq & 1 == 0,
            causes: vec![
                Cause {
                    kind: CauseKind::Thread,
                    name: "burner".into(),
                    pid: Some(4242),
                    policy: Some("fifo".into()),
                    priority: Some(90),
                    duration_ns: Nanos(latency.saturating_sub(10_000)),
                    parts: Vec::new(),
                },
                Cause {
                    kind: CauseKind::TimerIrq,
                    name: "hrtimer_wakeup".into(),
                    pid: None,
                    policy: None,
                    priority: None,
                    duration_ns: Nanos(5_000),
                    parts: Vec::new(),
                },
                Cause {
                    kind: CauseKind::Return,
                    name: "latscope-timer".into(),
                    pid: Some(100),
                    policy: None,
                    priority: None,
                    duration_ns: Nanos(5_000),
                    parts: Vec::new(),
                },
            ],
            blocking: Some(Cause {
                kind: CauseKind::Thread,
                name: "burner".into(),
                pid: Some(4242),
                policy: Some("fifo".into()),
                priority: Some(90),
                duration_ns: Nanos(latency.saturating_sub(10_000)),
                parts: Vec::new(),
            }),
            unexplained_ns: Nanos(0),
            steal_ns: if seq == 1 {
                Some(Nanos(4_000_000))
            } else {
                None
            },
            steal_source: None,
            steal_irq_ns: None,
            steal_sched_ns: None,
            complete: seq != 3,
            held: None,
        },
        stacks: if seq == 1 {
            vec![StackCount {
                function: "kvm_vcpu_run".into(),
                module: Some("kvm".into()),
                samples: 12,
            }]
        } else {
            vec![]
        },
    }
}

fn window(seq: u32, cpu: u32, n: u64) -> EpisodeWindow {
    EpisodeWindow {
        seq,
        cpu: CpuId(cpu),
        events: (0..n)
            .map(|i| WindowEvent {
                time_ns: 5_000_000_000 + i * 1_000,
                cpu,
                tid: if i % 2 == 0 { 0 } else { 4242 },
                event: if i % 2 == 0 {
                    "sched_switch"
                } else {
                    "irq_handler_entry"
                }
                .into(),
                name: format!("ev{i}"),
                pid: 4242,
                prio: 9,
                value: -(i as i64),
                object: u64::MAX - i,
            })
            .collect(),
        truncated: u64::from(seq) * 7,
    }
}

fn summary() -> TraceSummary {
    TraceSummary {
        events: 123_456,
        lost_records: 12,
        lost_per_cpu: BTreeMap::from([(1, 12)]),
        missing_events: vec!["irq_vectors:local_timer_entry".into()],
        samples_decomposed: 29_990,
        samples_undecomposed: 10,
        decomposed_per_cpu: BTreeMap::from([(0, 14_990), (1, 15_000)]),
        episodes_total: 40,
        episodes_kept: 3,
        episode_cap: 3,
        threshold_ns: Nanos(100_000),
        cause_totals: vec![CauseTotal {
            kind: CauseKind::Thread,
            name: "burner".into(),
            episodes: 38,
            total_ns: Nanos(22_000_000),
            max_ns: Nanos(2_000_000),
        }],
        tracer_cpu_ns: 120_000_000,
        stack_samples: 3_000,
        ..TraceSummary::default()
    }
}

/// A store file as a version-1 latscope wrote it: the first migration only,
/// one complete run with a cell, metrics and a timeline chunk.
fn write_v1_store(path: &Path) -> (Vec<MetricResult>, Vec<SecondStats>) {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.pragma_update(None, "journal_mode", "WAL").unwrap();
    conn.execute_batch(include_str!("../migrations/0001_init.sql"))
        .unwrap();
    conn.pragma_update(None, "application_id", APPLICATION_ID)
        .unwrap();
    conn.pragma_update(None, "user_version", 1).unwrap();
    let meta = run_meta();
    conn.execute(
        "INSERT INTO runs (id, started_unix_ns, ended_unix_ns, checkpoint_unix_ns, status, \
         command_line, pid, boot_id, hostname, tool_version, notes) \
         VALUES (1, ?1, ?2, ?2, 'complete', ?3, ?4, ?5, ?6, ?7, ?8)",
        rusqlite::params![
            meta.started_unix_ns.0 as i64,
            meta.started_unix_ns.0 as i64 + 8_000_000_000,
            serde_json::to_string(&meta.command_line).unwrap(),
            meta.pid,
            meta.boot_id,
            meta.hostname,
            meta.tool_version,
            serde_json::to_string(&meta.notes).unwrap(),
        ],
    )
    .unwrap();
    let sys = system();
    conn.execute(
        "INSERT INTO systems (run_id, hostname, kernel_release, preemption_model, hz, \
         clocksource, cpu_count, hypervisor, info) VALUES (1, ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        rusqlite::params![
            sys.hostname,
            sys.kernel_release,
            sys.preemption_model,
            sys.hz,
            sys.clocksource,
            sys.cpu_count,
            sys.hypervisor,
            serde_json::to_string(&sys).unwrap(),
        ],
    )
    .unwrap();
    // A version-1 writer knew nothing of tracepoints: its capabilities JSON
    // lacks the fields version 2 added.
    let mut caps_json = serde_json::to_value(caps()).unwrap();
    if let Some(o) = caps_json.as_object_mut() {
        o.remove("tracepoints");
        o.remove("stack_samples");
    }
    conn.execute(
        "INSERT INTO capabilities (run_id, caps) VALUES (1, ?1)",
        [caps_json.to_string()],
    )
    .unwrap();
    let c = cell(0);
    conn.execute(
        "INSERT INTO cells (id, run_id, idx, probe, workload, settings, duration_ns, \
         monotonic_start_ns) VALUES (1, 1, 0, ?1, ?2, ?3, 8000000000, ?4)",
        rusqlite::params![
            c.probe,
            c.workload,
            // Untagged, as every build before schema 7 wrote them.
            serde_json::Value::Object(c.settings.to_map()).to_string(),
            c.monotonic_start_ns.0 as i64,
        ],
    )
    .unwrap();
    let ms = metrics(1);
    for m in &ms {
        conn.execute(
            "INSERT INTO metrics (cell_id, name, cpu, kind, histogram, samples, max_ns, \
             overruns, missed_deadlines, threshold_ns, above_threshold) \
             VALUES (1, ?1, ?2, 'raw', ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            rusqlite::params![
                m.name,
                m.cpu.map_or(-1, |c| i64::from(c.0)),
                m.histogram.to_bytes(),
                m.histogram.count() as i64,
                m.histogram.max().map(|x| x.0 as i64),
                m.overruns as i64,
                m.missed_deadlines as i64,
                m.threshold.map(|t| t.0 as i64),
                m.above_threshold.map(|a| a as i64),
            ],
        )
        .unwrap();
        if let Some(h) = &m.corrected {
            conn.execute(
                "INSERT INTO metrics (cell_id, name, cpu, kind, histogram, samples, max_ns) \
                 VALUES (1, ?1, ?2, 'corrected', ?3, ?4, ?5)",
                rusqlite::params![
                    m.name,
                    m.cpu.map_or(-1, |c| i64::from(c.0)),
                    h.to_bytes(),
                    h.count() as i64,
                    h.max().map(|x| x.0 as i64),
                ],
            )
            .unwrap();
        }
    }
    let secs = chunk("timer.latency", Some(CpuId(0)), 0, 3, 5).seconds;
    conn.execute(
        "INSERT INTO timeline_chunks (cell_id, metric, cpu, first_second, seconds, data) \
         VALUES (1, 'timer.latency', 0, 0, 3, ?1)",
        [codec::encode_timeline(&secs)],
    )
    .unwrap();
    (sorted(ms), secs)
}

#[test]
fn a_version_1_store_migrates_in_place_and_keeps_its_runs() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v1.db");
    let (want_metrics, want_timeline) = write_v1_store(&path);

    // Read first, as `show` would: the migration happens on open.
    let mut store = Store::open_existing(&path).unwrap();
    store.set_liveness_probe(always_alive);
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
    let run = store.resolve("latest").unwrap();
    assert_eq!(run, RunId(1));
    let loaded = store.load_run(run).unwrap();
    assert_eq!(loaded.meta.status, RunStatus::Complete);
    assert_eq!(loaded.meta.hostname, "testhost");
    assert_eq!(loaded.system, system());
    assert!(!loaded.capabilities.tracepoints);
    assert_eq!(loaded.capabilities.missing, caps().missing);
    assert_eq!(loaded.cells.len(), 1);
    assert_eq!(loaded.cells[0].meta.workload, "idle");
    assert_eq!(loaded.cells[0].metrics, want_metrics);
    assert_eq!(loaded.cells[0].trace, None);
    assert!(loaded.cells[0].episodes.is_empty());
    assert!(loaded.cells[0].noise.is_empty());
    let cell = store.cell_ids(run).unwrap()[0];
    assert_eq!(
        store
            .load_timeline(cell, "timer.latency", Some(CpuId(0)))
            .unwrap(),
        want_timeline
    );
    assert_eq!(store.list_runs().unwrap().len(), 1);

    // The migrated store takes episodes like a new one.
    store
        .add_episodes(cell, &[episode(1, 0, 600_000)], &[window(1, 0, 4)])
        .unwrap();
    store.set_trace_summary(cell, &summary()).unwrap();
    drop(store);
    let store = Store::open(&path).unwrap();
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
    let loaded = store.load_run(run).unwrap();
    assert_eq!(loaded.cells[0].episodes, vec![episode(1, 0, 600_000)]);
    assert_eq!(loaded.cells[0].trace, Some(summary()));
    assert_eq!(loaded.cells[0].metrics, want_metrics);
    assert_eq!(
        store.load_episode_window(run, 1).unwrap(),
        Some(window(1, 0, 4))
    );
}

#[test]
fn a_store_newer_than_this_build_is_still_refused() {
    let newer = SCHEMA_VERSION + 1;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("newer.db");
    write_v1_store(&path);
    Store::open(&path).unwrap();
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.pragma_update(None, "user_version", newer).unwrap();
    }
    let before = std::fs::read(&path).unwrap();
    for result in [Store::open(&path), Store::open_existing(&path)] {
        let e = result.unwrap_err();
        assert!(
            matches!(
                e,
                StoreError::NewerSchema {
                    found,
                    supported,
                    ..
                } if found == newer && supported == SCHEMA_VERSION
            ),
            "{e:?}"
        );
        one_line(&e);
    }
    assert_eq!(std::fs::read(&path).unwrap(), before);
}

// ---------------------------------------------------------------- typed settings (schema version 7)

/// A version-5 store (migrations 1-5, as the last build before typed
/// settings left it) whose cells hold `settings` as that build wrote them:
/// flat objects without a `"probe"` key. Cell 1 is `write_v1_store`'s.
fn write_v5_store(path: &Path, extra: &[(&str, &str)]) {
    write_v1_store(path);
    let conn = rusqlite::Connection::open(path).unwrap();
    for sql in [
        include_str!("../migrations/0002_trace.sql"),
        include_str!("../migrations/0003_noise.sql"),
        include_str!("../migrations/0004_workload_stats.sql"),
        include_str!("../migrations/0005_udp.sql"),
    ] {
        conn.execute_batch(sql).unwrap();
    }
    conn.pragma_update(None, "user_version", 5).unwrap();
    for (i, (probe, settings)) in extra.iter().enumerate() {
        conn.execute(
            "INSERT INTO cells (id, run_id, idx, probe, workload, settings, duration_ns, \
             monotonic_start_ns) VALUES (?1, 1, ?2, ?3, 'none', ?4, 1000000000, 5)",
            rusqlite::params![i as i64 + 2, i as i64 + 1, probe, settings],
        )
        .unwrap();
    }
}

/// Settings JSON exactly as `latscope run` wrote it up to schema 5.
const OLD_TIMER: &str = r#"{"clock_read_ns":24,"cpus":"0","duration_ns":3000000000,"period_ns":100000,"phase":"random","policy":"rr","priority":50,"timer_api":"posix-timer"}"#;
const OLD_NOISE: &str = r#"{"clock_read_ns":20,"cpus":"0-1","duration_ns":10000000000,"fp":true,"gap_min_ns":500,"gap_ratio":8,"load_level":"heavy","pause_ns":0,"policy":"other","priority":0,"runtime_ns":1000000000,"threshold_ns":10000,"warmup_ns":2000000000}"#;
const OLD_UDP: &str = r#"{"clock_read_ns":22,"cpus":"0-1","duration_ns":5000000000,"path":"veth","payload_bytes":256,"period_ns":1000000,"policy":"fifo","priority":95,"receiver_cpu":1,"sender_cpu":0}"#;

fn raw_settings(path: &Path, cell: i64) -> String {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.query_row("SELECT settings FROM cells WHERE id = ?1", [cell], |r| {
        r.get(0)
    })
    .unwrap()
}

#[test]
fn a_version_5_store_migrates_its_settings_to_the_typed_form() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v5.db");
    write_v5_store(
        &path,
        &[
            ("timer", OLD_TIMER),
            ("noise", OLD_NOISE),
            ("udp", OLD_UDP),
            // Missing keys take the documented defaults; unknown ones are
            // ignored.
            ("timer", r#"{"period":"1ms","colour":"blue"}"#),
        ],
    );
    let mut store = Store::open(&path).unwrap();
    store.set_liveness_probe(always_alive);
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
    // The migration tagged every cell with its probe, keeping the keys.
    for (id, probe) in [
        (1, "timer"),
        (2, "timer"),
        (3, "noise"),
        (4, "udp"),
        (5, "timer"),
    ] {
        let v: serde_json::Value = serde_json::from_str(&raw_settings(&path, id)).unwrap();
        assert_eq!(v["probe"], probe, "cell {id}: {v}");
    }
    let v: serde_json::Value = serde_json::from_str(&raw_settings(&path, 3)).unwrap();
    assert_eq!(v["gap_min_ns"], 500);

    let run = store.load_run(RunId(1)).unwrap();
    let s: Vec<&CellSettings> = run.cells.iter().map(|c| &c.meta.settings).collect();
    assert_eq!(s.len(), 5);
    assert_eq!(*s[0], cell(0).settings);
    assert_eq!(
        *s[1],
        CellSettings::Timer(TimerSettings {
            timer_api: TimerApiName::PosixTimer,
            period_ns: Nanos::from_micros(100),
            phase: PhaseName::Random,
            noise_duty: None,
            timer_slack: Default::default(),
            common: CommonSettings {
                policy: Policy::Rr,
                priority: 50,
                nice: None,
                rr_interval_ns: None,
                together: None,
                instance: None,
                deadline: None,
                cpus: "0".into(),
                duration_ns: Some(Nanos::from_secs(3)),
                threshold_ns: None,
                clock_read_ns: 24,
                load_level: None,
                warmup_ns: None,
            },
        })
    );
    assert_eq!(
        *s[2],
        CellSettings::Noise(NoiseSettings {
            runtime_ns: Nanos::from_secs(1),
            pause_ns: Nanos(0),
            gap_ratio: 8,
            gap_min_ns: Some(Nanos(500)),
            fp: true,
            common: CommonSettings {
                policy: Policy::Other,
                priority: 0,
                nice: None,
                rr_interval_ns: None,
                together: None,
                instance: None,
                deadline: None,
                cpus: "0-1".into(),
                duration_ns: Some(Nanos::from_secs(10)),
                threshold_ns: Some(Nanos(10_000)),
                clock_read_ns: 20,
                load_level: Some("heavy".into()),
                warmup_ns: Some(Nanos::from_secs(2)),
            },
        })
    );
    assert_eq!(
        *s[3],
        CellSettings::Udp(UdpSettings {
            path: UdpPath::Veth,
            period_ns: Nanos::from_millis(1),
            payload_bytes: 256,
            sender_cpu: 0,
            receiver_cpu: 1,
            common: CommonSettings {
                policy: Policy::Fifo,
                priority: 95,
                nice: None,
                rr_interval_ns: None,
                together: None,
                instance: None,
                deadline: None,
                cpus: "0-1".into(),
                duration_ns: Some(Nanos::from_secs(5)),
                threshold_ns: None,
                clock_read_ns: 22,
                load_level: None,
                warmup_ns: None,
            },
        })
    );
    assert_eq!(*s[4], CellSettings::Timer(TimerSettings::default()));
    assert_eq!(s[4].period(), Some(Nanos::from_millis(1)));
    assert_eq!(s[4].priority(), 95);
    assert_eq!(s[4].policy(), Policy::Fifo);

    // Written back as it is now, the JSON keeps the old keys plus the tag.
    let old: serde_json::Value = serde_json::from_str(OLD_UDP).unwrap();
    let mut now = serde_json::to_value(s[3]).unwrap();
    assert_eq!(now["probe"], "udp");
    now.as_object_mut().unwrap().remove("probe");
    assert_eq!(now, old);
}

#[test]
fn an_untagged_cell_left_after_the_migration_still_loads() {
    // E.g. a store a version-7 build migrated and an old build then wrote
    // to: the decoder takes the probe from the cell.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    write_v5_store(&path, &[]);
    let store = Store::open(&path).unwrap();
    drop(store);
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute("UPDATE cells SET settings = ?1 WHERE id = 1", [OLD_NOISE])
            .unwrap();
        conn.execute("UPDATE cells SET probe = 'noise' WHERE id = 1", [])
            .unwrap();
    }
    let mut store = Store::open(&path).unwrap();
    store.set_liveness_probe(always_alive);
    let run = store.load_run(RunId(1)).unwrap();
    assert_eq!(run.cells[0].meta.settings.probe_name(), "noise");
    assert_eq!(run.cells[0].meta.settings.common().clock_read_ns, 20);
}

#[test]
fn corrupt_settings_give_a_clear_error_and_leave_the_store_usable() {
    // (Text that is not JSON at all cannot be stored: the table checks
    // json_valid.)
    for (bad, says) in [
        (r#"[1,2]"#, "not a JSON object"),
        (r#"{"period_ns":"fast"}"#, "invalid type"),
        (r#"{"policy":"sporadic"}"#, "sporadic"),
        (r#"{"probe":"udp"}"#, "'udp'"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v5.db");
        write_v5_store(&path, &[("timer", bad)]);
        // The migration skips what it cannot read rather than refusing the
        // whole store.
        let mut store = Store::open(&path).unwrap();
        store.set_liveness_probe(always_alive);
        assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
        let e = store.load_run(RunId(1)).unwrap_err();
        assert!(matches!(e, StoreError::Corrupt { .. }), "{bad}: {e:?}");
        let text = one_line(&e);
        assert!(text.contains("cell 2 has unreadable settings"), "{text}");
        assert!(text.contains(says), "{bad}: {text}");
        // Other runs stay readable.
        let new = store.create_run(&run_meta(), &system(), &caps()).unwrap();
        store.add_cell(new, &cell(0)).unwrap();
        assert_eq!(
            store.load_run(new).unwrap().cells[0].meta.settings,
            cell(0).settings
        );
    }
}

#[test]
fn a_cell_whose_settings_name_another_probe_is_not_stored() {
    each_backend(|dir| {
        let mut store = Store::open(&dir.at("s.db")).unwrap();
        let run = store.create_run(&run_meta(), &system(), &caps()).unwrap();
        let mut c = cell(0);
        c.probe = "noise".into();
        let e = store.add_cell(run, &c).unwrap_err();
        assert!(matches!(e, StoreError::MismatchedSettings { .. }), "{e:?}");
        assert!(store.cell_ids(run).unwrap().is_empty());
    });
}

#[test]
fn episodes_and_trace_summaries_round_trip() {
    each_backend(|dir| {
        let path = dir.at("s.db");
        let mut store = Store::open(&path).unwrap();
        store.set_liveness_probe(always_alive);
        let run = store.create_run(&run_meta(), &system(), &caps()).unwrap();
        let c0 = store.add_cell(run, &cell(0)).unwrap();
        let c1 = store.add_cell(run, &cell(1)).unwrap();
        // Out of order, over two calls: the store orders by seq.
        store
            .add_episodes(c0, &[episode(3, 1, 900_000), episode(1, 0, 600_000)], &[])
            .unwrap();
        store
            .add_episodes(c0, &[episode(2, 1, u64::from(u32::MAX) * 4)], &[])
            .unwrap();
        store.set_trace_summary(c0, &summary()).unwrap();
        drop(store);

        let store = Store::open_existing(&path).unwrap();
        let loaded = store.load_run(run).unwrap();
        let c = &loaded.cells[0];
        assert_eq!(
            c.episodes,
            vec![
                episode(1, 0, 600_000),
                episode(2, 1, u64::from(u32::MAX) * 4),
                episode(3, 1, 900_000)
            ]
        );
        assert_eq!(c.trace, Some(summary()));
        assert_eq!(loaded.cells[1].trace, None);
        assert!(loaded.cells[1].episodes.is_empty());
        assert_eq!(store.cell_ids(run).unwrap(), vec![c0, c1]);
        // Episodes without windows have none to load.
        assert_eq!(store.load_episode_window(run, 1).unwrap(), None);
        assert_eq!(store.load_episode_window(run, 99).unwrap(), None);
    });
}

#[test]
fn adding_episodes_again_replaces_them_and_keeps_their_windows() {
    each_backend(|dir| {
        let mut store = Store::open(&dir.at("s.db")).unwrap();
        store.set_liveness_probe(always_alive);
        let run = store.create_run(&run_meta(), &system(), &caps()).unwrap();
        let c = store.add_cell(run, &cell(0)).unwrap();
        let eps = [episode(1, 0, 600_000), episode(2, 1, 700_000)];
        let wins = [window(1, 0, 10), window(2, 1, 3)];
        store.add_episodes(c, &eps, &wins).unwrap();
        store.add_episodes(c, &eps, &wins).unwrap();
        fn count(store: &Store, t: &str) -> i64 {
            store
                .db
                .query_row(&format!("SELECT count(*) FROM {t}"), [], |r| r.get(0))
                .unwrap()
        }
        assert_eq!(count(&store, "episodes"), 2);
        assert_eq!(count(&store, "episode_windows"), 2);
        assert_eq!(store.load_run(run).unwrap().cells[0].episodes, eps.to_vec());

        // A later checkpoint sends episode 2 again with its stacks: updated in
        // place, its window untouched.
        let mut e2 = episode(2, 1, 700_000);
        e2.stacks.push(StackCount {
            function: "clear_page_erms".into(),
            module: None,
            samples: 3,
        });
        store.add_episodes(c, &[e2.clone()], &[]).unwrap();
        assert_eq!(count(&store, "episodes"), 2);
        assert_eq!(
            store.load_run(run).unwrap().cells[0].episodes,
            vec![episode(1, 0, 600_000), e2]
        );
        assert_eq!(
            store.load_episode_window(run, 2).unwrap(),
            Some(window(2, 1, 3))
        );
        // A window given again replaces the old one.
        store.add_episodes(c, &[], &[window(2, 1, 5)]).unwrap();
        assert_eq!(
            store.load_episode_window(run, 2).unwrap(),
            Some(window(2, 1, 5))
        );

        // The summary is replaced, not duplicated.
        let mut s = summary();
        store.set_trace_summary(c, &s).unwrap();
        s.episodes_total = 41;
        store.set_trace_summary(c, &s).unwrap();
        assert_eq!(count(&store, "trace_summaries"), 1);
        assert_eq!(store.load_run(run).unwrap().cells[0].trace, Some(s));
    });
}

#[test]
fn episode_windows_round_trip() {
    each_backend(|dir| {
        let mut store = Store::open(&dir.at("s.db")).unwrap();
        let run = store.create_run(&run_meta(), &system(), &caps()).unwrap();
        let other = store.create_run(&run_meta(), &system(), &caps()).unwrap();
        let c = store.add_cell(run, &cell(0)).unwrap();
        let big = window(1, 1, 5_000);
        let empty = EpisodeWindow {
            seq: 2,
            cpu: CpuId(0),
            events: vec![],
            truncated: 0,
        };
        store
            .add_episodes(
                c,
                &[episode(1, 1, 600_000), episode(2, 0, 600_000)],
                &[big.clone(), empty.clone()],
            )
            .unwrap();
        assert_eq!(store.load_episode_window(run, 1).unwrap(), Some(big));
        assert_eq!(store.load_episode_window(run, 2).unwrap(), Some(empty));
        // Windows belong to their run.
        assert_eq!(store.load_episode_window(other, 1).unwrap(), None);
        assert!(matches!(
            store.load_episode_window(RunId(77), 1).unwrap_err(),
            StoreError::NotFound(RunId(77))
        ));
        // Stored compressed.
        let bytes: i64 = store
            .db
            .query_row(
                "SELECT length(events) FROM episode_windows WHERE seq = 1",
                [],
                |r| r.get(0),
            )
            .unwrap();
        let json = serde_json::to_vec(&window(1, 1, 5_000).events).unwrap();
        assert!(
            (bytes as usize) * 4 < json.len(),
            "{bytes} of {}",
            json.len()
        );
    });
}

#[test]
fn bad_episode_calls_give_clear_errors_and_store_nothing() {
    each_backend(|dir| {
        let mut store = Store::open(&dir.at("s.db")).unwrap();
        store.set_liveness_probe(always_alive);
        let run = store.create_run(&run_meta(), &system(), &caps()).unwrap();
        let c = store.add_cell(run, &cell(0)).unwrap();

        let e = store
            .add_episodes(CellId(999), &[episode(1, 0, 1)], &[])
            .unwrap_err();
        assert!(matches!(e, StoreError::NoSuchCell(CellId(999))), "{e:?}");
        let e = store
            .set_trace_summary(CellId(999), &summary())
            .unwrap_err();
        assert!(matches!(e, StoreError::NoSuchCell(CellId(999))), "{e:?}");

        // A window without its episode fails the whole call.
        let e = store
            .add_episodes(c, &[episode(1, 0, 600_000)], &[window(2, 0, 3)])
            .unwrap_err();
        assert!(
            matches!(e, StoreError::WindowWithoutEpisode { seq: 2, .. }),
            "{e:?}"
        );
        assert!(one_line(&e).contains("episode 2"));
        assert!(store.load_run(run).unwrap().cells[0].episodes.is_empty());

        let e = store
            .add_episodes(c, &[episode(0, 0, 600_000)], &[])
            .unwrap_err();
        assert!(
            matches!(e, StoreError::InvalidEpisode { seq: 0, .. }),
            "{e:?}"
        );
        one_line(&e);

        let mut huge = episode(1, 0, 600_000);
        huge.expiry_ns = Nanos(u64::MAX);
        let e = store.add_episodes(c, &[huge], &[]).unwrap_err();
        assert!(matches!(e, StoreError::OutOfRange { .. }), "{e:?}");
        assert!(store.load_run(run).unwrap().cells[0].episodes.is_empty());
    });
}

#[test]
fn damaged_trace_rows_are_reported_as_damage() {
    each_backend(|dir| {
        let mut store = Store::open(&dir.at("s.db")).unwrap();
        store.set_liveness_probe(always_alive);
        let run = store.create_run(&run_meta(), &system(), &caps()).unwrap();
        let c = store.add_cell(run, &cell(0)).unwrap();
        store
            .add_episodes(c, &[episode(1, 0, 600_000)], &[window(1, 0, 3)])
            .unwrap();
        store
            .db
            .execute(
                "UPDATE episode_windows SET events = ?1",
                [vec![0u8, 1, 2, 3]],
            )
            .unwrap();
        let e = store.load_episode_window(run, 1).unwrap_err();
        assert!(matches!(e, StoreError::Corrupt { .. }), "{e:?}");
        assert!(one_line(&e).contains("episode 1"), "{e}");

        store
            .db
            .execute("UPDATE episodes SET breakdown = '{\"irq_ns\": 1}'", [])
            .unwrap();
        let e = store.load_run(run).unwrap_err();
        assert!(matches!(e, StoreError::Corrupt { .. }), "{e:?}");
        assert!(one_line(&e).contains("breakdown of episode 1"), "{e}");
    });
}

// ---------------------------------------------------------------- noise (schema version 3)

fn noise_cell(index: u32) -> CellMeta {
    CellMeta {
        monotonic_start_ns: Nanos(987_654_321),
        ..CellMeta::new(
            index,
            "none",
            CellSettings::Noise(NoiseSettings {
                common: CommonSettings {
                    threshold_ns: Some(Nanos(1_000)),
                    ..CommonSettings::default()
                },
                ..NoiseSettings::default()
            }),
            Nanos::ZERO,
        )
    }
}

/// Figures of one CPU; `scale` varies them between checkpoints.
fn noise(cpu: u32, scale: u64) -> NoiseCpuStats {
    NoiseCpuStats {
        cpu: CpuId(cpu),
        clock: if cpu == 0 {
            NoiseClock::Tsc
        } else {
            NoiseClock::Vdso
        },
        tsc_hz: if cpu == 0 { 2_894_561_000 } else { 0 },
        calibration_drift_ppb: -37,
        active_ns: Nanos(950_000_000 * scale),
        iterations: 41_000_000 * scale,
        base_iteration_ps: 21_375,
        gap_threshold_ns: Nanos(1_000),
        interruptions: 260 * scale,
        noise_ns: Nanos(50_812_000 * scale),
        max_gap_ns: Nanos(50_001_000),
        classes: if cpu == 0 {
            BTreeMap::from([
                (
                    "irq".to_string(),
                    NoiseClass {
                        count: 250 * scale,
                        total_ns: Nanos(800_000 * scale),
                        max_ns: Nanos(9_000),
                    },
                ),
                (
                    "thread".to_string(),
                    NoiseClass {
                        count: scale,
                        total_ns: Nanos(50_001_000 * scale),
                        max_ns: Nanos(50_001_000),
                    },
                ),
            ])
        } else {
            BTreeMap::new()
        },
        steal_ns: (cpu == 0).then_some(Nanos(4_000_000)),
        findings: if cpu == 0 {
            vec!["RT throttling: the loop lost the CPU for 50.0ms each second".into()]
        } else {
            vec![]
        },
    }
}

fn noise_rows(store: &Store) -> i64 {
    store
        .db
        .query_row("SELECT count(*) FROM noise_stats", [], |r| r.get(0))
        .unwrap()
}

/// A store file as a version-2 latscope wrote it: the first two migrations,
/// the version-1 run of [`write_v1_store`] plus a trace summary and an
/// episode on its cell.
fn write_v2_store(path: &Path) -> (Vec<MetricResult>, Vec<SecondStats>) {
    let v1 = write_v1_store(path);
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.execute_batch(include_str!("../migrations/0002_trace.sql"))
        .unwrap();
    conn.pragma_update(None, "user_version", 2).unwrap();
    conn.execute(
        "INSERT INTO trace_summaries (cell_id, summary) VALUES (1, ?1)",
        [serde_json::to_string(&summary()).unwrap()],
    )
    .unwrap();
    let e = episode(1, 0, 600_000);
    conn.execute(
        "INSERT INTO episodes (cell_id, seq, cpu, expiry_ns, offset_ns, metric, latency_ns, \
         breakdown, stacks) VALUES (1, 1, 0, ?1, ?2, ?3, ?4, ?5, ?6)",
        rusqlite::params![
            e.expiry_ns.0 as i64,
            e.offset_ns.0 as i64,
            e.metric,
            e.latency_ns.0 as i64,
            serde_json::to_string(&e.breakdown).unwrap(),
            serde_json::to_string(&e.stacks).unwrap(),
        ],
    )
    .unwrap();
    v1
}

#[test]
fn a_version_2_store_migrates_in_place_and_keeps_its_runs() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v2.db");
    let (want_metrics, want_timeline) = write_v2_store(&path);

    // Read first, as `show` would: the migration happens on open.
    let mut store = Store::open_existing(&path).unwrap();
    store.set_liveness_probe(always_alive);
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
    let run = store.resolve("latest").unwrap();
    let loaded = store.load_run(run).unwrap();
    assert_eq!(loaded.meta.status, RunStatus::Complete);
    assert_eq!(loaded.system, system());
    assert_eq!(loaded.cells.len(), 1);
    let c = &loaded.cells[0];
    assert_eq!(c.metrics, want_metrics);
    assert_eq!(c.trace, Some(summary()));
    assert_eq!(c.episodes, vec![episode(1, 0, 600_000)]);
    assert!(c.noise.is_empty());
    let cell = store.cell_ids(run).unwrap()[0];
    assert_eq!(
        store
            .load_timeline(cell, "timer.latency", Some(CpuId(0)))
            .unwrap(),
        want_timeline
    );

    // The migrated store takes noise figures like a new one.
    store
        .set_noise_stats(cell, &[noise(1, 1), noise(0, 1)])
        .unwrap();
    drop(store);
    let store = Store::open(&path).unwrap();
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
    let loaded = store.load_run(run).unwrap();
    assert_eq!(loaded.cells[0].noise, vec![noise(0, 1), noise(1, 1)]);
    assert_eq!(loaded.cells[0].trace, Some(summary()));
    assert_eq!(loaded.cells[0].metrics, want_metrics);
}

#[test]
fn a_read_only_version_2_store_is_refused_untouched() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v2.db");
    write_v2_store(&path);
    let before = std::fs::read(&path).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444)).unwrap();
    // Root ignores permission bits: then there is nothing to test.
    if std::fs::OpenOptions::new().write(true).open(&path).is_ok() {
        eprintln!("skipped: needs a non-root user (permission bits are not enforced)");
        return;
    }
    let e = Store::open_existing(&path).unwrap_err();
    assert!(
        matches!(
            e,
            StoreError::OldSchemaReadOnly {
                found: 2,
                supported: SCHEMA_VERSION,
                ..
            }
        ),
        "{e:?}"
    );
    one_line(&e);
    assert_eq!(std::fs::read(&path).unwrap(), before);
}

#[test]
fn noise_stats_round_trip() {
    each_backend(|dir| {
        let path = dir.at("s.db");
        let mut store = Store::open(&path).unwrap();
        store.set_liveness_probe(always_alive);
        let run = store.create_run(&run_meta(), &system(), &caps()).unwrap();
        let timer = store.add_cell(run, &cell(0)).unwrap();
        let c1 = store.add_cell(run, &noise_cell(1)).unwrap();
        let c2 = store.add_cell(run, &noise_cell(2)).unwrap();
        let mut gap = MetricResult::new("noise.gap", Some(CpuId(3)));
        gap.histogram = hist(&[1_500, 2_000, 50_001_000]);
        gap.threshold = Some(Nanos(1_000));
        gap.above_threshold = Some(3);
        store
            .checkpoint(
                run,
                c1,
                Nanos::from_secs(1),
                &[gap.clone()],
                &[chunk("noise.gap", Some(CpuId(3)), 0, 1, 3)],
                Nanos(1_700_000_001_000_000_000),
            )
            .unwrap();
        // Out of CPU order, with extremes: the store orders by CPU and keeps
        // every figure exactly.
        let mut extreme = noise(7, 1);
        extreme.tsc_hz = u64::MAX;
        extreme.calibration_drift_ppb = i64::MIN;
        extreme.iterations = u64::MAX;
        extreme.noise_ns = Nanos(u64::MAX);
        extreme.steal_ns = Some(Nanos::ZERO);
        let want = vec![noise(0, 1), noise(3, 2), extreme.clone()];
        store
            .set_noise_stats(c1, &[extreme, noise(0, 1), noise(3, 2)])
            .unwrap();
        store.set_noise_stats(c2, &[noise(1, 5)]).unwrap();
        // An empty call stores nothing and fails nothing.
        store.set_noise_stats(c2, &[]).unwrap();
        drop(store);

        let store = Store::open_existing(&path).unwrap();
        let loaded = store.load_run(run).unwrap();
        assert!(loaded.cells[0].noise.is_empty());
        assert_eq!(loaded.cells[0].meta.probe, "timer");
        assert_eq!(loaded.cells[1].noise, want);
        assert_eq!(loaded.cells[1].metrics, vec![gap]);
        assert_eq!(loaded.cells[2].noise, vec![noise(1, 5)]);
        assert_eq!(store.cell_ids(run).unwrap(), vec![timer, c1, c2]);
        assert_eq!(
            store
                .load_timeline(c1, "noise.gap", Some(CpuId(3)))
                .unwrap(),
            chunk("noise.gap", Some(CpuId(3)), 0, 1, 3).seconds
        );
    });
}

#[test]
fn setting_noise_stats_again_replaces_them_cpu_by_cpu() {
    each_backend(|dir| {
        let mut store = Store::open(&dir.at("s.db")).unwrap();
        store.set_liveness_probe(always_alive);
        let run = store.create_run(&run_meta(), &system(), &caps()).unwrap();
        let c = store.add_cell(run, &noise_cell(0)).unwrap();
        store
            .set_noise_stats(c, &[noise(0, 1), noise(1, 1)])
            .unwrap();
        store
            .set_noise_stats(c, &[noise(0, 1), noise(1, 1)])
            .unwrap();
        assert_eq!(noise_rows(&store), 2);

        // A later checkpoint: both CPUs further on.
        store
            .set_noise_stats(c, &[noise(1, 2), noise(0, 2)])
            .unwrap();
        assert_eq!(noise_rows(&store), 2);
        assert_eq!(
            store.load_run(run).unwrap().cells[0].noise,
            vec![noise(0, 2), noise(1, 2)]
        );

        // One CPU alone: the other keeps its figures.
        let mut last = noise(1, 3);
        last.findings.push("steal time 4.00ms".into());
        store.set_noise_stats(c, &[last.clone()]).unwrap();
        assert_eq!(noise_rows(&store), 2);
        assert_eq!(
            store.load_run(run).unwrap().cells[0].noise,
            vec![noise(0, 2), last]
        );
    });
}

#[test]
fn bad_noise_calls_give_clear_errors_and_store_nothing() {
    each_backend(|dir| {
        let mut store = Store::open(&dir.at("s.db")).unwrap();
        store.set_liveness_probe(always_alive);
        let run = store.create_run(&run_meta(), &system(), &caps()).unwrap();
        let c = store.add_cell(run, &noise_cell(0)).unwrap();

        let e = store
            .set_noise_stats(CellId(999), &[noise(0, 1)])
            .unwrap_err();
        assert!(matches!(e, StoreError::NoSuchCell(CellId(999))), "{e:?}");
        one_line(&e);

        // A CPU given twice fails the whole call, the good rows included.
        let e = store
            .set_noise_stats(c, &[noise(0, 1), noise(1, 1), noise(0, 2)])
            .unwrap_err();
        assert!(
            matches!(e, StoreError::InvalidNoiseStats { cpu: 0, .. }),
            "{e:?}"
        );
        assert!(one_line(&e).contains("CPU 0"), "{e}");
        assert_eq!(noise_rows(&store), 0);
        assert!(store.load_run(run).unwrap().cells[0].noise.is_empty());

        // A failure keeps what an earlier call stored.
        store.set_noise_stats(c, &[noise(0, 1)]).unwrap();
        store
            .set_noise_stats(c, &[noise(1, 1), noise(1, 2)])
            .unwrap_err();
        assert_eq!(
            store.load_run(run).unwrap().cells[0].noise,
            vec![noise(0, 1)]
        );
    });
}

#[test]
fn noise_rows_are_constrained_and_damage_is_reported() {
    each_backend(|dir| {
        let mut store = Store::open(&dir.at("s.db")).unwrap();
        store.set_liveness_probe(always_alive);
        let run = store.create_run(&run_meta(), &system(), &caps()).unwrap();
        let c = store.add_cell(run, &noise_cell(0)).unwrap();
        store.set_noise_stats(c, &[noise(0, 1)]).unwrap();
        {
            let conn = &store.db;
            let insert = |cell: i64, cpu: i64, stats: &str| {
                conn.execute(
                    "INSERT INTO noise_stats (cell_id, cpu, stats) VALUES (?1, ?2, ?3)",
                    crate::db::params![cell, cpu, stats],
                )
            };
            // Not JSON, a negative CPU, a dangling cell, a second row for a CPU.
            assert!(insert(c.0, 1, "not json").is_err());
            assert!(insert(c.0, -1, "{}").is_err());
            assert!(insert(4242, 1, "{}").is_err());
            assert!(insert(c.0, 0, "{}").is_err());
        }
        assert_eq!(noise_rows(&store), 1);

        // A row whose JSON is not NoiseCpuStats.
        store
            .db
            .execute("UPDATE noise_stats SET stats = '{\"cpu\": 0}'", [])
            .unwrap();
        let e = store.load_run(run).unwrap_err();
        assert!(matches!(e, StoreError::Corrupt { .. }), "{e:?}");
        assert!(one_line(&e).contains("noise figures of CPU 0"), "{e}");

        // A row filed under the wrong CPU.
        store
            .db
            .execute(
                "UPDATE noise_stats SET stats = ?1",
                [serde_json::to_string(&noise(5, 1)).unwrap()],
            )
            .unwrap();
        let e = store.load_run(run).unwrap_err();
        assert!(matches!(e, StoreError::Corrupt { .. }), "{e:?}");
        assert!(one_line(&e).contains("those of CPU 5"), "{e}");

        // Rows go with their cell.
        store
            .db
            .execute("DELETE FROM cells WHERE id = ?1", [c.0])
            .unwrap();
        assert_eq!(noise_rows(&store), 0);
    });
}

// ---------------------------------------------------------------- workload characterization (schema version 4)

/// One sample; `k` varies it.
fn workload_second(k: u64) -> WorkloadSecond {
    WorkloadSecond {
        offset_ns: Nanos::from_secs(k + 1),
        elapsed_ns: Nanos(1_000_000_000 + k),
        cpu: Some(CpuPercent {
            user: 97.5,
            sys: 2.0,
            idle: 0.5,
            ..CpuPercent::default()
        }),
        cpu_all: Some(CpuPercent {
            user: 60.25,
            sys: 4.0,
            softirq: 0.75,
            steal: 0.5,
            idle: 34.5,
            ..CpuPercent::default()
        }),
        interrupts_per_s: Some(1_234.5 + k as f64),
        interrupts_measured_per_s: Some(260.0),
        context_switches_per_s: Some(4_321.0),
        processes_per_s: Some(0.0),
        // Not counted (no perf): stays null, never 0.
        syscalls_per_s: None,
        softirqs_per_s: Some(512.3),
        disk: Some(DiskRates {
            reads_per_s: 1.0,
            writes_per_s: 88.0,
            read_kb_per_s: 4.0,
            write_kb_per_s: 90_112.0,
        }),
        net_lo: Some(NetRates::default()),
        net: None,
        page_faults_per_s: Some(1e9),
        major_faults_per_s: Some(0.1),
        runnable: Some(3.0),
        blocked: Some(1.0),
    }
}

fn workload(seconds: u64) -> WorkloadStats {
    let samples: Vec<WorkloadSecond> = (0..seconds).map(workload_second).collect();
    WorkloadStats {
        workload: "disk".into(),
        cpus: "0-1".into(),
        start_ns: Nanos(987_654_321),
        samples: samples.len() as u32,
        mean: WorkloadSecond {
            offset_ns: Nanos::from_secs(seconds),
            ..workload_second(0)
        },
        top_interrupts: vec![InterruptSource {
            source: "LOC".into(),
            description: "Local timer interrupts".into(),
            per_s: 500.0,
            measured_per_s: 250.0,
        }],
        softirqs_per_s: BTreeMap::from([("BLOCK".to_string(), 88.0), ("TIMER".to_string(), 250.5)]),
        notes: vec!["system calls not counted: permission denied".into()],
        pty_bytes_per_s: None,
        rt_load: None,
        seconds: samples,
    }
}

fn workload_rows(store: &Store) -> (i64, i64) {
    let count = |t: &str| {
        store
            .db
            .query_row(&format!("SELECT count(*) FROM {t}"), [], |r| r.get(0))
            .unwrap()
    };
    (count("workload_stats"), count("workload_seconds"))
}

fn total_changes(store: &Store) -> i64 {
    store
        .db
        .query_row("SELECT total_changes()", [], |r| r.get(0))
        .unwrap()
}

#[test]
fn workload_stats_round_trip() {
    each_backend(|dir| {
        let path = dir.at("s.db");
        let mut store = Store::open(&path).unwrap();
        store.set_liveness_probe(always_alive);
        let run = store.create_run(&run_meta(), &system(), &caps()).unwrap();
        let c0 = store.add_cell(run, &cell(0)).unwrap();
        let _c1 = store.add_cell(run, &cell(1)).unwrap();
        let want = workload(3);
        store.set_workload_stats(c0, &want).unwrap();
        assert_eq!(workload_rows(&store), (1, 3));
        drop(store);

        let store = Store::open_existing(&path).unwrap();
        let loaded = store.load_run(run).unwrap();
        assert_eq!(loaded.cells[0].workload_stats, Some(want));
        assert_eq!(loaded.cells[1].workload_stats, None);
        // The summary row holds no samples: they are rows of their own.
        let summary: String = store
            .db
            .query_row("SELECT stats FROM workload_stats", [], |r| r.get(0))
            .unwrap();
        assert!(summary.contains("\"seconds\":[]"), "{summary}");
    });
}

#[test]
fn checkpoints_write_only_what_changed() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("s.db")).unwrap();
    store.set_liveness_probe(always_alive);
    let run = store.create_run(&run_meta(), &system(), &caps()).unwrap();
    let c = store.add_cell(run, &cell(0)).unwrap();
    store.set_workload_stats(c, &workload(3)).unwrap();

    // The same again: the summary row is rewritten, no sample is.
    let before = total_changes(&store);
    store.set_workload_stats(c, &workload(3)).unwrap();
    assert_eq!(total_changes(&store) - before, 1);

    // Two more seconds: the summary and the two new samples.
    let before = total_changes(&store);
    store.set_workload_stats(c, &workload(5)).unwrap();
    assert_eq!(total_changes(&store) - before, 3);
    assert_eq!(workload_rows(&store), (1, 5));
    assert_eq!(
        store.load_run(run).unwrap().cells[0].workload_stats,
        Some(workload(5))
    );

    // A changed sample is replaced; fewer samples remove the rest.
    let mut shorter = workload(2);
    shorter.seconds[1].syscalls_per_s = Some(12.5);
    store.set_workload_stats(c, &shorter).unwrap();
    assert_eq!(workload_rows(&store), (1, 2));
    assert_eq!(
        store.load_run(run).unwrap().cells[0].workload_stats,
        Some(shorter)
    );

    // None at all.
    store.set_workload_stats(c, &workload(0)).unwrap();
    assert_eq!(workload_rows(&store), (1, 0));
    assert_eq!(
        store.load_run(run).unwrap().cells[0].workload_stats,
        Some(workload(0))
    );
}

#[test]
fn bad_workload_calls_give_clear_errors_and_store_nothing() {
    each_backend(|dir| {
        let mut store = Store::open(&dir.at("s.db")).unwrap();
        store.set_liveness_probe(always_alive);
        let run = store.create_run(&run_meta(), &system(), &caps()).unwrap();
        let c = store.add_cell(run, &cell(0)).unwrap();
        let e = store
            .set_workload_stats(CellId(999), &workload(2))
            .unwrap_err();
        assert!(matches!(e, StoreError::NoSuchCell(CellId(999))), "{e:?}");
        one_line(&e);
        assert_eq!(workload_rows(&store), (0, 0));

        // A value JSON cannot hold fails before anything is written, and keeps
        // what an earlier call stored.
        store.set_workload_stats(c, &workload(2)).unwrap();
        let mut bad = workload(4);
        bad.seconds[3].interrupts_per_s = Some(f64::NAN);
        let e = store.set_workload_stats(c, &bad).unwrap_err();
        assert!(
            matches!(e, StoreError::InvalidWorkloadStats { cell, .. } if cell == c),
            "{e:?}"
        );
        assert!(
            one_line(&e).contains("seconds[3].interrupts_per_s is not a finite number"),
            "{e}"
        );
        assert_eq!(
            store.load_run(run).unwrap().cells[0].workload_stats,
            Some(workload(2))
        );
    });
}

#[test]
fn workload_rows_are_constrained_and_damage_is_reported() {
    each_backend(|dir| {
        let mut store = Store::open(&dir.at("s.db")).unwrap();
        store.set_liveness_probe(always_alive);
        let run = store.create_run(&run_meta(), &system(), &caps()).unwrap();
        let c = store.add_cell(run, &cell(0)).unwrap();
        store.set_workload_stats(c, &workload(3)).unwrap();
        {
            let conn = &store.db;
            // Not JSON, a second summary, a dangling cell, a negative index, a
            // second row for an index.
            assert!(conn
                .execute("UPDATE workload_stats SET stats = 'not json'", [],)
                .is_err());
            assert!(conn
                .execute(
                    "INSERT INTO workload_stats (cell_id, stats) VALUES (?1, '{}')",
                    [c.0],
                )
                .is_err());
            assert!(conn
                .execute(
                    "INSERT INTO workload_stats (cell_id, stats) VALUES (4242, '{}')",
                    [],
                )
                .is_err());
            assert!(conn
                .execute(
                    "INSERT INTO workload_seconds (cell_id, idx, sample) VALUES (?1, -1, '{}')",
                    [c.0],
                )
                .is_err());
            assert!(conn
                .execute(
                    "INSERT INTO workload_seconds (cell_id, idx, sample) VALUES (?1, 0, '{}')",
                    [c.0],
                )
                .is_err());
        }
        assert_eq!(workload_rows(&store), (1, 3));

        // A gap in the samples.
        store
            .db
            .execute("DELETE FROM workload_seconds WHERE idx = 1", [])
            .unwrap();
        let e = store.load_run(run).unwrap_err();
        assert!(matches!(e, StoreError::Corrupt { .. }), "{e:?}");
        assert!(one_line(&e).contains("workload sample 1 of cell"), "{e}");

        // A sample that is not a WorkloadSecond.
        store.set_workload_stats(c, &workload(3)).unwrap();
        store
            .db
            .execute(
                "UPDATE workload_seconds SET sample = '{\"cpu\": 5}' WHERE idx = 2",
                [],
            )
            .unwrap();
        let e = store.load_run(run).unwrap_err();
        assert!(matches!(e, StoreError::Corrupt { .. }), "{e:?}");
        assert!(one_line(&e).contains("workload sample 2"), "{e}");

        // Samples without a summary.
        store.set_workload_stats(c, &workload(3)).unwrap();
        store.db.execute("DELETE FROM workload_stats", []).unwrap();
        let e = store.load_run(run).unwrap_err();
        assert!(one_line(&e).contains("no characterization"), "{e}");

        // Rows go with their cell.
        store.set_workload_stats(c, &workload(3)).unwrap();
        store
            .db
            .execute("DELETE FROM cells WHERE id = ?1", [c.0])
            .unwrap();
        assert_eq!(workload_rows(&store), (0, 0));
    });
}

/// A store file as a version-3 latscope wrote it: the version-2 store of
/// [`write_v2_store`] plus noise figures on its cell.
fn write_v3_store(path: &Path) -> (Vec<MetricResult>, Vec<SecondStats>) {
    let v2 = write_v2_store(path);
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.execute_batch(include_str!("../migrations/0003_noise.sql"))
        .unwrap();
    conn.pragma_update(None, "user_version", 3).unwrap();
    conn.execute(
        "INSERT INTO noise_stats (cell_id, cpu, stats) VALUES (1, 0, ?1)",
        [serde_json::to_string(&noise(0, 1)).unwrap()],
    )
    .unwrap();
    v2
}

#[test]
fn a_version_3_store_migrates_in_place_and_keeps_its_runs() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v3.db");
    let (want_metrics, want_timeline) = write_v3_store(&path);

    let mut store = Store::open_existing(&path).unwrap();
    store.set_liveness_probe(always_alive);
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
    let run = store.resolve("latest").unwrap();
    let loaded = store.load_run(run).unwrap();
    assert_eq!(loaded.meta.status, RunStatus::Complete);
    let c = &loaded.cells[0];
    assert_eq!(c.metrics, want_metrics);
    assert_eq!(c.trace, Some(summary()));
    assert_eq!(c.episodes, vec![episode(1, 0, 600_000)]);
    assert_eq!(c.noise, vec![noise(0, 1)]);
    assert_eq!(c.workload_stats, None);
    assert_eq!(c.udp, None);
    let cell = store.cell_ids(run).unwrap()[0];
    assert_eq!(
        store
            .load_timeline(cell, "timer.latency", Some(CpuId(0)))
            .unwrap(),
        want_timeline
    );

    // The migrated store takes a characterization like a new one.
    store.set_workload_stats(cell, &workload(2)).unwrap();
    drop(store);
    let store = Store::open(&path).unwrap();
    let loaded = store.load_run(run).unwrap();
    assert_eq!(loaded.cells[0].workload_stats, Some(workload(2)));
    assert_eq!(loaded.cells[0].noise, vec![noise(0, 1)]);
    assert_eq!(loaded.cells[0].metrics, want_metrics);
}

// ---------------------------------------------------------------- UDP counts (schema version 5)

fn udp_cell(index: u32) -> CellMeta {
    CellMeta {
        monotonic_start_ns: Nanos(987_654_321),
        ..CellMeta::new(
            index,
            "none",
            CellSettings::Udp(UdpSettings {
                period_ns: Nanos::from_millis(10),
                ..UdpSettings::default()
            }),
            Nanos::ZERO,
        )
    }
}

/// Counts of a UDP cell; `scale` varies them between checkpoints. Every
/// field differs from every other, so a column mixed up with another fails.
fn udp(scale: u64) -> UdpStats {
    UdpStats {
        path: UdpPath::Veth,
        sender_cpu: CpuId(0),
        receiver_cpu: CpuId(1),
        payload_bytes: 64,
        period_ns: Nanos(10_000_000),
        sent: 1_000 * scale,
        send_errors: 2 * scale,
        received: 990 * scale,
        lost: 7 * scale,
        reordered: 3 * scale,
        duplicates: 4 * scale,
        overruns: 5 * scale,
        skipped_sends: 6 * scale,
        missing_tx_sched: 8 * scale,
        missing_tx_software: 9 * scale,
        missing_rx_software: 11 * scale,
        checked: 970 * scale,
        inconsistent: 12 * scale,
    }
}

fn udp_rows(store: &Store) -> i64 {
    store
        .db
        .query_row("SELECT count(*) FROM udp_stats", [], |r| r.get(0))
        .unwrap()
}

#[test]
fn udp_stats_round_trip() {
    each_backend(|dir| {
        let path = dir.at("s.db");
        let mut store = Store::open(&path).unwrap();
        store.set_liveness_probe(always_alive);
        let run = store.create_run(&run_meta(), &system(), &caps()).unwrap();
        let timer = store.add_cell(run, &cell(0)).unwrap();
        let c1 = store.add_cell(run, &udp_cell(1)).unwrap();
        let c2 = store.add_cell(run, &udp_cell(2)).unwrap();
        let mut send = MetricResult::new(latscope_model::metric::UDP_SEND, Some(CpuId(0)));
        send.histogram = hist(&[4_000, 5_000, 90_000]);
        store
            .checkpoint(
                run,
                c1,
                Nanos::from_secs(1),
                &[send.clone()],
                &[],
                Nanos(1_700_000_001_000_000_000),
            )
            .unwrap();
        store.set_udp_stats(c1, &udp(1)).unwrap();
        // The largest values the store holds, and the other path.
        let extreme = UdpStats {
            path: UdpPath::Loopback,
            sender_cpu: CpuId(u32::MAX),
            receiver_cpu: CpuId(0),
            payload_bytes: u32::MAX,
            period_ns: Nanos(i64::MAX as u64),
            sent: i64::MAX as u64,
            checked: i64::MAX as u64,
            ..UdpStats::default()
        };
        store.set_udp_stats(c2, &extreme).unwrap();
        drop(store);

        let store = Store::open_existing(&path).unwrap();
        let loaded = store.load_run(run).unwrap();
        assert_eq!(loaded.cells[0].udp, None);
        assert_eq!(loaded.cells[1].udp, Some(udp(1)));
        assert_eq!(loaded.cells[1].metrics, vec![send]);
        assert_eq!(loaded.cells[2].udp, Some(extreme));
        assert_eq!(store.cell_ids(run).unwrap(), vec![timer, c1, c2]);
        // One column per field, readable without parsing anything.
        let (path_text, lost): (String, i64) = store
            .db
            .query_row(
                "SELECT path, lost FROM udp_stats WHERE cell_id = ?1",
                [c1.0],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        assert_eq!((path_text.as_str(), lost), ("veth", 7));
    });
}

#[test]
fn setting_udp_stats_again_replaces_them() {
    each_backend(|dir| {
        let mut store = Store::open(&dir.at("s.db")).unwrap();
        store.set_liveness_probe(always_alive);
        let run = store.create_run(&run_meta(), &system(), &caps()).unwrap();
        let c = store.add_cell(run, &udp_cell(0)).unwrap();
        store.set_udp_stats(c, &udp(1)).unwrap();
        store.set_udp_stats(c, &udp(1)).unwrap();
        assert_eq!(udp_rows(&store), 1);
        // Later checkpoints, and the end: each replaces the row, smaller
        // counts included (the last call is the truth).
        for scale in [3, 2] {
            store.set_udp_stats(c, &udp(scale)).unwrap();
            assert_eq!(udp_rows(&store), 1);
            assert_eq!(store.load_run(run).unwrap().cells[0].udp, Some(udp(scale)));
        }
        let mut last = udp(4);
        last.path = UdpPath::Loopback;
        last.inconsistent = 0;
        store.set_udp_stats(c, &last).unwrap();
        assert_eq!(udp_rows(&store), 1);
        assert_eq!(store.load_run(run).unwrap().cells[0].udp, Some(last));
    });
}

#[test]
fn bad_udp_calls_give_clear_errors_and_store_nothing() {
    each_backend(|dir| {
        let mut store = Store::open(&dir.at("s.db")).unwrap();
        store.set_liveness_probe(always_alive);
        let run = store.create_run(&run_meta(), &system(), &caps()).unwrap();
        let c = store.add_cell(run, &udp_cell(0)).unwrap();

        let e = store.set_udp_stats(CellId(999), &udp(1)).unwrap_err();
        assert!(matches!(e, StoreError::NoSuchCell(CellId(999))), "{e:?}");
        one_line(&e);
        assert_eq!(udp_rows(&store), 0);

        // A count beyond 63 bits fails before anything is written, and keeps
        // what an earlier call stored.
        store.set_udp_stats(c, &udp(1)).unwrap();
        let mut bad = udp(2);
        bad.lost = u64::MAX;
        let e = store.set_udp_stats(c, &bad).unwrap_err();
        assert!(
            matches!(e, StoreError::OutOfRange { value, .. } if value == u64::MAX),
            "{e:?}"
        );
        assert!(one_line(&e).contains("UDP datagrams lost"), "{e}");
        assert_eq!(store.load_run(run).unwrap().cells[0].udp, Some(udp(1)));
    });
}

#[test]
fn udp_rows_are_constrained_and_damage_is_reported() {
    each_backend(|dir| {
        let mut store = Store::open(&dir.at("s.db")).unwrap();
        store.set_liveness_probe(always_alive);
        let run = store.create_run(&run_meta(), &system(), &caps()).unwrap();
        let c = store.add_cell(run, &udp_cell(0)).unwrap();
        store.set_udp_stats(c, &udp(1)).unwrap();
        {
            let conn = &store.db;
            let insert = |cell: i64, sent: i64| {
                conn.execute(
                "INSERT INTO udp_stats (cell_id, path, sender_cpu, receiver_cpu, payload_bytes, \
                 period_ns, sent, send_errors, received, lost, reordered, duplicates, overruns, \
                 skipped_sends, missing_tx_sched, missing_tx_software, missing_rx_software, \
                 checked, inconsistent) \
                 VALUES (?1, 'loopback', 0, 1, 64, 1000, ?2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)",
                crate::db::params![cell, sent],
            )
            };
            // A second row for the cell, a dangling cell, a negative count.
            assert!(insert(c.0, 1).is_err());
            assert!(insert(4242, 1).is_err());
            let c2 = store_cell_for_constraints(conn, run);
            assert!(insert(c2, -1).is_err());
            insert(c2, 1).unwrap();
            conn.execute("DELETE FROM cells WHERE id = ?1", [c2])
                .unwrap();
        }
        assert_eq!(udp_rows(&store), 1);

        // A path this build does not know.
        store
            .db
            .execute("UPDATE udp_stats SET path = 'eth0'", [])
            .unwrap();
        let e = store.load_run(run).unwrap_err();
        assert!(matches!(e, StoreError::Corrupt { .. }), "{e:?}");
        assert!(
            one_line(&e).contains("path of the UDP counts of cell"),
            "{e}"
        );

        // A CPU no machine has.
        store.set_udp_stats(c, &udp(1)).unwrap();
        store
            .db
            .execute("UPDATE udp_stats SET receiver_cpu = 4294967296", [])
            .unwrap();
        let e = store.load_run(run).unwrap_err();
        assert!(matches!(e, StoreError::Corrupt { .. }), "{e:?}");
        assert!(
            one_line(&e).contains("receiver CPU of the UDP counts"),
            "{e}"
        );

        // Rows go with their cell.
        store.set_udp_stats(c, &udp(1)).unwrap();
        store
            .db
            .execute("DELETE FROM cells WHERE id = ?1", [c.0])
            .unwrap();
        assert_eq!(udp_rows(&store), 0);
    });
}

/// A second cell added through SQL, for constraint checks that need a cell
/// without UDP counts.
fn store_cell_for_constraints(conn: &crate::db::Db, run: RunId) -> i64 {
    conn.insert_id(
        "INSERT INTO cells (run_id, idx, probe, workload, monotonic_start_ns) \
         VALUES (?1, 99, 'udp', 'none', 0)",
        [run.0],
    )
    .unwrap()
}

/// A store file as a version-4 latscope wrote it: the version-3 store of
/// [`write_v3_store`] plus a workload characterization on its cell.
fn write_v4_store(path: &Path) -> (Vec<MetricResult>, Vec<SecondStats>) {
    let v3 = write_v3_store(path);
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.execute_batch(include_str!("../migrations/0004_workload_stats.sql"))
        .unwrap();
    conn.pragma_update(None, "user_version", 4).unwrap();
    let w = workload(2);
    let summary = WorkloadStats {
        seconds: Vec::new(),
        ..w.clone()
    };
    conn.execute(
        "INSERT INTO workload_stats (cell_id, stats) VALUES (1, ?1)",
        [serde_json::to_string(&summary).unwrap()],
    )
    .unwrap();
    for (i, s) in w.seconds.iter().enumerate() {
        conn.execute(
            "INSERT INTO workload_seconds (cell_id, idx, sample) VALUES (1, ?1, ?2)",
            rusqlite::params![i as i64, serde_json::to_string(s).unwrap()],
        )
        .unwrap();
    }
    v3
}

#[test]
fn a_version_4_store_migrates_in_place_and_keeps_its_runs() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v4.db");
    let (want_metrics, want_timeline) = write_v4_store(&path);

    // Read first, as `show` would: the migration happens on open.
    let mut store = Store::open_existing(&path).unwrap();
    store.set_liveness_probe(always_alive);
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
    let run = store.resolve("latest").unwrap();
    let loaded = store.load_run(run).unwrap();
    assert_eq!(loaded.meta.status, RunStatus::Complete);
    assert_eq!(loaded.system, system());
    let c = &loaded.cells[0];
    assert_eq!(c.metrics, want_metrics);
    assert_eq!(c.trace, Some(summary()));
    assert_eq!(c.episodes, vec![episode(1, 0, 600_000)]);
    assert_eq!(c.noise, vec![noise(0, 1)]);
    assert_eq!(c.workload_stats, Some(workload(2)));
    assert_eq!(c.udp, None);
    let cell = store.cell_ids(run).unwrap()[0];
    assert_eq!(
        store
            .load_timeline(cell, "timer.latency", Some(CpuId(0)))
            .unwrap(),
        want_timeline
    );

    // The migrated store takes UDP counts like a new one.
    store.set_udp_stats(cell, &udp(1)).unwrap();
    drop(store);
    let store = Store::open(&path).unwrap();
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
    let loaded = store.load_run(run).unwrap();
    assert_eq!(loaded.cells[0].udp, Some(udp(1)));
    assert_eq!(loaded.cells[0].workload_stats, Some(workload(2)));
    assert_eq!(loaded.cells[0].noise, vec![noise(0, 1)]);
    assert_eq!(loaded.cells[0].metrics, want_metrics);
}

// ---------------------------------------------------------------- early wake-ups (schema version 6)

fn early(cpu: u32, n: u64) -> TimerCpuStats {
    TimerCpuStats {
        cpu: CpuId(cpu),
        early_wakeups: n,
        max_early_ns: Nanos(100 * n + u64::from(cpu)),
    }
}

#[test]
fn timer_stats_round_trip_and_replace_cpu_by_cpu() {
    each_backend(|dir| {
        let path = dir.at("s.db");
        let mut store = Store::open(&path).unwrap();
        store.set_liveness_probe(always_alive);
        let run = store.create_run(&run_meta(), &system(), &caps()).unwrap();
        let c0 = store.add_cell(run, &cell(0)).unwrap();
        let c1 = store.add_cell(run, &noise_cell(1)).unwrap();
        let extreme = TimerCpuStats {
            cpu: CpuId(9),
            early_wakeups: i64::MAX as u64,
            max_early_ns: Nanos(i64::MAX as u64),
        };
        // Out of CPU order: read back by CPU.
        store
            .set_timer_stats(c0, &[extreme.clone(), early(1, 0), early(0, 3)])
            .unwrap();
        // A later checkpoint replaces CPU 0 and leaves the others.
        store.set_timer_stats(c0, &[early(0, 7)]).unwrap();
        store.set_timer_stats(c0, &[]).unwrap();
        drop(store);

        let store = Store::open_existing(&path).unwrap();
        let loaded = store.load_run(run).unwrap();
        assert_eq!(
            loaded.cells[0].timer,
            vec![early(0, 7), early(1, 0), extreme]
        );
        assert!(loaded.cells[1].timer.is_empty(), "a noise cell has none");
        drop(store);

        let mut store = Store::open(&path).unwrap();
        // Refused whole: a duplicated CPU, a count SQLite cannot hold, no cell.
        assert!(matches!(
            store.set_timer_stats(c1, &[early(2, 1), early(2, 2)]),
            Err(StoreError::InvalidTimerStats { cpu: 2, .. })
        ));
        let huge = TimerCpuStats {
            early_wakeups: u64::MAX,
            ..early(3, 1)
        };
        assert!(matches!(
            store.set_timer_stats(c1, &[early(4, 1), huge]),
            Err(StoreError::OutOfRange { .. })
        ));
        assert!(matches!(
            store.set_timer_stats(CellId(999), &[early(0, 1)]),
            Err(StoreError::NoSuchCell(_))
        ));
        assert!(store.load_run(run).unwrap().cells[1].timer.is_empty());
    });
}

fn write_v5_timer_store(path: &Path) -> (Vec<MetricResult>, Vec<SecondStats>) {
    let v4 = write_v4_store(path);
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.execute_batch(include_str!("../migrations/0005_udp.sql"))
        .unwrap();
    conn.pragma_update(None, "user_version", 5).unwrap();
    v4
}

#[test]
fn a_version_5_store_migrates_in_place_and_keeps_its_runs() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v5.db");
    let (want_metrics, want_timeline) = write_v5_timer_store(&path);

    let mut store = Store::open_existing(&path).unwrap();
    store.set_liveness_probe(always_alive);
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
    let run = store.resolve("latest").unwrap();
    let loaded = store.load_run(run).unwrap();
    assert_eq!(loaded.meta.status, RunStatus::Complete);
    let c = &loaded.cells[0];
    assert_eq!(c.metrics, want_metrics);
    assert_eq!(c.noise, vec![noise(0, 1)]);
    assert_eq!(c.workload_stats, Some(workload(2)));
    assert!(
        c.timer.is_empty(),
        "stored before early wake-ups were counted"
    );
    let cell = store.cell_ids(run).unwrap()[0];
    assert_eq!(
        store
            .load_timeline(cell, "timer.latency", Some(CpuId(0)))
            .unwrap(),
        want_timeline
    );

    // The migrated store takes early wake-ups like a new one.
    store.set_timer_stats(cell, &[early(0, 2)]).unwrap();
    drop(store);
    let store = Store::open(&path).unwrap();
    let loaded = store.load_run(run).unwrap();
    assert_eq!(loaded.cells[0].timer, vec![early(0, 2)]);
    assert_eq!(loaded.cells[0].metrics, want_metrics);
}

mod backends;
mod checkpoint;
mod copy;
mod hosts;
mod insert;
mod intervals;
mod micro;
mod monitor;
mod postgres;
mod snapshots;

/// A connection that writes keeps a small page cache (schema.rs,
/// WRITER_CACHE_SIZE): SQLite's default 2 MiB was most of a long traced
/// run's growth in resident memory.
#[test]
fn a_writing_connection_keeps_a_small_page_cache() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cache.db");
    let conn = schema::open(&path, schema::Mode::Write).unwrap();
    let size: i64 = conn
        .query_row("PRAGMA cache_size", [], |r| r.get(0))
        .unwrap();
    assert_eq!(size, -512);
}
