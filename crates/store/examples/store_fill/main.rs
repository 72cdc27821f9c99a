//! Fills a latscope store with realistic synthetic data and times the
//! store's checkpoints: the filler of `bench/store-throughput.sh`, which
//! compares SQLite with PostgreSQL.
//!
//! ```text
//! cargo run --release -p latscope-store --example store_fill -- \
//!     --store PATH_OR_URL [--runs N] [--run-seconds S] [--monitor-days D] \
//!     [--checkpoints N] [--timings FILE] [--seed S]
//! ```
//!
//! `--store` is a SQLite file or a `postgres://USER@HOST:PORT/DB` URL (the
//! password from the URL, `PGPASSWORD` or `~/.pgpass`; it is never printed).
//! Each of the three modes adds to the store; any combination runs in the
//! order below.
//!
//! * `--runs N`: N short runs as `latscope run` stores them by default: one
//!   timer cell (1 ms period, FIFO 95) on 2 CPUs, measured for 30 s (or
//!   `--run-seconds S`, a multiple of 10), with a checkpoint every 10 s
//!   (`timer.latency` raw and corrected and
//!   `timer.interval` per CPU, 10 timeline seconds per series and
//!   checkpoint, the early wake-ups per CPU), then ended `complete`. The
//!   runs started an hour apart, the newest an hour ago.
//! * `--monitor-days D`: one monitor run of D simulated days as
//!   `latscope monitor` leaves it with its default retention (minute windows
//!   7 days, hour windows 365 days, timeline seconds and checkpoint
//!   intervals 1 day; no `--trace`, threshold 500 µs): one timer cell on 2
//!   CPUs, minute and hour windows of `timer.latency` and `timer.interval`
//!   per CPU (`Store::put_window`), the last day checkpointed every 10 s
//!   with its timeline, and the days before it checkpointed once an hour
//!   (the monitor checkpoints every 10 s throughout, but what the retention
//!   deletes need not be written; the hourly checkpoints give the histogram
//!   snapshots a spread over the whole run). The windows hold exactly the
//!   samples the checkpoints added in their minute or hour.
//! * `--checkpoints N`: the cost of [`Store::write_checkpoint`]: one traced
//!   timer cell on 2 CPUs (threshold 100 µs) checkpointed N times, 10 s of
//!   measured time apart, each checkpoint with the six cumulative
//!   histograms, 10 timeline seconds for each of the four series, the early
//!   wake-ups, two new episodes (the first ten with their kernel event
//!   windows) and the tracer's summary. Each call is timed alone; the
//!   median, p99, mean, minimum and maximum are printed, and with
//!   `--timings FILE` every one (µs, one a line).
//!
//! * `--fleet-hosts N`: N simulated monitors checkpointing into the store
//!   every 10 s for `--fleet-seconds S` (default 60), spread evenly over
//!   the 10 s, from `--fleet-workers W` threads (default 32) with a
//!   connection each (host `h` on thread `h % W`): each checkpoint as the
//!   monitor writes it, [`Store::write_checkpoint`] of a timer cell on 2
//!   CPUs (threshold 500 µs) and its 8 minute and hour windows
//!   ([`Store::put_window`]). Every host writes the same sequence of
//!   checkpoints, made once before the clock starts. Prints the
//!   checkpoints per second achieved, the write latency (the calls of one
//!   checkpoint; p50, p99, max), how late checkpoints started against
//!   their schedule (p99, max), and, on PostgreSQL, the database's growth
//!   (`pg_database_size`, and per table from `pg_total_relation_size`) per
//!   host and day.
//!
//! Standard output is one `key=value` line per mode (`runs …`, `monitor …`,
//! `checkpoints …`) for the script to read; progress goes to standard error.
//!
//! The samples come from a fixed model of this VM's timer latency (a shifted
//! log-normal body, median about 17.5 µs, p99 about 60 µs, and a Pareto
//! tail from 100 µs in one sample of 1,000, capped at 5 ms), drawn from a
//! precomputed pool: a 10 s checkpoint records every one of its 10,000
//! wake-ups per CPU, a day of the monitor before its last is drawn 3,000
//! times a minute per CPU with a weight of 20.

use std::error::Error;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use latscope_model::{
    metric, Breakdown, Capabilities, Cause, CauseKind, CauseTotal, CellMeta, CellSettings,
    CommonSettings, CpuId, Episode, EpisodeWindow, IdleState, Nanos, Policy, RunId, RunMeta,
    RunStatus, SystemInfo, TimerCpuStats, TimerSettings, TraceSummary, WindowEvent,
};
use latscope_record::{Histogram, MetricResult, SecondStats, TimelineChunk};
use latscope_store::{Checkpoint, Span, Store, Window};

type Res<T> = Result<T, Box<dyn Error>>;

const SEC: u64 = 1_000_000_000;
const PERIOD: u64 = 1_000_000;
/// Deadlines per second at the 1 ms period.
const PER_SECOND: u64 = SEC / PERIOD;
const CPUS: [u32; 2] = [0, 1];
/// The monitor's default retention.
const RETAIN_MINUTES_DAYS: u64 = 7;
const RETAIN_SECONDS_DAYS: u64 = 1;
const RETAIN_HOURS_DAYS: u64 = 365;
/// A monitor minute before its last day: draws per CPU and their weight.
const BULK_DRAWS: u64 = 3_000;
const BULK_WEIGHT: u64 = PER_SECOND * 60 / BULK_DRAWS;

struct Args {
    store: PathBuf,
    runs: u32,
    monitor_days: u32,
    /// Seconds each of `--runs` measured (a multiple of 10).
    run_seconds: u64,
    checkpoints: u32,
    timings: Option<PathBuf>,
    seed: u64,
    fleet_hosts: u32,
    fleet_seconds: u64,
    fleet_workers: u32,
}

const USAGE: &str = "usage: store_fill --store PATH_OR_URL [--runs N] [--run-seconds S] \
                     [--monitor-days D] [--checkpoints N] [--timings FILE] [--seed S] \
                     [--fleet-hosts N] [--fleet-seconds S] [--fleet-workers W]";

fn parse_args() -> Res<Args> {
    let mut args = Args {
        store: PathBuf::new(),
        runs: 0,
        monitor_days: 0,
        run_seconds: 30,
        checkpoints: 0,
        timings: None,
        seed: 1,
        fleet_hosts: 0,
        fleet_seconds: 60,
        fleet_workers: 32,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        if flag == "-h" || flag == "--help" {
            println!("{USAGE}");
            std::process::exit(0);
        }
        let value = it
            .next()
            .ok_or_else(|| format!("{flag} needs a value\n{USAGE}"))?;
        let number = |v: &str| -> Res<u64> {
            v.parse::<u64>()
                .map_err(|_| format!("{flag}: '{v}' is not a whole number").into())
        };
        match flag.as_str() {
            "--store" => args.store = PathBuf::from(value),
            "--runs" => args.runs = u32::try_from(number(&value)?)?,
            "--monitor-days" => args.monitor_days = u32::try_from(number(&value)?)?,
            "--checkpoints" => args.checkpoints = u32::try_from(number(&value)?)?,
            "--run-seconds" => {
                args.run_seconds = number(&value)?;
                if args.run_seconds == 0 || !args.run_seconds.is_multiple_of(10) {
                    return Err("--run-seconds: a multiple of 10 above 0".into());
                }
            }
            "--timings" => args.timings = Some(PathBuf::from(value)),
            "--seed" => args.seed = number(&value)?,
            "--fleet-hosts" => args.fleet_hosts = u32::try_from(number(&value)?)?,
            "--fleet-seconds" => args.fleet_seconds = number(&value)?.max(10),
            "--fleet-workers" => args.fleet_workers = u32::try_from(number(&value)?)?.max(1),
            _ => return Err(format!("unknown option {flag}\n{USAGE}").into()),
        }
    }
    if args.store.as_os_str().is_empty() {
        return Err(format!("--store is required\n{USAGE}").into());
    }
    if args.runs == 0 && args.monitor_days == 0 && args.checkpoints == 0 && args.fleet_hosts == 0 {
        return Err(format!(
            "nothing to do: give --runs, --monitor-days or --checkpoints\n{USAGE}"
        )
        .into());
    }
    Ok(args)
}

fn main() {
    if let Err(e) = run() {
        eprintln!("store_fill: {e}");
        std::process::exit(1);
    }
}

fn run() -> Res<()> {
    let args = parse_args()?;
    let mut store = Store::open(&args.store)?;
    let name = store.path().display().to_string();
    let mut rng = Rng::new(args.seed);
    let pool = Pool::new(&mut rng);
    if args.runs > 0 {
        let t = Instant::now();
        let (first, last, in_store) =
            fill_runs(&mut store, &mut rng, &pool, args.runs, args.run_seconds)?;
        println!(
            "runs store={name} n={} first={} last={} seconds={:.2} store_seconds={in_store:.2}",
            args.runs,
            first.0,
            last.0,
            t.elapsed().as_secs_f64()
        );
    }
    if args.monitor_days > 0 {
        let t = Instant::now();
        let m = fill_monitor(&mut store, &mut rng, &pool, u64::from(args.monitor_days))?;
        println!(
            "monitor store={name} run={} days={} hour_windows={} minute_windows={} \
             timeline_seconds={} checkpoints={} seconds={:.2} store_seconds={:.2}",
            m.run.0,
            args.monitor_days,
            m.hour_windows,
            m.minute_windows,
            m.timeline_seconds,
            m.checkpoints,
            t.elapsed().as_secs_f64(),
            m.store_seconds
        );
    }
    if args.checkpoints > 0 {
        let t = Instant::now();
        let mut us = time_checkpoints(&mut store, &mut rng, &pool, args.checkpoints)?;
        let total = t.elapsed().as_secs_f64();
        if let Some(path) = &args.timings {
            write_timings(path, &us)?;
        }
        us.sort_by(f64::total_cmp);
        let mean = us.iter().sum::<f64>() / us.len() as f64;
        println!(
            "checkpoints store={name} n={} median_us={:.0} p99_us={:.0} mean_us={:.0} \
             min_us={:.0} max_us={:.0} seconds={total:.2}",
            us.len(),
            rank(&us, 0.5),
            rank(&us, 0.99),
            mean,
            us[0],
            us[us.len() - 1]
        );
    }
    if args.fleet_hosts > 0 {
        drop(store);
        fleet::run(&args, &mut rng, &pool)?;
    }
    Ok(())
}

mod fleet;

/// The nearest-rank quantile of sorted, non-empty `v`.
fn rank(v: &[f64], q: f64) -> f64 {
    let i = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len());
    v[i - 1]
}

fn write_timings(path: &Path, us: &[f64]) -> Res<()> {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
    for t in us {
        writeln!(out, "{t:.1}")?;
    }
    out.flush()?;
    Ok(())
}

// ---------------------------------------------------------------- samples

/// splitmix64: a fixed seed gives the same store every time.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in (0, 1).
    fn unit(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    fn normal(&mut self) -> f64 {
        let (u1, u2) = (self.unit(), self.unit());
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }
}

/// Wake-up latencies (ns) drawn from the model once; cells take runs of
/// them from random places.
struct Pool(Vec<u32>);

const POOL_BITS: u32 = 18;

impl Pool {
    fn new(rng: &mut Rng) -> Pool {
        let values = (0..1u32 << POOL_BITS)
            .map(|_| {
                let ns = if rng.unit() < 0.001 {
                    (100_000.0 / rng.unit().powf(1.0 / 1.2)).min(5_000_000.0)
                } else {
                    (9_000.0 + 8_500.0 * (0.8 * rng.normal()).exp()).min(2_000_000.0)
                };
                ns as u32
            })
            .collect();
        Pool(values)
    }

    /// A run of consecutive values from a random place (read in order, so
    /// that the memory keeps up with the histograms).
    fn run<'a>(&'a self, rng: &mut Rng) -> impl Iterator<Item = u64> + 'a {
        let start = (rng.next_u64() >> (64 - POOL_BITS)) as usize;
        self.0[start..]
            .iter()
            .chain(self.0[..start].iter())
            .cycle()
            .map(|&v| u64::from(v))
    }
}

/// One CPU of a timer cell: its cumulative metrics and its last wake-up.
struct TimerCpu {
    cpu: CpuId,
    /// Raw `timer.latency` (its `corrected` is made at each checkpoint).
    latency: MetricResult,
    /// The skipped deadlines' latencies: corrected = raw + these, as the
    /// probe keeps them.
    skipped: Histogram,
    interval: MetricResult,
    /// The last wake-up's latency and the deadlines it skipped (`None`
    /// before the first, and after a minute drawn in bulk).
    last: Option<(u64, u64)>,
    /// Deadlines of the next second already used by an overrun.
    carry: u64,
}

/// What one CPU did in a stretch of time: the samples added, for windows.
#[derive(Default)]
struct Added {
    latency: Histogram,
    interval: Histogram,
}

impl TimerCpu {
    fn new(cpu: u32, threshold: Option<Nanos>) -> TimerCpu {
        let cpu = CpuId(cpu);
        let mut latency = MetricResult::new(metric::TIMER_LATENCY, Some(cpu));
        latency.threshold = threshold;
        latency.above_threshold = threshold.map(|_| 0);
        TimerCpu {
            cpu,
            latency,
            skipped: Histogram::new(),
            interval: MetricResult::new(metric::TIMER_INTERVAL, Some(cpu)),
            last: None,
            carry: 0,
        }
    }

    /// One wake-up of latency `lat`, recorded with weight `w`: the
    /// deadlines it skipped and its distance from the previous wake-up.
    fn wake(&mut self, lat: u64, w: u64) -> (u64, Option<u64>) {
        let skipped = lat / PERIOD;
        self.latency.histogram.record_n(lat, w);
        if skipped > 0 {
            for k in 1..=skipped {
                self.skipped.record_n(lat - k * PERIOD, w);
            }
            self.latency.overruns += w;
            self.latency.missed_deadlines += skipped * w;
        }
        if let (Some(t), Some(above)) = (self.latency.threshold, &mut self.latency.above_threshold)
        {
            if lat > t.0 {
                *above += w;
            }
        }
        // This deadline is (1 + skipped) periods after the previous one.
        let interval = self
            .last
            .map(|(prev, prev_skipped)| ((1 + prev_skipped) * PERIOD + lat).saturating_sub(prev));
        if let Some(iv) = interval {
            self.interval.histogram.record_n(iv, w);
        }
        self.last = Some((lat, skipped));
        (skipped, interval)
    }

    /// One second of wake-ups, every one recorded: the second's timeline
    /// entries of `timer.latency` and `timer.interval`.
    fn second(&mut self, rng: &mut Rng, pool: &Pool) -> (SecondStats, SecondStats) {
        let threshold = self.latency.threshold.map_or(u64::MAX, |t| t.0);
        let (mut lat_s, mut iv_s) = (SecondStats::default(), SecondStats::default());
        let mut used = self.carry;
        let mut draws = pool.run(rng);
        while used < PER_SECOND {
            let lat = draws.next().unwrap_or(PERIOD / 50);
            let (skipped, iv) = self.wake(lat, 1);
            used += 1 + skipped;
            lat_s.count += 1;
            lat_s.max = lat_s.max.max(lat);
            lat_s.above += u64::from(lat > threshold);
            if let Some(iv) = iv {
                iv_s.count += 1;
                iv_s.max = iv_s.max.max(iv);
            }
        }
        self.carry = used - PER_SECOND;
        (lat_s, iv_s)
    }

    /// A minute drawn [`BULK_DRAWS`] times with weight [`BULK_WEIGHT`] (no
    /// timeline: the retention would have deleted it).
    fn bulk_minute(&mut self, rng: &mut Rng, pool: &Pool) {
        for lat in pool.run(rng).take(BULK_DRAWS as usize) {
            self.wake(lat, BULK_WEIGHT);
        }
        self.last = None;
        self.carry = 0;
    }

    fn metrics(&self) -> [MetricResult; 2] {
        let mut latency = self.latency.clone();
        let mut corrected = self.latency.histogram.clone();
        corrected.merge(&self.skipped);
        latency.corrected = Some(corrected);
        [latency, self.interval.clone()]
    }

    fn stats(&self) -> TimerCpuStats {
        TimerCpuStats {
            cpu: self.cpu,
            early_wakeups: 0,
            max_early_ns: Nanos::ZERO,
        }
    }
}

/// A timer cell on [`CPUS`].
struct TimerCell {
    cpus: Vec<TimerCpu>,
    /// Seconds measured so far (the next timeline second).
    seconds: u64,
}

impl TimerCell {
    fn new(threshold: Option<Nanos>) -> TimerCell {
        TimerCell {
            cpus: CPUS.iter().map(|&c| TimerCpu::new(c, threshold)).collect(),
            seconds: 0,
        }
    }

    /// `n` seconds measured, every wake-up recorded: the timeline chunks
    /// (one per metric and CPU).
    fn advance(&mut self, rng: &mut Rng, pool: &Pool, n: u64) -> Vec<TimelineChunk> {
        let mut chunks = Vec::new();
        for cpu in &mut self.cpus {
            let (mut lat, mut iv) = (Vec::new(), Vec::new());
            for _ in 0..n {
                let (l, i) = cpu.second(rng, pool);
                lat.push(l);
                iv.push(i);
            }
            for (name, seconds) in [(metric::TIMER_LATENCY, lat), (metric::TIMER_INTERVAL, iv)] {
                chunks.push(TimelineChunk {
                    metric: name.to_string(),
                    cpu: Some(cpu.cpu),
                    first_second: self.seconds,
                    seconds,
                });
            }
        }
        self.seconds += n;
        chunks
    }

    /// A minute drawn in bulk, without timeline.
    fn bulk_minute(&mut self, rng: &mut Rng, pool: &Pool) {
        for cpu in &mut self.cpus {
            cpu.bulk_minute(rng, pool);
        }
        self.seconds += 60;
    }

    /// Each CPU's cumulative histograms now, to take [`TimerCell::since`]
    /// of later.
    fn mark(&self) -> Vec<Added> {
        self.cpus
            .iter()
            .map(|c| Added {
                latency: c.latency.histogram.clone(),
                interval: c.interval.histogram.clone(),
            })
            .collect()
    }

    /// What each CPU added since `mark`.
    fn since(&self, mark: &[Added]) -> Res<Vec<Added>> {
        self.cpus
            .iter()
            .zip(mark)
            .map(|(c, m)| {
                Ok(Added {
                    latency: c
                        .latency
                        .histogram
                        .since(&m.latency)
                        .ok_or("a histogram went backwards")?,
                    interval: c
                        .interval
                        .histogram
                        .since(&m.interval)
                        .ok_or("a histogram went backwards")?,
                })
            })
            .collect()
    }

    fn metrics(&self) -> Vec<MetricResult> {
        self.cpus.iter().flat_map(TimerCpu::metrics).collect()
    }

    fn checkpoint(&self, now_unix: u64, timeline: Vec<TimelineChunk>) -> Checkpoint {
        Checkpoint {
            duration: Nanos(self.seconds * SEC),
            now_unix: Nanos(now_unix),
            metrics: self.metrics(),
            timeline,
            timer: self.cpus.iter().map(TimerCpu::stats).collect(),
            ..Checkpoint::default()
        }
    }
}

/// Time spent in the store's calls, apart from making the data.
#[derive(Default)]
struct StoreClock(f64);

impl StoreClock {
    fn time<T>(&mut self, f: impl FnOnce() -> Result<T, latscope_store::StoreError>) -> Res<T> {
        let t = Instant::now();
        let out = f()?;
        self.0 += t.elapsed().as_secs_f64();
        Ok(out)
    }
}

// ---------------------------------------------------------------- runs

fn now_unix() -> Res<u64> {
    Ok(u64::try_from(
        SystemTime::now().duration_since(UNIX_EPOCH)?.as_nanos(),
    )?)
}

fn boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

fn run_meta(started: u64, command_line: &[&str]) -> RunMeta {
    RunMeta {
        command_line: command_line.iter().map(|s| s.to_string()).collect(),
        pid: std::process::id(),
        boot_id: boot_id(),
        hostname: "bench-host".into(),
        tool_version: "0.1.0".into(),
        ..RunMeta::new(RunId(0), Nanos(started))
    }
}

fn system() -> SystemInfo {
    SystemInfo {
        hostname: "bench-host".into(),
        machine_id: Some("3d1219c7c4c5404aaa1f6d2a48adfda4".into()),
        kernel_release: "6.18.44-bench".into(),
        kernel_version: "#1 SMP PREEMPT_DYNAMIC".into(),
        preemption_model: Some("none".into()),
        preemption_source: Some("debugfs".into()),
        hz: Some(250),
        clocksource: Some("tsc".into()),
        available_clocksources: vec!["tsc".into(), "kvm-clock".into(), "acpi_pm".into()],
        cpu_model: Some("AMD EPYC".into()),
        cpu_count: 2,
        cpus_online: "0-1".into(),
        smt_active: Some(false),
        cpufreq_governors: Default::default(),
        cpuidle_driver: Some("haltpoll".into()),
        cpuidle_governor: Some("haltpoll".into()),
        cpuidle_states: vec![IdleState {
            name: "haltpoll".into(),
            latency_us: 1,
            disabled: false,
        }],
        hypervisor: true,
        hypervisor_vendor: Some("KVM".into()),
        kernel_cmdline: "console=ttyS0 reboot=k panic=1".into(),
        isolcpus: None,
        nohz_full: None,
        rcu_nocbs: None,
        rt_runtime_us: Some(950_000),
        rt_period_us: Some(1_000_000),
        tsc_constant_nonstop: true,
        granularity: Default::default(),
        hazards: vec![latscope_model::Hazard {
            id: "preemption".into(),
            severity: latscope_model::Severity::Hazard,
            title: "preemption model none".into(),
            detail: "kernel code is never preempted".into(),
            remedy: "boot with preempt=full".into(),
        }],
    }
}

fn caps(traced: bool) -> Capabilities {
    Capabilities {
        root: true,
        cap_sys_nice: true,
        cap_ipc_lock: true,
        rlimit_rtprio: u64::MAX,
        rt_priority: true,
        mlock: true,
        dma_latency: true,
        timer_slack_ns: Some(1),
        tracepoints: traced,
        stack_samples: false,
        missing: Vec::new(),
    }
}

fn timer_cell(planned: Option<Nanos>, threshold: Option<Nanos>) -> CellMeta {
    CellMeta {
        monotonic_start_ns: Nanos(12_907_165_799_433),
        ..CellMeta::new(
            0,
            "none",
            CellSettings::Timer(TimerSettings {
                period_ns: Nanos(PERIOD),
                common: CommonSettings {
                    policy: Policy::Fifo,
                    priority: 95,
                    cpus: "0-1".into(),
                    duration_ns: planned,
                    threshold_ns: threshold,
                    clock_read_ns: 20,
                    ..CommonSettings::default()
                },
                ..TimerSettings::default()
            }),
            Nanos::ZERO,
        )
    }
}

/// `n` runs like a default `latscope run`: 30 s, three checkpoints. Returns
/// the first and last run and the seconds spent in the store's calls.
fn fill_runs(
    store: &mut Store,
    rng: &mut Rng,
    pool: &Pool,
    n: u32,
    seconds: u64,
) -> Res<(RunId, RunId, f64)> {
    let now = now_unix()?;
    let mut clock = StoreClock::default();
    let mut ids = Vec::with_capacity(n as usize);
    for i in 0..u64::from(n) {
        let started = now - (u64::from(n) - i) * 3_600 * SEC;
        let meta = run_meta(started, &["latscope", "run", "--store", "latscope.db"]);
        let run = clock.time(|| store.create_run(&meta, &system(), &caps(false)))?;
        let cell_meta = timer_cell(Some(Nanos(seconds * SEC)), None);
        let cell = clock.time(|| store.add_cell(run, &cell_meta))?;
        let mut c = TimerCell::new(None);
        for _ in 0..seconds / 10 {
            let timeline = c.advance(rng, pool, 10);
            let cp = c.checkpoint(started + c.seconds * SEC, timeline);
            clock.time(|| store.write_checkpoint(run, cell, &cp))?;
        }
        let ended = Nanos(started + seconds * SEC);
        clock.time(|| store.finish_run(run, RunStatus::Complete, ended, &[]))?;
        ids.push(run);
        if (i + 1) % 100 == 0 {
            eprintln!("store_fill: {} of {n} runs", i + 1);
        }
    }
    let first = *ids.first().ok_or("no run stored")?;
    let last = *ids.last().ok_or("no run stored")?;
    Ok((first, last, clock.0))
}

// ---------------------------------------------------------------- monitor

struct Monitor {
    run: RunId,
    hour_windows: u64,
    minute_windows: u64,
    timeline_seconds: u64,
    checkpoints: u64,
    /// Seconds spent in the store's calls.
    store_seconds: f64,
}

/// Writes the windows of `span` starting at `start` from what each CPU
/// added; returns how many.
fn put_windows(
    store: &mut Store,
    clock: &mut StoreClock,
    run: RunId,
    span: Span,
    start: u64,
    added: &[Added],
) -> Res<u64> {
    let mut n = 0;
    for (cpu, a) in CPUS.iter().zip(added) {
        for (name, h) in [
            (metric::TIMER_LATENCY, &a.latency),
            (metric::TIMER_INTERVAL, &a.interval),
        ] {
            let w = Window {
                span,
                start_unix: Nanos(start),
                metric: name.to_string(),
                cpu: Some(CpuId(*cpu)),
                histogram: h.clone(),
            };
            clock.time(|| store.put_window(run, &w))?;
            n += 1;
        }
    }
    Ok(n)
}

/// One monitor run of `days` days ending at the last full hour, as the
/// default retention leaves it.
fn fill_monitor(store: &mut Store, rng: &mut Rng, pool: &Pool, days: u64) -> Res<Monitor> {
    let hour = 3_600 * SEC;
    let day = 24 * hour;
    let end = Span::Hour.start_of(Nanos(now_unix()?)).0;
    let start = end - days * day;
    let threshold = Some(Nanos(500_000));
    let mut clock = StoreClock::default();
    let meta = run_meta(start, &["latscope", "monitor", "--store", "latscope.db"]);
    let run = clock.time(|| store.create_run(&meta, &system(), &caps(false)))?;
    let cell_meta = timer_cell(None, threshold);
    let cell_id = clock.time(|| store.add_cell(run, &cell_meta))?;
    let mut cell = TimerCell::new(threshold);
    let detailed_from = end - RETAIN_SECONDS_DAYS.min(days) * day;
    let minutes_from = end - RETAIN_MINUTES_DAYS.min(days) * day;
    let mut m = Monitor {
        run,
        hour_windows: 0,
        minute_windows: 0,
        timeline_seconds: 0,
        checkpoints: 0,
        store_seconds: 0.0,
    };
    let (mut hours_of_day, mut days_done) = (0, 0);
    let mut t = start;
    while t < end {
        let hour_mark = cell.mark();
        for minute in 0..60 {
            let minute_start = t + minute * 60 * SEC;
            let minute_mark = (minute_start >= minutes_from).then(|| cell.mark());
            if minute_start >= detailed_from {
                // Six checkpoints of 10 s with their timeline.
                for _ in 0..6 {
                    let timeline = cell.advance(rng, pool, 10);
                    m.timeline_seconds += 10;
                    let cp = cell.checkpoint(start + cell.seconds * SEC, timeline);
                    clock.time(|| store.write_checkpoint(run, cell_id, &cp))?;
                    m.checkpoints += 1;
                }
            } else {
                cell.bulk_minute(rng, pool);
            }
            if let Some(mark) = minute_mark {
                let added = cell.since(&mark)?;
                m.minute_windows +=
                    put_windows(store, &mut clock, run, Span::Minute, minute_start, &added)?;
            }
        }
        if t < detailed_from {
            // The hourly checkpoint of the days whose details are gone.
            let cp = cell.checkpoint(t + hour, Vec::new());
            clock.time(|| store.write_checkpoint(run, cell_id, &cp))?;
            m.checkpoints += 1;
        }
        let added = cell.since(&hour_mark)?;
        m.hour_windows += put_windows(store, &mut clock, run, Span::Hour, t, &added)?;
        t += hour;
        // The retention, once an hour as the monitor applies it.
        let keep_from = t.saturating_sub(RETAIN_SECONDS_DAYS * day);
        let minutes_before = Nanos(t.saturating_sub(RETAIN_MINUTES_DAYS * day));
        let hours_before = Nanos(t.saturating_sub(RETAIN_HOURS_DAYS * day));
        clock.time(|| store.prune_windows(Span::Minute, minutes_before))?;
        clock.time(|| store.prune_windows(Span::Hour, hours_before))?;
        let before_second = keep_from.saturating_sub(start) / SEC;
        if before_second > 0 {
            clock.time(|| store.prune_timeline(cell_id, before_second))?;
        }
        clock.time(|| store.prune_intervals(run, Nanos(keep_from)))?;
        hours_of_day += 1;
        if hours_of_day == 24 {
            hours_of_day = 0;
            days_done += 1;
            eprintln!("store_fill: monitor day {days_done} of {days}");
        }
    }
    let note = ["monitor stopped by SIGTERM or SIGINT".to_string()];
    clock.time(|| store.finish_run(run, RunStatus::Complete, Nanos(end), &note))?;
    m.store_seconds = clock.0;
    Ok(m)
}

// ---------------------------------------------------------------- checkpoints

fn episode(seq: u32, cpu: u32, offset: u64, latency: u64) -> Episode {
    let own = 12_000;
    let other = latency.saturating_sub(own);
    let thread = Cause {
        kind: CauseKind::Thread,
        name: "kworker/1:2".into(),
        pid: Some(4242),
        policy: Some("other".into()),
        priority: Some(0),
        duration_ns: Nanos(other),
        parts: Vec::new(),
    };
    Episode {
        seq,
        cpu: CpuId(cpu),
        metric: metric::TIMER_LATENCY.into(),
        expiry_ns: Nanos(12_907_165_799_433 + offset),
        offset_ns: Nanos(offset),
        latency_ns: Nanos(latency),
        breakdown: Breakdown {
            irq_ns: Nanos(4_000),
            sched_ns: Nanos(other + 3_000),
            return_ns: Nanos(5_000),
            idle_at_expiry: seq & 1 == 0,
            causes: vec![
                thread.clone(),
                Cause {
                    kind: CauseKind::TimerIrq,
                    name: "hrtimer_wakeup".into(),
                    pid: None,
                    policy: None,
                    priority: None,
                    duration_ns: Nanos(7_000),
                    parts: Vec::new(),
                },
                Cause {
                    kind: CauseKind::Return,
                    name: "lat-timer/0".into(),
                    pid: Some(100),
                    policy: Some("fifo".into()),
                    priority: Some(95),
                    duration_ns: Nanos(5_000),
                    parts: Vec::new(),
                },
            ],
            blocking: Some(thread),
            unexplained_ns: Nanos::ZERO,
            steal_ns: None,
            steal_source: None,
            steal_irq_ns: None,
            steal_sched_ns: None,
            complete: true,
            held: None,
        },
        stacks: Vec::new(),
    }
}

fn event_window(seq: u32, cpu: u32, at: u64) -> EpisodeWindow {
    EpisodeWindow {
        seq,
        cpu: CpuId(cpu),
        events: (0..200u64)
            .map(|i| WindowEvent {
                time_ns: at + i * 1_500,
                cpu,
                tid: if i % 3 == 0 { 0 } else { 4242 },
                event: match i % 3 {
                    0 => "sched_switch",
                    1 => "irq_handler_entry",
                    _ => "softirq_entry",
                }
                .into(),
                name: format!("ev{}", i % 17),
                pid: 4242,
                prio: 120,
                value: i as i64,
                object: 0xffff_8880_0000_0000 + i,
            })
            .collect(),
        truncated: 0,
    }
}

/// Times `n` checkpoints of a traced timer cell; returns µs per call.
fn time_checkpoints(store: &mut Store, rng: &mut Rng, pool: &Pool, n: u32) -> Res<Vec<f64>> {
    let threshold = Some(Nanos(100_000));
    let started = now_unix()?;
    let meta = run_meta(
        started,
        &[
            "latscope",
            "run",
            "--trace",
            "--threshold",
            "100us",
            "--store",
            "latscope.db",
        ],
    );
    let run = store.create_run(&meta, &system(), &caps(true))?;
    let cell_id = store.add_cell(run, &timer_cell(None, threshold))?;
    let mut cell = TimerCell::new(threshold);
    let mut seq = 0u32;
    let mut us = Vec::with_capacity(n as usize);
    for i in 0..u64::from(n) {
        let timeline = cell.advance(rng, pool, 10);
        let mut cp = cell.checkpoint(started + cell.seconds * SEC, timeline);
        for k in 0..2u32 {
            seq += 1;
            let offset = (cell.seconds - 10 + u64::from(k) * 4) * SEC + 1_000 * u64::from(seq);
            let cpu = CPUS[(seq % 2) as usize];
            cp.episodes.push(episode(
                seq,
                cpu,
                offset,
                150_000 + 10_000 * u64::from(seq % 7),
            ));
            if seq <= 10 {
                cp.windows.push(event_window(seq, cpu, offset));
            }
        }
        cp.trace_summary = Some(TraceSummary {
            events: 40_000 * (i + 1),
            samples_decomposed: 20_000 * (i + 1),
            episodes_total: u64::from(seq),
            episodes_kept: u64::from(seq),
            episode_cap: 1_000,
            threshold_ns: Nanos(100_000),
            cause_totals: vec![CauseTotal {
                kind: CauseKind::Thread,
                name: "kworker/1:2".into(),
                episodes: u64::from(seq),
                total_ns: Nanos(140_000 * u64::from(seq)),
                max_ns: Nanos(200_000),
            }],
            ..TraceSummary::default()
        });
        let t = Instant::now();
        store.write_checkpoint(run, cell_id, &cp)?;
        us.push(t.elapsed().as_secs_f64() * 1e6);
    }
    store.finish_run(
        run,
        RunStatus::Complete,
        Nanos(started + cell.seconds * SEC),
        &[],
    )?;
    Ok(us)
}
