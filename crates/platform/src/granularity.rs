//! The timer granularity in force, for the system snapshot: the resolution
//! of CLOCK_MONOTONIC and of its coarse twin (the tick), whether
//! high-resolution timers are active, and the timer slack a normal thread
//! gets.
//!
//! Whether high-resolution timers are active is read, by preference, from
//! `.hres_active` per CPU in `/proc/timer_list` (readable by root only); a
//! CPU can fall back to low resolution on its own (a broken clock event
//! device), which only this file shows. Without it, a CLOCK_MONOTONIC
//! resolution of 1 ns says the same for the machine as a whole: the kernel
//! reports `hrtimer_resolution`, 1 ns in high-resolution mode and the tick
//! otherwise.

use std::path::Path;

use latscope_model::TimerGranularity;

use crate::sysfs::read_text;

/// The granularity of the live machine: the clocks' resolutions and the
/// calling thread's slack, then `/proc/timer_list` under `root`.
pub fn granularity(root: &Path) -> TimerGranularity {
    let mut g = TimerGranularity {
        monotonic_res_ns: clock_resolution(libc::CLOCK_MONOTONIC),
        coarse_res_ns: clock_resolution(libc::CLOCK_MONOTONIC_COARSE),
        default_slack_ns: crate::sched::timer_slack().ok(),
        ..TimerGranularity::default()
    };
    let per_cpu = read_text(root, "proc/timer_list")
        .map(|text| parse_timer_list(&text))
        .unwrap_or_default();
    apply_hres(&mut g, &per_cpu);
    g
}

/// Fills `hres_active` and its source from `/proc/timer_list`'s per-CPU
/// flags when there are any, else from the monotonic clock's resolution.
fn apply_hres(g: &mut TimerGranularity, per_cpu: &[(u32, bool)]) {
    if !per_cpu.is_empty() {
        g.hres_inactive_cpus = per_cpu
            .iter()
            .filter(|(_, on)| !on)
            .map(|(cpu, _)| *cpu)
            .collect();
        g.hres_active = Some(g.hres_inactive_cpus.is_empty());
        g.hres_source = Some("timer_list".into());
    } else if let Some(res) = g.monotonic_res_ns {
        g.hres_active = Some(res == 1);
        g.hres_source = Some("clock_getres".into());
    }
}

/// `clock_getres` of `clock`, ns; `None` if the kernel refuses the clock.
fn clock_resolution(clock: libc::clockid_t) -> Option<u64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec that clock_getres fills;
    // an unknown clock id only makes it return -1 (EINVAL).
    let rc = unsafe { libc::clock_getres(clock, &mut ts) };
    if rc != 0 {
        return None;
    }
    let secs = u64::try_from(ts.tv_sec).ok()?;
    let nanos = u64::try_from(ts.tv_nsec).ok()?;
    Some(secs.saturating_mul(1_000_000_000).saturating_add(nanos))
}

/// `(cpu, hres_active)` for every `cpu: N` section of `/proc/timer_list`
/// that has an `.hres_active` line (the file's other sections, the tick
/// devices, have none).
pub fn parse_timer_list(text: &str) -> Vec<(u32, bool)> {
    let mut out = Vec::new();
    let mut cpu = None;
    for line in text.lines() {
        let line = line.trim();
        if let Some(n) = line.strip_prefix("cpu:") {
            cpu = n.trim().parse::<u32>().ok();
        } else if let Some(rest) = line.strip_prefix(".hres_active") {
            let value = rest.trim_start().strip_prefix(':').map(str::trim);
            if let (Some(c), Some(v)) = (cpu.take(), value) {
                out.push((c, v == "1"));
            }
        } else if line.starts_with("Tick Device") {
            cpu = None;
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const TIMER_LIST: &str = "Timer List Version: v0.10\n\
        HRTIMER_MAX_CLOCK_BASES: 8\n\
        now at 199987634286 nsecs\n\n\
        cpu: 0\n clock 0:\n  .base:       0000000072be4570\n  .resolution: 1 nsecs\n\
        active timers:\n  .expires_next   : 199988000000 nsecs\n  .hres_active    : 1\n\
          .nr_events      : 8735\n\n\
        cpu: 1\n clock 0:\n  .resolution: 4000000 nsecs\n  .hres_active    : 0\n\n\
        Tick Device: mode:     1\nBroadcast device\nClock Event Device: <NULL>\n\
        tick_broadcast_mask: 0\n";

    #[test]
    fn timer_list_per_cpu() {
        assert_eq!(parse_timer_list(TIMER_LIST), [(0, true), (1, false)]);
        assert_eq!(parse_timer_list(""), []);
        assert_eq!(parse_timer_list(".hres_active : 1\n"), [], "no cpu section");
    }

    #[test]
    fn hres_from_timer_list_first_then_the_resolution() {
        let mut g = TimerGranularity {
            monotonic_res_ns: Some(1),
            ..TimerGranularity::default()
        };
        apply_hres(&mut g, &parse_timer_list(TIMER_LIST));
        assert_eq!(g.hres_active, Some(false));
        assert_eq!(g.hres_inactive_cpus, [1]);
        assert_eq!(g.hres_source.as_deref(), Some("timer_list"));

        let mut g = TimerGranularity {
            monotonic_res_ns: Some(4_000_000),
            ..TimerGranularity::default()
        };
        apply_hres(&mut g, &[]);
        assert_eq!(g.hres_active, Some(false));
        assert_eq!(g.hres_source.as_deref(), Some("clock_getres"));

        let mut g = TimerGranularity::default();
        apply_hres(&mut g, &[]);
        assert_eq!(g.hres_active, None, "nothing read, nothing said");
    }

    #[test]
    fn live_machine() {
        let g = granularity(Path::new("/"));
        let res = g.monotonic_res_ns.unwrap();
        assert!(res >= 1);
        // The coarse clock ticks: never finer than the monotonic one.
        assert!(g.coarse_res_ns.unwrap() >= res);
        assert!(g.hres_active.is_some());
        println!("{g:?}");
    }
}
