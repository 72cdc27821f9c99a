//! Lifecycle tests of every workload: it starts, really loads the machine,
//! stops completely, and nothing of it survives a `kill -9` of its parent.
//!
//! This test binary plays latscope: it answers the `__workload` helper modes
//! (so the workloads can start their helpers from it), and has test modes of
//! its own — a parent that starts a workload and waits to be killed, a
//! program that records the arguments it got. Hence `harness = false` and a
//! small runner: `cargo test -p latscope-workloads --test lifecycle [FILTER]`.

// A test binary, though without #[test] functions clippy cannot tell.
#![allow(clippy::unwrap_used)]

use std::collections::HashMap;
use std::fs;
use std::io::{BufRead, BufReader};
use std::panic;
use std::path::PathBuf;
use std::process::{Command, ExitCode, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use latscope_model::CpuSet;
use latscope_platform::process::{clock_ticks_per_sec, group_pids, proc_io, proc_stat};
use latscope_workloads::{check, helper_main, start, LoadLevel, RunningWorkload, WorkloadSpec};

/// How long each load runs while its effect is measured.
const WINDOW: Duration = Duration::from_millis(1500);
const WARMUP: Duration = Duration::from_millis(500);

enum Verdict {
    Pass,
    Skip(String),
}

type TestFn = fn() -> Verdict;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    if let Some(code) = helper_main(&args) {
        std::process::exit(code);
    }
    match args.get(1).map(String::as_str) {
        Some("__test-parent") => std::process::exit(test_parent(&args[2..])),
        Some("__test-echo-args") => std::process::exit(echo_args(&args[2..])),
        Some("__test-no-stress-ng") => std::process::exit(no_stress_ng_mode()),
        _ => {}
    }
    let filters: Vec<&String> = args[1..].iter().filter(|a| !a.starts_with('-')).collect();
    let tests: &[(&str, TestFn)] = &[
        ("idle", idle),
        ("cpu_light", cpu_light),
        ("cpu_normal", cpu_normal),
        ("memory", memory),
        ("compile", compile),
        ("disk", disk),
        ("net", net),
        ("tty", tty),
        ("fork", fork),
        ("timer", timer),
        ("custom_passes_arguments_exactly", custom_arguments),
        ("custom_json_form", custom_json_form),
        ("custom_death_is_reported", custom_death),
        ("died_during_warmup", died_during_warmup),
        ("missing_stress_ng", missing_stress_ng),
        ("stop_is_idempotent_and_drop_stops", drop_stops),
        ("every_workload_starts_at_every_level", every_level),
        ("kill9_parent_of_every_workload", kill9_every),
    ];
    let mut failed = Vec::new();
    let (mut passed, mut skipped) = (0, 0);
    let started = Instant::now();
    for (name, test) in tests {
        if !filters.is_empty() && !filters.iter().any(|f| name.contains(f.as_str())) {
            continue;
        }
        let t0 = Instant::now();
        match panic::catch_unwind(test) {
            Ok(Verdict::Pass) => {
                passed += 1;
                println!("test {name} ... ok ({:.1} s)", t0.elapsed().as_secs_f64());
            }
            Ok(Verdict::Skip(why)) => {
                skipped += 1;
                println!("test {name} ... skipped: {why}");
            }
            Err(_) => {
                failed.push(*name);
                println!("test {name} ... FAILED");
            }
        }
    }
    println!(
        "\ntest result: {}. {passed} passed; {} failed; {skipped} skipped; finished in {:.2}s",
        if failed.is_empty() { "ok" } else { "FAILED" },
        failed.len(),
        started.elapsed().as_secs_f64()
    );
    if failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        println!("failures: {}", failed.join(", "));
        ExitCode::FAILURE
    }
}

// ---------------------------------------------------------------- helpers

fn is_root() -> bool {
    latscope_platform::caps::detect().root
}

fn needs(spec: &WorkloadSpec) -> Option<Verdict> {
    if let WorkloadSpec::Net = spec {
        if !is_root() {
            return Some(Verdict::Skip("needs root".into()));
        }
    }
    match check(spec) {
        Ok(()) => None,
        Err(e) => Some(Verdict::Skip(format!("needs prerequisites: {e}"))),
    }
}

fn all_cpus() -> CpuSet {
    latscope_platform::online_cpus().unwrap()
}

fn start_light(spec: &WorkloadSpec) -> RunningWorkload {
    start(spec, LoadLevel::Light, &all_cpus(), WARMUP).unwrap()
}

/// CPU time (own plus reaped children's) of each live process of the load.
fn cpu_ticks(w: &RunningWorkload) -> HashMap<i32, u64> {
    w.pids()
        .into_iter()
        .filter_map(|p| Some((p, proc_stat(p)?.total_ticks())))
        .collect()
}

/// CPU seconds the load used between two snapshots.
fn cpu_seconds(before: &HashMap<i32, u64>, after: &HashMap<i32, u64>) -> f64 {
    let ticks: u64 = after
        .iter()
        .map(|(p, t)| t.saturating_sub(*before.get(p).unwrap_or(&0)))
        .sum();
    ticks as f64 / clock_ticks_per_sec() as f64
}

/// `processes` from /proc/stat: forks since boot.
fn forks_since_boot() -> u64 {
    let text = fs::read_to_string("/proc/stat").unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix("processes "))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// (rx_bytes, tx_bytes) of `ifname` in a /proc/.../net/dev text.
fn if_bytes(net_dev: &str, ifname: &str) -> Option<(u64, u64)> {
    net_dev.lines().find_map(|l| {
        let (name, rest) = l.split_once(':')?;
        if name.trim() != ifname {
            return None;
        }
        let f: Vec<u64> = rest
            .split_whitespace()
            .filter_map(|x| x.parse().ok())
            .collect();
        Some((*f.first()?, *f.get(8)?))
    })
}

/// Stops `w` and checks that nothing of it is left: no process in any of
/// its groups (zombies included, after a moment for init to reap), no work
/// directory.
fn stop_and_check_gone(w: RunningWorkload) {
    let pgids = w.pgids();
    let dirs = w.work_dirs().to_vec();
    let t0 = Instant::now();
    let outcome = w.stop();
    let took = t0.elapsed();
    assert!(outcome.survivors.is_empty(), "{outcome:?}");
    assert!(outcome.cleanup_errors.is_empty(), "{outcome:?}");
    assert!(outcome.died.is_none(), "load died: {outcome:?}");
    wait_groups_gone(&pgids, Duration::from_secs(2));
    for d in dirs {
        assert!(!d.exists(), "{} left behind", d.display());
    }
    println!(
        "    stopped in {:.2} s{}",
        took.as_secs_f64(),
        if outcome.forced_kill {
            " (SIGKILL needed)"
        } else {
            ""
        }
    );
}

fn wait_groups_gone(pgids: &[i32], within: Duration) {
    wait_groups(pgids, within, false);
}

/// Waits until no process of `pgids` is left — or, with `live_only`, none
/// that still runs (zombies wait for their new parent, init, to reap them,
/// which some inits do only every second or two).
fn wait_groups(pgids: &[i32], within: Duration, live_only: bool) {
    let deadline = Instant::now() + within;
    loop {
        let left: Vec<i32> = pgids
            .iter()
            .flat_map(|&g| group_pids(g))
            .filter(|&p| !live_only || proc_stat(p).is_some_and(|s| !matches!(s.state, 'Z' | 'X')))
            .collect();
        if left.is_empty() {
            return;
        }
        if Instant::now() >= deadline {
            let desc: Vec<String> = left
                .iter()
                .filter_map(|&p| proc_stat(p))
                .map(|s| format!("{} {} {} ppid {}", s.pid, s.comm, s.state, s.ppid))
                .collect();
            panic!("processes of groups {pgids:?} remain: {desc:?}");
        }
        thread::sleep(Duration::from_millis(20));
    }
}

/// Runs `spec` at light level for [`WINDOW`] and returns the CPU seconds it
/// used, stopping it (and checking it is gone) at the end. `during` sees
/// the running load before and after the window.
fn run_light<T>(spec: &WorkloadSpec, mut probe: impl FnMut(&RunningWorkload) -> T) -> (f64, T, T) {
    let w = start_light(spec);
    assert!(!w.pids().is_empty(), "no processes");
    let a = probe(&w);
    let c0 = cpu_ticks(&w);
    thread::sleep(WINDOW);
    let c1 = cpu_ticks(&w);
    let b = probe(&w);
    let mut w = w;
    assert_eq!(w.poll(), None);
    let cpu = cpu_seconds(&c0, &c1);
    println!(
        "    {} light: {:.2} CPU s in {:.1} s, {} processes",
        spec.name(),
        cpu,
        WINDOW.as_secs_f64(),
        w.pids().len()
    );
    stop_and_check_gone(w);
    (cpu, a, b)
}

// ------------------------------------------------------------------ tests

fn idle() -> Verdict {
    let w = start(&WorkloadSpec::Idle, LoadLevel::Normal, &all_cpus(), WARMUP).unwrap();
    assert!(w.pids().is_empty());
    assert!(w.pgids().is_empty());
    stop_and_check_gone(w);
    Verdict::Pass
}

fn cpu_light() -> Verdict {
    let ncpu = all_cpus().len() as f64;
    let (cpu, _, _) = run_light(&WorkloadSpec::Cpu, |_| ());
    // 50% duty on every CPU: ncpu * 0.75 s; the machine is shared, so
    // accept a third of it.
    assert!(
        cpu > 0.25 * ncpu * WINDOW.as_secs_f64() / 2.0 * 0.66,
        "{cpu}"
    );
    Verdict::Pass
}

fn cpu_normal() -> Verdict {
    let cpus = all_cpus();
    let w = start(&WorkloadSpec::Cpu, LoadLevel::Normal, &cpus, WARMUP).unwrap();
    assert_eq!(w.pids().len(), cpus.len(), "one spinner per CPU");
    let c0 = cpu_ticks(&w);
    thread::sleep(WINDOW);
    let cpu = cpu_seconds(&c0, &cpu_ticks(&w));
    let pct = 100.0 * cpu / (WINDOW.as_secs_f64() * cpus.len() as f64);
    println!(
        "    cpu normal: {cpu:.2} CPU s = {pct:.0}% of {} CPUs",
        cpus.len()
    );
    // The machine is shared (DESIGN.md): demand a clear majority of it.
    assert!(pct > 30.0, "{pct}");
    stop_and_check_gone(w);
    Verdict::Pass
}

fn memory() -> Verdict {
    if let Some(v) = needs(&WorkloadSpec::Memory) {
        return v;
    }
    let (cpu, _, _) = run_light(&WorkloadSpec::Memory, |_| ());
    assert!(cpu > 0.3, "{cpu}");
    Verdict::Pass
}

fn compile() -> Verdict {
    if let Some(v) = needs(&WorkloadSpec::Compile) {
        return v;
    }
    let (cpu, f0, f1) = run_light(&WorkloadSpec::Compile, |_| forks_since_boot());
    println!("    compile: {} processes created", f1 - f0);
    assert!(f1 - f0 >= 6, "{} forks", f1 - f0);
    assert!(cpu > 0.2, "{cpu}");
    Verdict::Pass
}

fn disk() -> Verdict {
    if let Some(v) = needs(&WorkloadSpec::Disk) {
        return v;
    }
    let written = |w: &RunningWorkload| -> u64 {
        w.pids()
            .into_iter()
            .filter_map(proc_io)
            .map(|io| io.write_bytes)
            .sum()
    };
    let (_, b0, b1) = run_light(&WorkloadSpec::Disk, written);
    let mb = (b1 - b0) as f64 / 1e6;
    println!("    disk: {mb:.1} MB written to storage");
    assert!(mb > 1.0, "{mb} MB");
    Verdict::Pass
}

fn net() -> Verdict {
    if let Some(v) = needs(&WorkloadSpec::Net) {
        return v;
    }
    let counters = |w: &RunningWorkload| -> (u64, u64) {
        // The veth end in the source's namespace, and loopback here.
        let src = w.netns_pids()[1];
        let ns = fs::read_to_string(format!("/proc/{src}/net/dev")).unwrap_or_default();
        let veth_tx = if_bytes(&ns, "lsveth0").map_or(0, |(_, tx)| tx);
        let root = fs::read_to_string("/proc/net/dev").unwrap();
        let lo_rx = if_bytes(&root, "lo").map_or(0, |(rx, _)| rx);
        (veth_tx, lo_rx)
    };
    let (_, (v0, l0), (v1, l1)) = run_light(&WorkloadSpec::Net, counters);
    let veth = (v1 - v0) as f64 / 1e6;
    let lo = (l1 - l0) as f64 / 1e6;
    println!("    net: {veth:.1} MB sent over the veth pair, {lo:.1} MB over loopback");
    assert!(veth > 2.0, "veth {veth} MB");
    assert!(lo > 2.0, "lo {lo} MB");
    Verdict::Pass
}

fn tty() -> Verdict {
    if let Some(v) = needs(&WorkloadSpec::Tty) {
        return v;
    }
    let read = |w: &RunningWorkload| -> u64 {
        w.pids()
            .into_iter()
            .filter_map(proc_io)
            .map(|io| io.rchar)
            .sum()
    };
    let (_, (r0, p0), (r1, p1)) = run_light(&WorkloadSpec::Tty, |w| (read(w), w.pty_bytes()));
    assert!(p1.unwrap() > p0.unwrap(), "pty_bytes did not grow");
    let mb = (r1 - r0) as f64 / 1e6;
    println!("    tty: {mb:.2} MB read from the pty slave (light: 1 MiB/s)");
    assert!(mb > 0.7, "{mb} MB");
    Verdict::Pass
}

fn fork() -> Verdict {
    if let Some(v) = needs(&WorkloadSpec::Fork) {
        return v;
    }
    let (_, f0, f1) = run_light(&WorkloadSpec::Fork, |_| forks_since_boot());
    let rate = (f1 - f0) as f64 / WINDOW.as_secs_f64();
    println!("    fork: {} processes created, {rate:.0}/s", f1 - f0);
    assert!(rate > 300.0, "{rate}/s");
    Verdict::Pass
}

fn timer() -> Verdict {
    if let Some(v) = needs(&WorkloadSpec::Timer) {
        return v;
    }
    let (cpu, _, _) = run_light(&WorkloadSpec::Timer, |_| ());
    assert!(cpu > 0.05, "{cpu}");
    Verdict::Pass
}

fn exe() -> String {
    std::env::current_exe().unwrap().display().to_string()
}

fn args_file(tag: &str) -> PathBuf {
    std::env::temp_dir().join(format!("latscope-args-{tag}-{}.json", std::process::id()))
}

fn wait_for_file(path: &PathBuf) -> String {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        if let Ok(text) = fs::read_to_string(path) {
            if text.ends_with('\n') {
                return text;
            }
        }
        assert!(
            Instant::now() < deadline,
            "{} never written",
            path.display()
        );
        thread::sleep(Duration::from_millis(20));
    }
}

fn custom_arguments() -> Verdict {
    let out = args_file("plain");
    let exe = exe();
    assert!(!exe.contains(char::is_whitespace) && !out.display().to_string().contains(' '));
    let text = format!(
        "custom:{exe} __test-echo-args {} %s|%s a;b $HOME * ~ 'q' \"d\" \\x `id`",
        out.display()
    );
    let spec = WorkloadSpec::parse(&text).unwrap();
    let w = start(
        &spec,
        LoadLevel::Normal,
        &all_cpus(),
        Duration::from_millis(100),
    )
    .unwrap();
    let got: Vec<String> = serde_json::from_str(wait_for_file(&out).trim()).unwrap();
    let want = [
        "%s|%s", "a;b", "$HOME", "*", "~", "'q'", "\"d\"", "\\x", "`id`",
    ];
    assert_eq!(got, want);
    println!("    arguments arrived as {got:?}");
    stop_and_check_gone(w);
    let _ = fs::remove_file(&out);
    Verdict::Pass
}

fn custom_json_form() -> Verdict {
    let out = args_file("json");
    let all = vec![
        exe(),
        "__test-echo-args".to_string(),
        out.display().to_string(),
        "two words".into(),
        String::new(),
        "  padded ".into(),
    ];
    let text = format!("custom:{}", serde_json::to_string(&all).unwrap());
    let spec = WorkloadSpec::parse(&text).unwrap();
    let w = start(
        &spec,
        LoadLevel::Normal,
        &all_cpus(),
        Duration::from_millis(100),
    )
    .unwrap();
    let got: Vec<String> = serde_json::from_str(wait_for_file(&out).trim()).unwrap();
    assert_eq!(got, ["two words", "", "  padded "]);
    stop_and_check_gone(w);
    let _ = fs::remove_file(&out);
    Verdict::Pass
}

fn custom_death() -> Verdict {
    let spec =
        WorkloadSpec::parse(r#"custom:["sh","-c","sleep 1; echo boom >&2; exit 3"]"#).unwrap();
    let mut w = start(
        &spec,
        LoadLevel::Normal,
        &all_cpus(),
        Duration::from_millis(200),
    )
    .unwrap();
    assert_eq!(w.poll(), None);
    let deadline = Instant::now() + Duration::from_secs(5);
    let msg = loop {
        if let Some(m) = w.poll() {
            break m;
        }
        assert!(Instant::now() < deadline, "death not seen");
        thread::sleep(Duration::from_millis(50));
    };
    println!("    poll: {msg}");
    assert!(msg.starts_with("workload custom:sh: sh (pid "), "{msg}");
    assert!(msg.contains("exited with status 3"), "{msg}");
    assert!(msg.contains("boom"), "{msg}");
    assert!(!msg.contains('\n'));
    assert_eq!(w.poll().as_deref(), Some(msg.as_str()), "sticky");
    let pgids = w.pgids();
    let outcome = w.stop();
    assert_eq!(outcome.died.as_deref(), Some(msg.as_str()));
    wait_groups_gone(&pgids, Duration::from_secs(2));
    Verdict::Pass
}

fn died_during_warmup() -> Verdict {
    let spec = WorkloadSpec::parse("custom:false").unwrap();
    let err = start(
        &spec,
        LoadLevel::Normal,
        &all_cpus(),
        Duration::from_millis(500),
    )
    .err()
    .unwrap()
    .to_string();
    println!("    {err}");
    assert!(
        err.starts_with("workload custom:false died during warm-up: false (pid "),
        "{err}"
    );
    assert!(err.contains("exited with status 1"), "{err}");
    Verdict::Pass
}

fn missing_stress_ng() -> Verdict {
    let out = Command::new(exe())
        .arg("__test-no-stress-ng")
        .env("PATH", "/nonexistent-latscope-test")
        .output()
        .unwrap();
    print!("{}", String::from_utf8_lossy(&out.stdout));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Verdict::Pass
}

fn drop_stops() -> Verdict {
    let w = start(
        &WorkloadSpec::Cpu,
        LoadLevel::Light,
        &all_cpus(),
        Duration::ZERO,
    )
    .unwrap();
    let pgids = w.pgids();
    assert!(!pgids.is_empty());
    drop(w);
    wait_groups_gone(&pgids, Duration::from_secs(1));
    Verdict::Pass
}

/// Normal and heavy levels start and survive a short warm-up (stress-ng
/// rejects bad options at once), and stop cleanly. The workloads run at
/// once, each in a thread of its own (its normal level, then its heavy
/// one): what this proves holds of each alone, and side by side they took
/// 4.8-8.3 s in three runs where one after another took 17.
fn every_level() -> Verdict {
    let specs: Vec<WorkloadSpec> = WorkloadSpec::BUILTIN.to_vec();
    each_at_once(&specs, |spec| {
        if let Some(v) = needs(spec) {
            return v;
        }
        for level in [LoadLevel::Normal, LoadLevel::Heavy] {
            start_and_stop(spec, level);
        }
        Verdict::Pass
    })
}

fn start_and_stop(spec: &WorkloadSpec, level: LoadLevel) {
    let w = match start(spec, level, &all_cpus(), Duration::from_millis(700)) {
        Ok(w) => w,
        Err(e) => panic!("{spec} {level}: {e}"),
    };
    let n = w.pids().len();
    let pgids = w.pgids();
    let t0 = Instant::now();
    let outcome = w.stop();
    let took = t0.elapsed().as_secs_f64();
    assert!(outcome.clean(), "{spec} {level}: {outcome:?}");
    wait_groups(&pgids, Duration::from_secs(3), true);
    println!(
        "    {spec} {level}: {n} processes, stopped in {took:.2} s{}",
        if outcome.forced_kill {
            " (SIGKILL needed)"
        } else {
            ""
        }
    );
}

/// Every workload's parent killed with SIGKILL, all at once (each waits
/// a second or two for init to reap what it leaves).
fn kill9_every() -> Verdict {
    let names = [
        "cpu",
        "memory",
        "compile",
        "disk",
        "net",
        "tty",
        "fork",
        "timer",
        "custom:sleep 60",
        "hackbench",
        "rt:50,1ms/10ms,x2",
    ];
    each_at_once(&names, |name| kill9(name))
}

/// Runs `check` on every item in a thread of its own and waits for all:
/// passes when each passed, skips (saying what each skipped one needs)
/// when some skipped, and fails naming every item whose check panicked.
fn each_at_once<T: std::fmt::Display + Sync>(
    items: &[T],
    check: impl Fn(&T) -> Verdict + Sync,
) -> Verdict {
    let verdicts: Vec<(String, thread::Result<Verdict>)> = thread::scope(|s| {
        let handles: Vec<_> = items
            .iter()
            .map(|item| (item.to_string(), s.spawn(|| check(item))))
            .collect();
        handles
            .into_iter()
            .map(|(name, h)| (name, h.join()))
            .collect()
    });
    let failed: Vec<&str> = verdicts
        .iter()
        .filter(|(_, v)| v.is_err())
        .map(|(n, _)| n.as_str())
        .collect();
    assert!(failed.is_empty(), "failed: {}", failed.join(", "));
    let skipped: Vec<String> = verdicts
        .into_iter()
        .filter_map(|(n, v)| match v {
            Ok(Verdict::Skip(why)) => Some(format!("{why} ({n})")),
            _ => None,
        })
        .collect();
    if skipped.is_empty() {
        Verdict::Pass
    } else {
        Verdict::Skip(skipped.join("; "))
    }
}

/// Starts `name` in a child copy of this binary, SIGKILLs that child, and
/// checks that every process of the workload's groups goes away, and its
/// work directory with it.
fn kill9(name: &str) -> Verdict {
    let spec = WorkloadSpec::parse(name).unwrap();
    if let Some(v) = needs(&spec) {
        return v;
    }
    let mut parent = Command::new(exe())
        .args(["__test-parent", name])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = parent.stdout.take().unwrap();
    let mut pgids = Vec::new();
    let mut dirs = Vec::new();
    let mut pids = 0;
    for line in BufReader::new(stdout).lines() {
        let line = line.unwrap();
        let mut words = line.split_whitespace();
        match words.next() {
            Some("PGIDS") => pgids = words.map(|w| w.parse().unwrap()).collect(),
            Some("DIRS") => dirs = words.map(PathBuf::from).collect(),
            Some("PIDS") => pids = words.count(),
            Some("READY") => break,
            Some("ERROR") => panic!("{line}"),
            _ => {}
        }
    }
    assert!(!pgids.is_empty(), "parent reported no groups");
    parent.kill().unwrap(); // SIGKILL
    parent.wait().unwrap();
    let t0 = Instant::now();
    wait_groups(&pgids, Duration::from_secs(5), true);
    let dead = t0.elapsed();
    wait_groups(&pgids, Duration::from_secs(10), false);
    let reaped = t0.elapsed();
    let deadline = Instant::now() + Duration::from_secs(2);
    for d in &dirs {
        while d.exists() && Instant::now() < deadline {
            thread::sleep(Duration::from_millis(20));
        }
        assert!(!d.exists(), "{} left behind", d.display());
    }
    println!(
        "    {name}: {pids} processes in {} groups: none running {:.2} s after kill -9 of the parent, all reaped after {:.2} s",
        pgids.len(),
        dead.as_secs_f64(),
        reaped.as_secs_f64()
    );
    Verdict::Pass
}

// ------------------------------------------------------------ child modes

/// `__test-parent NAME`: starts the workload, reports its groups, waits to
/// be killed.
fn test_parent(args: &[String]) -> i32 {
    let Some(name) = args.first() else {
        return 2;
    };
    let spec = match WorkloadSpec::parse(name) {
        Ok(s) => s,
        Err(e) => {
            println!("ERROR {e}");
            return 1;
        }
    };
    let w = match start(
        &spec,
        LoadLevel::Light,
        &CpuSet::new(),
        Duration::from_millis(300),
    ) {
        Ok(w) => w,
        Err(e) => {
            println!("ERROR {e}");
            return 1;
        }
    };
    let join = |v: Vec<String>| v.join(" ");
    println!(
        "PGIDS {}",
        join(w.pgids().iter().map(|p| p.to_string()).collect())
    );
    println!(
        "PIDS {}",
        join(w.pids().iter().map(|p| p.to_string()).collect())
    );
    println!(
        "DIRS {}",
        join(
            w.work_dirs()
                .iter()
                .map(|d| d.display().to_string())
                .collect()
        )
    );
    println!("READY");
    // Keep `w` alive: only the SIGKILL ends this process.
    thread::sleep(Duration::from_secs(60));
    drop(w);
    0
}

/// `__test-echo-args FILE ARGS...`: writes ARGS as a JSON array to FILE,
/// then runs until stopped, like a load would.
fn echo_args(args: &[String]) -> i32 {
    let Some(file) = args.first() else {
        return 2;
    };
    let json = serde_json::to_string(&args[1..]).unwrap();
    fs::write(file, format!("{json}\n")).unwrap();
    thread::sleep(Duration::from_secs(60));
    0
}

/// Run with a PATH that has no stress-ng: the stress-ng workloads fail
/// `check` with the one-line message; idle and cpu still run.
fn no_stress_ng_mode() -> i32 {
    let result = panic::catch_unwind(|| {
        for spec in [
            WorkloadSpec::Memory,
            WorkloadSpec::Disk,
            WorkloadSpec::Fork,
            WorkloadSpec::Timer,
        ] {
            let err = check(&spec).unwrap_err().to_string();
            assert_eq!(
                err,
                format!(
                    "workload {} needs stress-ng, which is not installed (apt-get install stress-ng)",
                    spec.name()
                )
            );
            // start says the same.
            let err = start(&spec, LoadLevel::Light, &CpuSet::new(), Duration::ZERO)
                .err()
                .unwrap()
                .to_string();
            assert!(err.contains("apt-get install stress-ng"), "{err}");
            println!("    {err}");
        }
        for spec in [WorkloadSpec::Idle, WorkloadSpec::Cpu] {
            check(&spec).unwrap();
            let mut w = start(
                &spec,
                LoadLevel::Light,
                &CpuSet::new(),
                Duration::from_millis(300),
            )
            .unwrap();
            assert_eq!(w.poll(), None);
            assert!(w.stop().clean());
        }
        println!("    idle and cpu ran without stress-ng");
    });
    if result.is_ok() {
        0
    } else {
        1
    }
}
