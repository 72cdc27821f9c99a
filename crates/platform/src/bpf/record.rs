//! The flight recorder's record format: `struct rec` in
//! `crates/platform/bpf/timer.bpf.c`, 64 bytes (one cache line, so that
//! each event writes one line), native endianness. The CPU is not in the
//! record: the reader knows it from the ring.
//!
//! ```text
//! offset size
//!  0     8    seq         n + 1 for the ring's record n; 0 while written
//!  8     8    time        bpf_ktime_get_ns() (CLOCK_MONOTONIC)
//! 16     4    tid         the current task's pid (0: idle, -1: pid released);
//!                         Switch: prev_pid (the current task)
//! 20     1    kind        1..=20, see KIND_* below
//! 21     1    aux         vector events: index into VECTOR_NAMES;
//!                         Switch: non-zero when prev's pid is released
//!                         (the event's tid is then -1)
//! 22     2    state       Switch: prev_state (u16)
//! 24    40    payload, by kind:
//!   Switch    24 next_pid i32, 28 prev_prio i16, 30 next_prio i16,
//!             32 prev_comm [16], 48 next_comm [16]
//!   Waking    24 pid, 28 prio, 32 target_cpu (i32), 40 comm [16]
//!   Hrtimer*  24 hrtimer u64, 32 function u64, 40 expires / now i64,
//!             48 softexpires i64
//!   Irq*      24 irq i32, 28 ret i32, 32 name [16]
//!   Softirq*  24 vec u32
//!   Vector*   24 vector i32 (name: aux)
//!   Nmi       24 handler u64, 32 delta_ns i64, 40 handled i32
//!   Work*     24 work u64, 32 function u64
//!   Timer*    24 timer_list u64, 32 function u64 (exit: 0)
//!   Tasklet*  24 tasklet_struct u64, 32 function u64
//!   NapiPoll  24 napi u64, 32 work i32, 36 budget i32, 40 dev [16]
//! ```

use super::{vector_index, VECTOR_NAMES};

/// The size of a flight recorder record (`struct rec`).
pub const RECORD_BYTES: usize = 64;

const KIND_SWITCH: u8 = 1;
const KIND_WAKING: u8 = 2;
const KIND_HRTIMER_START: u8 = 3;
const KIND_HRTIMER_EXPIRE_ENTRY: u8 = 4;
const KIND_HRTIMER_EXPIRE_EXIT: u8 = 5;
const KIND_IRQ_ENTRY: u8 = 6;
const KIND_IRQ_EXIT: u8 = 7;
const KIND_SOFTIRQ_RAISE: u8 = 8;
const KIND_SOFTIRQ_ENTRY: u8 = 9;
const KIND_SOFTIRQ_EXIT: u8 = 10;
const KIND_VECTOR_ENTRY: u8 = 11;
const KIND_VECTOR_EXIT: u8 = 12;
const KIND_NMI: u8 = 13;
const KIND_WORK_START: u8 = 14;
const KIND_WORK_END: u8 = 15;
const KIND_TIMER_ENTRY: u8 = 16;
const KIND_TIMER_EXIT: u8 = 17;
const KIND_TASKLET_ENTRY: u8 = 18;
const KIND_TASKLET_EXIT: u8 = 19;
const KIND_NAPI_POLL: u8 = 20;
/// The highest kind the programs write.
#[cfg(test)]
const KIND_LAST: u8 = KIND_NAPI_POLL;

/// The device name `napi_poll` reports for an instance without a device
/// (the per-CPU backlog that loopback and `netif_rx` traffic goes through).
pub const NAPI_NO_DEVICE: &str = "(no_device)";

/// What a recorded tracepoint saw: the fields perf's format gives, with
/// the same values (`prio` is the kernel's `p->prio`, `prev_state` as
/// `__trace_sched_switch_state` reports it, comms and IRQ handler names as
/// 15 bytes and a NUL).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordedKind {
    Switch {
        prev_pid: i32,
        prev_prio: i32,
        prev_state: i64,
        prev_comm: [u8; 16],
        next_pid: i32,
        next_prio: i32,
        next_comm: [u8; 16],
    },
    Waking {
        pid: i32,
        prio: i32,
        target_cpu: i32,
        comm: [u8; 16],
    },
    HrtimerStart {
        hrtimer: u64,
        function: u64,
        expires: i64,
        softexpires: i64,
    },
    HrtimerExpireEntry {
        hrtimer: u64,
        now: i64,
        function: u64,
    },
    HrtimerExpireExit {
        hrtimer: u64,
    },
    IrqEntry {
        irq: i32,
        name: [u8; 16],
    },
    IrqExit {
        irq: i32,
        ret: i32,
    },
    SoftirqRaise {
        vec: u32,
    },
    SoftirqEntry {
        vec: u32,
    },
    SoftirqExit {
        vec: u32,
    },
    /// `irq_vectors:<name>_entry`; `name` is from [`VECTOR_NAMES`].
    VectorEntry {
        name: &'static str,
        vector: i32,
    },
    VectorExit {
        name: &'static str,
        vector: i32,
    },
    Nmi {
        handler: u64,
        delta_ns: i64,
        handled: i32,
    },
    WorkStart {
        work: u64,
        function: u64,
    },
    WorkEnd {
        work: u64,
        function: u64,
    },
    /// `timer:timer_expire_entry`: a timer-wheel callback starts.
    TimerEntry {
        timer: u64,
        function: u64,
    },
    TimerExit {
        timer: u64,
    },
    /// `irq:tasklet_entry`.
    TaskletEntry {
        tasklet: u64,
        function: u64,
    },
    TaskletExit {
        tasklet: u64,
        function: u64,
    },
    /// `napi:napi_poll`; `dev` as the tracepoint's `dev_name`, 15 bytes
    /// and a NUL ([`NAPI_NO_DEVICE`] without a device).
    NapiPoll {
        napi: u64,
        work: i32,
        budget: i32,
        dev: [u8; 16],
    },
}

/// One flight recorder event. `time` is CLOCK_MONOTONIC ns, `tid` the task
/// that was current as a perf sample names it (0: idle; -1: a task whose
/// pid is already released, at the last switch-out of an exiting task).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordedEvent {
    pub time: u64,
    pub cpu: u32,
    pub tid: i32,
    pub kind: RecordedKind,
}

fn u64_at(b: &[u8], i: usize) -> Option<u64> {
    Some(u64::from_ne_bytes(b.get(i..i + 8)?.try_into().ok()?))
}
fn i64_at(b: &[u8], i: usize) -> Option<i64> {
    Some(i64::from_ne_bytes(b.get(i..i + 8)?.try_into().ok()?))
}
fn u32_at(b: &[u8], i: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(i..i + 4)?.try_into().ok()?))
}
fn i32_at(b: &[u8], i: usize) -> Option<i32> {
    Some(i32::from_ne_bytes(b.get(i..i + 4)?.try_into().ok()?))
}
fn u16_at(b: &[u8], i: usize) -> Option<u16> {
    Some(u16::from_ne_bytes(b.get(i..i + 2)?.try_into().ok()?))
}
fn i16_at(b: &[u8], i: usize) -> Option<i16> {
    Some(i16::from_ne_bytes(b.get(i..i + 2)?.try_into().ok()?))
}
fn name_at(b: &[u8], i: usize) -> Option<[u8; 16]> {
    b.get(i..i + 16)?.try_into().ok()
}

impl RecordedEvent {
    /// Reads a record of `cpu`'s ring as the programs write it; `None`
    /// when the bytes are shorter than [`RECORD_BYTES`], the kind is
    /// unknown, or a vector's name index is outside [`VECTOR_NAMES`]. The
    /// sequence number is the reader's business and is not looked at.
    pub fn parse(b: &[u8], cpu: u32) -> Option<RecordedEvent> {
        if b.len() < RECORD_BYTES {
            return None;
        }
        let kind = *b.get(20)?;
        let aux = usize::from(*b.get(21)?);
        let mut tid = i32_at(b, 16)?;
        let p = 24;
        let kind = match kind {
            KIND_SWITCH => {
                let prev_pid = tid;
                if aux != 0 {
                    tid = -1;
                }
                RecordedKind::Switch {
                    prev_state: i64::from(u16_at(b, 22)?),
                    prev_pid,
                    prev_prio: i32::from(i16_at(b, p + 4)?),
                    next_pid: i32_at(b, p)?,
                    next_prio: i32::from(i16_at(b, p + 6)?),
                    prev_comm: name_at(b, p + 8)?,
                    next_comm: name_at(b, p + 24)?,
                }
            }
            KIND_WAKING => RecordedKind::Waking {
                pid: i32_at(b, p)?,
                prio: i32_at(b, p + 4)?,
                target_cpu: i32_at(b, p + 8)?,
                comm: name_at(b, p + 16)?,
            },
            KIND_HRTIMER_START => RecordedKind::HrtimerStart {
                hrtimer: u64_at(b, p)?,
                function: u64_at(b, p + 8)?,
                expires: i64_at(b, p + 16)?,
                softexpires: i64_at(b, p + 24)?,
            },
            KIND_HRTIMER_EXPIRE_ENTRY => RecordedKind::HrtimerExpireEntry {
                hrtimer: u64_at(b, p)?,
                function: u64_at(b, p + 8)?,
                now: i64_at(b, p + 16)?,
            },
            KIND_HRTIMER_EXPIRE_EXIT => RecordedKind::HrtimerExpireExit {
                hrtimer: u64_at(b, p)?,
            },
            KIND_IRQ_ENTRY => RecordedKind::IrqEntry {
                irq: i32_at(b, p)?,
                name: name_at(b, p + 8)?,
            },
            KIND_IRQ_EXIT => RecordedKind::IrqExit {
                irq: i32_at(b, p)?,
                ret: i32_at(b, p + 4)?,
            },
            KIND_SOFTIRQ_RAISE => RecordedKind::SoftirqRaise { vec: u32_at(b, p)? },
            KIND_SOFTIRQ_ENTRY => RecordedKind::SoftirqEntry { vec: u32_at(b, p)? },
            KIND_SOFTIRQ_EXIT => RecordedKind::SoftirqExit { vec: u32_at(b, p)? },
            KIND_VECTOR_ENTRY => RecordedKind::VectorEntry {
                name: VECTOR_NAMES.get(aux)?,
                vector: i32_at(b, p)?,
            },
            KIND_VECTOR_EXIT => RecordedKind::VectorExit {
                name: VECTOR_NAMES.get(aux)?,
                vector: i32_at(b, p)?,
            },
            KIND_NMI => RecordedKind::Nmi {
                handler: u64_at(b, p)?,
                delta_ns: i64_at(b, p + 8)?,
                handled: i32_at(b, p + 16)?,
            },
            KIND_WORK_START => RecordedKind::WorkStart {
                work: u64_at(b, p)?,
                function: u64_at(b, p + 8)?,
            },
            KIND_WORK_END => RecordedKind::WorkEnd {
                work: u64_at(b, p)?,
                function: u64_at(b, p + 8)?,
            },
            KIND_TIMER_ENTRY => RecordedKind::TimerEntry {
                timer: u64_at(b, p)?,
                function: u64_at(b, p + 8)?,
            },
            KIND_TIMER_EXIT => RecordedKind::TimerExit {
                timer: u64_at(b, p)?,
            },
            KIND_TASKLET_ENTRY => RecordedKind::TaskletEntry {
                tasklet: u64_at(b, p)?,
                function: u64_at(b, p + 8)?,
            },
            KIND_TASKLET_EXIT => RecordedKind::TaskletExit {
                tasklet: u64_at(b, p)?,
                function: u64_at(b, p + 8)?,
            },
            KIND_NAPI_POLL => RecordedKind::NapiPoll {
                napi: u64_at(b, p)?,
                work: i32_at(b, p + 8)?,
                budget: i32_at(b, p + 12)?,
                dev: name_at(b, p + 16)?,
            },
            _ => return None,
        };
        Some(RecordedEvent {
            time: u64_at(b, 8)?,
            cpu,
            tid,
            kind,
        })
    }

    /// The record as the programs would write it with sequence number
    /// `seq` (for tests; the CPU is left out, as the programs leave it);
    /// `None` for what the layout cannot hold: a vector name not in
    /// [`VECTOR_NAMES`], or a switch whose tid is neither its prev_pid nor
    /// -1, whose prev_state is not a u16 or whose priorities are not i16s.
    // long: one arm per record kind, the layout of timer.bpf.c's records
    // written out in one place as `from_bytes` reads it
    pub fn to_bytes(&self, seq: u64) -> Option<[u8; RECORD_BYTES]> {
        let mut b = [0u8; RECORD_BYTES];
        let put = |b: &mut [u8; RECORD_BYTES], at: usize, v: &[u8]| {
            b[at..at + v.len()].copy_from_slice(v);
        };
        put(&mut b, 0, &seq.to_ne_bytes());
        put(&mut b, 8, &self.time.to_ne_bytes());
        put(&mut b, 16, &self.tid.to_ne_bytes());
        let p = 24;
        let (kind, aux) = match self.kind {
            RecordedKind::Switch {
                prev_pid,
                prev_prio,
                prev_state,
                prev_comm,
                next_pid,
                next_prio,
                next_comm,
            } => {
                let released = self.tid == -1;
                if !released && self.tid != prev_pid {
                    return None;
                }
                put(&mut b, 16, &prev_pid.to_ne_bytes());
                put(&mut b, 22, &u16::try_from(prev_state).ok()?.to_ne_bytes());
                put(&mut b, p, &next_pid.to_ne_bytes());
                put(&mut b, p + 4, &i16::try_from(prev_prio).ok()?.to_ne_bytes());
                put(&mut b, p + 6, &i16::try_from(next_prio).ok()?.to_ne_bytes());
                put(&mut b, p + 8, &prev_comm);
                put(&mut b, p + 24, &next_comm);
                (KIND_SWITCH, u32::from(released))
            }
            RecordedKind::Waking {
                pid,
                prio,
                target_cpu,
                comm,
            } => {
                put(&mut b, p, &pid.to_ne_bytes());
                put(&mut b, p + 4, &prio.to_ne_bytes());
                put(&mut b, p + 8, &target_cpu.to_ne_bytes());
                put(&mut b, p + 16, &comm);
                (KIND_WAKING, 0)
            }
            RecordedKind::HrtimerStart {
                hrtimer,
                function,
                expires,
                softexpires,
            } => {
                put(&mut b, p, &hrtimer.to_ne_bytes());
                put(&mut b, p + 8, &function.to_ne_bytes());
                put(&mut b, p + 16, &expires.to_ne_bytes());
                put(&mut b, p + 24, &softexpires.to_ne_bytes());
                (KIND_HRTIMER_START, 0)
            }
            RecordedKind::HrtimerExpireEntry {
                hrtimer,
                now,
                function,
            } => {
                put(&mut b, p, &hrtimer.to_ne_bytes());
                put(&mut b, p + 8, &function.to_ne_bytes());
                put(&mut b, p + 16, &now.to_ne_bytes());
                (KIND_HRTIMER_EXPIRE_ENTRY, 0)
            }
            RecordedKind::HrtimerExpireExit { hrtimer } => {
                put(&mut b, p, &hrtimer.to_ne_bytes());
                (KIND_HRTIMER_EXPIRE_EXIT, 0)
            }
            RecordedKind::IrqEntry { irq, name } => {
                put(&mut b, p, &irq.to_ne_bytes());
                put(&mut b, p + 8, &name);
                (KIND_IRQ_ENTRY, 0)
            }
            RecordedKind::IrqExit { irq, ret } => {
                put(&mut b, p, &irq.to_ne_bytes());
                put(&mut b, p + 4, &ret.to_ne_bytes());
                (KIND_IRQ_EXIT, 0)
            }
            RecordedKind::SoftirqRaise { vec } => {
                put(&mut b, p, &vec.to_ne_bytes());
                (KIND_SOFTIRQ_RAISE, 0)
            }
            RecordedKind::SoftirqEntry { vec } => {
                put(&mut b, p, &vec.to_ne_bytes());
                (KIND_SOFTIRQ_ENTRY, 0)
            }
            RecordedKind::SoftirqExit { vec } => {
                put(&mut b, p, &vec.to_ne_bytes());
                (KIND_SOFTIRQ_EXIT, 0)
            }
            RecordedKind::VectorEntry { name, vector } => {
                put(&mut b, p, &vector.to_ne_bytes());
                (KIND_VECTOR_ENTRY, vector_index(name)?)
            }
            RecordedKind::VectorExit { name, vector } => {
                put(&mut b, p, &vector.to_ne_bytes());
                (KIND_VECTOR_EXIT, vector_index(name)?)
            }
            RecordedKind::Nmi {
                handler,
                delta_ns,
                handled,
            } => {
                put(&mut b, p, &handler.to_ne_bytes());
                put(&mut b, p + 8, &delta_ns.to_ne_bytes());
                put(&mut b, p + 16, &handled.to_ne_bytes());
                (KIND_NMI, 0)
            }
            RecordedKind::WorkStart { work, function } => {
                put(&mut b, p, &work.to_ne_bytes());
                put(&mut b, p + 8, &function.to_ne_bytes());
                (KIND_WORK_START, 0)
            }
            RecordedKind::WorkEnd { work, function } => {
                put(&mut b, p, &work.to_ne_bytes());
                put(&mut b, p + 8, &function.to_ne_bytes());
                (KIND_WORK_END, 0)
            }
            RecordedKind::TimerEntry { timer, function } => {
                put(&mut b, p, &timer.to_ne_bytes());
                put(&mut b, p + 8, &function.to_ne_bytes());
                (KIND_TIMER_ENTRY, 0)
            }
            RecordedKind::TimerExit { timer } => {
                put(&mut b, p, &timer.to_ne_bytes());
                (KIND_TIMER_EXIT, 0)
            }
            RecordedKind::TaskletEntry { tasklet, function } => {
                put(&mut b, p, &tasklet.to_ne_bytes());
                put(&mut b, p + 8, &function.to_ne_bytes());
                (KIND_TASKLET_ENTRY, 0)
            }
            RecordedKind::TaskletExit { tasklet, function } => {
                put(&mut b, p, &tasklet.to_ne_bytes());
                put(&mut b, p + 8, &function.to_ne_bytes());
                (KIND_TASKLET_EXIT, 0)
            }
            RecordedKind::NapiPoll {
                napi,
                work,
                budget,
                dev,
            } => {
                put(&mut b, p, &napi.to_ne_bytes());
                put(&mut b, p + 8, &work.to_ne_bytes());
                put(&mut b, p + 12, &budget.to_ne_bytes());
                put(&mut b, p + 16, &dev);
                (KIND_NAPI_POLL, 0)
            }
        };
        b[20] = kind;
        b[21] = u8::try_from(aux).ok()?;
        Some(b)
    }
}

#[cfg(test)]
mod tests;
