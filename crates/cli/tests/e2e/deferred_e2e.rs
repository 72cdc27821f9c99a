//! Deferred work named by function and device, on the real kernel, on
//! both tracing backends:
//!
//! - a UDP flood over loopback sent from the measured CPU is named as
//!   NAPI polls of the per-CPU backlog (`napi:(no_device)`) inside NET_RX,
//!   in the metrics and in the episodes' NET_RX shares;
//! - a thread on the measured CPU whose receive times out every
//!   millisecond is named as `process_timeout` timer-wheel callbacks
//!   inside TIMER, one per time-out it counted;
//! - the counts and times per function and device agree with `bpftrace`
//!   attached to the same tracepoints over the same span.
//!
//! The control is the same run without the interferers: kernel work
//! cannot be put below the probe's priority, so "below" is "absent" here.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::net::UdpSocket;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use crate::common::control::{any_too_noisy, control_and_interfered, too_noisy};
use crate::common::*;
use latscope_model::CpuId;
use latscope_platform::{monotonic_ns, set_affinity};
use serde_json::Value;

/// The measured CPU: on the development VM CPU 1 emits no tracepoints
/// from idle (docs/tracing.md).
const CPU: u32 = 0;

/// What the interferers did: the time of each receive time-out.
struct Interfered {
    timeouts: Vec<u64>,
    datagrams: u64,
}

/// A thread pinned to the measured CPU whose receive on an empty socket
/// times out every millisecond (`SO_RCVTIMEO`: `schedule_timeout`, a
/// timer-wheel timer whose callback is `process_timeout`), and a sender
/// on the same CPU that sends 4 datagrams every 2 ms over loopback (their
/// NET_RX work runs on the sender's CPU, in the per-CPU backlog's NAPI
/// poll) to a receiver on any CPU.
fn interferers(stop: Arc<AtomicBool>) -> std::thread::JoinHandle<Interfered> {
    std::thread::spawn(move || {
        let s1 = Arc::clone(&stop);
        let timeouts = std::thread::spawn(move || {
            set_affinity(CpuId(CPU)).unwrap();
            let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
            sock.set_read_timeout(Some(Duration::from_millis(1)))
                .unwrap();
            let mut buf = [0u8; 16];
            let mut times = Vec::with_capacity(1 << 14);
            while !s1.load(Ordering::Relaxed) {
                if sock.recv(&mut buf).is_err() {
                    times.push(monotonic_ns());
                }
            }
            times
        });
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        rx.set_read_timeout(Some(Duration::from_millis(50)))
            .unwrap();
        let addr = rx.local_addr().unwrap();
        let s2 = Arc::clone(&stop);
        let receiver = std::thread::spawn(move || {
            let mut buf = [0u8; 1024];
            while !s2.load(Ordering::Relaxed) {
                let _ = rx.recv(&mut buf);
            }
        });
        set_affinity(CpuId(CPU)).unwrap();
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let payload = [7u8; 256];
        let mut datagrams = 0u64;
        while !stop.load(Ordering::Relaxed) {
            for _ in 0..4 {
                if tx.send_to(&payload, addr).is_ok() {
                    datagrams += 1;
                }
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        receiver.join().unwrap();
        Interfered {
            timeouts: timeouts.join().unwrap(),
            datagrams,
        }
    })
}

/// A shell loop at nice 19 on every CPU but the measured one, until
/// `stop` (`nice` and `taskset` from coreutils and util-linux).
fn idle_fillers(stop: Arc<AtomicBool>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let mut loops: Vec<Child> = online()
            .into_iter()
            .filter(|&c| c != CPU)
            .filter_map(|c| {
                Command::new("nice")
                    .args(["-n", "19", "taskset", "-c", &c.to_string()])
                    .args(["sh", "-c", "while :; do :; done"])
                    .spawn()
                    .ok()
            })
            .collect();
        while !stop.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(20));
        }
        for l in &mut loops {
            let _ = l.kill();
            let _ = l.wait();
        }
    })
}

/// `latscope run --trace` on the measured CPU; `None` (and a skip line)
/// where this machine cannot trace.
fn traced_run(dir: &std::path::Path) -> Option<Value> {
    let store = store_in(dir);
    let json = dir.join("run.json");
    let o = latscope(&[
        "run",
        "--trace",
        "--trace-backend",
        backend(),
        "--cpus",
        &CPU.to_string(),
        "--period",
        "1ms",
        "--duration",
        "4s",
        "--threshold",
        "100us",
        "--store",
        store.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
        "--quiet",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let doc = read_json(&json);
    if doc["capabilities"]["tracepoints"] != Value::Bool(true) {
        eprintln!("skipped: needs kernel tracepoints");
        return None;
    }
    Some(doc)
}

fn trace(doc: &Value) -> &Value {
    &doc["cells"][0]["trace"]
}

/// (count, total ns) of every `deferred.exec.` metric, by `kind:source`
/// summed over the contexts it ran in.
/// (count, total ns, longest ns) per source of the run's deferred work.
fn deferred(doc: &Value) -> BTreeMap<String, (u64, u64, u64)> {
    let mut out: BTreeMap<String, (u64, u64, u64)> = BTreeMap::new();
    for m in doc["cells"][0]["metrics"].as_array().unwrap() {
        let name = m["name"].as_str().unwrap();
        let Some(rest) = name.strip_prefix("deferred.exec.") else {
            continue;
        };
        let Some((_, source)) = rest.split_once('.') else {
            continue;
        };
        let count = m["count"].as_u64().unwrap();
        let total = (m["mean_ns"].as_f64().unwrap_or(0.0) * count as f64).round() as u64;
        let e = out.entry(source.to_string()).or_default();
        e.0 += count;
        e.1 += total;
        e.2 = e.2.max(m["max_ns"].as_u64().unwrap_or(0));
    }
    out
}

fn metric_count(doc: &Value, name: &str) -> u64 {
    metrics(doc, name)
        .first()
        .map_or(0, |m| m["count"].as_u64().unwrap())
}

fn metric_total(doc: &Value, name: &str) -> f64 {
    metrics(doc, name).first().map_or(0.0, |m| {
        m["mean_ns"].as_f64().unwrap_or(0.0) * m["count"].as_f64().unwrap_or(0.0)
    })
}

/// The traced span of a run, CLOCK_MONOTONIC ns.
fn span(doc: &Value) -> (u64, u64) {
    let t = trace(doc);
    (
        t["traced_from_ns"].as_u64().unwrap(),
        t["traced_to_ns"].as_u64().unwrap(),
    )
}

#[test]
fn napi_polls_and_timer_callbacks_are_named_by_device_and_function() {
    on_backend("perf", named_case);
}

fn named_case() {
    let _g = serial();
    if !is_root() {
        eprintln!("skipped: needs root for tracepoints");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (runs, did) = control_and_interfered(interferers, |name| {
        let d = dir.path().join(name);
        std::fs::create_dir_all(&d).unwrap();
        traced_run(&d)
    });
    let (Some(control), Some(doc)) = (runs.control, runs.interfered) else {
        return;
    };
    let (from, to) = span(&doc);
    assert!(
        to > from,
        "the run records its traced span: {}",
        trace(&doc)
    );
    let timeouts = did
        .timeouts
        .iter()
        .filter(|&&t| t >= from && t <= to)
        .count() as f64;
    let (ctl, got) = (deferred(&control), deferred(&doc));
    let (cf, ct) = span(&control);
    // The control's own process_timeout callbacks, at its rate over the
    // interfered run's span.
    let scale = (to - from) as f64 / (ct - cf).max(1) as f64;
    let background = ctl.get("timer:process_timeout").map_or(0, |c| c.0) as f64 * scale;
    let callbacks = got.get("timer:process_timeout").map_or(0, |c| c.0) as f64;
    let added = callbacks - background;
    let napi = got.get("napi:(no_device)").copied().unwrap_or_default();
    let net_rx = metric_total(&doc, "softirq.exec.NET_RX");
    eprintln!(
        "control: {:.0} process_timeout callbacks scaled to the span; {} NET_RX runs",
        background,
        metric_count(&control, "softirq.exec.NET_RX")
    );
    eprintln!(
        "interfered: {timeouts} receive time-outs in the traced span, {callbacks} process_timeout callbacks ({added:.0} added); {} datagrams; napi:(no_device) {} polls, {} ns of NET_RX's {net_rx:.0} ns; lost {}",
        did.datagrams, napi.0, napi.1, trace(&doc)["lost_records"]
    );
    // A 1 ms time-out is one jiffy or two, rounded to the timer wheel:
    // about 100 a second at HZ=250.
    assert!(timeouts > 200.0, "the time-out thread ran ({timeouts})");
    let lost = trace(&doc)["lost_records"].as_u64().unwrap_or(0);
    if any_too_noisy(&[
        (
            "control: process_timeout callbacks per second on the measured CPU",
            100.0,
            background / ((to - from) as f64 / 1e9),
        ),
        // The tracer thread shares the machine: when it is held off its
        // CPU long enough, the kernel drops records and counts fall short.
        ("records the kernel dropped", 0.0, lost as f64),
    ])
    .is_some()
    {
        return;
    }
    // One callback per time-out; the machine's own (the control's) vary.
    assert!(
        (added - timeouts).abs() <= 0.15 * timeouts + 30.0,
        "{added:.0} process_timeout callbacks added for {timeouts} time-outs"
    );
    assert!(napi.0 > 1000, "{} NAPI polls named", napi.0);
    assert!(
        napi.1 as f64 >= 0.5 * net_rx,
        "NAPI polls {} ns of NET_RX's {net_rx} ns",
        napi.1
    );
    episodes_name_the_backlog(&doc);
}

/// Every NET_RX share of 10 µs or more in an episode names the backlog's
/// NAPI polls inside it (a share can be the softirq's tail after its last
/// poll, or begin before the window: a few may not).
fn episodes_name_the_backlog(doc: &Value) {
    let (mut shares, mut named) = (0, 0);
    for e in doc["episodes"].as_array().into_iter().flatten() {
        for c in e["breakdown"]["causes"].as_array().unwrap() {
            if c["kind"] != "softirq" || c["name"] != "NET_RX" {
                continue;
            }
            if c["duration_ns"].as_u64().unwrap() < 10_000 {
                continue;
            }
            shares += 1;
            let parts = c["parts"].as_array().cloned().unwrap_or_default();
            if parts.iter().any(|p| p["name"] == "napi:(no_device)") {
                named += 1;
            } else {
                eprintln!("NET_RX share without its polls: {c}");
            }
        }
    }
    eprintln!(
        "{named} of {shares} NET_RX shares of 10 µs or more in episodes name napi:(no_device)"
    );
    if shares < 3 {
        eprintln!(
            "skipped part: {shares} episodes held a NET_RX share of 10 µs or more (3 needed to judge)"
        );
        return;
    }
    // A few may not (above): one in five, and one whatever the count (CI
    // once saw 2 of 3, the third a 93 µs tail with no poll inside it).
    let allowed = (shares / 5).max(1);
    assert!(
        shares - named <= allowed,
        "{named} of {shares} NET_RX shares name the backlog's polls ({allowed} may not)"
    );
}

/// Counts and total times on every CPU (latscope's interrupt and
/// deferred-work statistics are system-wide) per 50 ms bucket of the
/// clock, as maps printed at exit: `@tc`/`@tt`/`@tx` (count, total,
/// longest) per timer-wheel callback function, `@nc`/`@nt`/`@nx` per NAPI
/// device (timed from the NET_RX softirq's entry or the previous poll on
/// that CPU, as latscope times it).
/// Aggregating, not printing per event: a `printf` in a probe costs
/// microseconds, which would land inside the intervals latscope measures
/// from its own programs on the same tracepoints. bpftrace's probes run
/// first, so what its NAPI probe does after reading the clock at a poll
/// falls inside latscope's interval, and what its entry probe does after
/// reading it at the softirq's entry inside bpftrace's: the NAPI probe
/// therefore does its lookups, names the instance (once) and counts before
/// it reads the clock it times with, leaving three map updates after it
/// against the entry probe's one. Reading the clock first and counting
/// after made latscope's polls 0.4-0.6 µs longer each, 1.8 µs on a slow
/// host (a string copy there made them 10 % longer). It keys by the
/// instance, not its name.
const BPFTRACE: &str = r#"
tracepoint:timer:timer_expire_entry { @ts[cpu] = nsecs; @tm[cpu] = args->timer; @fn[cpu] = args->function; }
tracepoint:timer:timer_expire_exit {
  $t = nsecs; $s = @ts[cpu];
  if ($s && @tm[cpu] == args->timer) { $b = $s / 50000000; $f = @fn[cpu]; @tc[ksym($f), $b] = count(); @tt[ksym($f), $b] = sum($t - $s); @tx[ksym($f), $b] = max($t - $s); }
  @ts[cpu] = 0;
}
tracepoint:irq:softirq_entry /args->vec == 3/ { @mark[cpu] = nsecs; }
tracepoint:irq:softirq_exit /args->vec == 3/ { @mark[cpu] = 0; }
tracepoint:napi:napi_poll {
  $m = @mark[cpu];
  if (!@named[args->napi]) { @named[args->napi] = 1; @nn[args->napi] = str(args->dev_name); }
  $b = nsecs / 50000000;
  if ($m) { @nc[args->napi, $b] = count(); }
  $t = nsecs;
  if ($m) { @nt[args->napi, $b] = sum($t - $m); @nx[args->napi, $b] = max($t - $m); @mark[cpu] = $t; }
}
END { clear(@ts); clear(@tm); clear(@fn); clear(@mark); clear(@named); }
"#;

/// The width of bpftrace's buckets, ns.
const BUCKET_NS: u64 = 50_000_000;

/// bpftrace running [`BPFTRACE`], its output lines coming through the
/// channel once it says its probes are attached.
struct Bpftrace {
    child: Child,
    lines: mpsc::Receiver<String>,
}

impl Bpftrace {
    /// `None` (with a skip line) where bpftrace is not installed or does
    /// not attach within 30 s.
    fn start() -> Option<Bpftrace> {
        let mut child = match Command::new("bpftrace")
            .args(["-e", BPFTRACE])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
        {
            Ok(c) => c,
            Err(e) => {
                eprintln!("skipped: needs bpftrace (the Debian package): {e}");
                return None;
            }
        };
        let out = BufReader::new(child.stdout.take().unwrap());
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for l in out.lines().map_while(Result::ok) {
                if tx.send(l).is_err() {
                    break;
                }
            }
        });
        loop {
            match rx.recv_timeout(Duration::from_secs(30)) {
                Ok(l) if l.starts_with("Attaching") => break,
                Ok(_) => {}
                Err(_) => {
                    let _ = child.kill();
                    eprintln!(
                        "skipped: needs bpftrace to attach to tracepoints (it did not within 30 s)"
                    );
                    return None;
                }
            }
        }
        Some(Bpftrace { child, lines: rx })
    }

    /// Stops it (SIGINT, as a user would) and returns every line. An idle
    /// bpftrace once let a SIGINT go by and waited for ever (2026-11-29):
    /// it gets a second one after 20 s and SIGKILL after 10 s more (its
    /// maps are then missing, and the test fails on them, not in a hang).
    fn stop(mut self) -> Vec<String> {
        for (signal, grace) in [("-INT", 20), ("-INT", 10), ("-KILL", 10)] {
            let _ = Command::new("kill")
                .args([signal, &self.child.id().to_string()])
                .status();
            let until = Instant::now() + Duration::from_secs(grace);
            while Instant::now() < until && matches!(self.child.try_wait(), Ok(None)) {
                std::thread::sleep(Duration::from_millis(50));
            }
            if !matches!(self.child.try_wait(), Ok(None)) {
                break;
            }
            eprintln!("bpftrace still running {grace} s after kill {signal}");
        }
        let _ = self.child.wait();
        // The reader thread ends at the pipe's end: wait for its last
        // lines (the maps bpftrace prints as it exits).
        let mut out = Vec::new();
        while let Ok(l) = self.lines.recv_timeout(Duration::from_secs(10)) {
            out.push(l);
        }
        out
    }
}

/// (count, total ns, longest ns) per `kind:source` from bpftrace's maps,
/// over the buckets that overlap the span: a superset of it by less than a
/// bucket at each end (about 2 % of a 4 s run).
fn tally(lines: &[String], (from, to): (u64, u64)) -> BTreeMap<String, (u64, u64, u64)> {
    // `@nn[0xffff888…]: (no_device)`: a NAPI instance's device.
    let devices: BTreeMap<&str, &str> = lines
        .iter()
        .filter_map(|l| l.strip_prefix("@nn[")?.split_once("]: "))
        .collect();
    let mut out: BTreeMap<String, (u64, u64, u64)> = BTreeMap::new();
    for l in lines {
        // `@tc[process_timeout, 34523]: 12`
        let Some((key, value)) = l.split_once("]: ") else {
            continue;
        };
        let Some((map, key)) = key.split_once('[') else {
            continue;
        };
        let Some((name, bucket)) = key.rsplit_once(", ") else {
            continue;
        };
        let (Ok(bucket), Ok(value)) = (bucket.parse::<u64>(), value.trim().parse::<u64>()) else {
            continue;
        };
        if bucket * BUCKET_NS >= to || (bucket + 1) * BUCKET_NS <= from {
            continue;
        }
        let (kind, field) = match map {
            "@tc" => ("timer", 0),
            "@tt" => ("timer", 1),
            "@tx" => ("timer", 2),
            "@nc" => ("napi", 0),
            "@nt" => ("napi", 1),
            "@nx" => ("napi", 2),
            _ => continue,
        };
        let name = if kind == "napi" {
            devices.get(name).copied().unwrap_or(name)
        } else {
            name
        };
        let e = out.entry(format!("{kind}:{name}")).or_default();
        match field {
            0 => e.0 += value,
            1 => e.1 += value,
            _ => e.2 = e.2.max(value),
        }
    }
    out
}

#[test]
fn counts_and_times_per_function_and_device_agree_with_bpftrace() {
    on_backend("bpf", bpftrace_case);
}

fn bpftrace_case() {
    let _g = serial();
    if !is_root() {
        eprintln!("skipped: needs root for tracepoints and bpftrace");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let Some(bt) = Bpftrace::start() else {
        return;
    };
    // CPU 1 of the development VM emits no tracepoints to perf while its
    // idle task runs (docs/tracing.md), and timer callbacks on an idle CPU
    // run in the idle task: a spinner at the lowest priority keeps the
    // other CPUs busy, so that both tracers see the same events.
    let (doc, _) = crate::common::control::while_running(interferers, || {
        let (doc, ()) =
            crate::common::control::while_running(idle_fillers, || traced_run(dir.path()));
        doc
    });
    let lines = bt.stop();
    let Some(doc) = doc else {
        return;
    };
    let theirs = tally(&lines, span(&doc));
    let ours = deferred(&doc);
    let lost = trace(&doc)["lost_records"].as_u64().unwrap_or(0);
    if too_noisy("records the kernel dropped", 0.0, lost as f64).is_some() {
        return;
    }
    let near = |a: u64, b: u64| (a as f64 - b as f64).abs() <= 0.1 * b as f64;
    // Two tracers on one tracepoint each time an interval from their own
    // program: bpftrace's probes run first, so what its probe does after
    // reading the clock at the closing tracepoint lies inside latscope's
    // interval, and at the opening one inside its own (see BPFTRACE).
    // Measured with the probes as they are: latscope's NAPI polls between
    // 7 % shorter and as long (four runs, both backends); with bpftrace
    // reading the clock first they were 0.4-0.6 µs longer each, and 1.8 µs
    // once on a slow host. Each event is allowed 0.5 µs of such cost
    // beyond the 10 %.
    //
    // The two spans do not coincide exactly (latscope's statistics cover
    // its traced span, bpftrace's the 50 ms buckets that overlap it), so a
    // few runs at the ends are one tool's and not the other's, and one of
    // them can be long: a callback the host stalled for milliseconds (CI,
    // 2026-11-28: 549 process_timeout runs and 5.7 ms against bpftrace's
    // 544 and 3.6 ms). The runs latscope counted beyond bpftrace's are
    // allowed latscope's longest run each.
    //
    // And one run the host stalled between the two tools' clock reads
    // (after bpftrace's probe read it, before latscope's did) is one
    // tool's alone however the spans fall (CI, 2026-11-29: 492 runs and
    // 6.9 ms against bpftrace's 483 and 8.5 ms, latscope's longest 35 µs).
    // The two longest runs are then far apart: the difference is allowed
    // once.
    let near_time = |a: u64, b: u64, n: u64, extra: u64| {
        (a as f64 - b as f64).abs() <= 0.1 * b as f64 + 500.0 * n as f64 + extra as f64
    };
    let mut disagree = Vec::new();
    let mut compared = 0;
    for (name, &(n, total, their_longest)) in theirs.iter().filter(|(_, v)| v.0 >= 200) {
        let (m, mt, longest) = ours.get(name).copied().unwrap_or_default();
        let extra = m.saturating_sub(n) * longest + their_longest.abs_diff(longest);
        eprintln!(
            "{name}: bpftrace {n} runs, {total} ns (longest {their_longest} ns); latscope {m} runs, {mt} ns (longest {longest} ns)"
        );
        if !near(m, n) || !near_time(mt, total, n, extra) {
            disagree.push(format!("{name}: {m} runs, {mt} ns against {n}, {total}"));
        }
        compared += 1;
    }
    assert!(disagree.is_empty(), "beyond 10 %: {disagree:?}");
    assert!(
        theirs.contains_key("timer:process_timeout") && theirs.contains_key("napi:(no_device)"),
        "bpftrace saw the interferers' work: {:?}",
        theirs.keys().collect::<Vec<_>>()
    );
    assert!(compared >= 2, "{compared} sources compared");
}
