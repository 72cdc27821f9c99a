//! latscope's BPF programs, loaded through aya: the in-kernel half of the
//! BPF tracing backend (issue 17; docs/tracing.md, "The BPF backend").
//!
//! The programs are C (`crates/platform/bpf/*.bpf.c`), compiled by clang
//! when the crate is built (`build.rs`) and embedded; CO-RE relocations are
//! resolved against the running kernel's BTF (`/sys/kernel/btf/vmlinux`)
//! when they are loaded. Without clang at build time [`built`] is false and
//! [`TimerBpf::open`] says so in one line.
//!
//! Why aya: a pure-Rust loader (no libbpf, libelf or zlib to build and link
//! into latscope, nothing that could fail on a machine without them), with
//! CO-RE, BTF tracepoints, ring buffers and per-CPU maps behind safe APIs,
//! and actively kept. The programs themselves stay in C: writing them in
//! Rust needs a nightly toolchain and bpf-linker, which these machines and
//! most users' do not have, whereas clang is one Debian package.

use std::time::Duration;

use crate::error::PlatformError;

/// Whether this build has the BPF programs (clang was there at build time).
pub fn built() -> bool {
    cfg!(latscope_bpf)
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
}

/// The size of a record in the ring (`struct timer_record`).
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
        })
    }
}

/// What the programs counted: records handed over, and records dropped
/// because the ring was full.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TimerCounters {
    pub sent: u64,
    pub dropped: u64,
}

#[cfg(latscope_bpf)]
mod loaded {
    use super::*;
    use aya::maps::{HashMap, MapData, PerCpuArray, RingBuf};
    use aya::programs::BtfTracePoint;
    use aya::{Btf, Ebpf};

    const OBJECT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/timer.bpf.o"));

    /// The timer decomposition programs, attached, following some threads.
    pub struct TimerBpf {
        ebpf: Ebpf,
        ring: RingBuf<MapData>,
    }

    fn err(what: &str) -> impl Fn(String) -> PlatformError + '_ {
        move |e| PlatformError::Invalid(format!("BPF: {what}: {e}"))
    }

    impl TimerBpf {
        /// Loads the programs, watches `tids` and attaches to
        /// `hrtimer_start`, `hrtimer_expire_entry` and `sched_switch`.
        pub fn open(tids: &[u32]) -> Result<TimerBpf, PlatformError> {
            // The object is parsed from an owned copy: ELF parsing wants
            // its sections aligned, which an embedded byte string is not.
            let object = OBJECT.to_vec();
            let mut ebpf = Ebpf::load(&object).map_err(|e| err("loading")(e.to_string()))?;
            let btf =
                Btf::from_sys_fs().map_err(|e| err("reading the kernel's BTF")(e.to_string()))?;
            {
                let map = ebpf
                    .map_mut("watched")
                    .ok_or_else(|| err("the object")("no map 'watched'".into()))?;
                let mut watched: HashMap<_, u32, u32> =
                    HashMap::try_from(map).map_err(|e| err("map 'watched'")(e.to_string()))?;
                for &tid in tids {
                    watched
                        .insert(tid, 1, 0)
                        .map_err(|e| err("watching a thread")(e.to_string()))?;
                }
            }
            for (program, tracepoint) in [
                ("on_hrtimer_start", "hrtimer_start"),
                ("on_hrtimer_expire_entry", "hrtimer_expire_entry"),
                ("on_sched_switch", "sched_switch"),
            ] {
                let p: &mut BtfTracePoint = ebpf
                    .program_mut(program)
                    .ok_or_else(|| err("the object")(format!("no program {program}")))?
                    .try_into()
                    .map_err(|e: aya::programs::ProgramError| err(program)(e.to_string()))?;
                p.load(tracepoint, &btf)
                    .map_err(|e| err(tracepoint)(e.to_string()))?;
                p.attach().map_err(|e| err(tracepoint)(e.to_string()))?;
            }
            let map = ebpf
                .take_map("records")
                .ok_or_else(|| err("the object")("no map 'records'".into()))?;
            let ring = RingBuf::try_from(map).map_err(|e| err("map 'records'")(e.to_string()))?;
            Ok(TimerBpf { ebpf, ring })
        }

        /// Appends every record waiting in the ring to `out`; returns how
        /// many. Never blocks.
        pub fn drain(&mut self, out: &mut Vec<TimerRecord>) -> usize {
            let before = out.len();
            while let Some(item) = self.ring.next() {
                if let Some(r) = TimerRecord::parse(&item) {
                    out.push(r);
                }
            }
            out.len() - before
        }

        /// Waits up to `timeout` for records (polling the ring's fd).
        pub fn wait(&self, timeout: Duration) -> Result<bool, PlatformError> {
            use std::os::fd::{AsRawFd, BorrowedFd};
            let raw = self.ring.as_raw_fd();
            // SAFETY: `raw` is the ring map's descriptor, owned by
            // `self.ring`, which outlives the borrow (this call).
            let fd = unsafe { BorrowedFd::borrow_raw(raw) };
            crate::perf::poll_readable(&[fd], Some(timeout))
                .map(|n| n > 0)
                .map_err(|e| PlatformError::Invalid(format!("BPF: waiting for records: {e}")))
        }

        /// The programs' counters, summed over CPUs.
        pub fn counters(&self) -> Result<TimerCounters, PlatformError> {
            let map = self
                .ebpf
                .map("counters")
                .ok_or_else(|| err("the object")("no map 'counters'".into()))?;
            let counters: PerCpuArray<_, u64> =
                PerCpuArray::try_from(map).map_err(|e| err("map 'counters'")(e.to_string()))?;
            let sum = |i: u32| -> Result<u64, PlatformError> {
                Ok(counters
                    .get(&i, 0)
                    .map_err(|e| err("reading the counters")(e.to_string()))?
                    .iter()
                    .sum())
            };
            Ok(TimerCounters {
                sent: sum(0)?,
                dropped: sum(1)?,
            })
        }
    }
}

#[cfg(latscope_bpf)]
pub use loaded::TimerBpf;

/// Without the programs in this build: [`TimerBpf::open`] explains why.
#[cfg(not(latscope_bpf))]
pub struct TimerBpf;

#[cfg(not(latscope_bpf))]
impl TimerBpf {
    pub fn open(_tids: &[u32]) -> Result<TimerBpf, PlatformError> {
        Err(PlatformError::Invalid(
            "BPF: this build has no BPF programs (clang was not found when it was built)"
                .to_string(),
        ))
    }
    pub fn drain(&mut self, _out: &mut Vec<TimerRecord>) -> usize {
        0
    }
    pub fn wait(&self, _timeout: Duration) -> Result<bool, PlatformError> {
        Ok(false)
    }
    pub fn counters(&self) -> Result<TimerCounters, PlatformError> {
        Ok(TimerCounters::default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_reads_back_and_short_bytes_are_refused() {
        let mut b = Vec::new();
        for v in [10u64, 20, 30, 40] {
            b.extend_from_slice(&v.to_ne_bytes());
        }
        b.extend_from_slice(&7u32.to_ne_bytes());
        b.extend_from_slice(&1u32.to_ne_bytes());
        b.extend_from_slice(&0u64.to_ne_bytes());
        let r = TimerRecord::parse(&b).unwrap();
        assert_eq!(
            r,
            TimerRecord {
                expires: 10,
                callback_now: 20,
                callback_time: 30,
                switch_in: 40,
                tid: 7,
                cpu: 1
            }
        );
        for n in 0..TIMER_RECORD_BYTES {
            assert_eq!(TimerRecord::parse(&b[..n]), None);
        }
    }
}
