//! The cheapest system calls (Chen et al.'s *Syscall*, LEBench's `getppid`
//! and small `read`): what entering the kernel costs on this machine, with
//! its mitigations.

use std::fs::File;
use std::hint::black_box;
use std::os::fd::AsFd;

use latscope_platform::primitives::{dup_close, getppid_syscall, read_one};

use super::benchmark::Benchmark;
use crate::bench::{BenchError, Operation};

struct Getppid;

impl Operation for Getppid {
    fn run(&mut self, ops: u64) -> Result<(), BenchError> {
        for _ in 0..ops {
            black_box(getppid_syscall());
        }
        Ok(())
    }
}

/// `/dev/zero`, read a byte at a time or duplicated.
struct DevZero {
    file: File,
    dup: bool,
}

impl Operation for DevZero {
    fn run(&mut self, ops: u64) -> Result<(), BenchError> {
        let fd = self.file.as_fd();
        for _ in 0..ops {
            let rc = if self.dup {
                dup_close(fd) as isize
            } else {
                read_one(fd) - 1
            };
            if rc != 0 {
                return Err(BenchError::last_os(if self.dup {
                    "dup and close of /dev/zero"
                } else {
                    "read of /dev/zero"
                }));
            }
        }
        Ok(())
    }
}

fn dev_zero(dup: bool) -> Result<Box<dyn Operation>, BenchError> {
    let file = File::open("/dev/zero").map_err(|e| BenchError::Os {
        what: "opening /dev/zero".to_string(),
        source: e,
    })?;
    Ok(Box::new(DevZero { file, dup }))
}

pub(super) fn benchmarks() -> Vec<Benchmark> {
    vec![
        Benchmark::new(
            "syscall",
            "getppid",
            "one getppid system call",
            false,
            |_| Ok(Box::new(Getppid)),
        ),
        Benchmark::new(
            "syscall",
            "read_dev_zero",
            "one read of 1 byte from /dev/zero",
            false,
            |_| dev_zero(false),
        ),
        Benchmark::new(
            "syscall",
            "dup_close",
            "one dup and one close",
            false,
            |_| dev_zero(true),
        ),
    ]
}
