//! The operating-system primitives the microbenchmarks time, each as one
//! call with nothing around it: the time sources of the *Null* benchmark
//! (Chen et al. §3.4) and the cheapest system calls. Everything `unsafe`
//! about them (the raw `syscall`, `rdtscp`, the C calls on stack buffers)
//! stays here; the benchmark loops in `latscope-micro` are safe code.
//!
//! Results are returned (not discarded) so that the caller can feed them to
//! `std::hint::black_box` and the compiler cannot drop the call.

use std::os::fd::{AsRawFd, BorrowedFd};

/// `rdtscp`: the time stamp counter after all earlier instructions have
/// executed (`rdtsc` on targets without it returns CLOCK_MONOTONIC).
#[inline(always)]
pub fn rdtscp() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        let mut aux = 0u32;
        // SAFETY: RDTSCP reads the counter and IA32_TSC_AUX into `aux`, a
        // valid local; every x86_64 CPU Linux runs on in practice has it
        // (the kernel's vDSO getcpu relies on it), and user-space access is
        // enabled (CR4.TSD clear).
        #[allow(unused_unsafe)]
        unsafe {
            core::arch::x86_64::__rdtscp(&mut aux)
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        crate::clock::monotonic_ns()
    }
}

/// CLOCK_MONOTONIC through the C library (the vDSO: no kernel entry).
#[inline(always)]
pub fn clock_gettime_vdso() -> u64 {
    crate::clock::monotonic_ns()
}

/// CLOCK_MONOTONIC by a real system call, bypassing the vDSO.
#[inline(always)]
pub fn clock_gettime_syscall() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: SYS_clock_gettime with a valid clock id and a pointer to a
    // writable timespec on our stack; it cannot fail with these arguments.
    unsafe {
        libc::syscall(
            libc::SYS_clock_gettime,
            libc::CLOCK_MONOTONIC,
            &mut ts as *mut libc::timespec,
        );
    }
    (ts.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(ts.tv_nsec as u64)
}

/// `gettimeofday` (microseconds since the epoch, through the vDSO).
#[inline(always)]
pub fn gettimeofday_us() -> u64 {
    let mut tv = libc::timeval {
        tv_sec: 0,
        tv_usec: 0,
    };
    // SAFETY: a valid, writable timeval on our stack and a null timezone,
    // which the call accepts; it cannot fail with these arguments.
    unsafe {
        libc::gettimeofday(&mut tv, std::ptr::null_mut());
    }
    (tv.tv_sec as u64)
        .saturating_mul(1_000_000)
        .saturating_add(tv.tv_usec as u64)
}

/// `getppid` by a raw system call (the C library may cache nothing here,
/// but the raw call makes sure the kernel is entered every time).
#[inline(always)]
pub fn getppid_syscall() -> i64 {
    // SAFETY: getppid takes no arguments and cannot fail.
    unsafe { libc::syscall(libc::SYS_getppid) }
}

/// `read` of one byte from `fd` (for `/dev/zero`): the bytes read, or -1.
#[inline(always)]
pub fn read_one(fd: BorrowedFd<'_>) -> isize {
    let mut b = 0u8;
    // SAFETY: reads at most one byte into a valid local; `fd` is borrowed
    // from an open file for the call's duration.
    unsafe { libc::read(fd.as_raw_fd(), (&mut b as *mut u8).cast(), 1) }
}

/// `dup` then `close` of the copy: 0, or -1 when `dup` failed.
#[inline(always)]
pub fn dup_close(fd: BorrowedFd<'_>) -> i32 {
    // SAFETY: dup of a descriptor borrowed for the call; the new
    // descriptor is ours and closed at once, never used otherwise.
    unsafe {
        let d = libc::dup(fd.as_raw_fd());
        if d < 0 {
            return -1;
        }
        libc::close(d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_time_sources_agree_and_advance() {
        let a = clock_gettime_syscall();
        let b = clock_gettime_vdso();
        let c = clock_gettime_syscall();
        assert!(a <= b && b <= c, "{a} {b} {c}");
        let t0 = rdtscp();
        let t1 = rdtscp();
        assert!(t1 >= t0);
        let us = gettimeofday_us();
        let real_us = crate::clock::realtime_ns() / 1_000;
        assert!(us.abs_diff(real_us) < 1_000_000, "{us} {real_us}");
    }

    #[test]
    fn the_system_calls_do_what_they_say() {
        assert_eq!(
            getppid_syscall(),
            i64::from(std::os::unix::process::parent_id())
        );
        let zero = std::fs::File::open("/dev/zero").unwrap();
        use std::os::fd::AsFd;
        assert_eq!(read_one(zero.as_fd()), 1);
        assert_eq!(dup_close(zero.as_fd()), 0);
    }
}
