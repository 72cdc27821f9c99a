//! A buffer of words on pages of a chosen size: transparent huge pages
//! (2 MiB, where the kernel grants them), so that a working set of many
//! megabytes stays within the TLB's reach and a memory curve shows the
//! caches alone; or base pages only (4 KiB), so that the TLB's misses show
//! too. The difference between the two curves is what address translation
//! costs.

use std::io;

use crate::os_ops::Mapping;

/// The size of a transparent huge page on x86-64 and arm64 with 4 KiB
/// base pages: the alignment a mapping needs to be backed by them.
pub const HUGE_PAGE: usize = 2 << 20;

/// Zeroed words on an anonymous private mapping.
pub struct PageBuffer {
    map: Mapping,
    /// Bytes from the mapping's start to the first word (2 MiB aligned for
    /// huge pages).
    offset: usize,
    words: usize,
    huge: bool,
}

impl PageBuffer {
    /// `words` zeroed words; on huge pages when `huge` (asked for with
    /// `MADV_HUGEPAGE`: the kernel may still refuse, see
    /// [`PageBuffer::huge_pages_backing`]), else with `MADV_NOHUGEPAGE` so
    /// that the mapping stays on base pages whatever the system's THP
    /// setting.
    pub fn new(words: usize, huge: bool) -> io::Result<PageBuffer> {
        let bytes = words
            .checked_mul(std::mem::size_of::<usize>())
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "buffer too large"))?
            .max(1);
        let len = bytes + if huge { HUGE_PAGE } else { 0 };
        let map = Mapping::anonymous(len)?;
        let start = map.addr() as usize;
        let offset = if huge {
            (HUGE_PAGE - start % HUGE_PAGE) % HUGE_PAGE
        } else {
            0
        };
        let advice = if huge {
            libc::MADV_HUGEPAGE
        } else {
            libc::MADV_NOHUGEPAGE
        };
        // SAFETY: the range lies inside the mapping just made (offset +
        // bytes <= len); madvise only changes how it is backed. A kernel
        // without THP answers EINVAL, which leaves base pages: harmless,
        // and visible through huge_pages_backing.
        unsafe {
            libc::madvise(
                map.addr().cast::<u8>().add(offset).cast(),
                len - offset,
                advice,
            );
        }
        Ok(PageBuffer {
            map,
            offset,
            words,
            huge,
        })
    }

    pub fn as_slice(&self) -> &[usize] {
        // SAFETY: offset + words * 8 <= len, the mapping is readable,
        // zero-filled and aligned to a page (so to usize); it lives as long
        // as self and is only reached through self.
        unsafe {
            std::slice::from_raw_parts(
                self.map.addr().cast::<u8>().add(self.offset).cast(),
                self.words,
            )
        }
    }

    pub fn as_mut_slice(&mut self) -> &mut [usize] {
        // SAFETY: as in as_slice, and &mut self makes this the only
        // reference.
        unsafe {
            std::slice::from_raw_parts_mut(
                self.map.addr().cast::<u8>().add(self.offset).cast(),
                self.words,
            )
        }
    }

    /// The words as bytes (page-aligned: what a copy's speed may depend on,
    /// see bench/rep-movsb-alias.c).
    pub fn as_bytes_mut(&mut self) -> &mut [u8] {
        let bytes = self.words * std::mem::size_of::<usize>();
        // SAFETY: the same range as as_mut_slice, viewed as bytes (any bit
        // pattern is a valid u8, and u8 needs no alignment); &mut self makes
        // this the only reference.
        unsafe {
            std::slice::from_raw_parts_mut(self.map.addr().cast::<u8>().add(self.offset), bytes)
        }
    }

    /// Whether huge pages were asked for.
    pub fn huge(&self) -> bool {
        self.huge
    }

    /// How many bytes of this process's anonymous memory are on huge pages
    /// now (`AnonHugePages` of `/proc/self/smaps_rollup`), to tell whether
    /// the kernel granted them.
    pub fn huge_pages_backing() -> Option<u64> {
        let text = std::fs::read_to_string("/proc/self/smaps_rollup").ok()?;
        text.lines()
            .find_map(|l| l.strip_prefix("AnonHugePages:"))
            .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
            .map(|kb| kb * 1024)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_huge_buffer_is_aligned_zeroed_and_writable() {
        for huge in [true, false] {
            let mut b = PageBuffer::new(3 << 18, huge).unwrap(); // 6 MiB
            assert_eq!(b.as_slice().len(), 3 << 18);
            assert!(b.as_slice().iter().all(|&w| w == 0));
            if huge {
                assert_eq!(b.as_slice().as_ptr() as usize % HUGE_PAGE, 0);
            }
            for (i, w) in b.as_mut_slice().iter_mut().enumerate() {
                *w = i;
            }
            assert_eq!(b.as_slice()[12345], 12345);
            assert_eq!(b.huge(), huge);
        }
        // Viewed as bytes: the same memory, page-aligned, every byte.
        let mut b = PageBuffer::new(32 << 10, false).unwrap(); // 256 KiB
        b.as_mut_slice()[1] = 0x0102_0304;
        let bytes = b.as_bytes_mut();
        assert_eq!(bytes.len(), 256 << 10);
        assert_eq!(bytes.as_ptr() as usize % 4096, 0);
        assert_eq!(
            u32::from_ne_bytes(bytes[8..12].try_into().unwrap()),
            0x0102_0304
        );
        bytes[(256 << 10) - 1] = 7;
        assert_eq!(b.as_slice()[(32 << 10) - 1] >> 56, 7);
        // Reading the backing never fails where /proc is mounted.
        assert!(PageBuffer::huge_pages_backing().is_some());
    }
}
