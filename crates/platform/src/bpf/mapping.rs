//! Shared mappings of the programs' mmapable array maps (created with
//! BPF_F_MMAPABLE): the flight recorder and the sample rings, read only,
//! and the histogram rows, read and zeroed in place.

use std::os::fd::{AsRawFd, BorrowedFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU16, AtomicU64, Ordering};

use super::RECORD_BYTES;
use crate::error::PlatformError;

/// A shared mapping of a BPF array map, unmapped on drop.
pub(super) struct Mapping {
    ptr: NonNull<u8>,
    len: usize,
    writable: bool,
}

// SAFETY: the mapping is plain memory shared with the kernel, accessed only
// through atomics and volatile reads, and unmapped once, by its owner's
// drop; nothing in it is tied to the thread that created it.
unsafe impl Send for Mapping {}
// SAFETY: every access through a shared reference is an atomic operation or
// a volatile read; writes (atomics only) need a writable mapping.
unsafe impl Sync for Mapping {}

impl Mapping {
    /// Maps `len` bytes of the array for reading.
    pub(super) fn read_only(
        fd: BorrowedFd<'_>,
        len: usize,
        what: &str,
    ) -> Result<Mapping, PlatformError> {
        Mapping::map(fd, len, false, what)
    }

    /// Maps `len` bytes of the array for reading and writing (an array
    /// user space writes: not frozen).
    pub(super) fn read_write(
        fd: BorrowedFd<'_>,
        len: usize,
        what: &str,
    ) -> Result<Mapping, PlatformError> {
        Mapping::map(fd, len, true, what)
    }

    fn map(
        fd: BorrowedFd<'_>,
        len: usize,
        writable: bool,
        what: &str,
    ) -> Result<Mapping, PlatformError> {
        let prot = if writable {
            libc::PROT_READ | libc::PROT_WRITE
        } else {
            libc::PROT_READ
        };
        // SAFETY: a new mapping chosen by the kernel (no address given), of
        // a descriptor that is open for the duration of the call; the
        // kernel checks `len` against the map's size (an array created
        // with BPF_F_MMAPABLE) and fails rather than map beyond it.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                prot,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(PlatformError::last_os(format!("BPF: mapping {what}")));
        }
        let ptr = NonNull::new(p.cast::<u8>())
            .ok_or_else(|| PlatformError::Invalid(format!("BPF: mapping {what}: null")))?;
        Ok(Mapping { ptr, len, writable })
    }

    /// The u64 at byte `offset`, loaded atomically with `order`.
    pub(super) fn load_u64(&self, offset: usize, order: Ordering) -> u64 {
        assert!(offset.is_multiple_of(8) && offset + 8 <= self.len);
        // SAFETY: in bounds (checked above), 8-aligned (page-aligned base,
        // 8-aligned offset), and the memory lives as long as `self`. The
        // kernel writes it concurrently, which is what an atomic load is
        // for; this only loads.
        let a = unsafe { AtomicU64::from_ptr(self.ptr.as_ptr().add(offset).cast::<u64>()) };
        a.load(order)
    }

    /// Copies `words` u64s from byte `offset` into `buf` with volatile
    /// loads (the seqlock reader's copy: the values may be torn, which the
    /// caller detects from the sequence numbers around it).
    pub(super) fn copy_words(&self, offset: usize, buf: &mut [u8; RECORD_BYTES], words: usize) {
        let words = words.min(RECORD_BYTES / 8);
        assert!(offset.is_multiple_of(8) && offset + words * 8 <= self.len);
        for i in 0..words {
            // SAFETY: in bounds and aligned as checked above; a volatile
            // read of plain integers, so any value read is valid.
            let w = unsafe {
                std::ptr::read_volatile(self.ptr.as_ptr().add(offset + i * 8).cast::<u64>())
            };
            buf[i * 8..i * 8 + 8].copy_from_slice(&w.to_ne_bytes());
        }
    }

    /// The u64 at byte `offset`, to load, swap or store (a read-write
    /// mapping only).
    pub(super) fn u64_at(&self, offset: usize) -> &AtomicU64 {
        assert!(self.writable && offset.is_multiple_of(8) && offset + 8 <= self.len);
        // SAFETY: in bounds and 8-aligned (checked above; the base is
        // page-aligned), writable, valid for as long as `self`; the
        // programs update it concurrently with atomic or plain stores, and
        // every access from this side is atomic.
        unsafe { AtomicU64::from_ptr(self.ptr.as_ptr().add(offset).cast::<u64>()) }
    }

    /// The u16 at byte `offset` (a read-write mapping only).
    pub(super) fn u16_at(&self, offset: usize) -> &AtomicU16 {
        assert!(self.writable && offset.is_multiple_of(2) && offset + 2 <= self.len);
        // SAFETY: as for `u64_at`, 2-aligned.
        unsafe { AtomicU16::from_ptr(self.ptr.as_ptr().add(offset).cast::<u16>()) }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: `ptr`/`len` are exactly what mmap returned and was
        // given; no reference into the mapping outlives `self`.
        unsafe {
            libc::munmap(self.ptr.as_ptr().cast(), self.len);
        }
    }
}
