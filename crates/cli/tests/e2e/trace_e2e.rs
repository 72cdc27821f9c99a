//! `latscope run --trace` end to end, on the real kernel: known interferers
//! must be named as the cause of the latencies they create, every sample's
//! parts must add up, and deferred work from real network traffic must show.

#![allow(clippy::unwrap_used)]

use std::net::UdpSocket;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::common::control::{
    any_too_noisy, control_and_interfered, control_below_and_interfered, late_bursts_pct, too_noisy,
};
use crate::common::*;
use latscope_model::CpuId;
use latscope_platform::{monotonic_ns, set_affinity, set_scheduler, timers, SchedPolicy};
use serde_json::Value;

const SLOT_NS: u64 = 50_000_000;
const BURST_NS: u64 = 500_000;
const BURNER: &str = "ka-burner";

/// Runs latscope with --trace (with this thread's backend); `None` (and a
/// visible skip line) when this machine cannot trace.
fn traced_run(extra: &[&str], dir: &std::path::Path) -> Option<Value> {
    let store = store_in(dir);
    let json = dir.join("trace.json");
    let backend = backend();
    let mut args = vec![
        "run",
        "--trace",
        "--trace-backend",
        backend,
        "--store",
        store.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
        "--quiet",
    ];
    args.extend_from_slice(extra);
    let o = latscope(&args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let doc = read_json(&json);
    if doc["capabilities"]["tracepoints"] == Value::Bool(true) {
        assert_eq!(
            trace_summary(&doc)["backend"],
            backend,
            "the run records its backend"
        );
    }
    if doc["capabilities"]["tracepoints"] != Value::Bool(true) {
        eprintln!(
            "skipped: needs kernel tracepoints ({})",
            stderr(&o).lines().next().unwrap_or("")
        );
        return None;
    }
    Some(doc)
}

fn trace_summary(doc: &Value) -> &Value {
    &doc["cells"][0]["trace"]
}

/// The CPU whose wake-ups decompose best in a short idle run. On the
/// development VM's kernel one CPU emits no tracepoints while its idle task
/// runs (see docs/tracing.md); a known-answer test of attribution needs a
/// CPU where the kernel tells the whole story.
fn best_traced_cpu(dir: &std::path::Path) -> Option<u32> {
    let probe_dir = dir.join("probe");
    std::fs::create_dir_all(&probe_dir).unwrap();
    let doc = traced_run(&["--period", "1ms", "--duration", "1s"], &probe_dir)?;
    let (cpu, frac) = decomposition_per_cpu(&doc)
        .into_iter()
        .map(|(c, d, u)| (c, d as f64 / (d + u).max(1) as f64))
        .max_by(|a, b| a.1.partial_cmp(&b.1).unwrap())?;
    eprintln!(
        "measuring on CPU {cpu}: {:.1}% of its idle wake-ups decomposed",
        100.0 * frac
    );
    cpu.parse().ok()
}

#[test]
fn a_known_fifo_burner_is_named_as_the_blocking_thread() {
    on_backend(
        "bpf",
        a_known_fifo_burner_is_named_as_the_blocking_thread_case,
    );
}

fn a_known_fifo_burner_is_named_as_the_blocking_thread_case() {
    let _g = serial();
    if !is_root() {
        eprintln!("skipped: needs root for SCHED_FIFO and tracepoints");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let Some(cpu) = best_traced_cpu(dir.path()) else {
        return;
    };
    // The control runs the same bursts below the probe's priority (70
    // against 80): the same CPU time on the same vCPU, so what the host
    // does to a vCPU that spins shows in both runs; only the priority
    // differs.
    let (runs, bursts) = control_below_and_interfered(
        |stop| interferer(cpu, "ka-burner-below", 70, SLOT_NS, BURST_NS, stop),
        |stop| interferer(cpu, BURNER, 90, SLOT_NS, BURST_NS, stop),
        |name| {
            let run_dir = dir.path().join(name);
            std::fs::create_dir_all(&run_dir).unwrap();
            traced_run(
                &[
                    "--cpus",
                    &cpu.to_string(),
                    "--priority",
                    "80",
                    "--period",
                    "1ms",
                    "--duration",
                    "8s",
                    // Not 250us: the VM's own timer interrupt now and then
                    // takes 50-60 µs (seen: local_timer 38 µs + 21 µs late),
                    // which in an episode just over 250 µs leaves the burner
                    // 76%. Above 350 µs the burner's share is over 80% even
                    // then.
                    "--threshold",
                    "350us",
                ],
                &run_dir,
            )
        },
    );
    let (Some(control), Some(doc)) = (runs.control, runs.interfered) else {
        return;
    };
    let bursts = bursts.interfered;
    assert!(
        bursts.len() >= 150,
        "the burner ran ({} bursts)",
        bursts.len()
    );
    let ctl_eps = control["episodes"].as_array().map_or(0, |e| e.len());
    let eps = doc["episodes"].as_array().unwrap();
    let t = trace_summary(&doc);
    eprintln!(
        "control (burner below the probe): {ctl_eps} episodes above 350 µs; max {} ns",
        metrics(&control, "timer.latency")[0]["max_ns"]
    );
    eprintln!(
        "trace: {} episodes, {} events, {} lost, decomposed {} / undecomposed {}",
        eps.len(),
        t["events"],
        t["lost_records"],
        t["samples_decomposed"],
        t["samples_undecomposed"]
    );
    // About 3 samples per second above 350 µs come from the burner
    // (known_answer.rs: delays uniform in 0..500 µs for half of 20 bursts
    // per second), some 24 in 8 s. The episodes it caused are told from
    // the host's by time (a burst around the expiry, below); the host's own
    // delays can still fall into them, about as often as the control has
    // episodes. A control with more than 16 (2 per second) leaves too
    // little to tell.
    // A burst that starts late waited for another task's kernel code,
    // which then falls into the episodes it causes.
    // (Traced, the burner's own wake-ups take longer: 16% over 50 µs seen
    // on a quiet control, hence 100 µs.)
    let late_pct = late_bursts_pct(&bursts, 100_000);
    eprintln!(
        "{:.1}% of the bursts started over 50 µs late, {late_pct:.1}% over 100 µs",
        late_bursts_pct(&bursts, 50_000)
    );
    if any_too_noisy(&[
        (
            "control: episodes above 350 µs with the burner below the probe, in 8 s",
            16.0,
            ctl_eps as f64,
        ),
        (
            "with the burner: bursts starting over 100 µs late, %",
            10.0,
            late_pct,
        ),
    ])
    .is_some()
    {
        return;
    }
    let mut caused = 0;
    let mut unrecorded = 0;
    let mut shares = Vec::new();
    // The burner's share of what the host did not add: the latency less
    // the part the analysis found no cause for ("timer interrupt late while
    // ka-burner ran"). A user-space burner cannot hold back a hardware
    // timer interrupt on this kernel, the host can (seen in CI: 150 µs of
    // it and a 141 µs timer interrupt, with the burner's 174 µs: share
    // 0.37 of the latency, 0.55 of the rest).
    let mut explained_shares = Vec::new();
    for e in eps {
        let lat = e["latency_ns"].as_u64().unwrap();
        let expiry = e["expiry_ns"].as_u64().unwrap();
        // The causes partition the latency.
        let sum: u64 = e["breakdown"]["causes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["duration_ns"].as_u64().unwrap())
            .sum();
        assert_eq!(sum, lat, "causes of {e}");
        // Caused by the burner: a burst was running at the expiry, or had
        // been woken for it (its clock read comes after its own wake-up,
        // which may fall just after our expiry).
        if !bursts
            .iter()
            .any(|b| b.start <= expiry + 100_000 && b.end > expiry)
        {
            continue;
        }
        // A burst can delay a wake-up by at most its own length plus the
        // switch. Longer episodes hold something else too: seen in CI, a
        // 2.5 ms one with 10 ms of hypervisor steal, rightly charged as
        // "timer interrupt late" (unexplained) rather than to the burner.
        if lat > 600_000 {
            eprintln!(
                "not the burner alone ({lat} ns, steal {}): {}",
                e["breakdown"]["steal_ns"], e["breakdown"]["causes"]
            );
            continue;
        }
        // The kernel did not record our timer's events (it drops some
        // tracepoints in interrupts out of idle; see the CPU's decomposed
        // share above): no phase, so no blocking thread can be named.
        if e["breakdown"]["complete"] == false && e["breakdown"]["blocking"].is_null() {
            unrecorded += 1;
            eprintln!(
                "our timer's events not recorded: {}",
                e["breakdown"]["causes"]
            );
            continue;
        }
        caused += 1;
        let b = &e["breakdown"]["blocking"];
        assert_eq!(b["name"], BURNER, "episode the burner caused: {e}");
        assert_eq!(b["policy"], "fifo", "{b}");
        assert_eq!(b["priority"], 90, "{b}");
        let share = b["duration_ns"].as_u64().unwrap() as f64 / lat as f64;
        if share < 0.8 {
            let near: Vec<i64> = bursts
                .iter()
                .filter(|b| b.start <= expiry + 100_000 && b.end > expiry)
                .map(|b| b.start as i64 - expiry as i64)
                .collect();
            eprintln!("low share {share:.3}: bursts started at {near:?} ns from the expiry; {e}");
        }
        let unexplained = e["breakdown"]["unexplained_ns"].as_u64().unwrap_or(0);
        let explained = lat.saturating_sub(unexplained).max(1);
        explained_shares.push(b["duration_ns"].as_u64().unwrap() as f64 / explained as f64);
        shares.push(share);
    }
    shares.sort_by(|a, b| a.partial_cmp(b).unwrap());
    eprintln!(
        "{caused} of {} episodes were caused by the burner (a burst around the expiry); its share of their latency: min {:.3}, median {:.3}",
        eps.len(),
        shares.first().copied().unwrap_or(0.0),
        shares.get(shares.len() / 2).copied().unwrap_or(0.0)
    );
    assert!(
        caused >= 10,
        "only {caused} of {} episodes overlap a burst and were recorded ({unrecorded} were not)",
        eps.len()
    );
    assert!(
        unrecorded * 4 <= caused,
        "{unrecorded} episodes without our timer's events against {caused} with them"
    );
    // The burner is at least half of every episode it caused, leaving out
    // the part the host added by delaying the timer interrupt (above), and
    // 80% or more of at least 90% of them: the host's own delays (the
    // control's episodes) may fall into a few.
    let low = shares.iter().filter(|&&s| s < 0.8).count();
    assert!(
        explained_shares.iter().all(|&s| s >= 0.5) && low * 10 <= caused,
        "burner below 80% of {low} of the {caused} episodes it caused ({ctl_eps} episodes in the control): {shares:?}; of what the host did not add: {explained_shares:?}"
    );
    assert_eq!(t["lost_records"], 0, "no records lost at this load");
}

/// Per measured CPU: (decomposed, undecomposed) from the trace summary.
fn decomposition_per_cpu(doc: &Value) -> Vec<(String, u64, u64)> {
    let t = trace_summary(doc);
    metrics(doc, "timer.latency")
        .iter()
        .map(|m| {
            let cpu = m["cpu"].to_string();
            let d = t["decomposed_per_cpu"][&cpu].as_u64().unwrap_or(0);
            let u = t["undecomposed_per_cpu"][&cpu].as_u64().unwrap_or(0);
            (cpu, d, u)
        })
        .collect()
}

/// The parts' means add up to the latency's mean on every CPU (the parts of
/// each sample add up exactly; a mean is sum / count).
fn parts_add_up(doc: &Value) {
    let mut checked = 0;
    for lat in metrics(doc, "timer.latency") {
        let cpu = &lat["cpu"];
        let part = |name: &str| {
            metrics(doc, name)
                .into_iter()
                .find(|m| &m["cpu"] == cpu)
                .unwrap_or_else(|| panic!("{name} on CPU {cpu}"))
                .clone()
        };
        let (irq, sched, ret) = (part("timer.irq"), part("timer.sched"), part("timer.return"));
        let n = irq["count"].as_u64().unwrap();
        assert_eq!(n, sched["count"].as_u64().unwrap());
        assert_eq!(n, ret["count"].as_u64().unwrap());
        let all = lat["count"].as_u64().unwrap();
        // Only where (nearly) every sample was decomposed is the decomposed
        // subset the same population as the whole: on a CPU whose idle
        // wake-ups the kernel does not trace, the few decomposed samples are
        // the ones that found it busy, and their mean is a different one.
        if n < 100 || (n as f64) < 0.99 * all as f64 {
            eprintln!("CPU {cpu}: {n} of {all} samples decomposed; means not compared");
            continue;
        }
        checked += 1;
        let parts = irq["mean_ns"].as_f64().unwrap()
            + sched["mean_ns"].as_f64().unwrap()
            + ret["mean_ns"].as_f64().unwrap();
        let whole = lat["mean_ns"].as_f64().unwrap();
        eprintln!(
            "CPU {cpu}: irq {} + sched {} + return {} = {parts:.0} ns; latency mean {whole:.0} ns ({n} samples decomposed)",
            irq["mean_ns"], sched["mean_ns"], ret["mean_ns"]
        );
        // The decomposed samples add up exactly; the few that were not
        // decomposed (at most 1 %) move the latency mean by at most their
        // share times the largest latency (on a noisy host those few are
        // often the long ones: 2.3 µs of 33 µs once in CI).
        let undecomposed = (all - n) as f64 / all as f64;
        let max = lat["max_ns"].as_f64().unwrap();
        let bound = 0.03 * whole + 300.0 + undecomposed * max;
        assert!(
            (parts - whole).abs() <= bound,
            "{parts} vs {whole} (bound {bound:.0}: {undecomposed:.4} of samples undecomposed, max {max})"
        );
    }
    assert!(checked >= 1, "no CPU had its samples decomposed to compare");
}

#[test]
fn samples_decompose_and_the_parts_add_up_on_an_idle_system() {
    on_backend(
        "perf",
        samples_decompose_and_the_parts_add_up_on_an_idle_system_case,
    );
}

fn samples_decompose_and_the_parts_add_up_on_an_idle_system_case() {
    let _g = serial();
    if !is_root() {
        eprintln!("skipped: needs root for tracepoints");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let Some(doc) = traced_run(&["--period", "1ms", "--duration", "4s"], dir.path()) else {
        return;
    };
    let per_cpu = decomposition_per_cpu(&doc);
    let mut full = 0;
    for (cpu, d, u) in &per_cpu {
        let frac = *d as f64 / (*d + *u).max(1) as f64;
        eprintln!(
            "CPU {cpu}: {d} samples decomposed, {u} not ({:.1}%)",
            100.0 * frac
        );
        if frac >= 0.99 {
            full += 1;
        } else {
            // Seen on the development VM's kernel (sched_vcpu_pack, haltpoll):
            // on one CPU the idle task's tracepoints are not emitted, with
            // no loss reported; ftrace shows the same. Visible, not hidden.
            eprintln!(
                "NOTICE: CPU {cpu}: the kernel did not deliver the wake-up events of {u} samples from idle (lost records: {})",
                trace_summary(&doc)["lost_records"]
            );
        }
    }
    assert!(
        full >= 1,
        "no CPU decomposed 99% of its samples: {per_cpu:?}"
    );
    parts_add_up(&doc);
}

#[test]
fn every_sample_decomposes_on_busy_cpus() {
    on_backend("bpf", every_sample_decomposes_on_busy_cpus_case);
}

fn every_sample_decomposes_on_busy_cpus_case() {
    let _g = serial();
    if !is_root() {
        eprintln!("skipped: needs root for tracepoints");
        return;
    }
    // A SCHED_OTHER spinner on every CPU keeps them out of idle; the
    // SCHED_FIFO probe preempts it at every expiry.
    let stop = Arc::new(AtomicBool::new(false));
    let spinners: Vec<_> = online()
        .into_iter()
        .map(|cpu| {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                set_affinity(CpuId(cpu)).unwrap();
                while !stop.load(Ordering::Relaxed) {
                    std::hint::spin_loop();
                }
            })
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let doc = traced_run(&["--period", "1ms", "--duration", "4s"], dir.path());
    stop.store(true, Ordering::Relaxed);
    for s in spinners {
        s.join().unwrap();
    }
    let Some(doc) = doc else { return };
    for (cpu, d, u) in decomposition_per_cpu(&doc) {
        eprintln!("busy CPU {cpu}: {d} samples decomposed, {u} not");
        assert!(d > 3000, "CPU {cpu}: {d} decomposed");
        assert!(
            (u as f64) <= 0.01 * (d + u) as f64,
            "CPU {cpu}: {u} of {} samples not decomposed",
            d + u
        );
    }
    parts_add_up(&doc);
}

/// A UDP flood over loopback until `stop`: 64 datagrams of 512 bytes every
/// 200 µs to a receiver thread. Returns the datagrams sent.
fn udp_flood(stop: Arc<AtomicBool>) -> std::thread::JoinHandle<u64> {
    std::thread::spawn(move || {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        rx.set_read_timeout(Some(std::time::Duration::from_millis(50)))
            .unwrap();
        let addr = rx.local_addr().unwrap();
        let s3 = Arc::clone(&stop);
        let receiver = std::thread::spawn(move || {
            let mut buf = [0u8; 1024];
            while !s3.load(Ordering::Relaxed) {
                let _ = rx.recv(&mut buf);
            }
        });
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let buf = [7u8; 512];
        let mut sent = 0u64;
        while !stop.load(Ordering::Relaxed) {
            for _ in 0..64 {
                if tx.send_to(&buf, addr).is_ok() {
                    sent += 1;
                }
            }
            std::thread::sleep(std::time::Duration::from_micros(200));
        }
        receiver.join().unwrap();
        sent
    })
}

#[test]
fn a_udp_flood_over_loopback_shows_net_rx_softirqs() {
    on_backend("perf", a_udp_flood_over_loopback_shows_net_rx_softirqs_case);
}

fn a_udp_flood_over_loopback_shows_net_rx_softirqs_case() {
    let _g = serial();
    if !is_root() {
        eprintln!("skipped: needs root for tracepoints");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (runs, sent) = control_and_interfered(udp_flood, |name| {
        let run_dir = dir.path().join(name);
        std::fs::create_dir_all(&run_dir).unwrap();
        traced_run(&["--period", "1ms", "--duration", "3s"], &run_dir)
    });
    let (Some(control), Some(doc)) = (runs.control, runs.interfered) else {
        return;
    };
    // NET_RX of the control: whatever the machine's own network does (the
    // metric is absent when NET_RX never ran).
    let net_rx = |d: &Value, name: &str| {
        d["cells"][0]["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == name)
            .cloned()
    };
    let count = |m: &Option<Value>| m.as_ref().map_or(0, |m| m["count"].as_u64().unwrap());
    let (ctl_exec, ctl_delay) = (
        net_rx(&control, "softirq.exec.NET_RX"),
        net_rx(&control, "softirq.delay.NET_RX"),
    );
    let all: Vec<&Value> = doc["cells"][0]["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .collect();
    let get = |name: &str| {
        all.iter().find(|m| m["name"] == name).unwrap_or_else(|| {
            panic!(
                "no {name}; have {:?}",
                all.iter().map(|m| &m["name"]).collect::<Vec<_>>()
            )
        })
    };
    let exec = get("softirq.exec.NET_RX");
    let delay = get("softirq.delay.NET_RX");
    eprintln!(
        "control: NET_RX ran {} times, {} delays recorded",
        count(&ctl_exec),
        count(&ctl_delay)
    );
    eprintln!(
        "UDP flood: {sent} datagrams sent; NET_RX ran {} times (max {} ns), delay p99 {} ns",
        exec["count"], exec["max_ns"], delay["p99_ns"]
    );
    assert!(sent > 10_000, "the flood ran ({sent} datagrams)");
    // Traffic of the machine's own of 1000 NET_RX runs a second could hide
    // what the flood adds.
    if too_noisy(
        "control: NET_RX runs in 3 s without the flood",
        3000.0,
        count(&ctl_exec) as f64,
    )
    .is_some()
    {
        return;
    }
    // The flood adds its own NET_RX runs to the machine's: the count the
    // control saw is not enough.
    let added_exec = exec["count"].as_u64().unwrap() as i64 - count(&ctl_exec) as i64;
    let added_delay = delay["count"].as_u64().unwrap() as i64 - count(&ctl_delay) as i64;
    assert!(added_exec > 100, "the flood added {added_exec} NET_RX runs");
    assert!(
        added_delay > 100,
        "the flood added {added_delay} NET_RX delays"
    );
    assert!(exec["max_ns"].as_u64().unwrap() > 0);
}

#[test]
fn without_tracepoint_access_the_run_continues_and_says_so() {
    let _g = serial();
    let paranoid = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()
        .and_then(|s| s.trim().parse::<i32>().ok());
    if paranoid.is_some_and(|p| p < 1) {
        eprintln!("skipped: needs perf_event_paranoid >= 1 so an unprivileged user cannot trace");
        return;
    }
    let Some((dir, copy)) = unprivileged_dir() else {
        return;
    };
    for backend in ["auto", "bpf", "perf"] {
        let store = dir.path().join(format!("{backend}.db"));
        let json = dir.path().join(format!("{backend}.json"));
        let o = as_nobody(&copy)
            .args([
                "run",
                "--trace",
                "--trace-backend",
                backend,
                "--duration",
                "1s",
                "--store",
                store.to_str().unwrap(),
                "--json",
            ])
            .arg(&json)
            .arg("--quiet")
            .output()
            .unwrap();
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(0), "{err}");
        assert!(!err.contains("panicked"), "{err}");
        let trace_lines: Vec<&str> = err.lines().filter(|l| l.contains("--trace")).collect();
        assert_eq!(trace_lines.len(), 1, "one line about --trace: {err}");
        eprintln!(
            "unprivileged, --trace-backend {backend}: {}",
            trace_lines[0]
        );
        if backend == "bpf" {
            assert!(trace_lines[0].contains("--trace: BPF: "), "{err}");
        }
        let doc = read_json(&json);
        assert_eq!(doc["capabilities"]["tracepoints"], false);
        assert!(doc["capabilities"]["missing"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m.as_str().unwrap().contains("--trace")));
        assert!(metrics(&doc, "timer.latency")[0]["count"].as_u64().unwrap() > 100);
        assert!(!matches!(doc["episodes"].as_array(), Some(a) if !a.is_empty()));
        assert!(metrics(&doc, "timer.irq").is_empty());
    }
}

#[test]
fn stack_samples_name_the_kernel_code_that_ran_during_episodes() {
    on_backend(
        "bpf",
        stack_samples_name_the_kernel_code_that_ran_during_episodes_case,
    );
}

fn stack_samples_name_the_kernel_code_that_ran_during_episodes_case() {
    let _g = serial();
    if !is_root() {
        eprintln!("skipped: needs root for SCHED_FIFO and tracepoints");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let Some(cpu) = best_traced_cpu(dir.path()) else {
        return;
    };
    // Like the burner, but its bursts are spent in the kernel (reading
    // /dev/zero), where cpu-clock samples with kernel call chains land.
    let kernel_burner = |stop: Arc<AtomicBool>| {
        std::thread::Builder::new()
            .name("ka-kernel".into())
            .spawn(move || {
                use std::io::Read;
                set_affinity(CpuId(cpu)).unwrap();
                set_scheduler(SchedPolicy::Fifo, 90).unwrap();
                let mut zero = std::fs::File::open("/dev/zero").unwrap();
                let mut buf = vec![0u8; 256 * 1024];
                let mut seed = monotonic_ns() | 1;
                let mut slot = monotonic_ns();
                while !stop.load(Ordering::Relaxed) {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    let _ = timers::sleep_until(slot + seed % (SLOT_NS - BURST_NS));
                    let end = monotonic_ns() + BURST_NS;
                    while monotonic_ns() < end {
                        zero.read_exact(&mut buf).unwrap();
                    }
                    slot += SLOT_NS;
                }
            })
            .unwrap()
    };
    // One host stall during the interfered run adds episodes with no
    // kernel code of ours to sample (the control cannot see it coming), so
    // a pair whose stack share falls short is run again: the test passes at
    // the first pair that passes and fails at the second that fails (a
    // broken stack path fails every pair), at most three pairs.
    let mut failures: Vec<String> = Vec::new();
    for attempt in 1..=3 {
        let (runs, ()) = control_and_interfered(kernel_burner, |name| {
            let run_dir = dir.path().join(format!("{attempt}-{name}"));
            std::fs::create_dir_all(&run_dir).unwrap();
            traced_run(
                &[
                    "--cpus",
                    &cpu.to_string(),
                    "--priority",
                    "80",
                    "--duration",
                    "5s",
                    "--threshold",
                    "250us",
                    "--stacks",
                ],
                &run_dir,
            )
        });
        let (Some(control), Some(doc)) = (runs.control, runs.interfered) else {
            return;
        };
        let ctl_eps = control["episodes"].as_array().map_or(0, |e| e.len());
        eprintln!(
            "pair {attempt}: control: {ctl_eps} episodes above 250 µs without the kernel burner"
        );
        // The burner causes about 5 episodes a second above 250 µs, some 25
        // in 5 s; the host's own (a stall has no kernel code of ours to
        // sample) need not have stacks. More than 10 in the control (2 a
        // second) leave too little to tell.
        if too_noisy(
            "control: episodes above 250 µs without the kernel burner, in 5 s",
            10.0,
            ctl_eps as f64,
        )
        .is_some()
        {
            return;
        }
        assert_eq!(doc["capabilities"]["stack_samples"], true);
        let eps = doc["episodes"].as_array().unwrap();
        let with_stacks: Vec<&Value> = eps
            .iter()
            .filter(|e| e["stacks"].as_array().is_some_and(|s| !s.is_empty()))
            .collect();
        eprintln!(
            "pair {attempt}: {} of {} episodes have stack samples; {} samples taken",
            with_stacks.len(),
            eps.len(),
            trace_summary(&doc)["stack_samples"]
        );
        // Stacks, where there are any, name symbols.
        for e in &with_stacks {
            for s in e["stacks"].as_array().unwrap() {
                let f = s["function"].as_str().unwrap();
                assert!(!f.starts_with("0x"), "unsymbolized {f}");
                assert!(s["samples"].as_u64().unwrap() >= 1);
            }
        }
        let failed = if eps.len() < 5 + ctl_eps {
            Some(format!(
                "{} episodes, {ctl_eps} without the kernel burner",
                eps.len()
            ))
        } else if with_stacks.len() * 2 < eps.len() - ctl_eps {
            // At least half of the episodes the burner added have stacks.
            Some(format!(
                "too few episodes with stacks: {} of {} ({ctl_eps} in the control)",
                with_stacks.len(),
                eps.len()
            ))
        } else {
            None
        };
        match failed {
            None => {
                let e = with_stacks[0];
                eprintln!("episode {}: {}", e["seq"], e["stacks"]);
                return;
            }
            Some(f) => {
                eprintln!("pair {attempt} failed: {f}");
                failures.push(f);
                if failures.len() >= 2 {
                    panic!("two pairs failed: {}", failures.join("; "));
                }
            }
        }
    }
}
