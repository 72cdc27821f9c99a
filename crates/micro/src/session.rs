//! A whole `latscope micro` run: the benchmarks chosen by name, the
//! calling thread pinned, the *Null* frame measured once, then each
//! benchmark measured in turn and handed to the caller as a
//! [`MicroResult`] (which stores it at once, so that an interrupted run
//! keeps every finished benchmark).

use std::sync::atomic::{AtomicBool, Ordering};

use latscope_model::{CacheInfo, CpuId, MicroContext, MicroCounter, MicroResult};

use crate::bench::{measure, null, Measurement, Null, Options, DEFAULT_ITERATIONS, DEFAULT_WARMUP};
use crate::counters::{Availability, Counters};
use crate::ops::{all, Benchmark, Placement};

/// Iterations and warm-up of `--quick`.
pub const QUICK_ITERATIONS: usize = 10;
pub const QUICK_WARMUP: usize = 1;

/// Why a session could not start.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// The front end names its option before the line (`--bench: …`).
    #[error("no benchmark or group named '{name}' (groups: {groups})")]
    UnknownBench { name: String, groups: String },
    #[error("cannot pin the measuring thread to CPU {cpu}: {why}")]
    Pin { cpu: u32, why: String },
}

/// How a session runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionOptions {
    pub iterations: usize,
    pub warmup: usize,
    pub quick: bool,
    /// The measuring CPU.
    pub cpu: u32,
    /// The partner's CPU for the benchmarks across two; those are skipped
    /// when there is none.
    pub other_cpu: Option<u32>,
}

impl SessionOptions {
    /// The defaults for `cpu` and `other_cpu`: the study's 50 iterations,
    /// or `--quick`'s 10.
    pub fn new(cpu: u32, other_cpu: Option<u32>, quick: bool) -> SessionOptions {
        SessionOptions {
            iterations: if quick {
                QUICK_ITERATIONS
            } else {
                DEFAULT_ITERATIONS
            },
            warmup: if quick { QUICK_WARMUP } else { DEFAULT_WARMUP },
            quick,
            cpu,
            other_cpu,
        }
    }
}

/// `latscope micro --list`: one line per benchmark, its operation, and
/// whether it takes two CPUs.
pub fn list_text(benchmarks: &[Benchmark]) -> String {
    let line = |b: &Benchmark| {
        let two = if b.two_cpus { " (two CPUs)" } else { "" };
        format!("{:<28} {}{two}\n", b.id(), b.operation)
    };
    benchmarks.iter().map(line).collect()
}

/// The benchmarks `names` choose, in table order: a name is a group
/// (`syscall`), a benchmark (`syscall.getppid`) or, for the memory curve,
/// a kind (`memory.random`). No names: every benchmark (`--quick` keeps
/// one memory size per octave).
pub fn select(names: &[String], quick: bool) -> Result<Vec<Benchmark>, SessionError> {
    let every = all();
    let groups: Vec<&'static str> = {
        let mut g: Vec<&'static str> = Vec::new();
        for b in &every {
            if !g.contains(&b.group) {
                g.push(b.group);
            }
        }
        g
    };
    for name in names {
        let known = every.iter().any(|b| matches(b, name));
        if !known {
            return Err(SessionError::UnknownBench {
                name: name.clone(),
                groups: groups.join(", "),
            });
        }
    }
    Ok(every
        .into_iter()
        .filter(|b| names.is_empty() || names.iter().any(|n| matches(b, n)))
        .filter(|b| !quick || b.bytes.is_none_or(|bytes| bytes.is_power_of_two()))
        .collect())
}

/// Whether `name` chooses `b`.
fn matches(b: &Benchmark, name: &str) -> bool {
    let id = b.id();
    name == b.group
        || name == id
        || id
            .strip_prefix(name)
            .is_some_and(|rest| rest.starts_with('_'))
}

/// The context of a session: the Null frame, sysfs's caches, the counters.
pub fn context(null: &Null, counters: &[Availability], cpu: u32, quick: bool) -> MicroContext {
    MicroContext {
        null_ns: null.elapsed_ns,
        caches: crate::caches::read_caches(cpu)
            .into_iter()
            .map(|c| CacheInfo {
                level: c.level,
                kind: c.kind,
                bytes: c.bytes,
            })
            .collect(),
        counters: counters
            .iter()
            .cloned()
            .map(|a| MicroCounter {
                name: a.name.to_string(),
                per_op: None,
                unavailable: a.unavailable,
            })
            .collect(),
        quick,
    }
}

/// A measuring session: the thread pinned, the Null frame measured, the
/// counters' availability known (each benchmark opens them for its counted
/// pass only: see [`measure`]).
pub struct Session {
    options: SessionOptions,
    counters: Vec<Availability>,
    null: Null,
}

impl Session {
    /// Pins the calling thread to `options.cpu` and measures the Null
    /// frame there.
    pub fn start(options: SessionOptions) -> Result<Session, SessionError> {
        latscope_platform::set_affinity(CpuId(options.cpu)).map_err(|e| SessionError::Pin {
            cpu: options.cpu,
            why: e.to_string(),
        })?;
        let counters = Counters::open();
        let null = null(&counters);
        Ok(Session {
            options,
            counters: counters.availability(),
            null,
        })
    }

    pub fn context(&self) -> MicroContext {
        context(
            &self.null,
            &self.counters,
            self.options.cpu,
            self.options.quick,
        )
    }

    /// The session's options.
    pub fn options(&self) -> &SessionOptions {
        &self.options
    }

    /// Measures each benchmark in turn, handing each result to `done`;
    /// stops before the next benchmark once `stop` is set, or when `done`
    /// fails (its error is returned).
    pub fn run<E>(
        &self,
        benchmarks: &[Benchmark],
        stop: &AtomicBool,
        done: &mut dyn FnMut(&Benchmark, MicroResult) -> Result<(), E>,
    ) -> Result<(), E> {
        for b in benchmarks {
            if stop.load(Ordering::Acquire) {
                break;
            }
            done(b, self.measure(b))?;
        }
        Ok(())
    }

    /// Measures one benchmark. A benchmark that cannot run here is a
    /// result with `skipped` set.
    pub fn measure(&self, b: &Benchmark) -> MicroResult {
        let o = &self.options;
        let options = Options {
            iterations: o.iterations,
            warmup: o.warmup,
            ops: None,
            min_iteration_ns: b.min_iteration_ns,
            min_warmup_ns: b.min_warmup_ns,
        };
        let placement = Placement {
            cpu: o.cpu,
            other_cpu: if b.two_cpus { o.other_cpu } else { None },
        };
        let mut result = MicroResult {
            bench: b.id(),
            group: b.group.to_string(),
            name: b.name.clone(),
            operation: b.operation.clone(),
            cpu: o.cpu,
            other_cpu: placement.other_cpu,
            bytes: b.bytes,
            ..MicroResult::default()
        };
        if b.two_cpus && o.other_cpu.is_none() {
            result.skipped = Some("needs a second CPU".into());
            return result;
        }
        let cpus: Vec<u32> = std::iter::once(o.cpu).chain(placement.other_cpu).collect();
        let measured = (b.build)(placement)
            .and_then(|mut op| measure(op.as_mut(), &self.null, &options, &cpus));
        match measured {
            Ok(m) => fill(&mut result, m, &self.counters),
            Err(e) => result.skipped = Some(e.to_string()),
        }
        result
    }
}

/// `m`'s figures into `r`.
fn fill(r: &mut MicroResult, m: Measurement, counters: &[Availability]) {
    let s = m.stats;
    r.iterations = u32::try_from(s.iterations).unwrap_or(u32::MAX);
    r.ops_per_iteration = s.ops_per_iteration;
    r.overhead_ns = s.overhead_ns;
    r.min_ns = s.min_ns;
    r.median_ns = s.median_ns;
    r.mean_ns = s.mean_ns;
    r.stddev_ns = s.stddev_ns;
    r.max_ns = s.max_ns;
    r.uncorrected_median_ns = s.uncorrected_median_ns;
    r.overhead_share = s.overhead_share;
    r.per_iteration_ns = s.per_op_ns;
    let why: Vec<Option<String>> = counters.iter().map(|a| a.unavailable.clone()).collect();
    r.counters = m
        .counters
        .into_iter()
        .enumerate()
        .map(|(i, c)| MicroCounter {
            name: c.name.to_string(),
            per_op: c.per_op,
            unavailable: if c.per_op.is_none() {
                why.get(i)
                    .cloned()
                    .flatten()
                    .or_else(|| Some("not read in every iteration".into()))
            } else {
                None
            },
        })
        .collect();
    r.interrupts_per_iteration = m.interrupts_per_iteration;
    r.non_timer_interrupts_per_iteration = m.non_timer_interrupts_per_iteration;
    r.softirqs_per_iteration = m.softirqs_per_iteration;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(v: &[Benchmark]) -> Vec<String> {
        v.iter().map(Benchmark::id).collect()
    }

    #[test]
    fn names_choose_groups_benchmarks_and_memory_kinds() {
        let s = ids(&select(&["syscall".into()], false).unwrap());
        assert!(s.iter().all(|i| i.starts_with("syscall.")), "{s:?}");
        assert!(s.len() >= 3);
        let s = ids(&select(&["null.rdtsc".into(), "syscall.getppid".into()], false).unwrap());
        assert_eq!(s, vec!["null.rdtsc", "syscall.getppid"]);
        let s = ids(&select(&["memory.random".into()], false).unwrap());
        assert!(!s.is_empty() && s.iter().all(|i| i.starts_with("memory.random_")));
        // "null.rdtsc" does not choose "null.rdtscp".
        let s = ids(&select(&["null.rdtsc".into()], false).unwrap());
        assert_eq!(s, vec!["null.rdtsc"]);
    }

    #[test]
    fn an_unknown_name_is_one_error_naming_the_groups() {
        let e = select(&["sycall".into()], false).err().unwrap().to_string();
        assert!(e.contains("'sycall'") && e.contains("syscall, "), "{e}");
        assert!(!e.contains('\n'));
    }

    #[test]
    fn quick_keeps_one_memory_size_per_octave() {
        let full = select(&["memory".into()], false).unwrap();
        let quick = select(&["memory".into()], true).unwrap();
        // Per curve: 2k - 1 sizes in full, k in quick.
        assert!(
            quick.len() * 2 <= full.len() + crate::ops::memory::KINDS.len(),
            "{} {}",
            quick.len(),
            full.len()
        );
        assert!(quick.iter().all(|b| b.bytes.unwrap().is_power_of_two()));
        let syscall = select(&["syscall".into()], true).unwrap();
        assert_eq!(
            syscall.len(),
            select(&["syscall".into()], false).unwrap().len()
        );
    }
}
