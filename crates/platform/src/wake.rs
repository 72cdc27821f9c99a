//! Thread wake-up primitives the `sync` microbenchmarks time, behind a
//! safe API: an `eventfd` and a bare futex word. (Pipes and condition
//! variables come from std.)

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU32, Ordering};

/// An `eventfd` counter: [`EventFd::signal`] adds 1, [`EventFd::wait`]
/// blocks until it is non-zero and takes it.
#[derive(Debug)]
pub struct EventFd(OwnedFd);

impl EventFd {
    pub fn new() -> io::Result<EventFd> {
        // SAFETY: eventfd takes two integers; a non-negative return is a
        // new descriptor that nothing else owns.
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just created and is owned by nothing else.
        Ok(EventFd(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    /// Adds 1 to the counter, waking a waiter.
    pub fn signal(&self) -> io::Result<()> {
        self.add(1)
    }

    /// Adds `n` to the counter in one write (a waiter then reads at least
    /// `n` at once).
    pub fn add(&self, n: u64) -> io::Result<()> {
        // SAFETY: writes 8 bytes from a valid local to our open eventfd.
        let written = unsafe {
            libc::write(
                self.0.as_raw_fd(),
                (&n as *const u64).cast(),
                std::mem::size_of::<u64>(),
            )
        };
        if written != 8 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Blocks until the counter is non-zero; returns it (and resets it).
    pub fn wait(&self) -> io::Result<u64> {
        let mut v: u64 = 0;
        // SAFETY: reads 8 bytes into a valid local from our open eventfd.
        let n = unsafe {
            libc::read(
                self.0.as_raw_fd(),
                (&mut v as *mut u64).cast(),
                std::mem::size_of::<u64>(),
            )
        };
        if n != 8 {
            return Err(io::Error::last_os_error());
        }
        Ok(v)
    }
}

impl AsRawFd for EventFd {
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        self.0.as_raw_fd()
    }
}

/// A futex word, shared between threads (`Arc<Futex>`).
#[derive(Debug, Default)]
pub struct Futex(AtomicU32);

impl Futex {
    pub fn new(value: u32) -> Futex {
        Futex(AtomicU32::new(value))
    }

    pub fn load(&self) -> u32 {
        self.0.load(Ordering::Acquire)
    }

    pub fn store(&self, v: u32) {
        self.0.store(v, Ordering::Release)
    }

    /// Sleeps while the word equals `expected` (returns at once if it does
    /// not, and may return spuriously: callers loop on their condition).
    pub fn wait(&self, expected: u32) {
        // SAFETY: FUTEX_WAIT_PRIVATE on the address of an AtomicU32 that
        // lives as long as `self` (borrowed for the call), with no timeout;
        // the kernel only reads the word.
        unsafe {
            libc::syscall(
                libc::SYS_futex,
                self.0.as_ptr(),
                libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
                expected,
                std::ptr::null::<libc::timespec>(),
            );
        }
    }

    /// Wakes up to `n` waiters; returns how many were woken.
    pub fn wake(&self, n: i32) -> i64 {
        // SAFETY: FUTEX_WAKE_PRIVATE on the address of our AtomicU32; the
        // kernel does not access the word for a wake.
        unsafe {
            libc::syscall(
                libc::SYS_futex,
                self.0.as_ptr(),
                libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
                n,
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn an_eventfd_wakes_its_waiter() {
        let e = Arc::new(EventFd::new().unwrap());
        let e2 = Arc::clone(&e);
        let t = std::thread::spawn(move || e2.wait().unwrap());
        e.signal().unwrap();
        assert_eq!(t.join().unwrap(), 1);
    }

    #[test]
    fn a_futex_wakes_its_waiter() {
        let f = Arc::new(Futex::new(0));
        let f2 = Arc::clone(&f);
        let t = std::thread::spawn(move || {
            while f2.load() == 0 {
                f2.wait(0);
            }
            f2.load()
        });
        std::thread::sleep(std::time::Duration::from_millis(20));
        f.store(5);
        f.wake(1);
        assert_eq!(t.join().unwrap(), 5);
        // Waiting on a value that is not there returns at once.
        f.wait(1);
    }
}
