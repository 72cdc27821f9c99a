//! latscope's BPF programs, loaded through aya: the in-kernel half of the
//! BPF tracing backend (issue 17; docs/tracing.md, "The BPF backend").
//!
//! The programs are C (`crates/platform/bpf/timer.bpf.c`, whose header
//! comment is the reference for what runs in the kernel), compiled by clang
//! when the crate is built (`build.rs`) and embedded; CO-RE relocations are
//! resolved against the running kernel's BTF (`/sys/kernel/btf/vmlinux`)
//! when they are loaded. Without clang at build time [`built`] is false and
//! [`TraceBpf::open`] says so in one line.
//!
//! One program per tracepoint (`tp_btf`) does up to three things:
//!
//! * **Timer decomposition** for the measuring threads ([`BpfConfig::tids`],
//!   [`TraceBpf::watch`]): one [`TimerRecord`] per wake-up (expiry, the
//!   callback's `now` and time, switch-in) in the CPU's sample ring, a
//!   mmapable array read like the recorder below (one writer per ring, so
//!   a plain head store), with [`TraceBpf::drain_samples`]. It never reads
//!   the recorder.
//!
//! * **A per-CPU flight recorder** on [`BpfConfig::cpus`]: every
//!   `sched_switch`, `sched_waking`, `hrtimer_*`, `irq_handler_*`,
//!   `softirq_*`, `nmi_handler`, `workqueue_execute_*`, `timer_expire_*`,
//!   `tasklet_*`, `napi_poll` and x86
//!   `irq_vectors` `*_entry`/`*_exit` event writes one 64-byte record, one
//!   cache line ([`RecordedEvent`]; layout in `bpf/record.rs`) into the CPU's ring, a
//!   slice of one `BPF_F_MMAPABLE` array of rings × slots records. A per-ring
//!   head counts the records claimed. Nothing is sent and nothing wakes
//!   user space: it maps both arrays read-only and copies a CPU's recent
//!   events when it wants them ([`TraceBpf::recorder_window`], for a
//!   sample above the threshold) or follows the ring
//!   ([`TraceBpf::recorder_since`]). The recorder overwrites, so the reader
//!   must notice a slot rewritten under it: each record carries its
//!   sequence number, written last. The writer claims record n with an
//!   atomic add on the head (a tracepoint program can be interrupted by an
//!   IRQ or NMI one on the same CPU), stores seq = 0, then the fields, then
//!   seq = n + 1, with compiler barriers between. The reader loads seq
//!   (acquire), copies, fences (acquire), loads seq again, and keeps the
//!   copy only if both loads read n + 1. On x86 (TSO: stores become
//!   visible in program order, loads are not reordered with loads) seeing
//!   n + 1 first means every field of record n is visible; a writer that
//!   overwrites the slot meanwhile stores 0 before any field, so if the
//!   copy read any new field, the second load reads 0 or a later number.
//!   A first load below n + 1 is a record claimed but not yet published
//!   (the reader stops there), above n + 1 one already overwritten (lost).
//!   Times are `bpf_ktime_get_ns()`, CLOCK_MONOTONIC, the clock of the
//!   user-space probes and of perf with `use_clockid`.
//!
//! * **Histograms** of interrupt and deferred work
//!   ([`BpfConfig::histograms`]), what the perf analysis's `work.rs`
//!   computes from events: hard IRQ handler time by irq, vector time by
//!   vector index ([`VECTOR_NAMES`]), softirq time and raise→entry delay by
//!   vec, NMI handler time, work item time by function, and deferred work
//!   by what ran ([`BpfHistKind::Deferred`]: timer-wheel, hrtimer and
//!   tasklet callbacks by function, NAPI polls by instance, named with
//!   [`TraceBpf::napi_name`]; each under the softirq or hard interrupt it
//!   ran in). The kernel files
//!   each duration under latscope's HDR counter index (`bpf/hdr_index.h`,
//!   a line-by-line port of `index_of` in `crates/record/src/layout.rs`,
//!   tested against it here) in a `PERCPU_HASH` keyed by (kind, source,
//!   index), and its exact count/sum/min/max in a second one keyed by
//!   (kind, source). Per-CPU values because each CPU then adds to its own
//!   cache line (a shared hash would move a line between CPUs on every
//!   interrupt); memory is nr_cpus values per key, preallocated so NMI
//!   context never allocates; user space sums the CPUs when it reads
//!   ([`TraceBpf::histograms`], [`TraceBpf::hist_totals`]). A full map
//!   drops the update and counts it ([`BpfCounters::hist_dropped`]).
//!
//! Tracepoints this kernel lacks are not attached and listed by
//! [`TraceBpf::missing`]; the three the timer decomposition needs
//! (`sched_switch`, `hrtimer_start`, `hrtimer_expire_entry`) are required.
//! [`TraceBpf::prog_stats`] reads each program's run time and count, which
//! the kernel keeps while [`enable_bpf_stats`]'s guard lives.
//!
//! Why aya: a pure-Rust loader (no libbpf, libelf or zlib to build and link
//! into latscope, nothing that could fail on a machine without them), with
//! CO-RE, BTF tracepoints, ring buffers and per-CPU maps behind safe APIs,
//! and actively kept. The programs themselves stay in C: writing them in
//! Rust needs a nightly toolchain and bpf-linker, which these machines and
//! most users' do not have, whereas clang is one Debian package. aya has
//! no mmap of an array map; `loaded.rs` does it with libc.

#[cfg(not(latscope_bpf))]
mod fallback;
#[cfg(latscope_bpf)]
mod groups;
mod held;
#[cfg(latscope_bpf)]
mod loaded;
#[cfg(latscope_bpf)]
mod mapping;
#[cfg(latscope_bpf)]
mod napi;
mod record;
#[cfg(latscope_bpf)]
mod rows;
mod steal;

#[cfg(not(latscope_bpf))]
pub use fallback::{enable_bpf_stats, BpfStatsGuard, TraceBpf};
pub use held::{parse_stack, HeldRecord, HELD_DEPTH, HELD_RECORD_BYTES};
#[cfg(latscope_bpf)]
pub use loaded::{enable_bpf_stats, BpfStatsGuard, TraceBpf};
pub use record::{RecordedEvent, RecordedKind, NAPI_NO_DEVICE, RECORD_BYTES};
pub use steal::{locate as locate_steal, StealCounter, StealLocation};

/// The name this module had when it did only the timer decomposition.
pub type TimerBpf = TraceBpf;

/// Whether this build has the BPF programs (clang was there at build time).
pub fn built() -> bool {
    cfg!(latscope_bpf)
}

/// The x86 `irq_vectors` tracepoint pairs (`<name>_entry`/`<name>_exit`)
/// the recorder and histograms know, by index: the table in
/// `bpf/vectors.h` (a test checks they agree). Append only.
pub const VECTOR_NAMES: [&str; 11] = [
    "local_timer",
    "reschedule",
    "call_function",
    "call_function_single",
    "irq_work",
    "x86_platform_ipi",
    "error_apic",
    "spurious_apic",
    "thermal_apic",
    "threshold_apic",
    "deferred_error_apic",
];

/// The name of vector index `index` ("?" outside the table).
pub fn vector_name(index: u32) -> &'static str {
    usize::try_from(index)
        .ok()
        .and_then(|i| VECTOR_NAMES.get(i))
        .copied()
        .unwrap_or("?")
}

/// The index of a vector name in [`VECTOR_NAMES`].
pub fn vector_index(name: &str) -> Option<u32> {
    VECTOR_NAMES
        .iter()
        .position(|&n| n == name)
        .and_then(|i| u32::try_from(i).ok())
}

/// Flight recorder records per CPU unless told otherwise.
pub const DEFAULT_RECORDER_SLOTS: u32 = 8192;

/// Timer records per CPU's sample ring: 256 KiB a CPU, 0.4 s of wake-ups
/// at a 100 µs period, many times the reader's longest pause.
pub const SAMPLE_SLOTS: u32 = 4096;

/// What to load and attach.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BpfConfig {
    /// Threads whose wake-ups the kernel decomposes (more can be added
    /// with [`TraceBpf::watch`]).
    pub tids: Vec<u32>,
    /// CPUs whose events go to the flight recorder and histograms; empty:
    /// only the timer decomposition's three tracepoints are attached.
    pub cpus: Vec<u32>,
    /// Records per CPU ring, a power of two; 0: no recorder.
    pub recorder_slots: u32,
    /// Keep the interrupt and deferred-work histograms.
    pub histograms: bool,
    /// Histogram rows per traced CPU and set for the frequent kinds
    /// (vector, softirq, NMI times), 1 to [`MAX_HIST_ROWS`]; the counts a
    /// full pool cannot take go to the hashed maps. Fewer rows only move
    /// cost: tests use 1 to exercise the overflow.
    pub hist_rows: u32,
    /// Take kernel stacks for wake-ups later than this (ns): the episode
    /// threshold (timer.bpf.c, "The code that held the CPU"); 0: none.
    pub stack_threshold_ns: u64,
}

/// Histogram rows per traced CPU and set unless told otherwise: 24 rows of
/// 8 KiB, 384 KiB a traced CPU for both sets.
pub const DEFAULT_HIST_ROWS: u32 = 24;

/// The most [`BpfConfig::hist_rows`] may ask for.
pub const MAX_HIST_ROWS: u32 = 64;

impl Default for BpfConfig {
    fn default() -> BpfConfig {
        BpfConfig {
            tids: Vec::new(),
            cpus: Vec::new(),
            recorder_slots: DEFAULT_RECORDER_SLOTS,
            histograms: true,
            hist_rows: DEFAULT_HIST_ROWS,
            stack_threshold_ns: 0,
        }
    }
}

/// What [`TraceBpf::recorder_window`] copied.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RecorderRead {
    /// The ring still held an event older than the window's start, and
    /// nothing in the window was overwritten while it was copied: the
    /// window has every event of the CPU from its start on.
    pub complete: bool,
    /// Events appended.
    pub events: usize,
}

/// What a histogram measures ([`BpfHistBucket::kind`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BpfHistKind {
    /// Hard IRQ handler run time; source: the irq number.
    IrqExec,
    /// Interrupt vector run time; source: index into [`VECTOR_NAMES`].
    VectorExec,
    /// Softirq run time; source: the vec.
    SoftirqExec,
    /// Softirq first raise → entry on one CPU; source: the vec.
    SoftirqDelay,
    /// NMI handler time (`delta_ns`); source 0.
    Nmi,
    /// Workqueue item run time; source: the work function's address.
    Work,
    /// Deferred work by what ran, in the context `context` (a softirq vec,
    /// or [`HARDIRQ_CONTEXT`]); source: the function's address, or for
    /// [`BpfDeferredKind::Napi`] the `napi_struct` ([`TraceBpf::napi_name`]
    /// names it).
    Deferred { kind: BpfDeferredKind, context: u32 },
}

/// What ran inside a softirq or interrupt (`enum deferred_kind` in
/// timer.bpf.c, in its order).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BpfDeferredKind {
    /// A timer-wheel callback (`timer_expire_entry` → `timer_expire_exit`).
    Timer,
    /// An hrtimer callback (`hrtimer_expire_entry` → `hrtimer_expire_exit`).
    Hrtimer,
    /// A tasklet (`tasklet_entry` → `tasklet_exit`).
    Tasklet,
    /// A NAPI poll (`napi_poll`, timed from the NET_RX softirq's entry or
    /// the previous poll in it).
    Napi,
}

impl BpfDeferredKind {
    const ALL: [BpfDeferredKind; 4] = [
        BpfDeferredKind::Timer,
        BpfDeferredKind::Hrtimer,
        BpfDeferredKind::Tasklet,
        BpfDeferredKind::Napi,
    ];
}

/// The context of deferred work that ran in a hard interrupt rather than
/// in a softirq (`HARDIRQ_CONTEXT` in timer.bpf.c).
pub const HARDIRQ_CONTEXT: u32 = 16;

/// `H_DEFERRED` of timer.bpf.c: deferred work's histogram kinds are
/// `H_DEFERRED + 32 * kind + context`.
const H_DEFERRED: u32 = 32;

impl BpfHistKind {
    /// The kinds the kernel counts in its histogram rows (the frequent
    /// ones), in the order of its blocks of 16 sources (`fixed_slot` in
    /// timer.bpf.c).
    pub const FIXED: [BpfHistKind; 4] = [
        BpfHistKind::VectorExec,
        BpfHistKind::SoftirqExec,
        BpfHistKind::SoftirqDelay,
        BpfHistKind::Nmi,
    ];

    /// The kernel's `enum hist_kind`.
    pub fn from_raw(raw: u32) -> Option<BpfHistKind> {
        Some(match raw {
            0 => BpfHistKind::IrqExec,
            1 => BpfHistKind::VectorExec,
            2 => BpfHistKind::SoftirqExec,
            3 => BpfHistKind::SoftirqDelay,
            4 => BpfHistKind::Nmi,
            5 => BpfHistKind::Work,
            _ => return BpfHistKind::deferred_from_raw(raw),
        })
    }

    fn deferred_from_raw(raw: u32) -> Option<BpfHistKind> {
        let d = raw.checked_sub(H_DEFERRED)?;
        let context = d % 32;
        let kind = *BpfDeferredKind::ALL.get(usize::try_from(d / 32).ok()?)?;
        (context <= HARDIRQ_CONTEXT).then_some(BpfHistKind::Deferred { kind, context })
    }

    /// The kernel's `enum hist_kind` value of this kind (for tests).
    pub fn to_raw(self) -> u32 {
        match self {
            BpfHistKind::IrqExec => 0,
            BpfHistKind::VectorExec => 1,
            BpfHistKind::SoftirqExec => 2,
            BpfHistKind::SoftirqDelay => 3,
            BpfHistKind::Nmi => 4,
            BpfHistKind::Work => 5,
            BpfHistKind::Deferred { kind, context } => {
                H_DEFERRED + 32 * kind as u32 + context.min(31)
            }
        }
    }
}

/// One histogram counter, summed over CPUs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BpfHistBucket {
    pub kind: BpfHistKind,
    /// Irq number (as `i64` bits), vec, vector index, or work function.
    pub source: u64,
    /// latscope's HDR counter index (`latscope_stats` layout).
    pub index: u32,
    pub count: u64,
}

/// Exact totals of one histogram, summed over CPUs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BpfHistTotal {
    pub kind: BpfHistKind,
    pub source: u64,
    pub count: u64,
    /// Sum of the durations, ns.
    pub sum: u64,
    pub min: u64,
    pub max: u64,
}

impl BpfHistTotal {
    /// A total of no durations yet, for `add` to fill.
    pub fn empty(kind: BpfHistKind, source: u64) -> BpfHistTotal {
        BpfHistTotal {
            kind,
            source,
            count: 0,
            sum: 0,
            min: u64::MAX,
            max: 0,
        }
    }

    /// Adds `count` durations summing to `sum`, between `min` and `max`.
    pub fn add(&mut self, count: u64, sum: u64, min: u64, max: u64) {
        self.count = self.count.saturating_add(count);
        self.sum = self.sum.saturating_add(sum);
        self.min = self.min.min(min);
        self.max = self.max.max(max);
    }
}

/// What the programs counted, summed over CPUs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BpfCounters {
    /// Timer records written (the sample rings' heads).
    pub samples_sent: u64,
    /// Timer records overwritten in their ring before they were read.
    pub samples_dropped: u64,
    /// Events written to the flight recorder.
    pub recorded: u64,
    /// Histogram updates dropped (map full, or busy in a nested program).
    pub hist_dropped: u64,
    /// Episode stacks not taken because the stack map's slot for them
    /// held another stack (the map is full, in effect).
    pub stacks_full: u64,
    /// Episode stacks not taken for another reason.
    pub stacks_failed: u64,
}

/// One wake-up of a watched thread, decomposed in the kernel: the timer's
/// expiry, its callback and the thread's switch-in, all CLOCK_MONOTONIC ns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimerRecord {
    /// The hrtimer's expiry (what `hrtimer_start` armed).
    pub expires: u64,
    /// The `now` the kernel handed the hrtimer's callback.
    pub callback_now: u64,
    /// The BPF clock in the callback.
    pub callback_time: u64,
    /// The BPF clock when the thread was switched in.
    pub switch_in: u64,
    pub tid: u32,
    pub cpu: u32,
    /// Steal-clock ns from the thread's arming of its hrtimer to the
    /// callback: an upper bound of the hypervisor's time before the
    /// interrupt (it includes the sleep before the expiry, when a vCPU is
    /// normally halted and accrues none). 0 without a steal counter
    /// ([`TraceBpf::steal_counter`]); saturates at `u32::MAX`.
    pub steal_irq: u32,
    /// Steal-clock ns from the callback to the switch-in.
    pub steal_sched: u32,
}

/// The size of a record (`struct timer_record` after its sequence number,
/// up to and with the steal figures; its last 8 bytes are not read).
pub const TIMER_RECORD_BYTES: usize = 48;

impl TimerRecord {
    /// Reads a record as the program writes it (native endianness); `None`
    /// when the bytes are too short.
    pub fn parse(b: &[u8]) -> Option<TimerRecord> {
        let u64_at = |i: usize| -> Option<u64> {
            Some(u64::from_ne_bytes(b.get(i..i + 8)?.try_into().ok()?))
        };
        let u32_at = |i: usize| -> Option<u32> {
            Some(u32::from_ne_bytes(b.get(i..i + 4)?.try_into().ok()?))
        };
        if b.len() < TIMER_RECORD_BYTES {
            return None;
        }
        Some(TimerRecord {
            expires: u64_at(0)?,
            callback_now: u64_at(8)?,
            callback_time: u64_at(16)?,
            switch_in: u64_at(24)?,
            tid: u32_at(32)?,
            cpu: u32_at(36)?,
            steal_irq: u32_at(40)?,
            steal_sched: u32_at(44)?,
        })
    }
}

#[cfg(test)]
mod tests;
