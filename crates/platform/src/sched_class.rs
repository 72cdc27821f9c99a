//! The scheduling settings `sched_setscheduler` cannot make: the
//! `SCHED_DEADLINE` class (runtime, deadline, period, set by
//! `sched_setattr`, whose refusals are worded here with the kernel's
//! reason), the nice value of a fair-share thread, and the round-robin
//! quantum the kernel gives a `SCHED_RR` thread.

use std::io;
use std::mem;

use latscope_model::Nanos;

use crate::error::PlatformError;

/// `SCHED_DEADLINE` from `<linux/sched.h>` (not exported by every libc).
pub(crate) const SCHED_DEADLINE: libc::c_int = 6;

/// A `SCHED_DEADLINE` reservation: `runtime` of CPU every `period`, to be
/// used within `deadline` of each period's start. The kernel wants
/// 1024 ns <= runtime <= deadline <= period.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DeadlineParams {
    pub runtime: Nanos,
    pub deadline: Nanos,
    pub period: Nanos,
}

/// `struct sched_attr` as of its first version (48 bytes), which every
/// kernel since 3.14 accepts.
#[repr(C)]
struct SchedAttr {
    size: u32,
    sched_policy: u32,
    sched_flags: u64,
    sched_nice: i32,
    sched_priority: u32,
    sched_runtime: u64,
    sched_deadline: u64,
    sched_period: u64,
}

/// Puts the calling thread under `SCHED_DEADLINE`. The thread must be free
/// to run on every CPU of its root domain: the kernel refuses a pinned one
/// (EPERM).
pub(crate) fn set_deadline(p: DeadlineParams) -> Result<(), PlatformError> {
    let attr = SchedAttr {
        size: mem::size_of::<SchedAttr>() as u32,
        sched_policy: SCHED_DEADLINE as u32,
        sched_flags: 0,
        sched_nice: 0,
        sched_priority: 0,
        sched_runtime: p.runtime.0,
        sched_deadline: p.deadline.0,
        sched_period: p.period.0,
    };
    // SAFETY: `attr` is a fully initialised sched_attr whose `size` field
    // gives its length; the kernel only reads it. pid 0 is the calling
    // thread and flags must be 0.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_sched_setattr,
            0 as libc::pid_t,
            &attr as *const SchedAttr,
            0 as libc::c_uint,
        )
    };
    if rc != 0 {
        let err = io::Error::last_os_error();
        return Err(PlatformError::Invalid(deadline_refusal(p, &err)));
    }
    Ok(())
}

/// One line saying why the kernel refused a DEADLINE reservation.
pub(crate) fn deadline_refusal(p: DeadlineParams, err: &io::Error) -> String {
    let what = format!(
        "SCHED_DEADLINE runtime {} deadline {} period {}",
        p.runtime, p.deadline, p.period
    );
    match err.raw_os_error() {
        Some(libc::EBUSY) => format!(
            "{what} refused by the kernel's admission control (EBUSY): runtime/period is more than the deadline bandwidth left on these CPUs (sched_rt_runtime_us/sched_rt_period_us of each, less the fair server's share and other deadline tasks)"
        ),
        Some(libc::EPERM) => format!(
            "{what} not permitted (EPERM): it needs root or CAP_SYS_NICE and a thread allowed on every CPU of its root domain"
        ),
        Some(libc::EINVAL) => format!(
            "{what} refused as invalid (EINVAL): the kernel wants 1024ns <= runtime <= deadline <= period"
        ),
        _ => format!("{what} refused: {err}"),
    }
}

/// Sets the calling thread's nice value (-20..19), which weighs it among
/// `SCHED_OTHER` and `SCHED_BATCH` threads.
pub fn set_nice(nice: i32) -> Result<(), PlatformError> {
    // SAFETY: gettid and setpriority take their arguments by value and
    // touch no user memory; PRIO_PROCESS with a thread id applies to that
    // one thread on Linux.
    let rc =
        unsafe { libc::setpriority(libc::PRIO_PROCESS as _, libc::gettid() as libc::id_t, nice) };
    if rc != 0 {
        return Err(PlatformError::last_os(format!("cannot set nice {nice}")));
    }
    Ok(())
}

/// The round-robin quantum of the calling thread (`sched_rr_get_interval`):
/// the time slice a `SCHED_RR` thread runs before the next one of its
/// priority on its CPU; 0 under FIFO.
pub fn rr_interval() -> Result<Nanos, PlatformError> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec the kernel writes; pid 0 is the
    // calling thread.
    let rc = unsafe { libc::sched_rr_get_interval(0, &mut ts) };
    if rc != 0 {
        return Err(PlatformError::last_os(
            "cannot read the round-robin quantum",
        ));
    }
    let ns = (ts.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(ts.tv_nsec as u64);
    Ok(Nanos(ns))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn sched_attr_is_the_first_version() {
        assert_eq!(mem::size_of::<SchedAttr>(), 48);
    }

    #[test]
    fn refusals_name_the_kernels_reason() {
        let p = DeadlineParams {
            runtime: Nanos::from_micros(100),
            deadline: Nanos::from_millis(1),
            period: Nanos::from_millis(1),
        };
        let busy = deadline_refusal(p, &io::Error::from_raw_os_error(libc::EBUSY));
        assert!(busy.contains("admission control (EBUSY)"), "{busy}");
        let perm = deadline_refusal(p, &io::Error::from_raw_os_error(libc::EPERM));
        assert!(perm.contains("EPERM"), "{perm}");
        let inval = deadline_refusal(p, &io::Error::from_raw_os_error(libc::EINVAL));
        assert!(inval.contains("runtime <= deadline <= period"), "{inval}");
        assert!(!busy.contains('\n'));
    }

    #[test]
    fn a_fair_thread_takes_a_nice_value() {
        std::thread::spawn(|| set_nice(5)).join().unwrap().unwrap();
    }
}
