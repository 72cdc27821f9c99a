//! `cpu-spin` and `exec-storm`.

use std::hint::black_box;
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use super::args::{arg, helper_exe, HELPER_ARG};
use super::pace::Pacer;

/// Length of one on/off cycle of a partial-duty spinner.
const PERIOD: Duration = Duration::from_millis(10);

/// `cpu-spin DUTY`: busy DUTY percent of every 10 ms, forever. The process
/// is pinned by the spawner; at 100 it never sleeps.
pub(super) fn main(args: &[String]) -> Result<i32, String> {
    let duty: u32 = arg(args, 0, "duty percent")?;
    if !(1..=100).contains(&duty) {
        return Err(format!("duty percent {duty} not in 1..=100"));
    }
    if duty == 100 {
        loop {
            spin_until(Instant::now() + Duration::from_secs(1));
        }
    }
    let on = PERIOD * duty / 100;
    // A random phase, so that spinners on different CPUs (and the probes'
    // periods) do not line up: the stroboscopic pitfall of DESIGN.md.
    let phase = Duration::from_micros(u64::from(std::process::id()) * 7919 % 10_000);
    thread::sleep(phase);
    let mut next = Instant::now();
    loop {
        spin_until(next + on);
        next += PERIOD;
        let now = Instant::now();
        if next > now {
            thread::sleep(next - now);
        } else {
            next = now;
        }
    }
}

/// Burns CPU in user space until `until`.
fn spin_until(until: Instant) {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    while Instant::now() < until {
        for _ in 0..1000 {
            // xorshift: cheap work the optimiser cannot remove.
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
        }
        black_box(x);
    }
}

/// `exec-storm RATE`: spawns and waits for `latscope __workload nop`, RATE
/// processes a second (0: back to back), forever. Each one is a full
/// fork-or-clone, exec of a dynamically linked binary, and exit.
pub(super) fn exec_storm_main(args: &[String]) -> Result<i32, String> {
    let rate: u64 = arg(args, 0, "rate")?;
    let exe = helper_exe();
    let mut pacer = Pacer::new(rate);
    let mut failures = 0u32;
    loop {
        let status = Command::new(&exe)
            .args([HELPER_ARG, "nop"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        match status {
            Ok(s) if s.success() => failures = 0,
            Ok(s) => return Err(format!("{} {HELPER_ARG} nop ended with {s}", exe.display())),
            Err(e) => {
                // EAGAIN under a process limit is a load condition, not a
                // failure; give up only if it never works.
                failures += 1;
                if failures > 1000 {
                    return Err(format!("cannot spawn {}: {e}", exe.display()));
                }
                thread::sleep(Duration::from_millis(1));
            }
        }
        pacer.sent(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spin_uses_the_cpu_for_the_time_asked() {
        let t0 = Instant::now();
        spin_until(t0 + Duration::from_millis(50));
        let took = t0.elapsed();
        assert!(took >= Duration::from_millis(50) && took < Duration::from_millis(500));
    }

    #[test]
    fn bad_duty_is_refused() {
        for d in ["0", "101", "x"] {
            assert!(main(&[d.to_string()]).is_err());
        }
        assert!(main(&[]).is_err());
    }
}
