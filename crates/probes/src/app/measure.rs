//! The producer's loop, generic over its time source so that the scripted
//! tests run the very loop the real kernel runs.
//!
//! Each turn: sleep (absolute timer) until the device frees the next
//! buffer's slot, unless it is free already (the producer is catching up);
//! do the work; publish the buffer; the pipeline says whether the device
//! had needed it earlier. Nothing here allocates, locks or prints.

use std::sync::atomic::{AtomicBool, Ordering};

use latscope_platform::timers::{self, Errno};

use super::cpu::AppCpu;
use super::pipeline::Pipeline;
use super::work::spin_turns;

/// What the loop needs of the machine.
pub(crate) trait Env {
    /// CLOCK_MONOTONIC, ns.
    fn now(&mut self) -> u64;
    /// Sleeps until `deadline` (absolute).
    fn sleep_until(&mut self, deadline: u64) -> Result<(), Errno>;
    /// The work for one buffer.
    fn compute(&mut self);
}

/// The real machine: `clock_nanosleep(TIMER_ABSTIME)` and the busy loop.
pub(crate) struct RealEnv {
    pub turns: u64,
}

impl Env for RealEnv {
    #[inline]
    fn now(&mut self) -> u64 {
        latscope_platform::monotonic_ns()
    }
    #[inline]
    fn sleep_until(&mut self, deadline: u64) -> Result<(), Errno> {
        timers::sleep_until(deadline).map(|_| ())
    }
    #[inline]
    fn compute(&mut self) {
        std::hint::black_box(spin_turns(self.turns));
    }
}

/// The producer from time zero `start` (buffer 0 plays from then) until
/// the last slot that frees before `end`, or `stop`.
#[allow(clippy::too_many_arguments)]
#[inline(never)]
pub(crate) fn produce<E: Env>(
    env: &mut E,
    state: &AppCpu,
    stop: &AtomicBool,
    start: u64,
    end: u64,
    period: u64,
    buffers: u32,
) -> Result<(), Errno> {
    let mut pipe = Pipeline::new(start, period, buffers);
    while pipe.free_at() < end && !stop.load(Ordering::Relaxed) {
        let free = pipe.free_at();
        let mut now = env.now();
        let slept = now < free;
        if slept {
            env.sleep_until(free)?;
            now = env.now();
        }
        let woke_second = now.saturating_sub(start) / 1_000_000_000;
        env.compute();
        let ready = env.now();
        let second = ready.saturating_sub(start) / 1_000_000_000;
        let underrun = pipe.publish(ready);
        state.record(
            woke_second,
            second,
            slept.then(|| now.saturating_sub(free)),
            ready.saturating_sub(free),
            underrun,
        );
    }
    Ok(())
}
