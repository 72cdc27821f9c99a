//! What a benchmark is: its name, what one operation is, where it runs,
//! and how its operation is built (apart from the groups' files, which
//! each make some, and from `ops/mod.rs`, which lists them all).

use crate::bench::{BenchError, Operation};

/// Where a benchmark runs: the CPU of the measuring thread and, for those
/// that need one, a second CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Placement {
    pub cpu: u32,
    pub other_cpu: Option<u32>,
}

/// Builds a benchmark's operation where it will run.
pub type Build = Box<dyn Fn(Placement) -> Result<Box<dyn Operation>, BenchError>>;

/// One benchmark.
pub struct Benchmark {
    pub group: &'static str,
    pub name: String,
    /// What one operation is, for tables.
    pub operation: String,
    /// Whether it needs a second CPU.
    pub two_cpus: bool,
    /// The working set of a memory benchmark (bytes).
    pub bytes: Option<u64>,
    /// The shortest iteration and warm-up it needs (ns).
    pub min_iteration_ns: u64,
    pub min_warmup_ns: u64,
    pub build: Build,
}

impl Benchmark {
    /// A benchmark of `group` named `name`.
    pub fn new(
        group: &'static str,
        name: impl Into<String>,
        operation: impl Into<String>,
        two_cpus: bool,
        build: impl Fn(Placement) -> Result<Box<dyn Operation>, BenchError> + 'static,
    ) -> Benchmark {
        Benchmark {
            group,
            name: name.into(),
            operation: operation.into(),
            two_cpus,
            bytes: None,
            min_iteration_ns: crate::stats::MIN_ITERATION_NS as u64,
            min_warmup_ns: 0,
            build: Box::new(build),
        }
    }

    /// The same benchmark with its working set recorded.
    pub fn with_bytes(mut self, bytes: u64) -> Benchmark {
        self.bytes = Some(bytes);
        self
    }

    /// The same benchmark with longer iterations and a warm-up of at least
    /// `min_warmup_ns`: for operations whose steady state takes a while.
    pub fn with_pace(mut self, min_iteration_ns: u64, min_warmup_ns: u64) -> Benchmark {
        self.min_iteration_ns = min_iteration_ns;
        self.min_warmup_ns = min_warmup_ns;
        self
    }

    /// `group.name`, as tables and JSON spell it.
    pub fn id(&self) -> String {
        format!("{}.{}", self.group, self.name)
    }
}
