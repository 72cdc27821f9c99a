use std::fs;
use std::mem;

use latscope_model::{CpuId, CpuSet};

use crate::error::PlatformError;
use crate::sched_class::DeadlineParams;

/// A scheduling policy for measuring threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SchedPolicy {
    /// `SCHED_FIFO`: runs until it blocks or a higher priority preempts it.
    Fifo,
    /// `SCHED_RR`: FIFO with a time slice among equal priorities.
    Rr,
    /// `SCHED_OTHER`: the normal, fair-share class (priority must be 0).
    Other,
    /// `SCHED_BATCH`: fair-share, but treated as CPU-bound (no wake-up
    /// preemption of others).
    Batch,
    /// `SCHED_IDLE`: runs only when nothing else in the fair class wants
    /// the CPU (a weight below nice 19).
    Idle,
    /// `SCHED_DEADLINE`: earliest deadline first with a reserved runtime
    /// every period (set with `sched_setattr`).
    Deadline(DeadlineParams),
}

impl SchedPolicy {
    pub fn as_str(self) -> &'static str {
        match self {
            SchedPolicy::Fifo => "fifo",
            SchedPolicy::Rr => "rr",
            SchedPolicy::Other => "other",
            SchedPolicy::Batch => "batch",
            SchedPolicy::Idle => "idle",
            SchedPolicy::Deadline(_) => "deadline",
        }
    }

    /// FIFO and RR: the policies with a real-time priority (1-99).
    pub fn has_priority(self) -> bool {
        matches!(self, SchedPolicy::Fifo | SchedPolicy::Rr)
    }

    /// The policies above every fair-share thread: FIFO, RR and DEADLINE
    /// (the kernel clears their timer slack).
    pub fn is_real_time(self) -> bool {
        matches!(
            self,
            SchedPolicy::Fifo | SchedPolicy::Rr | SchedPolicy::Deadline(_)
        )
    }

    /// The fair-share policies, which take a nice value: OTHER and BATCH
    /// (IDLE ignores nice).
    pub fn takes_nice(self) -> bool {
        matches!(self, SchedPolicy::Other | SchedPolicy::Batch)
    }

    fn raw(self) -> libc::c_int {
        match self {
            SchedPolicy::Fifo => libc::SCHED_FIFO,
            SchedPolicy::Rr => libc::SCHED_RR,
            SchedPolicy::Other => libc::SCHED_OTHER,
            SchedPolicy::Batch => libc::SCHED_BATCH,
            SchedPolicy::Idle => libc::SCHED_IDLE,
            SchedPolicy::Deadline(_) => crate::sched_class::SCHED_DEADLINE,
        }
    }
}

/// The kernel's id of the calling thread.
pub fn current_tid() -> i32 {
    // SAFETY: gettid has no arguments and cannot fail.
    unsafe { libc::gettid() }
}

/// Pins the calling thread to one CPU.
pub fn set_affinity(cpu: CpuId) -> Result<(), PlatformError> {
    set_affinity_set(&[cpu])
}

/// Restricts the calling thread to the given CPUs (not empty).
pub fn set_affinity_set(cpus: &[CpuId]) -> Result<(), PlatformError> {
    if cpus.is_empty() {
        return Err(PlatformError::Invalid("empty CPU set".to_string()));
    }
    if let Some(cpu) = cpus
        .iter()
        .find(|c| c.0 as usize >= libc::CPU_SETSIZE as usize)
    {
        return Err(PlatformError::Invalid(format!(
            "CPU {cpu} is beyond CPU_SETSIZE"
        )));
    }
    // SAFETY: cpu_set_t is a plain bit array for which all-zero is the empty
    // set; CPU_SET is only given indices checked against CPU_SETSIZE above;
    // sched_setaffinity(0, ...) reads `set` for its declared size and applies
    // to the calling thread only.
    let rc = unsafe {
        let mut set: libc::cpu_set_t = mem::zeroed();
        for cpu in cpus {
            libc::CPU_SET(cpu.0 as usize, &mut set);
        }
        libc::sched_setaffinity(0, mem::size_of::<libc::cpu_set_t>(), &set)
    };
    if rc != 0 {
        let list: Vec<String> = cpus.iter().map(|c| c.to_string()).collect();
        return Err(PlatformError::last_os(format!(
            "cannot restrict thread to CPUs {}",
            list.join(",")
        )));
    }
    Ok(())
}

/// Sets the calling thread's policy and priority (`priority` is ignored
/// unless the policy [has one](SchedPolicy::has_priority)). DEADLINE goes
/// through `sched_setattr` and its error names the kernel's reason.
pub fn set_scheduler(policy: SchedPolicy, priority: u32) -> Result<(), PlatformError> {
    if let SchedPolicy::Deadline(params) = policy {
        return crate::sched_class::set_deadline(params);
    }
    let prio = if !policy.has_priority() {
        0
    } else {
        libc::c_int::try_from(priority)
            .map_err(|_| PlatformError::Invalid(format!("priority {priority} out of range")))?
    };
    let param = libc::sched_param {
        sched_priority: prio,
    };
    // SAFETY: `param` is a valid sched_param; pid 0 means the calling thread.
    let rc = unsafe { libc::sched_setscheduler(0, policy.raw(), &param) };
    if rc != 0 {
        return Err(PlatformError::last_os(format!(
            "cannot set policy {} priority {prio}",
            policy.as_str()
        )));
    }
    Ok(())
}

/// Sets the calling thread's timer slack. The kernel adds it (50 µs by
/// default) to every sleep of a `SCHED_OTHER` thread; 1 ns is the least it
/// accepts (0 would mean "back to the default").
pub fn set_timer_slack(ns: u64) -> Result<(), PlatformError> {
    let ns = ns.max(1) as libc::c_ulong;
    // SAFETY: PR_SET_TIMERSLACK takes one unsigned long argument by value.
    let rc = unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns, 0, 0, 0) };
    if rc != 0 {
        return Err(PlatformError::last_os("cannot set timer slack"));
    }
    Ok(())
}

/// The calling thread's timer slack in force, ns (PR_GET_TIMERSLACK). A
/// real-time thread reads 0: the kernel clears its slack when it takes a
/// real-time policy and ignores PR_SET_TIMERSLACK while it has one (seen on
/// 6.18 here), and gives the default back when it returns to SCHED_OTHER.
pub fn timer_slack() -> Result<u64, PlatformError> {
    // SAFETY: PR_GET_TIMERSLACK takes no argument and touches no user
    // memory; it returns the slack (truncated to an int) or -1.
    let rc = unsafe { libc::prctl(libc::PR_GET_TIMERSLACK, 0, 0, 0, 0) };
    u64::try_from(rc).map_err(|_| PlatformError::last_os("cannot read timer slack"))
}

/// Locks all current and future pages of the process in memory, so no page
/// fault can land in a measuring loop. Stays in force until the process ends.
pub fn lock_memory() -> Result<(), PlatformError> {
    // SAFETY: mlockall takes flags by value and touches no user memory.
    let rc = unsafe { libc::mlockall(libc::MCL_CURRENT | libc::MCL_FUTURE) };
    if rc != 0 {
        return Err(PlatformError::last_os("cannot lock memory (mlockall)"));
    }
    one_heap();
    Ok(())
}

/// With memory locked, every thread that allocates gets the main glibc
/// heap instead of one of its own. glibc gives each thread that allocates
/// a heap of its own by default. Such a heap grows exactly as far as an
/// allocation needs, a page at a time. Each growth is an `mprotect` call,
/// and under `MCL_FUTURE` that call also faults the new page in and locks
/// it. The tracer thread's heap grew like this several times a second. In
/// a BPF-traced run at 1 ms, those calls were 13 % of the thread's CPU time
/// (`perf record` of the thread). The main heap grows by `brk` with
/// glibc's 128 KiB top pad, so it makes far fewer such calls. Threads
/// started after this share it. The measuring threads among them allocate
/// only before they measure. The others (the tracer above all) are not
/// measuring threads, and glibc's per-thread caches keep most of their
/// small allocations off the shared heap's lock. Threads that already have
/// a heap keep it. Only glibc has `mallopt`; elsewhere this does nothing.
pub fn one_heap() {
    #[cfg(target_env = "gnu")]
    // SAFETY: mallopt takes two integers by value and only changes the
    // allocator's settings; glibc takes its own lock for that, so other
    // threads may allocate meanwhile.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
    }
}

/// Blocks SIGINT, SIGTERM and SIGHUP in the calling thread, so that the
/// process's stop signals are always delivered to the housekeeping thread and
/// never interrupt a measurement in flight.
pub fn block_signals_in_this_thread() -> Result<(), PlatformError> {
    // SAFETY: `set` is initialised by sigemptyset before use; pthread_sigmask
    // reads it and changes only the calling thread's mask.
    let rc = unsafe {
        let mut set: libc::sigset_t = mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
        libc::sigaddset(&mut set, libc::SIGHUP);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut())
    };
    if rc != 0 {
        return Err(PlatformError::from_code("cannot block signals", rc));
    }
    Ok(())
}

/// The CPUs that are online, from `/sys/devices/system/cpu/online`.
pub fn online_cpus() -> Result<CpuSet, PlatformError> {
    let path = "/sys/devices/system/cpu/online";
    let text = fs::read_to_string(path).map_err(|source| PlatformError::Os {
        what: format!("cannot read {path}"),
        source,
    })?;
    CpuSet::parse(text.trim()).map_err(|e| PlatformError::Invalid(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn online_cpus_include_cpu0() {
        let cpus = online_cpus().unwrap();
        assert!(!cpus.is_empty());
    }

    #[test]
    fn thread_settings_apply() {
        std::thread::spawn(|| {
            let cpu = online_cpus().unwrap().iter().next().unwrap();
            set_affinity(cpu).unwrap();
            set_timer_slack(1).unwrap();
            set_scheduler(SchedPolicy::Other, 0).unwrap();
            assert_eq!(timer_slack().unwrap(), 1);
            block_signals_in_this_thread().unwrap();
            assert!(current_tid() > 0);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn bad_cpu_is_an_error() {
        let err = std::thread::spawn(|| set_affinity(CpuId(4000)))
            .join()
            .unwrap();
        assert!(err.is_err());
    }
}
