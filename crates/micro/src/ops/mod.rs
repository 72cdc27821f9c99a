//! The benchmarks, by group: each a named [`Operation`] built on demand,
//! so that a run builds (and sets up) only the ones asked for.
//!
//! The groups: `null` (the time sources, the study's *Null* benchmark),
//! `syscall` (the cheapest system calls), `ctxswitch` (a token through
//! pipes between two threads or two processes, on one CPU and across two),
//! `sync` (a round trip of wake-ups through a futex, an eventfd and a
//! condition variable; priority inversion with and without inheritance),
//! `process` (fork, exec of a static and a dynamic program, spawn, thread),
//! `memory` (a pointer chase against the working set's size), `vm` (page
//! faults, mmap), `io` (select, poll, epoll over many descriptors), `fs`
//! (cached and cold reads, file creation with and without fsync), `net`
//! (TCP throughput, TCP and UDP round trips over loopback and over a veth
//! pair between namespaces) and `blit` (the study's BitBlt on an Xvfb of
//! latscope's own).

mod benchmark;
mod blit;
mod ctxswitch;
mod fs;
mod inversion;
mod io;
pub mod memory;
mod net;
mod null;
mod process;
mod scratch;
mod sync;
mod syscall;
mod vm;

pub use benchmark::{Benchmark, Build, Placement};

/// The largest working set of the memory curve: four times the largest
/// data cache sysfs lists for CPU 0, at least 8 MiB; 64 MiB when sysfs lists
/// none.
pub fn memory_limit() -> u64 {
    let caches = crate::caches::data_levels(&crate::caches::read_caches(0));
    match caches.iter().map(|c| c.bytes).max() {
        Some(b) => (4 * b).max(8 << 20),
        None => 64 << 20,
    }
}

/// Every benchmark, in the order tables list them.
pub fn all() -> Vec<Benchmark> {
    let mut v = null::benchmarks();
    v.extend(syscall::benchmarks());
    v.extend(ctxswitch::benchmarks());
    v.extend(sync::benchmarks());
    v.extend(inversion::benchmarks());
    v.extend(process::benchmarks());
    v.extend(memory::benchmarks(memory_limit()));
    v.extend(vm::benchmarks());
    v.extend(io::benchmarks());
    v.extend(fs::benchmarks());
    v.extend(net::benchmarks());
    v.extend(blit::benchmarks());
    v
}

/// The group names, in order.
pub fn groups() -> Vec<&'static str> {
    let mut g: Vec<&'static str> = Vec::new();
    for b in all() {
        if !g.contains(&b.group) {
            g.push(b.group);
        }
    }
    g
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::BenchError;

    #[test]
    fn names_are_unique_and_groups_ordered() {
        let all = all();
        let mut names: Vec<String> = all.iter().map(Benchmark::id).collect();
        let n = names.len();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), n);
        assert_eq!(
            groups(),
            vec![
                "null",
                "syscall",
                "ctxswitch",
                "sync",
                "process",
                "memory",
                "vm",
                "io",
                "fs",
                "net",
                "blit"
            ]
        );
    }

    /// Every benchmark builds and runs a few operations on CPU 0 (and 1,
    /// where it needs two and the machine has them). One whose build says
    /// what the machine lacks (`needs root ...`, `needs Xvfb ...`: the
    /// reasons a run shows as `skipped`) is reported and passed over;
    /// every other failure fails.
    #[test]
    fn every_benchmark_runs() {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        for b in all() {
            if b.two_cpus && cpus < 2 {
                continue;
            }
            let built = (b.build)(Placement {
                cpu: 0,
                other_cpu: Some(1),
            });
            let mut op = match built {
                Err(BenchError::Setup(why)) if why.starts_with("needs ") => {
                    eprintln!("skipped: {}.{}: {why}", b.group, b.name);
                    continue;
                }
                other => other.unwrap_or_else(|e| panic!("{}.{}: {e}", b.group, b.name)),
            };
            op.run(10)
                .unwrap_or_else(|e| panic!("{}.{}: {e}", b.group, b.name));
        }
    }
}
