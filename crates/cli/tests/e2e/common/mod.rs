//! Helpers for end-to-end tests of the real `latscope` binary.
#![allow(dead_code)]
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use serde_json::Value;

pub mod browser;
pub mod burst_pair;
pub mod control;
pub mod daemon;
pub mod pg_cluster;
pub mod postgres;
pub mod prometheus;

/// Measurements on a 2-CPU machine disturb each other. A test whose
/// assertions a neighbour's run could change (a latency, a count of
/// interruptions, a rate) takes [`serial`] and runs alone among the tests
/// that take either guard. A test that runs latscope but asserts nothing
/// another run beside it changes (exit codes, stored rows, files, signals,
/// what a server serves) and whose own runs are light (a timer probe, a
/// monitor, a store's I/O; no flood, and no spinning but at a normal
/// priority, below every measuring thread, as oslat's in the import
/// test) takes [`shared`]: two of
/// those may run at once, never beside a [`serial`] one. Tests that do not
/// measure take neither.
static MEASURING: RwLock<()> = RwLock::new(());

/// Runs the test alone among the measuring tests.
pub fn serial() -> RwLockWriteGuard<'static, ()> {
    MEASURING.write().unwrap_or_else(|e| e.into_inner())
}

/// Runs the test beside other [`shared`] tests, never beside a [`serial`]
/// one (see [`MEASURING`]).
pub fn shared() -> RwLockReadGuard<'static, ()> {
    MEASURING.read().unwrap_or_else(|e| e.into_inner())
}

pub fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_latscope"))
}

pub fn latscope(args: &[&str]) -> Output {
    bin().args(args).output().expect("run latscope")
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A result file of another tool from the import crate's fixtures.
pub fn import_fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../import/tests/fixtures")
        .join(name)
        .to_str()
        .unwrap()
        .to_string()
}

pub fn store_in(dir: &Path) -> PathBuf {
    dir.join("latscope.db")
}

pub fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).expect("read json");
    serde_json::from_str(&text).expect("parse json")
}

/// The metric objects of cell 0 with the given name, one per CPU.
pub fn metrics<'a>(doc: &'a Value, name: &str) -> Vec<&'a Value> {
    doc["cells"][0]["metrics"]
        .as_array()
        .expect("metrics array")
        .iter()
        .filter(|m| m["name"] == name)
        .collect()
}

pub fn is_root() -> bool {
    latscope_platform::caps::detect().root
}

/// The online CPUs, ascending.
pub fn online() -> Vec<u32> {
    latscope_platform::online_cpus()
        .expect("online cpus")
        .iter()
        .map(|c| c.0)
        .collect()
}

/// A world-writable directory holding a copy of the binary that the
/// unprivileged user (nobody) can run and write a store in; `None` (with a
/// visible "skipped" line) when not root or setpriv is missing.
pub fn unprivileged_dir() -> Option<(tempfile::TempDir, PathBuf)> {
    if !is_root() {
        eprintln!("skipped: needs root to drop to an unprivileged user");
        return None;
    }
    if Command::new("setpriv").arg("--version").output().is_err() {
        eprintln!("skipped: needs setpriv (util-linux)");
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(
        dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o777),
    )
    .unwrap();
    let copy = dir.path().join("latscope");
    std::fs::copy(env!("CARGO_BIN_EXE_latscope"), &copy).unwrap();
    Some((dir, copy))
}

/// `binary` run as nobody, without groups or capabilities.
pub fn as_nobody(binary: &Path) -> Command {
    let mut c = Command::new("setpriv");
    c.args([
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
        "--inh-caps=-all",
    ])
    .arg(binary);
    c
}

/// Asserts a failed command printed exactly one line and no panic.
pub fn assert_one_line_error(o: &Output, code: i32) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(code), "exit code; stderr: {err}");
    assert!(!err.contains("panicked"), "panic: {err}");
    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert!(lines.len() == 1, "expected one clear line, got: {err}");
}

/// One burst of a known interferer, in CLOCK_MONOTONIC ns: when it was
/// due to start (its timer), when it started, when it ended.
#[derive(Clone, Copy, Debug)]
pub struct Burst {
    pub due: u64,
    pub start: u64,
    pub end: u64,
}

impl Burst {
    /// How late the burst started: its own wake-up latency. On a busy host
    /// another task's kernel code can hold the CPU past `due`, and whatever
    /// was due on the CPU meanwhile waits for that and then for the whole
    /// burst: the interferer no longer is the one of known length.
    pub fn late_ns(&self) -> u64 {
        self.start.saturating_sub(self.due)
    }
}

/// A known interferer: a thread named `name` at SCHED_FIFO `priority`,
/// pinned to `cpu`, busy for `burst_ns` once in every `slot_ns`, starting at
/// a random offset within the slot so that it cannot phase-lock onto a
/// probe's period (the stroboscopic effect). Runs until `stop`; returns each
/// burst.
pub fn interferer(
    cpu: u32,
    name: &str,
    priority: u32,
    slot_ns: u64,
    burst_ns: u64,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> std::thread::JoinHandle<Vec<Burst>> {
    use latscope_platform::{monotonic_ns, spin_until, timers, SchedPolicy};
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            latscope_platform::set_affinity(latscope_model::CpuId(cpu)).expect("pin interferer");
            latscope_platform::set_scheduler(SchedPolicy::Fifo, priority).expect("SCHED_FIFO");
            let mut seed = monotonic_ns() | 1;
            let mut slot = monotonic_ns();
            let mut bursts = Vec::with_capacity(4096);
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                let due = slot + seed % (slot_ns - burst_ns);
                let _ = timers::sleep_until(due);
                let start = monotonic_ns();
                spin_until(start + burst_ns);
                bursts.push(Burst {
                    due,
                    start,
                    end: monotonic_ns(),
                });
                slot += slot_ns;
            }
            bursts
        })
        .unwrap()
}

/// `promtool check metrics` on `text` through its standard input:
/// `None` where promtool is not installed, else its exit status and
/// everything it printed.
pub fn promtool_check(text: &str) -> Option<(std::process::ExitStatus, String)> {
    use std::io::Write as _;
    use std::process::{Command, Stdio};
    let mut child = match Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(c) => c,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) => panic!("cannot run promtool: {e}"),
    };
    let mut stdin = child.stdin.take().unwrap();
    let input = text.to_string();
    // A thread writes, so that promtool's output can never block our write.
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Some((out.status, printed))
}

/// GET over a plain socket (HTTP/1.1, `Connection: close`): the status,
/// the content type and the body (a chunked body decoded).
pub fn http_get(addr: std::net::SocketAddr, path: &str) -> (u16, String, String) {
    use std::io::{Read as _, Write as _};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(20)))
        .unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let header = |name: &str| {
        head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case(name).then(|| v.trim().to_string())
        })
    };
    let body = if header("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
        let mut out = String::new();
        let mut rest = body;
        while let Some((size, tail)) = rest.split_once("\r\n") {
            let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
            if n == 0 || tail.len() < n {
                break;
            }
            out.push_str(&tail[..n]);
            rest = tail[n..].strip_prefix("\r\n").unwrap_or(&tail[n..]);
        }
        out
    } else {
        body.to_string()
    };
    (status, header("content-type").unwrap_or_default(), body)
}

thread_local! {
    /// The `--trace-backend` of the known-answer case running on this
    /// thread (see [`on_backend`]).
    static BACKEND: std::cell::Cell<&'static str> = const { std::cell::Cell::new("perf") };
}

/// The tracing backend of the case running on this thread.
pub fn backend() -> &'static str {
    BACKEND.get()
}

/// Runs a known-answer case on `backend` (`perf` or `bpf`): each case
/// names one, and the cases are spread over both, so that each backend
/// gives known answers of its own while nothing is tested twice (that the
/// two backends decompose and explain the same events alike is
/// `crates/trace/tests/bpf_equal.rs`). `LATSCOPE_TEST_BACKENDS=all` runs
/// every case on both, each against its own control. A build without the
/// BPF programs runs a `bpf` case on perf and says so. The case passes
/// `--trace-backend` [`backend()`] to its runs.
pub fn on_backend(backend: &'static str, case: impl Fn()) {
    let all = std::env::var("LATSCOPE_TEST_BACKENDS").is_ok_and(|v| v == "all");
    let mut backends = if all {
        vec!["perf", "bpf"]
    } else {
        vec![backend]
    };
    if !latscope_platform::bpf::built() && backends.contains(&"bpf") {
        eprintln!("bpf: skipped: this build has no BPF programs (no clang)");
        backends = vec!["perf"];
    }
    for b in backends {
        eprintln!("--- --trace-backend {b}");
        BACKEND.set(b);
        case();
    }
}
