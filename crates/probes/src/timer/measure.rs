//! The measuring thread's loop, once [`crate::threads`] has set the thread
//! up and released it. Everything the loop touches is allocated before it
//! starts; inside it the only system calls are the timer service under test
//! and the vDSO clock read.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use latscope_platform::monotonic_ns;
use latscope_platform::timers::{self, EpollTimeout, Errno, PosixTimer, TimerFd};

use super::api::TimerApi;
use super::config::{Phase, TimerConfig};
use super::cpu::{LoopError, TimerCpu};
use super::schedule::Schedule;
use crate::rng::XorShift;

/// What one measuring thread needs once it is set up and released (the
/// set-up and the go signal are [`crate::threads`]'s).
pub(crate) struct ThreadCtx {
    pub state: Arc<TimerCpu>,
    pub config: TimerConfig,
    pub stop: Arc<AtomicBool>,
}

/// The thread's loop, from time zero `start`.
pub(crate) fn run_thread(ctx: ThreadCtx, start: u64) -> Result<(), LoopError> {
    let cpu = ctx.state.cpu;
    let api = ctx.config.api;
    let err = |errno| LoopError { cpu, api, errno };
    let period = ctx.config.period.0;
    let end = ctx
        .config
        .duration
        .map_or(u64::MAX, |d| start.saturating_add(d.0));
    let first = start + period;
    let state = &*ctx.state;
    let stop = &*ctx.stop;
    let seed = monotonic_ns() ^ (u64::from(cpu.0) << 32);
    match api {
        TimerApi::ClockNanosleep => {
            measure(AbsoluteSleep, state, stop, start, first, end, period, None).map_err(err)
        }
        TimerApi::Nanosleep => {
            let phase = (ctx.config.phase == Phase::Random).then(|| XorShift::new(seed));
            measure(RelativeSleep, state, stop, start, first, end, period, phase).map_err(err)
        }
        TimerApi::Epoll => {
            let phase = (ctx.config.phase == Phase::Random).then(|| XorShift::new(seed));
            let w = EpollTimeout::new().map_err(err)?;
            measure(Epoll(w), state, stop, start, first, end, period, phase).map_err(err)
        }
        TimerApi::Timerfd => {
            let w = TimerFd::new(first, period).map_err(err)?;
            measure(Periodic(w), state, stop, start, first, end, period, None).map_err(err)
        }
        TimerApi::PosixTimer => {
            let w = PosixTimer::new(first, period).map_err(err)?;
            measure(Periodic(w), state, stop, start, first, end, period, None).map_err(err)
        }
    }
}

/// A timer service as the loop sees it.
trait Waiter {
    /// Kernel-periodic services report their own expiration counts.
    const PERIODIC: bool;
    /// Blocks until `deadline`; returns the expirations reported (1 for
    /// one-shot services).
    fn wait(&mut self, deadline: u64) -> Result<u64, Errno>;
}

struct AbsoluteSleep;
impl Waiter for AbsoluteSleep {
    const PERIODIC: bool = false;
    #[inline]
    fn wait(&mut self, deadline: u64) -> Result<u64, Errno> {
        timers::sleep_until(deadline)
    }
}

struct RelativeSleep;
impl Waiter for RelativeSleep {
    const PERIODIC: bool = false;
    #[inline]
    fn wait(&mut self, deadline: u64) -> Result<u64, Errno> {
        let now = monotonic_ns();
        if deadline > now {
            timers::sleep_for(deadline - now)
        } else {
            Ok(1)
        }
    }
}

struct Epoll(EpollTimeout);
impl Waiter for Epoll {
    const PERIODIC: bool = false;
    #[inline]
    fn wait(&mut self, deadline: u64) -> Result<u64, Errno> {
        self.0.wait_until(deadline)
    }
}

trait PeriodicTimer {
    fn wait(&mut self) -> Result<u64, Errno>;
}
impl PeriodicTimer for TimerFd {
    fn wait(&mut self) -> Result<u64, Errno> {
        TimerFd::wait(self)
    }
}
impl PeriodicTimer for PosixTimer {
    fn wait(&mut self) -> Result<u64, Errno> {
        PosixTimer::wait(self)
    }
}

struct Periodic<T>(T);
impl<T: PeriodicTimer> Waiter for Periodic<T> {
    const PERIODIC: bool = true;
    #[inline]
    fn wait(&mut self, _deadline: u64) -> Result<u64, Errno> {
        self.0.wait()
    }
}

/// The measuring loop. `phase`: a generator for random busy delays before
/// each (relative) sleep; then the intended expiry is one period after the
/// delay ends, and `timer.interval` is not recorded, since it would measure
/// the random delays.
#[allow(clippy::too_many_arguments)]
#[inline(never)]
fn measure<W: Waiter>(
    mut waiter: W,
    state: &TimerCpu,
    stop: &AtomicBool,
    start: u64,
    first: u64,
    end: u64,
    period: u64,
    mut phase: Option<XorShift>,
) -> Result<(), Errno> {
    let mut schedule = Schedule::new(first, period);
    let mut prev_wake: Option<u64> = None;
    // The timeline second, advanced by comparison rather than a division
    // per sample.
    let mut second = 0u64;
    let mut next_second = start + 1_000_000_000;
    while schedule.next_deadline() <= end && !stop.load(Ordering::Relaxed) {
        let expirations = waiter.wait(schedule.next_deadline())?;
        let now = monotonic_ns();
        let wake = if W::PERIODIC {
            schedule.woke_periodic(now, expirations)
        } else {
            schedule.woke(now)
        };
        if now >= next_second {
            second = now.saturating_sub(start) / 1_000_000_000;
            next_second = start + (second + 1) * 1_000_000_000;
        }
        let interval = match (prev_wake, &phase) {
            (Some(p), None) => Some(now.saturating_sub(p)),
            _ => None,
        };
        state.record(second, wake, period, interval);
        prev_wake = Some(now);
        if let Some(rng) = phase.as_mut() {
            let delay = rng.below(period);
            let resume = monotonic_ns() + delay;
            latscope_platform::spin_until(resume);
            schedule.set_next(resume + period);
        }
        // The noise duty cycle spins on this CPU until `paused`: sleep
        // through it and go on at the next deadline of the grid.
        let paused = state.paused_until.load(Ordering::Relaxed);
        if !W::PERIODIC && paused > now {
            waiter.wait(paused)?;
            schedule.resume(monotonic_ns());
            prev_wake = None;
        }
    }
    Ok(())
}
