//! Self-monitoring: reading a hardware counter of this thread with the
//! `rdpmc` instruction and the event's first mmap page, without a system
//! call (what `perf_event_open(2)` calls "user space rdpmc"; the fast path
//! of a counter read that the Null benchmark measures beside `read`).
//!
//! The kernel publishes in the page which PMU register holds the counter
//! (`index`, 0 when it is not in one), the offset to add, the register's
//! width and, in `capabilities`, whether user space may execute `rdpmc` at
//! all (`cap_user_rdpmc`, also governed by
//! `/sys/bus/event_source/devices/cpu/rdpmc`). A read retries while the
//! page's sequence count (`lock`) changes under it, which happens when the
//! thread was switched out or the counter moved.
//!
//! Only hardware counters live in PMU registers: a software counter has
//! `index` 0, and a machine without a PMU (these VMs) has none to open, so
//! [`SelfCounter::open`] says why and the benchmark is skipped.

use std::io;
use std::os::fd::{AsFd, AsRawFd};
use std::ptr::NonNull;
use std::sync::atomic::{fence, Ordering};

use crate::perf::{PerfEvent, PerfEventAttr, PERF_COUNT_HW_CPU_CYCLES, PERF_TYPE_HARDWARE};

// Offsets in struct perf_event_mmap_page (include/uapi/linux/perf_event.h).
const LOCK: usize = 8;
const INDEX: usize = 12;
const OFFSET: usize = 16;
const CAPABILITIES: usize = 40;
const PMC_WIDTH: usize = 48;
/// `cap_user_rdpmc`: bit 2 of `capabilities`.
const CAP_USER_RDPMC: u64 = 1 << 2;

/// A hardware cycle counter of the calling thread, read with `rdpmc`.
pub struct SelfCounter {
    page: NonNull<u8>,
    len: usize,
    _event: PerfEvent,
}

impl SelfCounter {
    /// Opens the thread's cycle counter and maps its page; an error says
    /// why the fast path is not available here (no PMU, rdpmc not allowed,
    /// not x86-64).
    pub fn open() -> Result<SelfCounter, String> {
        if !cfg!(target_arch = "x86_64") {
            return Err("rdpmc is an x86-64 instruction".into());
        }
        let attr = PerfEventAttr::counter(PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES);
        let event =
            PerfEvent::open(&attr, 0, -1).map_err(|e| format!("no hardware counter: {e}"))?;
        let len = crate::perf::page_size();
        // SAFETY: a fresh read-only shared mapping of one page of an open
        // perf event at offset 0 (its user page); the kernel checks it.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_SHARED,
                event.as_fd().as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(format!(
                "cannot map the counter's page: {}",
                io::Error::last_os_error()
            ));
        }
        let page = NonNull::new(ptr.cast::<u8>()).ok_or("mmap returned null")?;
        let c = SelfCounter {
            page,
            len,
            _event: event,
        };
        if c.field_u64(CAPABILITIES) & CAP_USER_RDPMC == 0 {
            return Err(
                "the kernel does not let user space execute rdpmc (cap_user_rdpmc is 0; see /sys/bus/event_source/devices/cpu/rdpmc)"
                    .into(),
            );
        }
        if c.read().is_none() {
            return Err("the counter is not in a PMU register (index 0)".into());
        }
        Ok(c)
    }

    fn field_u32(&self, at: usize) -> u32 {
        // SAFETY: `at` is one of the fixed offsets above, inside the
        // mapped page and aligned for u32; volatile because the kernel
        // updates the page under us.
        unsafe { std::ptr::read_volatile(self.page.as_ptr().add(at).cast::<u32>()) }
    }

    fn field_u64(&self, at: usize) -> u64 {
        // SAFETY: as in field_u32, aligned for u64.
        unsafe { std::ptr::read_volatile(self.page.as_ptr().add(at).cast::<u64>()) }
    }

    /// The count now, by `rdpmc`; `None` when the counter is not in a
    /// register at this moment (or not on x86-64).
    pub fn read(&self) -> Option<u64> {
        loop {
            let seq = self.field_u32(LOCK);
            fence(Ordering::Acquire);
            let index = self.field_u32(INDEX);
            let offset = self.field_u64(OFFSET) as i64;
            let width = u32::from(self.field_u32(PMC_WIDTH) as u16);
            if index == 0 || width == 0 || width > 64 {
                return None;
            }
            let raw = rdpmc(index - 1)?;
            // The register holds `width` bits: sign-extend them.
            let shift = 64 - width;
            let value = ((raw << shift) as i64) >> shift;
            fence(Ordering::Acquire);
            if self.field_u32(LOCK) == seq {
                return Some(value.wrapping_add(offset) as u64);
            }
        }
    }
}

impl Drop for SelfCounter {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the page mapped in open; nothing refers
        // to it after self.
        unsafe {
            libc::munmap(self.page.as_ptr().cast(), self.len);
        }
    }
}

#[cfg(target_arch = "x86_64")]
fn rdpmc(counter: u32) -> Option<u64> {
    let (lo, hi): (u32, u32);
    // SAFETY: rdpmc reads a performance counter register; the kernel has
    // said (cap_user_rdpmc, checked in open) that user space may, and the
    // counter number comes from the kernel's page. It touches no memory.
    unsafe {
        std::arch::asm!("rdpmc", in("ecx") counter, out("eax") lo, out("edx") hi,
            options(nomem, nostack, preserves_flags));
    }
    Some((u64::from(hi) << 32) | u64::from(lo))
}

#[cfg(not(target_arch = "x86_64"))]
fn rdpmc(_counter: u32) -> Option<u64> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Where there is a PMU and rdpmc is allowed, two reads around some
    /// work differ; where not, open says why in words.
    #[test]
    fn rdpmc_counts_or_says_why_not() {
        match SelfCounter::open() {
            Err(why) => {
                assert!(!why.is_empty());
                eprintln!("skipped: needs a hardware counter readable by rdpmc ({why})");
            }
            Ok(c) => {
                let a = c.read().unwrap_or(0);
                let mut x = 0u64;
                for i in 0..100_000u64 {
                    x = std::hint::black_box(x.wrapping_add(i));
                }
                let b = c.read().unwrap_or(0);
                assert!(b > a, "{a} then {b} ({x})");
            }
        }
    }
}
