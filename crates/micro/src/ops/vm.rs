//! Virtual memory: the cost of a page fault — the first touch of an
//! anonymous page (the kernel zeroes a page and maps it) and of a page of a
//! file in the page cache (mapped, nothing read from disk) — and of `mmap`
//! plus `munmap` of 4 KiB to 1 MiB of anonymous memory, not touched.
//!
//! A fault cannot be timed alone: each operation maps a region of
//! [`REGION_PAGES`] pages, touches every page, and unmaps it, and one
//! operation is *one page*: the figure is a fault plus its 1/256 share of
//! the `mmap` and `munmap` around it (which the `mmap_*` benchmarks show to
//! be small next to 256 faults).

use std::io::Write;
use std::os::fd::AsFd;

use latscope_platform::os_ops::{page_size, Mapping};

use super::benchmark::{Benchmark, Placement};
use super::scratch::Dir;
use crate::bench::{BenchError, Operation};

/// Pages per mapped region of the fault benchmarks.
pub const REGION_PAGES: usize = 256;

fn os(what: &str) -> impl Fn(std::io::Error) -> BenchError + '_ {
    move |e| BenchError::Os {
        what: what.to_string(),
        source: e,
    }
}

/// Faults in anonymous pages; an operation is one page.
struct AnonFault {
    page: usize,
}

impl Operation for AnonFault {
    fn run(&mut self, ops: u64) -> Result<(), BenchError> {
        let mut left = ops as usize;
        while left > 0 {
            let n = left.min(REGION_PAGES);
            let m = Mapping::anonymous(n * self.page).map_err(os("mmap"))?;
            std::hint::black_box(m.touch(self.page, true));
            left -= n;
        }
        Ok(())
    }
}

/// Faults in pages of a cached file; an operation is one page.
struct FileFault {
    page: usize,
    file: std::fs::File,
    _dir: Dir,
}

impl FileFault {
    fn new(page: usize) -> Result<FileFault, BenchError> {
        let dir = Dir::new("fault")?;
        let path = dir.path().join("pages");
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .map_err(os("creating the file to map"))?;
        file.write_all(&vec![1u8; REGION_PAGES * page])
            .map_err(os("writing the file to map"))?;
        Ok(FileFault {
            page,
            file,
            _dir: dir,
        })
    }
}

impl Operation for FileFault {
    fn run(&mut self, ops: u64) -> Result<(), BenchError> {
        let mut left = ops as usize;
        while left > 0 {
            let n = left.min(REGION_PAGES);
            let m = Mapping::file(self.file.as_fd(), n * self.page).map_err(os("mmap"))?;
            std::hint::black_box(m.touch(self.page, false));
            left -= n;
        }
        Ok(())
    }
}

/// `mmap` + `munmap` of `bytes`, untouched.
struct MapUnmap {
    bytes: usize,
}

impl Operation for MapUnmap {
    fn run(&mut self, ops: u64) -> Result<(), BenchError> {
        for _ in 0..ops {
            drop(Mapping::anonymous(self.bytes).map_err(os("mmap"))?);
        }
        Ok(())
    }
}

pub(super) fn benchmarks() -> Vec<Benchmark> {
    let mut v = vec![
        Benchmark::new(
            "vm",
            "fault_anonymous",
            "first touch of an anonymous page (with 1/256 of its region's mmap and munmap)",
            false,
            |_: Placement| Ok(Box::new(AnonFault { page: page_size() })),
        ),
        Benchmark::new(
            "vm",
            "fault_file",
            "first touch of a page of a cached file (one fault maps up to 16 pages: fault-around), with 1/256 of its region's mmap and munmap",
            false,
            |_: Placement| Ok(Box::new(FileFault::new(page_size())?)),
        ),
    ];
    for (name, bytes) in [("4K", 4usize << 10), ("64K", 64 << 10), ("1M", 1 << 20)] {
        v.push(Benchmark::new(
            "vm",
            format!("mmap_munmap_{name}"),
            format!("mmap + munmap of {name} of anonymous memory, untouched"),
            false,
            move |_: Placement| Ok(Box::new(MapUnmap { bytes })),
        ));
    }
    v
}
