//! The producer's loop on a scripted clock: every wake-up latency and every
//! stall of the CPU is scripted, so the underruns are known exactly.

use std::time::Duration;

use super::measure::{produce, Env};
use super::*;
use crate::{Clock, ScriptedClock, SettingError};
use latscope_model::Setting;

const MS: u64 = 1_000_000;
const S: u64 = 1_000_000_000;

/// A machine whose producer wakes `latency(k)` after its `k`-th timer and
/// whose CPU is taken from it during `blocks` (start, length): the
/// producer neither wakes nor computes inside a block.
struct Scripted<'a> {
    clock: ScriptedClock,
    compute: u64,
    sleeps: u64,
    latency: &'a dyn Fn(u64) -> u64,
    blocks: Vec<(u64, u64)>,
}

impl Scripted<'_> {
    fn to(&self, t: u64) {
        let now = self.clock.monotonic_ns();
        self.clock
            .advance(Duration::from_nanos(t.saturating_sub(now)));
    }

    /// The end of the block holding `t`, or `t`.
    fn runnable_from(&self, t: u64) -> u64 {
        self.blocks
            .iter()
            .find(|&&(s, len)| (s..s + len).contains(&t))
            .map_or(t, |&(s, len)| s + len)
    }
}

impl Env for Scripted<'_> {
    fn now(&mut self) -> u64 {
        self.clock.monotonic_ns()
    }

    fn sleep_until(&mut self, deadline: u64) -> Result<(), Errno> {
        let woke = deadline + (self.latency)(self.sleeps);
        self.sleeps += 1;
        let woke = self.runnable_from(woke);
        self.to(woke);
        Ok(())
    }

    fn compute(&mut self) {
        // Work is done only outside the blocks.
        let now = self.now();
        let mut t = self.runnable_from(now);
        let mut left = self.compute;
        for &(s, len) in &self.blocks {
            if s >= t && s < t + left {
                left -= s - t;
                t = s + len;
            }
        }
        self.to(t + left);
    }
}

fn run(env: &mut Scripted<'_>, period: u64, buffers: u32, seconds: u64) -> AppCpu {
    let state = AppCpu::new(CpuId(0), None);
    let stop = AtomicBool::new(false);
    let start = env.now();
    produce(
        env,
        &state,
        &stop,
        start,
        start + seconds * S,
        period,
        buffers,
    )
    .unwrap();
    state
}

fn scripted(compute: u64, latency: &dyn Fn(u64) -> u64, blocks: Vec<(u64, u64)>) -> Scripted<'_> {
    Scripted {
        clock: ScriptedClock::new(S),
        compute,
        sleeps: 0,
        latency,
        blocks,
    }
}

#[test]
fn a_wake_up_later_than_the_slack_is_one_underrun_of_the_excess() {
    // 1 ms, 2 buffers, 0.6 ms of work: slack 0.4 ms. Wake-ups 20 µs late,
    // but the 100th 399 µs (in time), the 200th 401 µs, the 300th 3.2 ms
    // (three periods of silence, still one underrun).
    let latency = |k: u64| match k {
        100 => 399_000,
        200 => 401_000,
        300 => 3_200_000,
        _ => 20_000,
    };
    let mut env = scripted(600_000, &latency, Vec::new());
    let cpu = run(&mut env, MS, 2, 1);
    assert_eq!(cpu.underruns(), 2);
    let r = cpu.underrun.result();
    assert_eq!(r.histogram.count(), 2);
    // Length = latency − slack, exactly.
    assert_eq!(r.histogram.min(), Some(Nanos(1_000)));
    let max = r.histogram.max().unwrap().0;
    assert!(max.abs_diff(2_800_000) <= 2_800_000 / 100, "{max}");
    assert_eq!(cpu.silent_periods(), 1 + 3);
    // After the 3.2 ms stall the producer catches up without sleeping: the
    // buffers it filled meanwhile have no wake-up sample.
    assert!(cpu.wakeup.result().histogram.count() < cpu.buffers());
    assert_eq!(cpu.response.result().histogram.count(), cpu.buffers());
    // A second: about 1000 buffers (the primed two and the silence not
    // filled).
    assert!((990..=1000).contains(&cpu.buffers()), "{}", cpu.buffers());
}

#[test]
fn a_block_longer_than_the_buffered_time_every_k_seconds_gives_k_spaced_underruns() {
    // 1 ms, 3 buffers, 0.2 ms of work (slack 1.8 ms); the CPU is taken
    // for 5 ms once a second at an odd phase, for 10 s.
    let k = S;
    let blocks: Vec<(u64, u64)> = (1..10).map(|i| (S + i * k + 123_457 * i, 5 * MS)).collect();
    let latency = |_| 15_000;
    let mut env = scripted(200_000, &latency, blocks.clone());
    let cpu = run(&mut env, MS, 3, 10);
    assert_eq!(cpu.underruns(), blocks.len() as u64, "one per block");
    // One underrun in each of seconds 1..9 of the cell, none elsewhere.
    let chunk = cpu.underrun.drain_timeline(true).unwrap();
    let per_second: Vec<u64> = chunk.seconds.iter().map(|s| s.count).collect();
    assert_eq!(per_second.iter().sum::<u64>(), 9);
    assert!(
        per_second.iter().skip(1).take(9).all(|&c| c == 1),
        "{per_second:?}"
    );
    // Each lasts the block less what was buffered (at most n periods).
    let h = cpu.underrun.result().histogram;
    assert!(h.min().unwrap().0 >= 5 * MS - 3 * MS, "{:?}", h.min());
    assert!(h.max().unwrap().0 <= 5 * MS, "{:?}", h.max());

    // The control: the same blocks of 1.5 ms, shorter than the slack, and
    // no underrun at all.
    let short: Vec<(u64, u64)> = blocks.iter().map(|&(s, _)| (s, 1_500_000)).collect();
    let mut env = scripted(200_000, &latency, short);
    assert_eq!(run(&mut env, MS, 3, 10).underruns(), 0);
}

#[test]
fn settings_are_checked() {
    let ok = AppConfig {
        cpus: vec![CpuId(0)],
        period: Nanos::from_millis(1),
        buffers: 2,
        compute: Nanos::from_micros(900),
        compute_turns: 1,
        policy: latscope_platform::SchedPolicy::Fifo,
        priority: 80,
        threshold: None,
        duration: Some(Nanos::from_secs(1)),
        app: None,
    };
    assert!(ok.validate().is_ok());
    assert_eq!(ok.slack_ns(), 100_000);
    let bad = |f: &dyn Fn(&mut AppConfig)| {
        let mut c = ok.clone();
        f(&mut c);
        c.validate().unwrap_err()
    };
    assert_eq!(bad(&|c| c.buffers = 0).subject(), Some(Setting::Buffers));
    assert_eq!(
        bad(&|c| c.buffers = 65).to_string(),
        "buffers 65 is out of range: expected 1-64"
    );
    assert_eq!(
        bad(&|c| c.compute = Nanos::from_millis(1)).subject(),
        Some(Setting::Compute)
    );
    assert_eq!(bad(&|c| c.period = Nanos(0)), SettingError::PeriodZero);
    assert!(bad(&|c| c.priority = 0).to_string().contains("priority"));
    assert!(
        bad(&|c| c.duration = Some(Nanos::from_millis(2))).subject() == Some(Setting::Duration)
    );
}
