//! A POSIX mutex with a chosen protocol — plain, or priority inheritance
//! (`PTHREAD_PRIO_INHERIT`: the kernel's PI futex, an rt_mutex, boosts the
//! holder to the priority of its highest waiter) — for the
//! priority-inversion microbenchmark. std's `Mutex` is a plain futex and
//! offers no protocol.

use std::cell::UnsafeCell;
use std::io;

/// A `pthread_mutex_t` that never moves (boxed), shared by reference.
pub struct PthreadMutex {
    raw: Box<UnsafeCell<libc::pthread_mutex_t>>,
}

// SAFETY: a pthread mutex is made to be locked and unlocked from several
// threads; it is only reached through `&self` methods that call the
// thread-safe pthread functions.
unsafe impl Send for PthreadMutex {}
// SAFETY: as above.
unsafe impl Sync for PthreadMutex {}

impl PthreadMutex {
    /// A mutex with priority inheritance (`inherit`) or without.
    pub fn new(inherit: bool) -> io::Result<PthreadMutex> {
        let raw = Box::new(UnsafeCell::new(libc::PTHREAD_MUTEX_INITIALIZER));
        // SAFETY: an attribute object initialised, set and destroyed here;
        // the mutex is initialised in its final (boxed) place.
        unsafe {
            let mut attr: libc::pthread_mutexattr_t = std::mem::zeroed();
            let mut rc = libc::pthread_mutexattr_init(&mut attr);
            if rc == 0 {
                let protocol = if inherit {
                    libc::PTHREAD_PRIO_INHERIT
                } else {
                    libc::PTHREAD_PRIO_NONE
                };
                rc = libc::pthread_mutexattr_setprotocol(&mut attr, protocol);
                if rc == 0 {
                    rc = libc::pthread_mutex_init(raw.get(), &attr);
                }
                libc::pthread_mutexattr_destroy(&mut attr);
            }
            if rc != 0 {
                return Err(io::Error::from_raw_os_error(rc));
            }
        }
        Ok(PthreadMutex { raw })
    }

    pub fn lock(&self) -> io::Result<()> {
        // SAFETY: the mutex was initialised in `new` and lives in its box.
        match unsafe { libc::pthread_mutex_lock(self.raw.get()) } {
            0 => Ok(()),
            rc => Err(io::Error::from_raw_os_error(rc)),
        }
    }

    /// Unlocks; the caller must hold the lock.
    pub fn unlock(&self) -> io::Result<()> {
        // SAFETY: as in `lock`; unlocking a mutex not held by the caller is
        // an error the call reports (EPERM for PI mutexes), not UB for the
        // default type.
        match unsafe { libc::pthread_mutex_unlock(self.raw.get()) } {
            0 => Ok(()),
            rc => Err(io::Error::from_raw_os_error(rc)),
        }
    }
}

impl Drop for PthreadMutex {
    fn drop(&mut self) {
        // SAFETY: nothing can hold a reference past drop; destroying an
        // unlocked mutex is defined.
        unsafe {
            libc::pthread_mutex_destroy(self.raw.get());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_protocols_lock_and_unlock() {
        for inherit in [false, true] {
            let m = PthreadMutex::new(inherit).unwrap();
            m.lock().unwrap();
            m.unlock().unwrap();
        }
    }
}
