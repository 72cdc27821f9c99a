//! End-to-end tests of `latscope monitor` on the real binary: the endpoint,
//! the store (one run, per-minute and per-hour windows), SIGHUP with new
//! settings, SIGTERM, kill -9, and bad settings.

#![allow(clippy::unwrap_used)]

use std::net::SocketAddr;
use std::path::Path;
use std::thread::sleep;
use std::time::{Duration, Instant};

use crate::common::daemon::Daemon;
use crate::common::*;

fn get(addr: SocketAddr, path: &str) -> (u16, String, String) {
    http_get(addr, path)
}

/// The value of the first sample line that starts with `prefix` and
/// contains every one of `has`.
fn sample(body: &str, prefix: &str, has: &[&str]) -> Option<f64> {
    body.lines()
        .filter(|l| l.starts_with(prefix) && has.iter().all(|h| l.contains(h)))
        .find_map(|l| l.rsplit(' ').next()?.parse().ok())
}

/// The latest run as `show --json` prints it.
fn show_json(store: &Path) -> serde_json::Value {
    let o = latscope(&[
        "show",
        "latest",
        "--json",
        "--store",
        store.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    serde_json::from_str(&stdout(&o)).unwrap()
}

fn sqlite_count(store: &Path, sql: &str) -> i64 {
    let conn = rusqlite::Connection::open(store).unwrap();
    conn.query_row(sql, [], |r| r.get(0)).unwrap()
}

fn promtool_accepts(body: &str) {
    let Some((status, problems)) = promtool_check(body) else {
        eprintln!("skipped: needs promtool (apt-get install prometheus)");
        return;
    };
    assert!(
        status.success() && problems.trim().is_empty(),
        "promtool: {problems}"
    );
}

#[test]
fn serves_metrics_keeps_windows_and_stops_cleanly_on_sigterm() {
    let _g = shared();
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    let mut d = Daemon::start(&[
        "--cpus",
        "0",
        "--persist",
        "1s",
        "--store",
        store.to_str().unwrap(),
    ]);
    sleep(Duration::from_secs(5));
    let (status, ctype, body) = get(d.addr, "/metrics");
    assert_eq!(status, 200, "{body}");
    assert!(ctype.starts_with("text/plain"), "{ctype}");
    let count = sample(
        &body,
        "latscope_timer_latency_seconds_count",
        &["cpu=\"0\""],
    )
    .unwrap();
    // 1 ms for 5 s, as of the last 1 s checkpoint.
    assert!((2_500.0..=5_100.0).contains(&count), "{count} samples");
    assert!(
        body.contains("latscope_timer_latency_max_seconds{"),
        "{body}"
    );
    assert!(body.contains("window=\"minute\""));
    assert!(body.contains("latscope_info{"));
    assert_eq!(sample(&body, "latscope_monitor_epoch", &[]), Some(0.0));
    promtool_accepts(&body);
    let (hs, _, hb) = get(d.addr, "/healthz");
    assert_eq!(hs, 200, "{hb}");

    d.signal("TERM");
    assert_eq!(d.wait(Duration::from_secs(15)), Some(0));
    let runs = latscope(&["list", "--store", store.to_str().unwrap()]);
    let listed = stdout(&runs);
    assert!(listed.contains("complete"), "{listed}");
    let shown = latscope(&["show", "latest", "--store", store.to_str().unwrap()]);
    assert_eq!(shown.status.code(), Some(0), "{}", stderr(&shown));
    assert!(stdout(&shown).contains("timer.latency"));
    // The observed worst case from the hour windows: no whole hour
    // measured, no complete day.
    let text = stdout(&shown);
    assert!(
        text.contains("Observed worst case of timer.latency per minute, hour, day and week"),
        "{text}"
    );
    let day_row = text
        .lines()
        .find(|l| l.trim_start().starts_with("day"))
        .unwrap();
    assert!(day_row.split_whitespace().nth(1) == Some("0"), "{day_row}");
    // report and forecast read the monitor like a run, with its real hours.
    let page = dir.path().join("report.html");
    let o = latscope(&[
        "report",
        "latest",
        "--html",
        page.to_str().unwrap(),
        "--store",
        store.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains("Observed worst case per minute, hour, day and week (monitor)"),
        "no observed section"
    );
    let o = latscope(&["forecast", "latest", "--store", store.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("Observed worst case of timer.latency per minute, hour, day and week"),
        "{}",
        stdout(&o)
    );
    let o = latscope(&[
        "forecast",
        "latest",
        "--json",
        "--store",
        store.to_str().unwrap(),
    ]);
    let doc: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    // Seconds of monitoring measured no whole hour (nor minute, unless it
    // spanned one): the hour windows are there, but no hour is claimed.
    assert_eq!(
        doc["observed_blocks"]["hour"]["blocks"], 0,
        "{}",
        doc["observed_blocks"]
    );
    // The windows: a minute and an hour (or two, across a boundary) of
    // timer.latency on CPU 0 holding every sample stored.
    let stored = sqlite_count(
        &store,
        "SELECT samples FROM metrics WHERE name = 'timer.latency' AND cpu = 0 AND kind = 'raw'",
    );
    let minutes = sqlite_count(
        &store,
        "SELECT sum(samples) FROM monitor_windows WHERE span = 'minute' AND name = 'timer.latency' AND cpu = 0",
    );
    let hours = sqlite_count(
        &store,
        "SELECT sum(samples) FROM monitor_windows WHERE span = 'hour' AND name = 'timer.latency' AND cpu = 0",
    );
    assert!(
        stored >= count as i64,
        "{stored} stored, {count} served before"
    );
    assert_eq!(minutes, stored, "the minutes hold every stored sample");
    assert_eq!(hours, stored, "the hours too");
}

#[test]
fn sighup_starts_a_new_epoch_with_the_new_period_and_keeps_what_was_measured() {
    let _g = shared();
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    let config = dir.path().join("monitor.toml");
    std::fs::write(
        &config,
        "period = \"1ms\"\ncpus = \"0\"\npersist = \"1s\"\n",
    )
    .unwrap();
    let mut d = Daemon::start(&[
        "--config",
        config.to_str().unwrap(),
        "--store",
        store.to_str().unwrap(),
    ]);
    sleep(Duration::from_secs(3));
    // A bad file changes nothing.
    std::fs::write(&config, "period = \"soon\"\ncpus = \"0\"\n").unwrap();
    d.signal("HUP");
    d.wait_for_line("the running settings stay", Duration::from_secs(5));
    std::fs::write(
        &config,
        "period = \"2ms\"\ncpus = \"0\"\npersist = \"1s\"\n",
    )
    .unwrap();
    d.signal("HUP");
    d.wait_for_line("SIGHUP: now monitoring", Duration::from_secs(10));
    sleep(Duration::from_secs(4));
    let (_, _, body) = get(d.addr, "/metrics");
    assert_eq!(
        sample(&body, "latscope_monitor_epoch", &[]),
        Some(1.0),
        "{body}"
    );
    d.signal("TERM");
    assert_eq!(d.wait(Duration::from_secs(15)), Some(0));

    let doc = show_json(&store);
    let cells = doc["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 2, "one cell per epoch");
    for (cell, period_ms) in cells.iter().zip([1.0, 2.0]) {
        let secs = cell["duration_ns"].as_u64().unwrap() as f64 / 1e9;
        let n = cell["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == "timer.latency")
            .unwrap()["count"]
            .as_u64()
            .unwrap() as f64;
        let expected = secs * 1000.0 / period_ms;
        assert!(secs > 2.0, "epoch of {secs} s");
        assert!(
            (n - expected).abs() <= 0.1 * expected + 5.0,
            "{n} samples in {secs} s at {period_ms} ms"
        );
    }
}

/// Settings that parse but cannot be applied (an offline CPU, an address
/// in use) are refused as a whole: the daemon keeps measuring with the
/// running ones, says why and counts it, and still closes its run on
/// SIGTERM (it used to exit at once with its run left open).
#[test]
fn sighup_settings_that_cannot_be_applied_are_refused_and_the_run_still_closes() {
    let _g = shared();
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    let config = dir.path().join("monitor.toml");
    let good = "period = \"1ms\"\ncpus = \"0\"\npersist = \"1s\"\n";
    std::fs::write(&config, format!("{good}listen = \"127.0.0.1:0\"\n")).unwrap();
    // The address comes from the file, so that a reload can change it.
    let mut d = Daemon::start_raw(&[
        "--config",
        config.to_str().unwrap(),
        "--store",
        store.to_str().unwrap(),
    ]);
    sleep(Duration::from_secs(2));
    let offline = online().iter().max().unwrap() + 5;
    std::fs::write(
        &config,
        format!("period = \"1ms\"\ncpus = \"{offline}\"\nlisten = \"127.0.0.1:0\"\n"),
    )
    .unwrap();
    d.signal("HUP");
    d.wait_for_line("the new settings are refused", Duration::from_secs(10));
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    std::fs::write(&config, format!("{good}listen = \"127.0.0.1:{port}\"\n")).unwrap();
    d.signal("HUP");
    d.wait_for_line("Address already in use", Duration::from_secs(10));
    let (status, _, body) = get(d.addr, "/metrics");
    assert_eq!(status, 200, "still serving on the old address");
    assert_eq!(
        sample(&body, "latscope_config_reloads_refused_total", &[]),
        Some(2.0),
        "{body}"
    );
    d.signal("TERM");
    assert_eq!(d.wait(Duration::from_secs(15)), Some(0));
    let doc = show_json(&store);
    assert_eq!(doc["status"], "complete", "{}", doc["status"]);
    // Every epoch measured the running settings' CPU 0.
    for cell in doc["cells"].as_array().unwrap() {
        let cpus: Vec<u64> = cell["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["name"] == "timer.latency")
            .map(|m| m["cpu"].as_u64().unwrap())
            .collect();
        assert_eq!(cpus, [0], "cell {}", cell["index"]);
    }
}

#[test]
fn kill_9_loses_at_most_one_persistence_interval() {
    let _g = shared();
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    let mut d = Daemon::start(&[
        "--cpus",
        "0",
        "--persist",
        "1s",
        "--store",
        store.to_str().unwrap(),
    ]);
    let started = Instant::now();
    sleep(Duration::from_secs(6));
    d.signal("KILL");
    let alive = started.elapsed().as_secs_f64();
    let _ = d.wait(Duration::from_secs(5));
    let doc = show_json(&store);
    assert_eq!(doc["status"], "interrupted", "its process is gone");
    let secs = doc["cells"][0]["duration_ns"].as_u64().unwrap() as f64 / 1e9;
    // Alive for `alive` s from our clock, of which starting up (before the
    // first sample) takes a moment: what is stored reaches within one
    // persistence interval (1 s) and that start-up of the kill.
    assert!(secs >= alive - 1.0 - 1.5, "stored {secs} s of {alive} s");
}

#[test]
fn a_noise_duty_cycle_runs_beside_the_timer_and_the_machine_s_activity_is_served() {
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    let mut d = Daemon::start(&[
        "--cpus",
        "0-1",
        "--noise",
        "200ms/1s",
        "--persist",
        "1s",
        "--store",
        store.to_str().unwrap(),
    ]);
    assert!(d.said("noise 200ms/1.00s per CPU"), "{:?}", d.lines);
    sleep(Duration::from_secs(6));
    let (status, _, body) = get(d.addr, "/metrics");
    assert_eq!(status, 200, "{body}");
    // Each CPU spins 200 ms a second from about 1 s in (CPU 1 half a cycle
    // later): by the last checkpoint, at least 3 active periods each.
    for cpu in ["0", "1"] {
        let l = format!("cpu=\"{cpu}\"");
        let active = sample(&body, "latscope_noise_active_seconds_total", &[&l]).unwrap();
        assert!((0.55..=1.05).contains(&active), "CPU {cpu}: {active} s");
        assert!(sample(&body, "latscope_noise_gap_seconds_count", &[&l]).is_some());
        assert!(sample(&body, "latscope_noise_interruptions_total", &[&l]).is_some());
    }
    for family in [
        "latscope_workload_interrupts_total",
        "latscope_workload_context_switches_total",
        "latscope_workload_processes_total",
    ] {
        assert!(sample(&body, family, &[]).unwrap() > 0.0, "{family}");
    }
    assert!(sample(
        &body,
        "latscope_workload_softirqs_total",
        &["vector=\"TIMER\""]
    )
    .is_some());
    assert!(
        sample(
            &body,
            "latscope_workload_cpu_seconds_total",
            &["cpu=\"1\"", "mode=\"steal\""]
        )
        .is_some(),
        "{body}"
    );
    promtool_accepts(&body);
    d.signal("TERM");
    assert_eq!(d.wait(Duration::from_secs(15)), Some(0));
    // The run keeps the duty cycle in its settings and its noise figures,
    // and the minutes of noise.gap.
    let doc = show_json(&store);
    let cell = &doc["cells"][0];
    assert_eq!(
        cell["settings"]["noise_duty"]["on_ns"], 200_000_000,
        "{cell}"
    );
    assert!(cell["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .any(|m| m["name"] == "noise.gap"));
    let minutes = sqlite_count(
        &store,
        "SELECT count(*) FROM monitor_windows WHERE span = 'minute' AND name = 'noise.gap'",
    );
    assert!(minutes >= 2, "{minutes} minute windows of noise.gap");
}

#[test]
fn bad_settings_are_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    let s = store.to_str().unwrap();
    for (args, code, expect) in [
        (
            vec!["monitor", "--listen", "0.0.0.0:9464", "--store", s],
            2,
            "allow-remote",
        ),
        (
            vec!["monitor", "--period", "fast", "--store", s],
            2,
            "period",
        ),
        (
            vec![
                "monitor",
                "--config",
                "/nonexistent/monitor.toml",
                "--store",
                s,
            ],
            2,
            "cannot read the configuration",
        ),
        (vec!["monitor", "--cpus", "99", "--store", s], 2, "--cpus"),
        (
            vec!["monitor", "--noise", "1s/1s", "--store", s],
            2,
            "noise",
        ),
    ] {
        let o = latscope(&args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(code), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(expect), "{args:?}: {err}");
    }
    // A port another program holds: one line, exit 1.
    let held = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = held.local_addr().unwrap().to_string();
    let o = latscope(&["monitor", "--listen", &addr, "--store", s]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("cannot listen"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

/// What abusive clients do to the endpoint during one phase: 500
/// connections opened and held, garbage, a 1 MB header and slowloris
/// (a header byte every 100 ms), over and over until `until` (a round in
/// progress then stops too, so that phases keep their length).
fn abuse(addr: SocketAddr, until: Instant) -> u64 {
    use std::io::Write as _;
    use std::net::TcpStream;
    let mut rounds = 0;
    let big = format!(
        "GET /metrics HTTP/1.1\r\nX-Big: {}\r\n\r\n",
        "a".repeat(1 << 20)
    );
    while Instant::now() < until {
        let mut held: Vec<TcpStream> = (0..500)
            .take_while(|_| Instant::now() < until)
            .filter_map(|_| TcpStream::connect_timeout(&addr, Duration::from_secs(1)).ok())
            .collect();
        for s in held.iter_mut().take(20) {
            let _ = s.write_all(b"\x00\xff garbage \r\n\r\n\x16\x03\x01");
        }
        if let Ok(mut s) = TcpStream::connect(addr) {
            let _ = s.write_all(big.as_bytes());
        }
        for _ in 0..10 {
            if Instant::now() >= until {
                break;
            }
            for s in held.iter_mut().skip(20).take(20) {
                let _ = s.write_all(b"G");
            }
            sleep(Duration::from_millis(100));
        }
        rounds += 1;
        drop(held);
    }
    rounds
}

/// A plain TCP server for the control phases, built as the endpoint is (one
/// thread, a single-threaded tokio runtime, so it sleeps in epoll between
/// clients): it serves at most 64 connections at once and refuses the others
/// with a 503, reads and drops what a connection sends, and closes it after
/// 16 KiB or 5 s. The same clients then load CPU 0 and the loopback in the
/// control phases as in the abused ones, and what differs is the daemon's
/// endpoint alone.
struct Sink {
    addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Sink {
    fn start() -> Sink {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_io()
                .enable_time()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                let slots = std::sync::Arc::new(tokio::sync::Semaphore::new(64));
                let serve = async {
                    loop {
                        let Ok((s, _)) = listener.accept().await else {
                            tokio::time::sleep(Duration::from_millis(100)).await;
                            continue;
                        };
                        let Ok(slot) = std::sync::Arc::clone(&slots).try_acquire_owned() else {
                            let _ = s.try_write(b"HTTP/1.1 503 Service Unavailable\r\n\r\n");
                            continue;
                        };
                        tokio::spawn(async move {
                            let _slot = slot;
                            let mut buf = [0u8; 8192];
                            let mut read = 0;
                            let drain = async {
                                while read <= 16 * 1024 && s.readable().await.is_ok() {
                                    match s.try_read(&mut buf) {
                                        Ok(0) => break,
                                        Ok(n) => read += n,
                                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                                        Err(_) => break,
                                    }
                                }
                            };
                            let _ = tokio::time::timeout(Duration::from_secs(5), drain).await;
                        });
                    }
                };
                tokio::select! {
                    _ = serve => {}
                    _ = stopped => {}
                }
            });
        });
        Sink {
            addr,
            stop: Some(stop),
            thread: Some(thread),
        }
    }
}

impl Drop for Sink {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The whole seconds of some phases: their per-second maxima in µs, sorted,
/// and their samples.
#[derive(Default)]
struct Seconds {
    maxima: Vec<f64>,
    samples: u64,
}

impl Seconds {
    /// Adds a phase's whole seconds, the first one left out (the clients
    /// were still connecting).
    fn add(
        &mut self,
        timeline: &[latscope_stats::SecondStats],
        cell_start: u64,
        (from, to): (u64, u64),
    ) {
        let first = (from.saturating_sub(cell_start)).div_ceil(1_000_000_000) + 1;
        let last = to.saturating_sub(cell_start) / 1_000_000_000;
        for s in first..last {
            if let Some(x) = timeline.get(s as usize) {
                self.maxima.push(x.max as f64 / 1e3);
                self.samples += x.count;
            }
        }
        self.maxima.sort_by(f64::total_cmp);
    }

    fn of(timeline: &[latscope_stats::SecondStats], cell_start: u64, phase: (u64, u64)) -> Seconds {
        let mut s = Seconds::default();
        s.add(timeline, cell_start, phase);
        s
    }

    fn n(&self) -> usize {
        self.maxima.len()
    }

    fn rate(&self) -> f64 {
        self.samples as f64 / self.n().max(1) as f64
    }

    fn median(&self) -> f64 {
        self.maxima.get(self.n() / 2).copied().unwrap_or(0.0)
    }
}

/// The daemon measuring CPU 1 with its endpoint, abusive clients and a
/// control server on CPU 0; `None` (and a skip notice) on one CPU.
fn abused_daemon(store: &Path) -> Option<(Daemon, Sink)> {
    if online().len() < 2 {
        eprintln!("skipped: needs 2 CPUs (the endpoint runs on the one not measured)");
        return None;
    }
    let d = Daemon::start(&[
        "--cpus",
        "1",
        "--persist",
        "1s",
        "--store",
        store.to_str().unwrap(),
    ]);
    // The clients, and the control's server, run on CPU 0 with the
    // endpoint: what is tested is what serving them costs the measured CPU,
    // not a client hammering the network stack from the measured CPU itself
    // (its softirqs would delay the timer whatever the daemon did; CI saw
    // that once, unpinned).
    latscope_platform::set_affinity_set(&[latscope_model::CpuId(0)]).unwrap();
    let sink = Sink::start();
    sleep(Duration::from_secs(2));
    Some((d, sink))
}

/// A phase: whether it was abused, and its monotonic span in ns.
type Phase = (bool, (u64, u64));

/// `n` phases of `phase` each, C A A C repeated (ABBA): the abused ones
/// against the daemon's endpoint, the others against the control server.
/// Returns each phase (abused?, monotonic span) and the rounds of abuse.
fn abuse_phases(d: &Daemon, sink: &Sink, n: usize, phase: Duration) -> (Vec<Phase>, u64) {
    let mut phases = Vec::new();
    let mut rounds = 0;
    for i in 0..n {
        let abused = matches!(i % 4, 1 | 2);
        let target = if abused { d.addr } else { sink.addr };
        let from = latscope_platform::monotonic_ns();
        let until = Instant::now() + phase;
        let r = abuse(target, until);
        if abused {
            rounds += r;
        }
        sleep(until.saturating_duration_since(Instant::now()));
        let to = latscope_platform::monotonic_ns();
        println!(
            "phase {i}: {} for {:.1} s, {r} rounds",
            if abused { "abuse" } else { "control" },
            (to - from) as f64 / 1e9
        );
        phases.push((abused, (from, to)));
    }
    (phases, rounds)
}

/// Stops the daemon after abuse (it must still answer and exit cleanly)
/// and returns CPU 1's timer timeline and the cell's start.
fn stop_and_load(mut d: Daemon, store: &Path) -> (Vec<latscope_stats::SecondStats>, u64) {
    let (hs, _, hb) = get(d.addr, "/healthz");
    assert_eq!(hs, 200, "{hb}");
    d.signal("TERM");
    assert_eq!(d.wait(Duration::from_secs(15)), Some(0));
    let st = latscope_store::Store::open_existing(store).unwrap();
    let id = st.resolve("latest").unwrap();
    let run = st.load_run(id).unwrap();
    let cell = st.cell_ids(id).unwrap()[0];
    let timeline = st
        .load_timeline(
            cell,
            latscope_model::metric::TIMER_LATENCY,
            Some(latscope_model::CpuId(1)),
        )
        .unwrap();
    (timeline, run.cells[0].meta.monotonic_start_ns.0)
}

/// What CI runs: two abused phases between two control ones (16 s). The
/// daemon keeps serving, exits cleanly, and its measuring thread keeps its
/// pace under abuse. Whether the abuse delays that thread beyond the host's
/// own scatter takes eight ABBA pairs to tell: `endpoint_abuse_ab`, run by
/// bench/endpoint-abuse.sh.
#[test]
fn abusive_clients_neither_stop_the_daemon_nor_stall_its_measuring_thread() {
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    let Some((d, sink)) = abused_daemon(&store) else {
        return;
    };
    let (phases, rounds) = abuse_phases(&d, &sink, 4, Duration::from_secs(4));
    drop(sink);
    let (timeline, start) = stop_and_load(d, &store);
    assert!(rounds >= 2, "{rounds} rounds of abuse");
    let (mut control, mut abused) = (Seconds::default(), Seconds::default());
    for (is_abused, span) in &phases {
        let s = if *is_abused {
            &mut abused
        } else {
            &mut control
        };
        s.add(&timeline, start, *span);
    }
    println!(
        "endpoint abuse: {} s abused: {:.0} samples/s, median per-second max {:.1} us; \
         {} s control: {:.0} samples/s, median per-second max {:.1} us",
        abused.n(),
        abused.rate(),
        abused.median(),
        control.n(),
        control.rate(),
        control.median()
    );
    assert!(abused.n() >= 4 && control.n() >= 4, "whole seconds judged");
    // A stalled thread loses its wake-ups; a host stall of a few hundred
    // milliseconds in one phase costs a few per cent, so the bound is 10 %.
    assert!(
        abused.rate() >= 0.9 * control.rate(),
        "{:.0} samples/s under abuse against {:.0}",
        abused.rate(),
        control.rate()
    );
}

/// The latency verdict, 16 phases of 5 s (80 s): run by
/// bench/endpoint-abuse.sh, quoted in docs/monitor.md.
#[test]
#[ignore = "an 80 s ABBA measurement; bench/endpoint-abuse.sh runs it"]
fn endpoint_abuse_ab() {
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    let Some((d, sink)) = abused_daemon(&store) else {
        return;
    };
    // The control is the same clients against a plain server (`Sink`), so
    // that CPU 0's load and the loopback's traffic weigh on both phases and
    // only the endpoint differs: with an idle CPU 0 as the control, a busy
    // vCPU 0 was itself a difference the host could answer for. Control and
    // abuse alternate in 5 s phases, C A A C repeated (ABBA), so a drift of
    // the host's noise weighs on both. The host stretches a few seconds'
    // maxima by milliseconds now and then (a phase's median per-second
    // maximum ranged from 23 to 5,047 us over CI runs, under control and
    // abuse alike; one run's two 6 s abused phases read 4,869 against 1,001
    // and 214 against 61 us, where the old test, C A C A twice, failed), so
    // the verdict pools the seconds of all the judged phases and asks the
    // pairs to agree. An endpoint that does delay the thread does so in
    // every pair. Pinned by hand to the measured CPU, the endpoint failed
    // the test on a quiet host (256 against 28 us, higher in 8 of 8 pairs,
    // against an earlier control server that polled). With the host's own
    // maxima at 118-446 us it passed three times (187 against 134 us with
    // all 7 judged pairs higher; 211 against 118; 531 against 446): a
    // delay of a couple of hundred microseconds is told apart only when
    // the host is quieter than that. Catching it at this VM's usual noise
    // would take a tighter margin, and so more pairs to keep the agreement
    // rule from failing on chance.
    let (phases, rounds) = abuse_phases(&d, &sink, 16, Duration::from_secs(5));
    drop(sink);
    let (timeline, start) = stop_and_load(d, &store);
    assert!(rounds >= 8, "{rounds} rounds of abuse");
    let (mut control, mut abused) = (Seconds::default(), Seconds::default());
    let (mut judged, mut higher) = (0, 0);
    for (k, pair) in phases.chunks(2).enumerate() {
        let (c, a) = if pair[0].0 {
            (pair[1].1, pair[0].1)
        } else {
            (pair[0].1, pair[1].1)
        };
        let (cs, as_) = (
            Seconds::of(&timeline, start, c),
            Seconds::of(&timeline, start, a),
        );
        println!(
            "endpoint abuse, pair {k} (500 held connections, garbage, a 1 MB header, slowloris): \
             {} s abused: {:.0} samples/s, median per-second max {:.1} us; \
             {} s control: {:.0} samples/s, median per-second max {:.1} us",
            as_.n(),
            as_.rate(),
            as_.median(),
            cs.n(),
            cs.rate(),
            cs.median()
        );
        assert!(
            cs.n() >= 2 && as_.n() >= 2,
            "{} and {} seconds",
            cs.n(),
            as_.n()
        );
        // Every pair is judged, however noisy: a pair left out because its
        // control was noisy would leave the pairs whose control was quiet,
        // and those are higher under abuse more often than not, even for an
        // endpoint that costs nothing (the bias behind a CI failure: 4 of 4
        // such pairs higher, the 4 noisy ones left out). Host noise lands on
        // control and abuse alike and only makes the test less sensitive.
        judged += 1;
        if as_.median() > cs.median() {
            higher += 1;
        }
        control.add(&timeline, start, c);
        abused.add(&timeline, start, a);
    }
    println!(
        "endpoint abuse, {judged} judged pairs: {} s abused: {:.0} samples/s, median per-second max {:.1} us; \
         {} s control: {:.0} samples/s, median per-second max {:.1} us; abused higher in {higher} pairs",
        abused.n(),
        abused.rate(),
        abused.median(),
        control.n(),
        control.rate(),
        control.median()
    );
    // The measuring thread kept its pace, whatever the host's noise: no stall.
    assert!(
        abused.rate() >= 0.98 * control.rate(),
        "{:.0} samples/s under abuse against {:.0}",
        abused.rate(),
        control.rate()
    );
    // The pairs' verdict is a one-sided sign test: with no effect each pair
    // is higher under abuse with even odds, so the test fails only at
    // p < 0.01, which with 8 pairs is all 8 higher (p = 0.004; 7 of 8 is
    // p = 0.035). When the control itself is dominated by the host's stalls
    // the test cannot tell a delay of a few hundred microseconds and says so.
    let p = sign_test_p(higher, judged);
    println!("sign test: {higher} of {judged} pairs higher under abuse, one-sided p = {p:.4}");
    if control.median() > 2_000.0 {
        println!(
            "skipped: machine too noisy (control: median per-second max {:.0} us over {} s, bound 2000)",
            control.median(),
            control.n()
        );
        return;
    }
    // And its latency: the typical second's worst case over all the abused
    // seconds within the host's own scatter of the control's, unless the
    // pairs do not agree (sign test p >= 0.01): a host burst over a few
    // abused phases can lift the pooled median, but not the phases it
    // missed. (A CI run lifted it to 131.9 against 37.3 us with 4 of 7 pairs
    // higher, three of the others at 19-44 us under abuse.) An endpoint that
    // delays the thread is higher in every pair: pinned to the measured CPU
    // it was 8 of 8 (p = 0.004).
    assert!(
        abused.median() <= 1.5 * control.median() + 50.0 || p >= 0.01,
        "the abuse delayed the measuring thread: median per-second max {:.1} us under abuse \
         against {:.1} us, higher in {higher} of {judged} pairs",
        abused.median(),
        control.median()
    );
}

/// One-sided sign test: the chance of `higher` or more of `n` pairs being
/// higher when each is higher with probability 1/2.
fn sign_test_p(higher: usize, n: usize) -> f64 {
    (higher..=n).map(|k| choose(n, k)).sum::<f64>() / 2f64.powi(n as i32)
}

fn choose(n: usize, k: usize) -> f64 {
    (0..k).fold(1.0, |c, i| c * (n - i) as f64 / (i + 1) as f64)
}

#[test]
fn the_sign_test_gives_the_binomial_tail() {
    assert_eq!(sign_test_p(4, 4), 1.0 / 16.0);
    assert_eq!(sign_test_p(0, 8), 1.0);
    assert!((sign_test_p(7, 8) - 9.0 / 256.0).abs() < 1e-12);
    assert!(sign_test_p(8, 8) < 0.01 && sign_test_p(7, 8) >= 0.01);
}
