//! The timer services a probe can put under test, as thin wrappers that
//! allocate nothing and make exactly the system calls of the service.
//!
//! Each `wait` returns how many expirations the kernel reports (1 for
//! one-shot services; more when a periodic timer expired again before it
//! was read) or the raw `errno`, a plain integer, so that an error on a
//! measuring thread builds no message until the loop has ended.

use std::mem;

/// A raw `errno` value from a timer call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Errno(pub i32);

impl Errno {
    fn last() -> Errno {
        Errno(std::io::Error::last_os_error().raw_os_error().unwrap_or(0))
    }
    /// EAGAIN / EWOULDBLOCK: nothing there yet, or a time-out.
    pub fn is_again(self) -> bool {
        self.0 == libc::EAGAIN
    }
    /// ENOBUFS: a queue below the socket was full.
    pub fn is_no_buffers(self) -> bool {
        self.0 == libc::ENOBUFS
    }
    pub fn to_io(self) -> std::io::Error {
        std::io::Error::from_raw_os_error(self.0)
    }
}

fn timespec(ns: u64) -> libc::timespec {
    libc::timespec {
        tv_sec: (ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    }
}

/// `clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME)`: what cyclictest uses.
pub fn sleep_until(deadline_ns: u64) -> Result<u64, Errno> {
    let ts = timespec(deadline_ns);
    loop {
        // SAFETY: `ts` is a valid timespec; the remain pointer may be null
        // for absolute sleeps.
        let rc = unsafe {
            libc::clock_nanosleep(
                libc::CLOCK_MONOTONIC,
                libc::TIMER_ABSTIME,
                &ts,
                std::ptr::null_mut(),
            )
        };
        match rc {
            0 => return Ok(1),
            // An absolute sleep can simply be restarted.
            libc::EINTR => continue,
            e => return Err(Errno(e)),
        }
    }
}

/// `nanosleep` for a relative span; restarted with the remainder on EINTR.
pub fn sleep_for(span_ns: u64) -> Result<u64, Errno> {
    let mut req = timespec(span_ns);
    loop {
        let mut rem = timespec(0);
        // SAFETY: both pointers refer to valid timespecs on this stack frame.
        let rc = unsafe { libc::nanosleep(&req, &mut rem) };
        if rc == 0 {
            return Ok(1);
        }
        let e = Errno::last();
        if e.0 != libc::EINTR {
            return Err(e);
        }
        req = rem;
    }
}

/// A periodic `timerfd` on CLOCK_MONOTONIC, armed with an absolute first
/// expiry. `wait` reads the expiration count: more than 1 means expirations
/// were missed while the thread was not running.
pub struct TimerFd {
    fd: libc::c_int,
}

impl TimerFd {
    pub fn new(first_ns: u64, period_ns: u64) -> Result<TimerFd, Errno> {
        // SAFETY: timerfd_create takes plain integer arguments.
        let fd = unsafe { libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_CLOEXEC) };
        if fd < 0 {
            return Err(Errno::last());
        }
        let timer = TimerFd { fd };
        let spec = libc::itimerspec {
            it_interval: timespec(period_ns),
            it_value: timespec(first_ns),
        };
        // SAFETY: `fd` is the timerfd just created; `spec` is valid; the old
        // value pointer may be null.
        let rc = unsafe {
            libc::timerfd_settime(
                timer.fd,
                libc::TFD_TIMER_ABSTIME,
                &spec,
                std::ptr::null_mut(),
            )
        };
        if rc != 0 {
            return Err(Errno::last());
        }
        Ok(timer)
    }

    pub fn wait(&mut self) -> Result<u64, Errno> {
        let mut count: u64 = 0;
        loop {
            // SAFETY: reads exactly 8 bytes into `count`, which is 8 bytes.
            let n = unsafe {
                libc::read(
                    self.fd,
                    (&mut count as *mut u64).cast::<libc::c_void>(),
                    mem::size_of::<u64>(),
                )
            };
            if n == mem::size_of::<u64>() as isize {
                return Ok(count);
            }
            let e = Errno::last();
            if e.0 != libc::EINTR {
                return Err(e);
            }
        }
    }
}

impl Drop for TimerFd {
    fn drop(&mut self) {
        // SAFETY: `fd` is owned by this value and closed exactly once.
        unsafe {
            libc::close(self.fd);
        }
    }
}

/// A periodic POSIX timer (`timer_create`) on CLOCK_MONOTONIC whose signal
/// is delivered to the thread that created it (`SIGEV_THREAD_ID`). The signal
/// is blocked and taken synchronously with `sigwaitinfo`, so the measured
/// path is timer expiry → signal → thread wake-up, with no handler.
/// Create it on the measuring thread; it must not move to another thread.
pub struct PosixTimer {
    id: libc::timer_t,
    set: libc::sigset_t,
}

impl PosixTimer {
    pub fn new(first_ns: u64, period_ns: u64) -> Result<PosixTimer, Errno> {
        let signo = libc::SIGRTMIN();
        // SAFETY: sigset_t is initialised by sigemptyset before use; the mask
        // change applies to the calling (measuring) thread only.
        let set = unsafe {
            let mut set: libc::sigset_t = mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, signo);
            let rc = libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
            if rc != 0 {
                return Err(Errno(rc));
            }
            set
        };
        // SAFETY: an all-zero sigevent is valid; the fields set below select
        // thread-directed delivery of `signo` to this thread.
        let mut sev: libc::sigevent = unsafe { mem::zeroed() };
        sev.sigev_notify = libc::SIGEV_THREAD_ID;
        sev.sigev_signo = signo;
        sev.sigev_notify_thread_id = crate::current_tid();
        let mut id: libc::timer_t = std::ptr::null_mut();
        // SAFETY: `sev` and `id` are valid for the call; on success `id`
        // names a timer this value deletes on drop.
        let rc = unsafe { libc::timer_create(libc::CLOCK_MONOTONIC, &mut sev, &mut id) };
        if rc != 0 {
            return Err(Errno::last());
        }
        let timer = PosixTimer { id, set };
        let spec = libc::itimerspec {
            it_interval: timespec(period_ns),
            it_value: timespec(first_ns),
        };
        // SAFETY: `id` is a live timer; `spec` is valid; old value may be null.
        let rc = unsafe {
            libc::timer_settime(timer.id, libc::TIMER_ABSTIME, &spec, std::ptr::null_mut())
        };
        if rc != 0 {
            return Err(Errno::last());
        }
        Ok(timer)
    }

    /// Waits for the next expiry signal; returns 1 + the timer's overrun
    /// count (expirations that fell while the signal was still pending).
    pub fn wait(&mut self) -> Result<u64, Errno> {
        loop {
            // SAFETY: `set` holds the blocked timer signal; the info pointer
            // may be null.
            let rc = unsafe { libc::sigwaitinfo(&self.set, std::ptr::null_mut()) };
            if rc >= 0 {
                break;
            }
            let e = Errno::last();
            if e.0 != libc::EINTR {
                return Err(e);
            }
        }
        // SAFETY: `id` is a live timer owned by this value.
        let over = unsafe { libc::timer_getoverrun(self.id) };
        if over < 0 {
            return Err(Errno::last());
        }
        Ok(1 + over as u64)
    }
}

impl Drop for PosixTimer {
    fn drop(&mut self) {
        // SAFETY: `id` is owned by this value and deleted exactly once.
        unsafe {
            libc::timer_delete(self.id);
        }
    }
}

/// An empty epoll set used only for its time-out: `epoll_pwait2`, which
/// takes a nanosecond timespec (plain `epoll_wait` rounds to milliseconds).
pub struct EpollTimeout {
    fd: libc::c_int,
}

impl EpollTimeout {
    pub fn new() -> Result<EpollTimeout, Errno> {
        // SAFETY: epoll_create1 takes a flags integer.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(Errno::last());
        }
        Ok(EpollTimeout { fd })
    }

    /// Waits in `epoll_pwait2` until `deadline_ns`; restarted with the
    /// remaining time should the wait return early.
    pub fn wait_until(&mut self, deadline_ns: u64) -> Result<u64, Errno> {
        loop {
            let now = crate::monotonic_ns();
            if now >= deadline_ns {
                return Ok(1);
            }
            let ts = timespec(deadline_ns - now);
            // SAFETY: zeroed epoll_event is valid; the buffer holds 1 event as
            // declared; `ts` is valid; a null sigmask means "unchanged".
            let rc = unsafe {
                let mut ev: libc::epoll_event = mem::zeroed();
                libc::epoll_pwait2(self.fd, &mut ev, 1, &ts, std::ptr::null())
            };
            if rc < 0 {
                let e = Errno::last();
                if e.0 != libc::EINTR {
                    return Err(e);
                }
            }
        }
    }
}

impl Drop for EpollTimeout {
    fn drop(&mut self) {
        // SAFETY: `fd` is owned by this value and closed exactly once.
        unsafe {
            libc::close(self.fd);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::monotonic_ns;

    const MS: u64 = 1_000_000;

    #[test]
    fn absolute_and_relative_sleeps_wait() {
        let t0 = monotonic_ns();
        sleep_until(t0 + 2 * MS).unwrap();
        assert!(monotonic_ns() >= t0 + 2 * MS);
        let t1 = monotonic_ns();
        sleep_for(MS).unwrap();
        assert!(monotonic_ns() >= t1 + MS);
    }

    #[test]
    fn timerfd_is_periodic() {
        let t0 = monotonic_ns();
        let mut t = TimerFd::new(t0 + MS, MS).unwrap();
        let mut expirations = 0;
        while expirations < 5 {
            expirations += t.wait().unwrap();
        }
        assert!(monotonic_ns() >= t0 + 5 * MS);
    }

    #[test]
    fn timerfd_counts_missed_expirations() {
        let t0 = monotonic_ns();
        let mut t = TimerFd::new(t0 + MS, MS).unwrap();
        crate::spin_until(t0 + 5 * MS + MS / 2);
        assert!(t.wait().unwrap() >= 5);
    }

    #[test]
    fn posix_timer_signals_this_thread() {
        std::thread::spawn(|| {
            let t0 = monotonic_ns();
            let mut t = PosixTimer::new(t0 + MS, MS).unwrap();
            for _ in 0..3 {
                assert!(t.wait().unwrap() >= 1);
            }
            assert!(monotonic_ns() >= t0 + 3 * MS);
            crate::spin_until(monotonic_ns() + 4 * MS);
            // Several expirations while the signal was pending: overrun > 0.
            assert!(t.wait().unwrap() >= 3);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn epoll_timeout_waits() {
        let mut e = EpollTimeout::new().unwrap();
        let t0 = monotonic_ns();
        e.wait_until(t0 + 2 * MS).unwrap();
        assert!(monotonic_ns() >= t0 + 2 * MS);
    }
}
