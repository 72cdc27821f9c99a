//! The pair of timer runs that two known-answer tests judge: a SCHED_FIFO
//! thread busy 500 µs once in every 50 ms slot on the last online CPU, at
//! priority 90 above the probe's 80, and its control, the same bursts at
//! 70 below it (`common/control.rs`), 10 s each at 1 ms.
//! `known_answer.rs` reads the latencies it adds, `forecast_e2e.rs` the
//! underrun rate it causes: the same measurement judged twice, so it is
//! measured once per test binary (the first of the two to run measures it,
//! under `serial()`; the other reads the stores it left).

use std::path::PathBuf;
use std::sync::OnceLock;

use serde_json::Value;

use super::control::{control_below_and_interfered, Controlled};
use super::{interferer, latscope, online, read_json, stderr, Burst};

pub const SLOT_NS: u64 = 50_000_000;
pub const BURST_NS: u64 = 500_000;
pub const SECONDS: f64 = 10.0;

/// One run of the pair: its store (for `forecast latest`) and its JSON.
pub struct PairRun {
    pub store: String,
    pub doc: Value,
}

/// Both runs and the bursts of each run's interferer.
pub struct BurstPair {
    pub cpu: u32,
    pub runs: Controlled<PairRun>,
    pub bursts: Controlled<Vec<Burst>>,
}

static PAIR: OnceLock<BurstPair> = OnceLock::new();

/// The pair, measured on first use. The caller holds `serial()`.
pub fn burst_pair() -> &'static BurstPair {
    PAIR.get_or_init(measure)
}

fn measure() -> BurstPair {
    let cpu = *online().last().unwrap();
    // Cargo's scratch directory for this test target: the stores outlive
    // the first test that reads them, and the next test binary run starts
    // it afresh.
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("burst-pair");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let (runs, bursts) = control_below_and_interfered(
        |stop| interferer(cpu, "ka-below", 70, SLOT_NS, BURST_NS, stop),
        |stop| interferer(cpu, "ka-interferer", 90, SLOT_NS, BURST_NS, stop),
        |name| {
            let store = dir.join(format!("{name}.db"));
            let json = dir.join(format!("{name}.json"));
            let o = latscope(&[
                "run",
                "--cpus",
                &cpu.to_string(),
                "--priority",
                "80",
                "--period",
                "1ms",
                "--duration",
                "10s",
                "--threshold",
                "250us",
                "--store",
                store.to_str().unwrap(),
                "--json",
                json.to_str().unwrap(),
                "--quiet",
            ]);
            assert_eq!(o.status.code(), Some(0), "{name}: {}", stderr(&o));
            PairRun {
                store: store.to_str().unwrap().to_string(),
                doc: read_json(&json),
            }
        },
    );
    BurstPair { cpu, runs, bursts }
}
