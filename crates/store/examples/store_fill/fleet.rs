//! `--fleet-hosts N`: many simulated monitors checkpointing into one store
//! (see the crate's example documentation in `main.rs`).

use std::sync::{Arc, Barrier};
use std::time::Duration;

use super::*;

/// The monitor's default checkpoint interval.
const INTERVAL: u64 = 10;

/// One checkpoint of a simulated monitor: the cell's and its windows.
struct Tick {
    checkpoint: Checkpoint,
    windows: Vec<Window>,
}

/// The sequence every host writes: one monitor's first `n` checkpoints.
fn ticks(rng: &mut Rng, pool: &Pool, n: u64, base: u64) -> Res<Vec<Tick>> {
    let mut cell = TimerCell::new(Some(Nanos(500_000)));
    let mut out = Vec::new();
    for _ in 0..n {
        let mark = cell.mark();
        let timeline = cell.advance(rng, pool, INTERVAL);
        let now = base + cell.seconds * SEC;
        let added = cell.since(&mark)?;
        let mut windows = Vec::new();
        for span in [Span::Minute, Span::Hour] {
            for (cpu, a) in CPUS.iter().zip(&added) {
                for (name, h) in [
                    (metric::TIMER_LATENCY, &a.latency),
                    (metric::TIMER_INTERVAL, &a.interval),
                ] {
                    windows.push(Window {
                        span,
                        start_unix: span.start_of(Nanos(now)),
                        metric: name.to_string(),
                        cpu: Some(CpuId(*cpu)),
                        histogram: h.clone(),
                    });
                }
            }
        }
        out.push(Tick {
            checkpoint: cell.checkpoint(now, timeline),
            windows,
        });
    }
    Ok(out)
}

/// What one worker measured: per checkpoint, its write time and how late
/// it started (µs).
#[derive(Default)]
struct Measured {
    write_us: Vec<f64>,
    late_us: Vec<f64>,
}

struct Plan {
    store: PathBuf,
    hosts: u32,
    workers: u32,
    ticks: Arc<Vec<Tick>>,
}

fn worker(
    plan: &Plan,
    index: u32,
    ready: &Barrier,
    start: &Mutex<Option<Instant>>,
) -> Res<Measured> {
    let mut store = Store::open(&plan.store)?;
    let mine: Vec<u32> = (index..plan.hosts).step_by(plan.workers as usize).collect();
    let now = now_unix()?;
    let mut cells = Vec::with_capacity(mine.len());
    for &h in &mine {
        let mut meta = run_meta(now, &["latscope", "monitor", "--store", "postgres://…"]);
        meta.hostname = format!("sim-{h:05}");
        let mut sys = system();
        sys.hostname = meta.hostname.clone();
        let run = store.create_run(&meta, &sys, &caps(false))?;
        let cell = store.add_cell(run, &timer_cell(None, Some(Nanos(500_000))))?;
        cells.push((h, run, cell));
    }
    ready.wait();
    // The main thread sets the start between the two waits.
    ready.wait();
    let t0 = start
        .lock()
        .map_err(|_| "a worker panicked")?
        .ok_or("no start time")?;
    let period = Duration::from_secs(INTERVAL);
    let mut m = Measured::default();
    for (k, tick) in plan.ticks.iter().enumerate() {
        for &(h, run, cell) in &cells {
            let offset = period * h / plan.hosts;
            let due = t0 + offset + period * k as u32;
            let now = Instant::now();
            if due > now {
                std::thread::sleep(due - now);
            }
            let began = Instant::now();
            store.write_checkpoint(run, cell, &tick.checkpoint)?;
            store.put_windows(run, &tick.windows)?;
            m.write_us.push(began.elapsed().as_secs_f64() * 1e6);
            m.late_us
                .push(began.saturating_duration_since(due).as_secs_f64() * 1e6);
        }
    }
    Ok(m)
}

use std::sync::Mutex;

type Sizes = Option<(i64, Vec<(String, i64)>)>;

/// The database's size and each table's (bytes), on PostgreSQL; after
/// `VACUUM FULL` (the live rows only, without the dead versions of rows
/// replaced since the last vacuum) when `full`.
fn sizes(url: &Path, full: bool) -> Res<Sizes> {
    let Some(url) = url.to_str().filter(|u| latscope_store::is_postgres_url(u)) else {
        return Ok(None);
    };
    let mut config: postgres::Config = url.parse()?;
    if config.get_password().is_none() {
        if let Ok(p) = std::env::var("PGPASSWORD") {
            config.password(p);
        }
    }
    let mut c = config.connect(postgres::NoTls)?;
    if full {
        c.batch_execute("VACUUM FULL")?;
    }
    let db: i64 = c
        .query_one("SELECT pg_database_size(current_database())", &[])?
        .get(0);
    let tables = c
        .query(
            "SELECT relname::text, pg_total_relation_size(relid) FROM pg_stat_user_tables",
            &[],
        )?
        .iter()
        .map(|r| (r.get::<_, String>(0), r.get::<_, i64>(1)))
        .collect();
    Ok(Some((db, tables)))
}

pub fn run(args: &Args, rng: &mut Rng, pool: &Pool) -> Res<()> {
    let hosts = args.fleet_hosts;
    let workers = args.fleet_workers.min(hosts);
    let n = args.fleet_seconds.div_ceil(INTERVAL);
    let ticks = Arc::new(ticks(rng, pool, n, now_unix()?)?);
    let plan = Arc::new(Plan {
        store: args.store.clone(),
        hosts,
        workers,
        ticks,
    });
    // Opening the store once first creates its schema, so that the workers
    // do not all migrate at once.
    drop(Store::open(&args.store)?);
    let ready = Arc::new(Barrier::new(workers as usize + 1));
    let start = Arc::new(Mutex::new(None));
    let threads: Vec<_> = (0..workers)
        .map(|i| {
            let (plan, ready, start) = (Arc::clone(&plan), Arc::clone(&ready), Arc::clone(&start));
            std::thread::spawn(move || {
                let r = worker(&plan, i, &ready, &start);
                if r.is_err() {
                    // Let the others go on: the barrier waits for all.
                    eprintln!("store_fill: worker {i} failed");
                }
                r.map_err(|e| e.to_string())
            })
        })
        .collect();
    eprintln!("store_fill: {hosts} hosts on {workers} connections: creating their runs");
    ready.wait();
    let before = sizes(&args.store, true)?;
    let t0 = Instant::now();
    *start.lock().map_err(|_| "poisoned")? = Some(t0);
    eprintln!(
        "store_fill: {hosts} hosts checkpointing every {INTERVAL} s for {} s",
        n * INTERVAL
    );
    ready.wait();
    let mut m = Measured::default();
    for t in threads {
        let r = t.join().map_err(|_| "a worker panicked")??;
        m.write_us.extend(r.write_us);
        m.late_us.extend(r.late_us);
    }
    let elapsed = t0.elapsed().as_secs_f64();
    let after = sizes(&args.store, false)?;
    let live = sizes(&args.store, true)?;
    m.write_us.sort_by(f64::total_cmp);
    m.late_us.sort_by(f64::total_cmp);
    let count = m.write_us.len();
    // The schedule's span: the last checkpoint of the last host is due
    // (n - 1) intervals plus almost one interval after the start.
    let scheduled = (n * INTERVAL) as f64;
    print!(
        "fleet store={} hosts={hosts} workers={workers} checkpoints={count} seconds={elapsed:.1} \
         scheduled_per_s={:.1} achieved_per_s={:.1} write_p50_ms={:.1} write_p99_ms={:.1} \
         write_max_ms={:.1} late_p99_ms={:.1} late_max_ms={:.1}",
        args.store.display(),
        f64::from(hosts) / INTERVAL as f64,
        count as f64 / elapsed.max(scheduled),
        rank(&m.write_us, 0.5) / 1e3,
        rank(&m.write_us, 0.99) / 1e3,
        m.write_us[count - 1] / 1e3,
        rank(&m.late_us, 0.99) / 1e3,
        m.late_us[count - 1] / 1e3,
    );
    if let (Some((db0, t0)), Some((db1, raw)), Some((db2, t1))) = (before, after, live) {
        // Per host over the run, not extrapolated to a day: most of it is
        // written once per cell (the cumulative metric rows, the hour
        // windows) or thinned as the run grows (the snapshots), so a day
        // is not S seconds' worth times 86,400 / S. What a host keeps
        // after days is measured apart (bench/fleet-scale.sh, "retained").
        let per_host_kb = |bytes: i64| bytes as f64 / f64::from(hosts) / 1e3;
        // Before vacuuming, the growth holds the dead versions of the rows
        // each checkpoint replaces (metrics, windows), which autovacuum
        // reclaims for reuse; after VACUUM FULL only what stays.
        print!(
            " db_growth_bytes={} growth_per_host_kb={:.1} live_growth_bytes={} \
             live_growth_per_host_kb={:.1}",
            db1 - db0,
            per_host_kb(db1 - db0),
            db2 - db0,
            per_host_kb(db2 - db0)
        );
        let mut tables: Vec<(String, i64)> = t1
            .iter()
            .map(|(name, size)| {
                let was = t0.iter().find(|(n, _)| n == name).map_or(0, |(_, s)| *s);
                (name.clone(), size - was)
            })
            .filter(|(_, d)| *d > 0)
            .collect();
        tables.sort_by_key(|(_, d)| -d);
        let list: Vec<String> = tables
            .iter()
            .map(|(name, d)| format!("{name}:{:.1}", per_host_kb(*d)))
            .collect();
        print!(" live_per_table_kb_per_host={}", list.join(","));
        // What VACUUM FULL took back per table: the dead row versions the
        // run left (before autovacuum reused their space).
        let mut dead: Vec<(String, i64)> = raw
            .iter()
            .map(|(name, size)| {
                let live = t1.iter().find(|(n, _)| n == name).map_or(0, |(_, s)| *s);
                (name.clone(), size - live)
            })
            .filter(|(_, d)| *d > 0)
            .collect();
        dead.sort_by_key(|(_, d)| -d);
        let list: Vec<String> = dead
            .iter()
            .map(|(name, d)| format!("{name}:{:.1}", per_host_kb(*d)))
            .collect();
        print!(" dead_per_table_kb_per_host={}", list.join(","));
    }
    println!();
    Ok(())
}
