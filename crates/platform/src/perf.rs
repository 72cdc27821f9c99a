//! `perf_event_open` behind a safe API: the attribute builder, the ioctls
//! latscope needs, the mmap'd ring and `poll`.
//!
//! The tracer reads kernel tracepoints and `cpu-clock` stack samples through
//! perf rather than through the tracefs text pipe because perf gives
//! per-CPU binary rings, time stamps on `CLOCK_MONOTONIC` (the clock the
//! probes use, so tracer and probe times compare directly) and explicit
//! loss records when a ring fills. Everything `unsafe` about it lives here:
//! the attribute struct whose layout must match the kernel's byte for byte,
//! the raw system call, the ioctls and the shared memory ring.
//!
//! The ring is never exposed as a slice: the kernel writes into it while we
//! read, so [`PerfRing::read_into`] copies the published bytes out into a
//! caller's buffer and only then hands the space back to the kernel.

use std::fs;
use std::io;
use std::ops::Range;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// `perf_event_attr.type` values.
pub const PERF_TYPE_HARDWARE: u32 = 0;
pub const PERF_TYPE_SOFTWARE: u32 = 1;
pub const PERF_TYPE_TRACEPOINT: u32 = 2;

/// `PERF_TYPE_SOFTWARE` config: a per-CPU hrtimer-driven clock; its sample
/// period is in nanoseconds. Works without a hardware PMU.
pub const PERF_COUNT_SW_CPU_CLOCK: u64 = 0;

/// `perf_event_attr.sample_type` bits (enum perf_event_sample_format).
pub const PERF_SAMPLE_IP: u64 = 1 << 0;
pub const PERF_SAMPLE_TID: u64 = 1 << 1;
pub const PERF_SAMPLE_TIME: u64 = 1 << 2;
pub const PERF_SAMPLE_ADDR: u64 = 1 << 3;
pub const PERF_SAMPLE_READ: u64 = 1 << 4;
pub const PERF_SAMPLE_CALLCHAIN: u64 = 1 << 5;
pub const PERF_SAMPLE_ID: u64 = 1 << 6;
pub const PERF_SAMPLE_CPU: u64 = 1 << 7;
pub const PERF_SAMPLE_PERIOD: u64 = 1 << 8;
pub const PERF_SAMPLE_STREAM_ID: u64 = 1 << 9;
pub const PERF_SAMPLE_RAW: u64 = 1 << 10;
pub const PERF_SAMPLE_IDENTIFIER: u64 = 1 << 16;

/// What latscope asks of every tracepoint sample. IDENTIFIER comes first in
/// the record, so the reader knows which event (and so which layout) a
/// record belongs to before parsing the rest.
pub const TRACEPOINT_SAMPLE_TYPE: u64 =
    PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_RAW;

/// A tracepoint sampled with its kernel call chain as well (the perf
/// backend's episode stacks: `sched_switch` and `hrtimer_expire_entry`).
pub const TRACEPOINT_CHAIN_SAMPLE_TYPE: u64 = TRACEPOINT_SAMPLE_TYPE | PERF_SAMPLE_CALLCHAIN;

/// What latscope asks of every `cpu-clock` stack sample.
pub const CPU_CLOCK_SAMPLE_TYPE: u64 = PERF_SAMPLE_IDENTIFIER
    | PERF_SAMPLE_IP
    | PERF_SAMPLE_TID
    | PERF_SAMPLE_TIME
    | PERF_SAMPLE_CPU
    | PERF_SAMPLE_CALLCHAIN;

/// `perf_event_header.type` values (enum perf_event_type) that latscope reads.
pub const PERF_RECORD_LOST: u32 = 2;
pub const PERF_RECORD_THROTTLE: u32 = 5;
pub const PERF_RECORD_UNTHROTTLE: u32 = 6;
pub const PERF_RECORD_SAMPLE: u32 = 9;
pub const PERF_RECORD_LOST_SAMPLES: u32 = 13;

/// Call-chain entries at or above this value are context markers
/// (PERF_CONTEXT_KERNEL, PERF_CONTEXT_USER, ...), not addresses.
pub const PERF_CONTEXT_MAX: u64 = (-4095i64) as u64;

/// Size of the attribute struct we pass (PERF_ATTR_SIZE_VER8, which adds
/// `config3`, Linux 6.3). Older kernels accept it because the bytes they do
/// not know are zero.
pub const PERF_ATTR_SIZE: u32 = 136;

const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 1 << 3;

// Bit positions in the flags word of perf_event_attr (after read_format),
// counted from the least significant bit as the C bitfields lay them out on
// little-endian Linux targets.
const ATTR_DISABLED: u64 = 1 << 0;
const ATTR_EXCLUDE_USER: u64 = 1 << 4;
const ATTR_EXCLUDE_KERNEL: u64 = 1 << 5;
const ATTR_EXCLUDE_HV: u64 = 1 << 6;
const ATTR_WATERMARK: u64 = 1 << 14;
const ATTR_SAMPLE_ID_ALL: u64 = 1 << 18;
const ATTR_EXCLUDE_CALLCHAIN_KERNEL: u64 = 1 << 21;
const ATTR_EXCLUDE_CALLCHAIN_USER: u64 = 1 << 22;
const ATTR_USE_CLOCKID: u64 = 1 << 25;

// ioctl numbers: _IO('$', n) and _IOR('$', 7, u64 *), with the asm-generic
// encoding (x86, arm64, riscv): dir << 30 | size << 16 | type << 8 | nr.
const fn ioc(dir: u64, nr: u64, size: u64) -> u64 {
    (dir << 30) | (size << 16) | ((b'$' as u64) << 8) | nr
}
const PERF_EVENT_IOC_ENABLE: u64 = ioc(0, 0, 0);
const PERF_EVENT_IOC_DISABLE: u64 = ioc(0, 1, 0);
const PERF_EVENT_IOC_SET_OUTPUT: u64 = ioc(0, 5, 0);
const PERF_EVENT_IOC_ID: u64 = ioc(2, 7, 8);

/// Offsets in the ring's first page (struct perf_event_mmap_page).
const MMAP_DATA_HEAD: usize = 1024;
const MMAP_DATA_TAIL: usize = 1032;
const MMAP_DATA_OFFSET: usize = 1040;
const MMAP_DATA_SIZE: usize = 1048;

/// The kernel's `struct perf_event_attr` (PERF_ATTR_SIZE_VER8). Unions are
/// represented by the member latscope uses; the bitfield word is `flags`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct RawAttr {
    type_: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    flags: u64,
    wakeup_watermark: u32,
    bp_type: u32,
    config1: u64,
    config2: u64,
    branch_sample_type: u64,
    sample_regs_user: u64,
    sample_stack_user: u32,
    clockid: i32,
    sample_regs_intr: u64,
    aux_watermark: u32,
    sample_max_stack: u16,
    reserved_2: u16,
    aux_sample_size: u32,
    reserved_3: u32,
    sig_data: u64,
    config3: u64,
}

// The layout must match linux/perf_event.h exactly; a mismatch would make
// the kernel read flags from the wrong bytes, so it is checked at compile time.
const _: () = {
    assert!(std::mem::size_of::<RawAttr>() == PERF_ATTR_SIZE as usize);
    assert!(std::mem::offset_of!(RawAttr, config) == 8);
    assert!(std::mem::offset_of!(RawAttr, sample_period) == 16);
    assert!(std::mem::offset_of!(RawAttr, sample_type) == 24);
    assert!(std::mem::offset_of!(RawAttr, read_format) == 32);
    assert!(std::mem::offset_of!(RawAttr, flags) == 40);
    assert!(std::mem::offset_of!(RawAttr, wakeup_watermark) == 48);
    assert!(std::mem::offset_of!(RawAttr, config1) == 56);
    assert!(std::mem::offset_of!(RawAttr, config2) == 64);
    assert!(std::mem::offset_of!(RawAttr, sample_regs_user) == 80);
    assert!(std::mem::offset_of!(RawAttr, clockid) == 92);
    assert!(std::mem::offset_of!(RawAttr, sample_regs_intr) == 96);
    assert!(std::mem::offset_of!(RawAttr, aux_watermark) == 104);
    assert!(std::mem::offset_of!(RawAttr, aux_sample_size) == 112);
    assert!(std::mem::offset_of!(RawAttr, sig_data) == 120);
    assert!(std::mem::offset_of!(RawAttr, config3) == 128);
};

/// A perf system call or ring operation failed. Permission problems are a
/// separate variant so the caller can tell the user what to change.
#[derive(Debug, thiserror::Error)]
pub enum PerfError {
    #[error(
        "{what}: permission denied (needs root or CAP_PERFMON; perf_event_paranoid={})",
        paranoid_text(*.paranoid)
    )]
    Permission { what: String, paranoid: Option<i32> },
    #[error("{what}: not supported here ({source})")]
    Unsupported {
        what: String,
        #[source]
        source: io::Error,
    },
    #[error("{what}: {source}")]
    Os {
        what: String,
        #[source]
        source: io::Error,
    },
    #[error("{0}")]
    Invalid(String),
}

fn paranoid_text(p: Option<i32>) -> String {
    p.map_or_else(|| "unknown".to_string(), |p| p.to_string())
}

impl PerfError {
    /// Classifies the last OS error of a perf call.
    fn last(what: impl Into<String>) -> PerfError {
        PerfError::from_io(what, io::Error::last_os_error())
    }

    fn from_io(what: impl Into<String>, source: io::Error) -> PerfError {
        let what = what.into();
        match source.raw_os_error() {
            Some(libc::EACCES) | Some(libc::EPERM) => PerfError::Permission {
                what,
                paranoid: perf_event_paranoid(),
            },
            Some(libc::ENOENT) | Some(libc::ENODEV) | Some(libc::EOPNOTSUPP) => {
                PerfError::Unsupported { what, source }
            }
            _ => PerfError::Os { what, source },
        }
    }

    /// Whether this is a missing permission (not root, no CAP_PERFMON, or
    /// `perf_event_paranoid` too high).
    pub fn is_permission(&self) -> bool {
        matches!(self, PerfError::Permission { .. })
    }
}

/// `/proc/sys/kernel/perf_event_paranoid`, if readable.
pub fn perf_event_paranoid() -> Option<i32> {
    fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// The attributes of one perf event, built from the two presets latscope
/// uses and adjusted with the setters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PerfEventAttr {
    raw: RawAttr,
}

impl PerfEventAttr {
    fn base(type_: u32, config: u64) -> PerfEventAttr {
        let raw = RawAttr {
            type_,
            size: PERF_ATTR_SIZE,
            config,
            // Start disabled so every event on every CPU can be set up
            // (and its ring redirected) before anything is recorded; tag
            // non-sample records (LOST) with the sample id fields too; and
            // stamp everything with CLOCK_MONOTONIC, the probes' clock.
            flags: ATTR_DISABLED | ATTR_SAMPLE_ID_ALL | ATTR_USE_CLOCKID,
            clockid: libc::CLOCK_MONOTONIC,
            ..RawAttr::default()
        };
        PerfEventAttr { raw }
    }

    /// A tracepoint (id from tracefs `events/<system>/<name>/id`), sampled
    /// on every hit with [`TRACEPOINT_SAMPLE_TYPE`].
    pub fn tracepoint(id: u64) -> PerfEventAttr {
        let mut a = PerfEventAttr::base(PERF_TYPE_TRACEPOINT, id);
        a.raw.sample_period = 1;
        a.raw.sample_type = TRACEPOINT_SAMPLE_TYPE;
        a
    }

    /// `cpu-clock` sampling every `period_ns` with kernel call chains only
    /// ([`CPU_CLOCK_SAMPLE_TYPE`], user mode and user chains excluded).
    pub fn cpu_clock(period_ns: u64) -> PerfEventAttr {
        let mut a = PerfEventAttr::base(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK);
        a.raw.sample_period = period_ns.max(1);
        a.raw.sample_type = CPU_CLOCK_SAMPLE_TYPE;
        a.raw.flags |= ATTR_EXCLUDE_USER | ATTR_EXCLUDE_HV | ATTR_EXCLUDE_CALLCHAIN_USER;
        a
    }

    /// Wake `poll` when `bytes` are waiting in the ring (0: on every record).
    pub fn wakeup_watermark(mut self, bytes: u32) -> PerfEventAttr {
        self.raw.wakeup_watermark = bytes;
        self.set_flag(ATTR_WATERMARK, bytes > 0);
        self
    }

    pub fn sample_period(mut self, period: u64) -> PerfEventAttr {
        self.raw.sample_period = period;
        self
    }

    pub fn sample_type(mut self, sample_type: u64) -> PerfEventAttr {
        self.raw.sample_type = sample_type;
        self
    }

    /// Time stamps on `clockid` (None: the kernel's local clock).
    pub fn clock(mut self, clockid: Option<libc::clockid_t>) -> PerfEventAttr {
        self.raw.clockid = clockid.unwrap_or(0);
        self.set_flag(ATTR_USE_CLOCKID, clockid.is_some());
        self
    }

    pub fn disabled(mut self, on: bool) -> PerfEventAttr {
        self.set_flag(ATTR_DISABLED, on);
        self
    }

    pub fn exclude_user(mut self, on: bool) -> PerfEventAttr {
        self.set_flag(ATTR_EXCLUDE_USER, on);
        self
    }

    pub fn exclude_kernel(mut self, on: bool) -> PerfEventAttr {
        self.set_flag(ATTR_EXCLUDE_KERNEL, on);
        self
    }

    pub fn exclude_callchain_user(mut self, on: bool) -> PerfEventAttr {
        self.set_flag(ATTR_EXCLUDE_CALLCHAIN_USER, on);
        self
    }

    /// Frames a call chain keeps at most (0: the kernel's
    /// `perf_event_max_stack`, 127 by default).
    pub fn sample_max_stack(mut self, frames: u16) -> PerfEventAttr {
        self.raw.sample_max_stack = frames;
        self
    }

    /// This tracepoint with its kernel call chain in every sample (at most
    /// `frames` frames; user chains excluded).
    pub fn with_kernel_chain(self, frames: u16) -> PerfEventAttr {
        self.sample_type(TRACEPOINT_CHAIN_SAMPLE_TYPE)
            .exclude_callchain_user(true)
            .sample_max_stack(frames)
    }

    pub fn exclude_callchain_kernel(mut self, on: bool) -> PerfEventAttr {
        self.set_flag(ATTR_EXCLUDE_CALLCHAIN_KERNEL, on);
        self
    }

    pub fn sample_id_all(mut self, on: bool) -> PerfEventAttr {
        self.set_flag(ATTR_SAMPLE_ID_ALL, on);
        self
    }

    fn set_flag(&mut self, bit: u64, on: bool) {
        if on {
            self.raw.flags |= bit;
        } else {
            self.raw.flags &= !bit;
        }
    }

    pub fn type_(&self) -> u32 {
        self.raw.type_
    }
    pub fn config(&self) -> u64 {
        self.raw.config
    }
    pub fn get_sample_type(&self) -> u64 {
        self.raw.sample_type
    }
    pub fn get_sample_period(&self) -> u64 {
        self.raw.sample_period
    }
    /// The bitfield word exactly as the kernel will read it.
    pub fn flag_bits(&self) -> u64 {
        self.raw.flags
    }
    pub fn clockid(&self) -> i32 {
        self.raw.clockid
    }
    pub fn get_wakeup_watermark(&self) -> u32 {
        self.raw.wakeup_watermark
    }

    /// The attribute as the bytes handed to the kernel (for tests and
    /// diagnostics).
    pub fn to_bytes(&self) -> [u8; PERF_ATTR_SIZE as usize] {
        let r = &self.raw;
        let mut out = [0u8; PERF_ATTR_SIZE as usize];
        let mut put = |off: usize, bytes: &[u8]| {
            out[off..off + bytes.len()].copy_from_slice(bytes);
        };
        put(0, &r.type_.to_ne_bytes());
        put(4, &r.size.to_ne_bytes());
        put(8, &r.config.to_ne_bytes());
        put(16, &r.sample_period.to_ne_bytes());
        put(24, &r.sample_type.to_ne_bytes());
        put(32, &r.read_format.to_ne_bytes());
        put(40, &r.flags.to_ne_bytes());
        put(48, &r.wakeup_watermark.to_ne_bytes());
        put(52, &r.bp_type.to_ne_bytes());
        put(56, &r.config1.to_ne_bytes());
        put(64, &r.config2.to_ne_bytes());
        put(72, &r.branch_sample_type.to_ne_bytes());
        put(80, &r.sample_regs_user.to_ne_bytes());
        put(88, &r.sample_stack_user.to_ne_bytes());
        put(92, &r.clockid.to_ne_bytes());
        put(96, &r.sample_regs_intr.to_ne_bytes());
        put(104, &r.aux_watermark.to_ne_bytes());
        put(108, &r.sample_max_stack.to_ne_bytes());
        put(110, &r.reserved_2.to_ne_bytes());
        put(112, &r.aux_sample_size.to_ne_bytes());
        put(116, &r.reserved_3.to_ne_bytes());
        put(120, &r.sig_data.to_ne_bytes());
        put(128, &r.config3.to_ne_bytes());
        out
    }
}

/// An open perf event; closed on drop.
#[derive(Debug)]
pub struct PerfEvent {
    fd: OwnedFd,
}

impl PerfEvent {
    /// `perf_event_open(attr, pid, cpu, -1, FD_CLOEXEC)`. `pid` -1 with a
    /// CPU means every task on that CPU (system-wide per CPU).
    pub fn open(attr: &PerfEventAttr, pid: i32, cpu: i32) -> Result<PerfEvent, PerfError> {
        PerfEvent::open_in(attr, pid, cpu, None)
    }

    /// As [`PerfEvent::open`], as a member of `leader`'s group when given
    /// (`group_fd`): the kernel schedules a group's events together, and
    /// a leader opened with [`PerfEventAttr::read_group`] reads them all
    /// with one `read` ([`PerfEvent::read_group`]).
    pub fn open_in(
        attr: &PerfEventAttr,
        pid: i32,
        cpu: i32,
        leader: Option<&PerfEvent>,
    ) -> Result<PerfEvent, PerfError> {
        let group_fd: libc::c_long = leader.map_or(-1, |l| l.fd.as_raw_fd() as libc::c_long);
        let what = || {
            format!(
                "perf_event_open(type {}, config {}, cpu {cpu})",
                attr.raw.type_, attr.raw.config
            )
        };
        // SAFETY: `attr.raw` is a repr(C) perf_event_attr of exactly the
        // size written in its `size` field and lives across the call, which
        // only reads it; the other arguments are plain integers (group_fd
        // is -1 or the descriptor of an event `leader` keeps open). A
        // non-negative return is a new file descriptor that we now own.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_perf_event_open,
                &attr.raw as *const RawAttr,
                pid as libc::c_long,
                cpu as libc::c_long,
                group_fd,
                PERF_FLAG_FD_CLOEXEC,
            )
        };
        if rc < 0 {
            return Err(PerfError::last(what()));
        }
        let raw_fd = libc::c_int::try_from(rc)
            .map_err(|_| PerfError::Invalid(format!("{}: bad fd {rc}", what())))?;
        // SAFETY: `raw_fd` was just returned by the kernel and is owned by
        // nothing else.
        let fd = unsafe { OwnedFd::from_raw_fd(raw_fd) };
        Ok(PerfEvent { fd })
    }

    /// System-wide on one CPU.
    pub fn open_cpu(attr: &PerfEventAttr, cpu: u32) -> Result<PerfEvent, PerfError> {
        let cpu = i32::try_from(cpu)
            .map_err(|_| PerfError::Invalid(format!("CPU {cpu} out of range")))?;
        PerfEvent::open(attr, -1, cpu)
    }

    fn ioctl(&self, request: u64, arg: libc::c_ulong, what: &str) -> Result<(), PerfError> {
        // SAFETY: the fd is an open perf event owned by `self`; the requests
        // used with this helper take an integer argument (or none), so no
        // memory is passed to the kernel.
        let rc = unsafe { libc::ioctl(self.fd.as_raw_fd(), request as libc::Ioctl, arg) };
        if rc < 0 {
            return Err(PerfError::last(what));
        }
        Ok(())
    }

    pub fn enable(&self) -> Result<(), PerfError> {
        self.ioctl(PERF_EVENT_IOC_ENABLE, 0, "PERF_EVENT_IOC_ENABLE")
    }

    pub fn disable(&self) -> Result<(), PerfError> {
        self.ioctl(PERF_EVENT_IOC_DISABLE, 0, "PERF_EVENT_IOC_DISABLE")
    }

    /// Sends this event's records into `target`'s ring (same CPU, same clock).
    pub fn set_output(&self, target: &PerfEvent) -> Result<(), PerfError> {
        let fd = libc::c_ulong::try_from(target.fd.as_raw_fd())
            .map_err(|_| PerfError::Invalid("negative fd".to_string()))?;
        self.ioctl(PERF_EVENT_IOC_SET_OUTPUT, fd, "PERF_EVENT_IOC_SET_OUTPUT")
    }

    /// The id the kernel writes into each record (PERF_SAMPLE_IDENTIFIER).
    pub fn id(&self) -> Result<u64, PerfError> {
        let mut id: u64 = 0;
        // SAFETY: PERF_EVENT_IOC_ID writes one u64 through the pointer,
        // which refers to `id`, alive and writable for the call.
        let rc = unsafe {
            libc::ioctl(
                self.fd.as_raw_fd(),
                PERF_EVENT_IOC_ID as libc::Ioctl,
                &mut id as *mut u64,
            )
        };
        if rc < 0 {
            return Err(PerfError::last("PERF_EVENT_IOC_ID"));
        }
        Ok(id)
    }

    /// Maps this event's ring with `data_pages` (a power of two) data pages.
    pub fn map_ring(&self, data_pages: usize) -> Result<PerfRing, PerfError> {
        PerfRing::map(self, data_pages)
    }

    /// Closes `events` at once, each on a thread of its own.
    ///
    /// When the last perf event of a tracepoint goes, the kernel
    /// unregisters the tracepoint's probe and waits for a grace period
    /// before the close returns: 20-60 ms each on the development VM, so
    /// the ~35 tracepoints of a trace session closed one after another
    /// held its end up by 1.1 s (strace of a 1 s run, 2026-11-29).
    /// Closes in parallel wait for grace periods together.
    pub fn close_all(events: Vec<PerfEvent>) {
        std::thread::scope(|s| {
            for ev in events {
                // When no thread can be started, the closure and the event
                // in it are dropped with the error: closed here.
                let _ = std::thread::Builder::new()
                    .name("lat-close".to_string())
                    .spawn_scoped(s, move || drop(ev));
            }
        });
    }
}

impl AsFd for PerfEvent {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// The system page size.
pub fn page_size() -> usize {
    // SAFETY: sysconf takes an integer and touches no memory.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(n).ok().filter(|&n| n > 0).unwrap_or(4096)
}

/// The one or two ranges of a ring of `size` bytes (a power of two) that
/// hold the bytes from position `tail` up to `head` (free-running counters,
/// as in the perf mmap page). The second range is empty unless the bytes
/// wrap past the end. Fails if `head` is behind `tail` or more than `size`
/// ahead, which would mean the counters are corrupt.
pub fn ring_segments(tail: u64, head: u64, size: usize) -> Result<[Range<usize>; 2], PerfError> {
    if size == 0 || !size.is_power_of_two() {
        return Err(PerfError::Invalid(format!(
            "ring size {size} is not a power of two"
        )));
    }
    let avail = head
        .checked_sub(tail)
        .filter(|&n| n <= size as u64)
        .ok_or_else(|| {
            PerfError::Invalid(format!(
                "ring counters corrupt: tail {tail}, head {head}, size {size}"
            ))
        })?;
    // avail <= size, so it fits in usize.
    let avail = avail as usize;
    let start = (tail & (size as u64 - 1)) as usize;
    let first = avail.min(size - start);
    Ok([start..start + first, 0..avail - first])
}

/// Copies the bytes from `tail` to `head` of a ring held in an ordinary
/// slice (a power of two long) to the end of `out`; the same logic as
/// [`PerfRing::read_into`], for rings that are not shared with the kernel
/// (tests, simulations). Returns the number of bytes copied.
pub fn copy_from_ring(
    ring: &[u8],
    tail: u64,
    head: u64,
    out: &mut Vec<u8>,
) -> Result<usize, PerfError> {
    let segs = ring_segments(tail, head, ring.len())?;
    let mut n = 0;
    for seg in segs {
        n += seg.len();
        out.extend_from_slice(&ring[seg]);
    }
    Ok(n)
}

/// A perf ring: one metadata page and a power of two of data pages, shared
/// with the kernel, unmapped on drop. Only [`PerfRing::read_into`] reads it.
#[derive(Debug)]
pub struct PerfRing {
    base: NonNull<u8>,
    map_len: usize,
    data_offset: usize,
    data_size: usize,
}

// SAFETY: the mapping is owned by this value alone; the kernel side does not
// care which thread reads it, and `&self` methods only perform atomic loads.
unsafe impl Send for PerfRing {}

impl PerfRing {
    fn map(event: &PerfEvent, data_pages: usize) -> Result<PerfRing, PerfError> {
        if data_pages == 0 || !data_pages.is_power_of_two() {
            return Err(PerfError::Invalid(format!(
                "ring of {data_pages} pages: must be a power of two"
            )));
        }
        let page = page_size();
        let map_len = data_pages
            .checked_add(1)
            .and_then(|n| n.checked_mul(page))
            .ok_or_else(|| {
                PerfError::Invalid(format!("ring of {data_pages} pages is too large"))
            })?;
        // SAFETY: a fresh shared mapping of the perf fd at offset 0; the
        // kernel checks the length. PROT_WRITE is needed to publish
        // data_tail, which also makes the kernel stop instead of
        // overwriting unread data.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                event.fd.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            let err = io::Error::last_os_error();
            let what = format!(
                "mmap of a {} KiB perf ring (limit: /proc/sys/kernel/perf_event_mlock_kb)",
                map_len / 1024
            );
            return Err(PerfError::from_io(what, err));
        }
        let base = NonNull::new(ptr.cast::<u8>())
            .ok_or_else(|| PerfError::Invalid("mmap returned null".to_string()))?;
        let mut ring = PerfRing {
            base,
            map_len,
            data_offset: page,
            data_size: data_pages * page,
        };
        // Kernels since 4.1 publish where the data area is; older ones
        // leave zeros and use the layout assumed above.
        let off = ring.meta_u64(MMAP_DATA_OFFSET).load(Ordering::Relaxed);
        let size = ring.meta_u64(MMAP_DATA_SIZE).load(Ordering::Relaxed);
        if size != 0 {
            let (off, size) = (off as usize, size as usize);
            let fits = matches!(off.checked_add(size), Some(end) if end <= map_len);
            if !size.is_power_of_two() || !fits {
                return Err(PerfError::Invalid(format!(
                    "perf ring reports data at {off}+{size} in a {map_len}-byte mapping"
                )));
            }
            ring.data_offset = off;
            ring.data_size = size;
        }
        Ok(ring)
    }

    /// A u64 of the metadata page, accessed atomically since the kernel
    /// updates it concurrently.
    fn meta_u64(&self, offset: usize) -> &AtomicU64 {
        debug_assert!(offset + 8 <= self.data_offset);
        // SAFETY: `offset` is one of the fixed, 8-aligned field offsets of
        // perf_event_mmap_page, inside the first page of the live mapping
        // (page aligned), so the pointer is valid and aligned for the
        // lifetime of `self`; all our accesses to it are atomic, and the
        // kernel updates these fields with single aligned stores.
        unsafe { AtomicU64::from_ptr(self.base.as_ptr().add(offset).cast::<u64>()) }
    }

    /// Size of the data area in bytes.
    pub fn data_size(&self) -> usize {
        self.data_size
    }

    /// Bytes published by the kernel and not yet read.
    pub fn available(&self) -> u64 {
        let head = self.meta_u64(MMAP_DATA_HEAD).load(Ordering::Acquire);
        let tail = self.meta_u64(MMAP_DATA_TAIL).load(Ordering::Relaxed);
        head.wrapping_sub(tail)
    }

    /// Appends every byte the kernel has published since the last read to
    /// `out`, then gives the space back to the kernel. The bytes are whole
    /// perf records, in the order written; a record that wraps past the end
    /// of the ring comes out contiguous. Returns the number of bytes.
    pub fn read_into(&mut self, out: &mut Vec<u8>) -> Result<usize, PerfError> {
        // Acquire pairs with the kernel's release of data_head: the record
        // bytes before head are visible once head is.
        let head = self.meta_u64(MMAP_DATA_HEAD).load(Ordering::Acquire);
        // Only we write data_tail.
        let tail = self.meta_u64(MMAP_DATA_TAIL).load(Ordering::Relaxed);
        let segs = match ring_segments(tail, head, self.data_size) {
            Ok(s) => s,
            Err(e) => {
                // Unrecoverable position: skip everything so the kernel can
                // go on, and report it.
                self.meta_u64(MMAP_DATA_TAIL).store(head, Ordering::Release);
                return Err(e);
            }
        };
        let total = segs[0].len() + segs[1].len();
        out.reserve(total);
        for seg in segs {
            if seg.is_empty() {
                continue;
            }
            let spare = out.spare_capacity_mut();
            // SAFETY: `seg` lies within the data area (ring_segments keeps
            // it below data_size) of the live mapping; the kernel does not
            // write to [tail, head) until we advance data_tail below, so the
            // source is stable; the destination is spare capacity reserved
            // above (total >= seg.len()), disjoint from the mapping; after
            // the copy those bytes are initialised, so set_len is sound.
            unsafe {
                let src = self.base.as_ptr().add(self.data_offset + seg.start);
                std::ptr::copy_nonoverlapping(src, spare.as_mut_ptr().cast::<u8>(), seg.len());
                out.set_len(out.len() + seg.len());
            }
        }
        // Release: our reads of the data complete before the kernel may
        // reuse the space.
        self.meta_u64(MMAP_DATA_TAIL).store(head, Ordering::Release);
        Ok(total)
    }
}

impl Drop for PerfRing {
    fn drop(&mut self) {
        // SAFETY: `base`/`map_len` describe the mapping created in `map`,
        // owned by this value and unmapped exactly once; no reference into
        // it outlives `self`.
        unsafe {
            libc::munmap(self.base.as_ptr().cast::<libc::c_void>(), self.map_len);
        }
    }
}

/// Waits until at least one of `fds` is readable (for perf events: the ring
/// passed its wake-up watermark) or `timeout` passes (None: forever).
/// Returns how many are ready; 0 on timeout or when a signal interrupted.
pub fn poll_readable(
    fds: &[BorrowedFd<'_>],
    timeout: Option<Duration>,
) -> Result<usize, PerfError> {
    let mut pfds: Vec<libc::pollfd> = fds
        .iter()
        .map(|fd| libc::pollfd {
            fd: fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    let ms: libc::c_int = match timeout {
        None => -1,
        // Round up so a short timeout does not become a busy poll.
        Some(t) => {
            libc::c_int::try_from(t.as_nanos().div_ceil(1_000_000)).unwrap_or(libc::c_int::MAX)
        }
    };
    // SAFETY: `pfds` is a valid array of `pfds.len()` pollfd structs that
    // the kernel writes `revents` into during the call.
    let rc = unsafe { libc::poll(pfds.as_mut_ptr(), pfds.len() as libc::nfds_t, ms) };
    if rc < 0 {
        let err = io::Error::last_os_error();
        if err.raw_os_error() == Some(libc::EINTR) {
            return Ok(0);
        }
        return Err(PerfError::from_io("poll on perf rings", err));
    }
    Ok(pfds
        .iter()
        .filter(|p| p.revents & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) != 0)
        .count())
}

// Counting mode: a counter read with `read()` instead of a ring of samples
// (the workload characterization counts system calls this way).

impl PerfEventAttr {
    /// A tracepoint counted, not sampled: no ring, no records, just a
    /// 64-bit count read with [`PerfEvent::read_count`]. Enabled from the
    /// moment it is opened.
    pub fn tracepoint_counter(id: u64) -> PerfEventAttr {
        let mut a = PerfEventAttr::base(PERF_TYPE_TRACEPOINT, id);
        a.raw.sample_period = 0;
        a.raw.sample_type = 0;
        a.raw.read_format = 0;
        a.raw.flags = 0;
        a.raw.clockid = 0;
        a
    }

    pub fn get_read_format(&self) -> u64 {
        self.raw.read_format
    }

    /// Any event counted, not sampled (type [`PERF_TYPE_SOFTWARE`],
    /// [`PERF_TYPE_HARDWARE`] or [`PERF_TYPE_HW_CACHE`] with its config),
    /// read with [`PerfEvent::read_count`]; enabled from the moment it is
    /// opened, counting user and kernel mode alike (as Chen et al. report
    /// every count: the total for all protection rings).
    pub fn counter(type_: u32, config: u64) -> PerfEventAttr {
        let mut a = PerfEventAttr::tracepoint_counter(0);
        a.raw.type_ = type_;
        a.raw.config = config;
        a
    }

    /// For a group's leader: a `read` returns every member's count
    /// (`PERF_FORMAT_GROUP`), read with [`PerfEvent::read_group`].
    pub fn read_group(mut self) -> PerfEventAttr {
        self.raw.read_format |= PERF_FORMAT_GROUP;
        self
    }
}

/// `perf_event_attr.type` of the hardware cache events.
pub const PERF_TYPE_HW_CACHE: u32 = 3;

/// `PERF_TYPE_SOFTWARE` configs of the microbenchmarks' counters (enum
/// perf_sw_ids).
pub const PERF_COUNT_SW_TASK_CLOCK: u64 = 1;
pub const PERF_COUNT_SW_CONTEXT_SWITCHES: u64 = 3;
pub const PERF_COUNT_SW_CPU_MIGRATIONS: u64 = 4;
pub const PERF_COUNT_SW_PAGE_FAULTS_MIN: u64 = 5;
pub const PERF_COUNT_SW_PAGE_FAULTS_MAJ: u64 = 6;

/// `PERF_TYPE_HARDWARE` configs (enum perf_hw_id): they need a PMU.
pub const PERF_COUNT_HW_CPU_CYCLES: u64 = 0;
pub const PERF_COUNT_HW_INSTRUCTIONS: u64 = 1;
pub const PERF_COUNT_HW_CACHE_REFERENCES: u64 = 2;
pub const PERF_COUNT_HW_CACHE_MISSES: u64 = 3;
pub const PERF_COUNT_HW_BRANCH_MISSES: u64 = 5;

/// `PERF_TYPE_HW_CACHE` config of a read miss in `cache` (3: dTLB, 4:
/// iTLB): `cache | op << 8 | result << 16` with op read (0), result miss
/// (1).
pub const fn hw_cache_read_miss(cache: u64) -> u64 {
    cache | (1 << 16)
}
pub const PERF_COUNT_HW_CACHE_DTLB: u64 = 3;
pub const PERF_COUNT_HW_CACHE_ITLB: u64 = 4;

impl PerfEvent {
    /// The event's count so far (read_format 0: one u64). For counters
    /// opened with [`PerfEventAttr::tracepoint_counter`].
    pub fn read_count(&self) -> Result<u64, PerfError> {
        let mut buf = [0u8; 8];
        // SAFETY: the fd is an open perf event owned by `self`; `buf` is a
        // writable 8-byte buffer alive for the call, and the length passed
        // is its size, so the kernel writes inside it only.
        let n = unsafe {
            libc::read(
                self.fd.as_raw_fd(),
                buf.as_mut_ptr().cast::<libc::c_void>(),
                buf.len(),
            )
        };
        if n < 0 {
            return Err(PerfError::last("read of a perf counter"));
        }
        if n != 8 {
            return Err(PerfError::Invalid(format!(
                "read of a perf counter returned {n} bytes, not 8"
            )));
        }
        Ok(u64::from_ne_bytes(buf))
    }

    /// The counts of a group whose leader (`self`) was opened with
    /// [`PerfEventAttr::read_group`], in the order the events were opened
    /// (the leader first), with one `read`: into `out`, whose length must
    /// be the group's size. No allocation: it runs between iterations.
    pub fn read_group(&self, out: &mut [u64]) -> Result<(), PerfError> {
        // The layout is { u64 nr; u64 values[nr]; }.
        let mut buf = [0u64; 1 + MAX_GROUP];
        let want = out.len();
        if want > MAX_GROUP {
            return Err(PerfError::Invalid(format!(
                "a group of {want} events; at most {MAX_GROUP} are read"
            )));
        }
        let bytes = (1 + want) * 8;
        // SAFETY: the fd is an open perf event owned by `self`; `buf` is a
        // writable array of (1 + MAX_GROUP) u64 alive for the call, and the
        // length passed, (1 + want) * 8 with want <= MAX_GROUP, is within
        // it, so the kernel writes inside it only.
        let n = unsafe {
            libc::read(
                self.fd.as_raw_fd(),
                buf.as_mut_ptr().cast::<libc::c_void>(),
                bytes,
            )
        };
        if n < 0 {
            return Err(PerfError::last("read of a perf group"));
        }
        if n as usize != bytes || buf[0] as usize != want {
            return Err(PerfError::Invalid(format!(
                "read of a perf group returned {n} bytes and {} counts, not {want}",
                buf[0]
            )));
        }
        out.copy_from_slice(&buf[1..=want]);
        Ok(())
    }
}

/// `read_format` bit: read every member of the leader's group at once.
pub const PERF_FORMAT_GROUP: u64 = 1 << 3;

/// The most events [`PerfEvent::read_group`] reads in one group.
pub const MAX_GROUP: usize = 8;

#[cfg(test)]
mod tests {
    #[test]
    fn a_group_of_software_events_counts_what_lone_counters_count() {
        // Touching fresh pages: the group (read once) and a lone counter
        // must both see every minor fault. This is the check that found
        // clock events undercounting in mixed groups (docs/micro.md), so a
        // kernel that breaks software groups fails here.
        let open =
            |config| PerfEvent::open(&PerfEventAttr::counter(PERF_TYPE_SOFTWARE, config), 0, -1);
        let Ok(leader) = PerfEvent::open(
            &PerfEventAttr::counter(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES)
                .read_group(),
            0,
            -1,
        ) else {
            eprintln!("skipped: perf_event_open refused here");
            return;
        };
        let member = |config| {
            PerfEvent::open_in(
                &PerfEventAttr::counter(PERF_TYPE_SOFTWARE, config),
                0,
                -1,
                Some(&leader),
            )
            .unwrap()
        };
        let _migrations = member(PERF_COUNT_SW_CPU_MIGRATIONS);
        let _minor = member(PERF_COUNT_SW_PAGE_FAULTS_MIN);
        let _major = member(PERF_COUNT_SW_PAGE_FAULTS_MAJ);
        let lone = open(PERF_COUNT_SW_PAGE_FAULTS_MIN).unwrap();
        let mut before = [0u64; 4];
        let mut after = [0u64; 4];
        let lone_before = lone.read_count().unwrap();
        leader.read_group(&mut before).unwrap();
        let mut pages = crate::pages::PageBuffer::new(256 * 512, false).unwrap();
        for page in pages.as_mut_slice().chunks_mut(512) {
            page[0] = 1;
        }
        leader.read_group(&mut after).unwrap();
        let lone_faults = lone.read_count().unwrap() - lone_before;
        let group_faults = after[2] - before[2];
        assert!(
            lone_faults >= 256,
            "lone counter: {lone_faults} faults for 256 pages"
        );
        assert!(
            group_faults >= 256 && group_faults.abs_diff(lone_faults) <= 2,
            "group: {group_faults} faults, lone: {lone_faults}"
        );
        // A group read into the wrong number of slots is an error, not a
        // partial answer.
        assert!(leader.read_group(&mut [0u64; 3]).is_err());
    }

    use super::*;

    #[test]
    fn attr_flag_bits_match_the_kernel_bitfields() {
        // Expected from a C program setting the same bitfields in
        // linux/perf_event.h: disabled, exclude_user, watermark,
        // sample_id_all, exclude_callchain_user, use_clockid (+ exclude_hv).
        let a = PerfEventAttr::cpu_clock(1000).wakeup_watermark(4096);
        let expected =
            (1 << 0) | (1 << 4) | (1 << 6) | (1 << 14) | (1 << 18) | (1 << 22) | (1 << 25);
        assert_eq!(a.flag_bits(), expected);
        let bytes = a.to_bytes();
        assert_eq!(
            u64::from_ne_bytes(bytes[40..48].try_into().unwrap()),
            expected
        );
        assert_eq!(
            u32::from_ne_bytes(bytes[4..8].try_into().unwrap()),
            PERF_ATTR_SIZE
        );
        assert_eq!(u32::from_ne_bytes(bytes[48..52].try_into().unwrap()), 4096);
        assert_eq!(
            i32::from_ne_bytes(bytes[92..96].try_into().unwrap()),
            libc::CLOCK_MONOTONIC
        );
    }

    #[test]
    fn tracepoint_preset() {
        let a = PerfEventAttr::tracepoint(460);
        assert_eq!(a.type_(), PERF_TYPE_TRACEPOINT);
        assert_eq!(a.config(), 460);
        assert_eq!(a.get_sample_period(), 1);
        assert_eq!(a.get_sample_type(), TRACEPOINT_SAMPLE_TYPE);
        assert_eq!(a.flag_bits() & ATTR_WATERMARK, 0);
        let b = a.wakeup_watermark(0).clock(None).disabled(false);
        assert_eq!(b.flag_bits(), ATTR_SAMPLE_ID_ALL);
    }

    #[test]
    fn ioctl_numbers() {
        assert_eq!(PERF_EVENT_IOC_ENABLE, 0x2400);
        assert_eq!(PERF_EVENT_IOC_DISABLE, 0x2401);
        assert_eq!(PERF_EVENT_IOC_SET_OUTPUT, 0x2405);
        assert_eq!(PERF_EVENT_IOC_ID, 0x8008_2407);
    }

    #[test]
    fn segments() {
        assert_eq!(ring_segments(0, 0, 16).unwrap(), [0..0, 0..0]);
        assert_eq!(ring_segments(4, 12, 16).unwrap(), [4..12, 0..0]);
        assert_eq!(ring_segments(12, 20, 16).unwrap(), [12..16, 0..4]);
        assert_eq!(ring_segments(16, 32, 16).unwrap(), [0..16, 0..0]);
        assert_eq!(ring_segments(20, 36, 16).unwrap(), [4..16, 0..4]);
        assert!(ring_segments(20, 37, 16).is_err());
        assert!(ring_segments(20, 19, 16).is_err());
        assert!(ring_segments(0, 0, 12).is_err());
        let ring: Vec<u8> = (0..16).collect();
        let mut out = vec![99];
        assert_eq!(copy_from_ring(&ring, 30, 35, &mut out).unwrap(), 5);
        assert_eq!(out, [99, 14, 15, 0, 1, 2]);
    }

    #[test]
    fn poll_times_out_on_a_silent_fd() {
        let mut fds = [0; 2];
        // Close-on-exec, and readiness by a written byte rather than by the
        // writer's close: another test of this binary may fork while the pipe
        // is open, and a child holding the write end would keep the pipe from
        // hanging up (CI once saw 0 here for that reason).
        // SAFETY: `fds` has room for the two descriptors pipe2 writes.
        assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
        // SAFETY: both were just created by pipe2 and are owned by nothing else.
        let (r, w) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        let n = poll_readable(&[r.as_fd()], Some(Duration::from_millis(5))).unwrap();
        assert_eq!(n, 0);
        // SAFETY: `w` is an open pipe write end and the buffer is one valid byte.
        assert_eq!(
            unsafe { libc::write(w.as_raw_fd(), [1u8].as_ptr().cast(), 1) },
            1
        );
        // A signal may interrupt the wait (reported as 0); the byte stays.
        let mut n = 0;
        for _ in 0..100 {
            n = poll_readable(&[r.as_fd()], Some(Duration::from_secs(1))).unwrap();
            if n != 0 {
                break;
            }
        }
        assert_eq!(n, 1);
    }
}
