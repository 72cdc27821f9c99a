//! From perf record bytes to typed events.
//!
//! The decoder is built from a [`Schema`]: the format files of the events
//! that were opened and, for every perf event id, what it stands for. The
//! live tracer builds its decoder from the schema it writes into
//! recordings, so a saved stream decodes through exactly the code a live
//! ring does and the analysis can be tested on fixtures.
//!
//! Every record is untrusted input: a truncated record, an id we did not
//! open, a field past the end of a record are counted in [`DecodeStats`]
//! and skipped, never a panic. Field positions come from the parsed format
//! (looked up by name when the decoder is built), so the per-record cost is
//! a binary search over the ids and a few bounded reads.

use serde::{Deserialize, Serialize};

use latscope_platform::perf::{
    PERF_CONTEXT_MAX, PERF_RECORD_LOST, PERF_RECORD_LOST_SAMPLES, PERF_RECORD_SAMPLE,
    PERF_SAMPLE_ADDR, PERF_SAMPLE_CALLCHAIN, PERF_SAMPLE_CPU, PERF_SAMPLE_ID,
    PERF_SAMPLE_IDENTIFIER, PERF_SAMPLE_IP, PERF_SAMPLE_PERIOD, PERF_SAMPLE_RAW, PERF_SAMPLE_READ,
    PERF_SAMPLE_STREAM_ID, PERF_SAMPLE_TID, PERF_SAMPLE_TIME,
};

use crate::error::{one_line, TraceError};
use crate::event::{Comm, Decoded, EventKind, NameId, Names, StackSample, TraceEvent};
use crate::format::{read_int, read_uint, EventFormat, Field};
use crate::ring::Records;

/// A tracepoint latscope knows how to decode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventSpec {
    pub system: &'static str,
    pub name: &'static str,
    /// The timer decomposition cannot work without it.
    pub required: bool,
}

const fn spec(system: &'static str, name: &'static str, required: bool) -> EventSpec {
    EventSpec {
        system,
        name,
        required,
    }
}

/// The fixed list of supported events; `irq_vectors:*_entry`/`*_exit` pairs
/// are found at run time ([`IRQ_VECTORS`]).
pub const EVENTS: &[EventSpec] = &[
    spec("sched", "sched_switch", true),
    spec("sched", "sched_waking", true),
    spec("timer", "hrtimer_start", true),
    spec("timer", "hrtimer_expire_entry", true),
    spec("timer", "hrtimer_expire_exit", true),
    spec("irq", "irq_handler_entry", false),
    spec("irq", "irq_handler_exit", false),
    spec("irq", "softirq_raise", false),
    spec("irq", "softirq_entry", false),
    spec("irq", "softirq_exit", false),
    spec("nmi", "nmi_handler", false),
    spec("workqueue", "workqueue_execute_start", false),
    spec("workqueue", "workqueue_execute_end", false),
    spec("timer", "timer_expire_entry", false),
    spec("timer", "timer_expire_exit", false),
    spec("irq", "tasklet_entry", false),
    spec("irq", "tasklet_exit", false),
    spec("napi", "napi_poll", false),
];

/// The system whose `<name>_entry`/`<name>_exit` events are decoded as
/// [`EventKind::VectorEntry`]/[`EventKind::VectorExit`].
pub const IRQ_VECTORS: &str = "irq_vectors";

/// One event in a [`Schema`]: the format file text as read from tracefs.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SchemaEvent {
    pub system: String,
    pub format: String,
}

/// What a perf id stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StreamSource {
    /// A tracepoint: index into [`Schema::events`].
    Tracepoint { event: usize },
    /// `cpu-clock` stack samples.
    CpuClock,
}

/// One opened perf event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stream {
    /// The id from PERF_EVENT_IOC_ID, found in every record.
    pub perf_id: u64,
    pub cpu: u32,
    /// The `sample_type` it was opened with: the layout of its samples.
    pub sample_type: u64,
    pub source: StreamSource,
}

/// Everything needed to decode a stream of perf records.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Schema {
    pub events: Vec<SchemaEvent>,
    pub streams: Vec<Stream>,
}

/// Counters of a decode: what came in, what came out, what was dropped
/// and why. `lost` is what the kernel dropped (ring full); `malformed`,
/// `unknown_id` and `skipped` are what the decoder could not or need not use.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DecodeStats {
    pub bytes: u64,
    pub records: u64,
    pub events: u64,
    pub stacks: u64,
    /// PERF_RECORD_LOST / LOST_SAMPLES records seen.
    pub lost_records: u64,
    /// Samples the kernel reported lost.
    pub lost: u64,
    /// Record types latscope does not use (throttle, ...).
    pub skipped: u64,
    /// Samples whose id is not in the schema.
    pub unknown_id: u64,
    /// Records that were truncated or did not match their format.
    pub malformed: u64,
}

impl DecodeStats {
    pub fn add(&mut self, o: &DecodeStats) {
        self.bytes = self.bytes.saturating_add(o.bytes);
        self.records = self.records.saturating_add(o.records);
        self.events = self.events.saturating_add(o.events);
        self.stacks = self.stacks.saturating_add(o.stacks);
        self.lost_records = self.lost_records.saturating_add(o.lost_records);
        self.lost = self.lost.saturating_add(o.lost);
        self.skipped = self.skipped.saturating_add(o.skipped);
        self.unknown_id = self.unknown_id.saturating_add(o.unknown_id);
        self.malformed = self.malformed.saturating_add(o.malformed);
    }
}

/// Position of an integer field.
#[derive(Clone, Copy, Debug)]
struct Loc {
    off: usize,
    size: usize,
    signed: bool,
}

impl Loc {
    fn of(f: &EventFormat, name: &str) -> Result<Loc, String> {
        let field = find(f, name)?;
        if field.is_dynamic() || !matches!(field.size, 1 | 2 | 4 | 8) {
            return Err(format!("field {name} is not an integer ({})", field.size));
        }
        Ok(Loc {
            off: field.offset,
            size: field.size,
            signed: field.signed,
        })
    }

    fn bytes<'a>(&self, raw: &'a [u8]) -> Option<&'a [u8]> {
        raw.get(self.off..self.off.checked_add(self.size)?)
    }

    fn u64(&self, raw: &[u8]) -> Option<u64> {
        read_uint(self.bytes(raw)?)
    }

    fn i64(&self, raw: &[u8]) -> Option<i64> {
        read_int(self.bytes(raw)?, self.signed)
    }

    /// A kernel `int`/`pid_t`; a value out of range means the format and
    /// the record disagree, and the record is counted as malformed.
    fn i32(&self, raw: &[u8]) -> Option<i32> {
        self.i64(raw).and_then(|v| i32::try_from(v).ok())
    }

    fn u32(&self, raw: &[u8]) -> Option<u32> {
        self.u64(raw).and_then(|v| u32::try_from(v).ok())
    }
}

fn find<'a>(f: &'a EventFormat, name: &str) -> Result<&'a Field, String> {
    f.field(name)
        .ok_or_else(|| format!("no field {name} in {}", f.full_name()))
}

/// A fixed `char[N]` field (task names).
#[derive(Clone, Copy, Debug)]
struct CommLoc {
    off: usize,
    len: usize,
}

impl CommLoc {
    fn of(f: &EventFormat, name: &str) -> Result<CommLoc, String> {
        let field = find(f, name)?;
        if field.is_dynamic() || field.size == 0 {
            return Err(format!("field {name} is not a fixed char array"));
        }
        Ok(CommLoc {
            off: field.offset,
            len: field.size,
        })
    }

    fn read(&self, raw: &[u8]) -> Option<Comm> {
        raw.get(self.off..self.off.checked_add(self.len)?)
            .map(Comm::from_bytes)
    }
}

/// A string field, fixed or `__data_loc`.
#[derive(Clone, Debug)]
struct StrLoc(Field);

impl StrLoc {
    fn of(f: &EventFormat, name: &str) -> Result<StrLoc, String> {
        let field = find(f, name)?;
        if !field.is_dynamic() && field.array_len.is_none() {
            return Err(format!("field {name} is not a string"));
        }
        Ok(StrLoc(field.clone()))
    }

    /// The string up to its first NUL, interned.
    fn intern(&self, raw: &[u8], names: &mut Names) -> Option<NameId> {
        let bytes = self.0.read_array(raw)?;
        let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
        Some(names.intern(&String::from_utf8_lossy(&bytes[..end])))
    }
}

/// How to turn one event's raw data into an [`EventKind`].
#[derive(Clone, Debug)]
enum Layout {
    HrtimerStart {
        hrtimer: Loc,
        function: Loc,
        expires: Loc,
        softexpires: Loc,
    },
    HrtimerExpireEntry {
        hrtimer: Loc,
        now: Loc,
        function: Loc,
    },
    HrtimerExpireExit {
        hrtimer: Loc,
    },
    SchedWaking {
        pid: Loc,
        prio: Loc,
        target_cpu: Loc,
        comm: CommLoc,
    },
    SchedSwitch {
        prev_pid: Loc,
        prev_prio: Loc,
        prev_state: Loc,
        prev_comm: CommLoc,
        next_pid: Loc,
        next_prio: Loc,
        next_comm: CommLoc,
    },
    IrqEntry {
        irq: Loc,
        name: StrLoc,
    },
    IrqExit {
        irq: Loc,
        ret: Loc,
    },
    Softirq {
        which: SoftirqPhase,
        vec: Loc,
    },
    Vector {
        entry: bool,
        name: NameId,
        vector: Loc,
    },
    Nmi {
        handler: Loc,
        delta_ns: Loc,
        handled: Loc,
    },
    Work {
        start: bool,
        work: Loc,
        function: Loc,
    },
    TimerEntry {
        timer: Loc,
        function: Loc,
    },
    TimerExit {
        timer: Loc,
    },
    Tasklet {
        entry: bool,
        tasklet: Loc,
        function: Loc,
    },
    Napi {
        napi: Loc,
        dev: StrLoc,
        work: Loc,
        budget: Loc,
    },
}

#[derive(Clone, Copy, Debug)]
enum SoftirqPhase {
    Raise,
    Entry,
    Exit,
}

impl Layout {
    fn build(f: &EventFormat, names: &mut Names) -> Result<Layout, String> {
        let l = |n: &str| Loc::of(f, n);
        Ok(match (f.system.as_str(), f.name.as_str()) {
            ("timer", "hrtimer_start") => Layout::HrtimerStart {
                hrtimer: l("hrtimer")?,
                function: l("function")?,
                expires: l("expires")?,
                softexpires: l("softexpires")?,
            },
            ("timer", "hrtimer_expire_entry") => Layout::HrtimerExpireEntry {
                hrtimer: l("hrtimer")?,
                now: l("now")?,
                function: l("function")?,
            },
            ("timer", "hrtimer_expire_exit") => Layout::HrtimerExpireExit {
                hrtimer: l("hrtimer")?,
            },
            ("sched", "sched_waking") => Layout::SchedWaking {
                pid: l("pid")?,
                prio: l("prio")?,
                target_cpu: l("target_cpu")?,
                comm: CommLoc::of(f, "comm")?,
            },
            ("sched", "sched_switch") => Layout::SchedSwitch {
                prev_pid: l("prev_pid")?,
                prev_prio: l("prev_prio")?,
                prev_state: l("prev_state")?,
                prev_comm: CommLoc::of(f, "prev_comm")?,
                next_pid: l("next_pid")?,
                next_prio: l("next_prio")?,
                next_comm: CommLoc::of(f, "next_comm")?,
            },
            ("irq", "irq_handler_entry") => Layout::IrqEntry {
                irq: l("irq")?,
                name: StrLoc::of(f, "name")?,
            },
            ("irq", "irq_handler_exit") => Layout::IrqExit {
                irq: l("irq")?,
                ret: l("ret")?,
            },
            ("irq", "softirq_raise") => Layout::Softirq {
                which: SoftirqPhase::Raise,
                vec: l("vec")?,
            },
            ("irq", "softirq_entry") => Layout::Softirq {
                which: SoftirqPhase::Entry,
                vec: l("vec")?,
            },
            ("irq", "softirq_exit") => Layout::Softirq {
                which: SoftirqPhase::Exit,
                vec: l("vec")?,
            },
            ("nmi", "nmi_handler") => Layout::Nmi {
                handler: l("handler")?,
                delta_ns: l("delta_ns")?,
                handled: l("handled")?,
            },
            ("workqueue", "workqueue_execute_start") => Layout::Work {
                start: true,
                work: l("work")?,
                function: l("function")?,
            },
            ("workqueue", "workqueue_execute_end") => Layout::Work {
                start: false,
                work: l("work")?,
                function: l("function")?,
            },
            ("timer", "timer_expire_entry") => Layout::TimerEntry {
                timer: l("timer")?,
                function: l("function")?,
            },
            ("timer", "timer_expire_exit") => Layout::TimerExit { timer: l("timer")? },
            ("irq", "tasklet_entry") => Layout::Tasklet {
                entry: true,
                tasklet: l("tasklet")?,
                function: l("func")?,
            },
            ("irq", "tasklet_exit") => Layout::Tasklet {
                entry: false,
                tasklet: l("tasklet")?,
                function: l("func")?,
            },
            ("napi", "napi_poll") => Layout::Napi {
                napi: l("napi")?,
                dev: StrLoc::of(f, "dev_name")?,
                work: l("work")?,
                budget: l("budget")?,
            },
            (IRQ_VECTORS, name) => {
                let (entry, stem) = if let Some(stem) = name.strip_suffix("_entry") {
                    (true, stem)
                } else if let Some(stem) = name.strip_suffix("_exit") {
                    (false, stem)
                } else {
                    return Err(format!("{} is not an entry/exit event", f.full_name()));
                };
                Layout::Vector {
                    entry,
                    name: names.intern(stem),
                    vector: l("vector")?,
                }
            }
            _ => {
                return Err(format!(
                    "{} is not an event latscope decodes",
                    f.full_name()
                ))
            }
        })
    }

    fn decode(&self, raw: &[u8], names: &mut Names) -> Option<EventKind> {
        Some(match self {
            Layout::HrtimerStart {
                hrtimer,
                function,
                expires,
                softexpires,
            } => EventKind::HrtimerStart {
                hrtimer: hrtimer.u64(raw)?,
                function: function.u64(raw)?,
                expires: expires.i64(raw)?,
                softexpires: softexpires.i64(raw)?,
            },
            Layout::HrtimerExpireEntry {
                hrtimer,
                now,
                function,
            } => EventKind::HrtimerExpireEntry {
                hrtimer: hrtimer.u64(raw)?,
                now: now.i64(raw)?,
                function: function.u64(raw)?,
            },
            Layout::HrtimerExpireExit { hrtimer } => EventKind::HrtimerExpireExit {
                hrtimer: hrtimer.u64(raw)?,
            },
            Layout::SchedWaking {
                pid,
                prio,
                target_cpu,
                comm,
            } => EventKind::SchedWaking {
                pid: pid.i32(raw)?,
                prio: prio.i32(raw)?,
                target_cpu: target_cpu.i32(raw)?,
                comm: comm.read(raw)?,
            },
            Layout::SchedSwitch {
                prev_pid,
                prev_prio,
                prev_state,
                prev_comm,
                next_pid,
                next_prio,
                next_comm,
            } => EventKind::SchedSwitch {
                prev_pid: prev_pid.i32(raw)?,
                prev_prio: prev_prio.i32(raw)?,
                prev_state: prev_state.i64(raw)?,
                prev_comm: prev_comm.read(raw)?,
                next_pid: next_pid.i32(raw)?,
                next_prio: next_prio.i32(raw)?,
                next_comm: next_comm.read(raw)?,
            },
            Layout::IrqEntry { irq, name } => EventKind::IrqEntry {
                irq: irq.i32(raw)?,
                name: name.intern(raw, names)?,
            },
            Layout::IrqExit { irq, ret } => EventKind::IrqExit {
                irq: irq.i32(raw)?,
                ret: ret.i32(raw)?,
            },
            Layout::Softirq { which, vec } => {
                let vec = vec.u32(raw)?;
                match which {
                    SoftirqPhase::Raise => EventKind::SoftirqRaise { vec },
                    SoftirqPhase::Entry => EventKind::SoftirqEntry { vec },
                    SoftirqPhase::Exit => EventKind::SoftirqExit { vec },
                }
            }
            Layout::Vector {
                entry,
                name,
                vector,
            } => {
                let vector = vector.i32(raw)?;
                if *entry {
                    EventKind::VectorEntry {
                        name: *name,
                        vector,
                    }
                } else {
                    EventKind::VectorExit {
                        name: *name,
                        vector,
                    }
                }
            }
            Layout::Nmi {
                handler,
                delta_ns,
                handled,
            } => EventKind::Nmi {
                handler: handler.u64(raw)?,
                delta_ns: delta_ns.i64(raw)?,
                handled: handled.i32(raw)?,
            },
            Layout::Work {
                start,
                work,
                function,
            } => {
                let (work, function) = (work.u64(raw)?, function.u64(raw)?);
                if *start {
                    EventKind::WorkStart { work, function }
                } else {
                    EventKind::WorkEnd { work, function }
                }
            }
            Layout::TimerEntry { timer, function } => EventKind::TimerExpireEntry {
                timer: timer.u64(raw)?,
                function: function.u64(raw)?,
            },
            Layout::TimerExit { timer } => EventKind::TimerExpireExit {
                timer: timer.u64(raw)?,
            },
            Layout::Tasklet {
                entry,
                tasklet,
                function,
            } => {
                let (tasklet, function) = (tasklet.u64(raw)?, function.u64(raw)?);
                if *entry {
                    EventKind::TaskletEntry { tasklet, function }
                } else {
                    EventKind::TaskletExit { tasklet, function }
                }
            }
            Layout::Napi {
                napi,
                dev,
                work,
                budget,
            } => EventKind::NapiPoll {
                napi: napi.u64(raw)?,
                dev: dev.intern(raw, names)?,
                work: work.i32(raw)?,
                budget: budget.i32(raw)?,
            },
        })
    }
}

/// Whether latscope can decode this event on this kernel: it is one of the
/// supported events and has every field the decoder reads. The error says
/// which field is missing.
pub fn check_format(f: &EventFormat) -> Result<(), String> {
    Layout::build(f, &mut Names::default()).map(|_| ())
}

#[derive(Clone, Copy, Debug)]
enum Target {
    Tracepoint(usize),
    Stack,
}

#[derive(Clone, Copy, Debug)]
struct StreamInfo {
    sample_type: u64,
    target: Target,
}

/// The fields of a PERF_RECORD_SAMPLE latscope reads.
#[derive(Default)]
struct Sample<'a> {
    ip: Option<u64>,
    tid: i32,
    time: u64,
    cpu: Option<u32>,
    callchain: Option<&'a [u8]>,
    raw: Option<&'a [u8]>,
}

/// A bounded reader over one record.
struct Cursor<'a> {
    b: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let s = self.b.get(self.pos..self.pos.checked_add(n)?)?;
        self.pos += n;
        Some(s)
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_ne_bytes(self.take(8)?.try_into().ok()?))
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_ne_bytes(self.take(4)?.try_into().ok()?))
    }
}

/// Parses a sample body (after the header) laid out per `sample_type`.
/// Fields after RAW are not needed and not read; READ is never requested
/// by latscope, and without the read_format its size is unknown.
fn parse_sample(body: &[u8], sample_type: u64) -> Option<Sample<'_>> {
    if sample_type & PERF_SAMPLE_READ != 0 {
        return None;
    }
    let mut c = Cursor { b: body, pos: 0 };
    let mut s = Sample::default();
    if sample_type & PERF_SAMPLE_IDENTIFIER != 0 {
        c.u64()?;
    }
    if sample_type & PERF_SAMPLE_IP != 0 {
        s.ip = Some(c.u64()?);
    }
    if sample_type & PERF_SAMPLE_TID != 0 {
        let _pid = c.u32()?;
        s.tid = i32::from_ne_bytes(c.u32()?.to_ne_bytes());
    }
    if sample_type & PERF_SAMPLE_TIME != 0 {
        s.time = c.u64()?;
    }
    if sample_type & PERF_SAMPLE_ADDR != 0 {
        c.u64()?;
    }
    if sample_type & PERF_SAMPLE_ID != 0 {
        c.u64()?;
    }
    if sample_type & PERF_SAMPLE_STREAM_ID != 0 {
        c.u64()?;
    }
    if sample_type & PERF_SAMPLE_CPU != 0 {
        s.cpu = Some(c.u32()?);
        c.u32()?;
    }
    if sample_type & PERF_SAMPLE_PERIOD != 0 {
        c.u64()?;
    }
    if sample_type & PERF_SAMPLE_CALLCHAIN != 0 {
        let nr = usize::try_from(c.u64()?).ok()?;
        s.callchain = Some(c.take(nr.checked_mul(8)?)?);
    }
    if sample_type & PERF_SAMPLE_RAW != 0 {
        let size = c.u32()? as usize;
        s.raw = Some(c.take(size)?);
    }
    Some(s)
}

/// The instruction pointers of a call chain, innermost first, without
/// perf's `PERF_CONTEXT_*` markers.
fn chain_ips(chain: &[u8]) -> Vec<u64> {
    chain
        .chunks_exact(8)
        .filter_map(|w| w.try_into().ok().map(u64::from_ne_bytes))
        .filter(|&ip| ip < PERF_CONTEXT_MAX)
        .collect()
}

/// Decodes perf records into [`Decoded`] values (see the module docs).
#[derive(Clone, Debug)]
pub struct Decoder {
    layouts: Vec<Layout>,
    event_names: Vec<String>,
    /// Sorted by perf id.
    streams: Vec<(u64, StreamInfo)>,
    names: Names,
    stats: DecodeStats,
}

impl Decoder {
    /// Builds a decoder: parses every format in the schema and resolves
    /// the fields of each event by name. Fails if a format does not parse,
    /// an event is not supported, or a stream refers to no event.
    pub fn new(schema: &Schema) -> Result<Decoder, TraceError> {
        let mut names = Names::default();
        let mut layouts = Vec::with_capacity(schema.events.len());
        let mut event_names = Vec::with_capacity(schema.events.len());
        for ev in &schema.events {
            // A recording's schema is untrusted: its names are quoted on one line.
            let f = EventFormat::parse(&ev.system, &ev.format).map_err(|e| TraceError::Format {
                event: one_line(&format!("{}:?", ev.system)),
                reason: e.0,
            })?;
            let layout = Layout::build(&f, &mut names).map_err(|reason| TraceError::Format {
                event: one_line(&f.full_name()),
                reason: one_line(&reason),
            })?;
            event_names.push(f.full_name());
            layouts.push(layout);
        }
        let mut streams = Vec::with_capacity(schema.streams.len());
        for s in &schema.streams {
            let target = match s.source {
                StreamSource::Tracepoint { event } => {
                    if event >= layouts.len() {
                        return Err(TraceError::Invalid(format!(
                            "perf id {} refers to event #{event}, but the schema has {}",
                            s.perf_id,
                            layouts.len()
                        )));
                    }
                    Target::Tracepoint(event)
                }
                StreamSource::CpuClock => Target::Stack,
            };
            if s.sample_type & PERF_SAMPLE_IDENTIFIER == 0 {
                return Err(TraceError::Invalid(format!(
                    "perf id {} was opened without PERF_SAMPLE_IDENTIFIER",
                    s.perf_id
                )));
            }
            streams.push((
                s.perf_id,
                StreamInfo {
                    sample_type: s.sample_type,
                    target,
                },
            ));
        }
        streams.sort_by_key(|&(id, _)| id);
        if streams.windows(2).any(|w| w[0].0 == w[1].0) {
            return Err(TraceError::Invalid(
                "duplicate perf id in schema".to_string(),
            ));
        }
        Ok(Decoder {
            layouts,
            event_names,
            streams,
            names,
            stats: DecodeStats::default(),
        })
    }

    /// Interned IRQ and vector names referred to by decoded events.
    pub fn names(&self) -> &Names {
        &self.names
    }

    /// `system:name` of every event in the schema, in schema order.
    pub fn event_names(&self) -> &[String] {
        &self.event_names
    }

    /// Totals over every call to [`Decoder::decode`].
    pub fn stats(&self) -> &DecodeStats {
        &self.stats
    }

    /// Decodes a buffer of whole perf records read from the ring of `cpu`,
    /// handing each result to `sink` in buffer order. Returns the counters
    /// of this call (also added to [`Decoder::stats`]).
    pub fn decode(&mut self, cpu: u32, bytes: &[u8], sink: &mut dyn FnMut(Decoded)) -> DecodeStats {
        let mut st = DecodeStats::default();
        let mut records = Records::new(bytes);
        for rec in records.by_ref() {
            let Ok(rec) = rec else {
                st.malformed += 1;
                break;
            };
            st.records += 1;
            self.decode_one(cpu, rec.kind, rec.bytes, &mut st, sink);
        }
        st.bytes = records.position() as u64;
        self.stats.add(&st);
        st
    }

    fn decode_one(
        &mut self,
        cpu: u32,
        kind: u32,
        rec: &[u8],
        st: &mut DecodeStats,
        sink: &mut dyn FnMut(Decoded),
    ) {
        let body = &rec[crate::ring::HEADER_LEN.min(rec.len())..];
        let mut c = Cursor { b: body, pos: 0 };
        match kind {
            PERF_RECORD_SAMPLE => self.decode_sample(cpu, body, st, sink),
            PERF_RECORD_LOST => match (c.u64(), c.u64()) {
                (Some(_id), Some(count)) => {
                    st.lost_records += 1;
                    st.lost = st.lost.saturating_add(count);
                    sink(Decoded::Lost { cpu, count });
                }
                _ => st.malformed += 1,
            },
            PERF_RECORD_LOST_SAMPLES => match c.u64() {
                Some(count) => {
                    st.lost_records += 1;
                    st.lost = st.lost.saturating_add(count);
                    sink(Decoded::Lost { cpu, count });
                }
                None => st.malformed += 1,
            },
            _ => st.skipped += 1,
        }
    }

    fn decode_sample(
        &mut self,
        ring_cpu: u32,
        body: &[u8],
        st: &mut DecodeStats,
        sink: &mut dyn FnMut(Decoded),
    ) {
        // Every stream latscope opens has PERF_SAMPLE_IDENTIFIER, which
        // puts the id first whatever the rest of the layout.
        let Some(id) = Cursor { b: body, pos: 0 }.u64() else {
            st.malformed += 1;
            return;
        };
        let Ok(i) = self.streams.binary_search_by_key(&id, |&(k, _)| k) else {
            st.unknown_id += 1;
            return;
        };
        let info = self.streams[i].1;
        let Some(sample) = parse_sample(body, info.sample_type) else {
            st.malformed += 1;
            return;
        };
        let cpu = sample.cpu.unwrap_or(ring_cpu);
        match info.target {
            Target::Tracepoint(ev) => {
                let layout = self.layouts.get(ev);
                let kind = match (layout, sample.raw) {
                    (Some(layout), Some(raw)) => layout.decode(raw, &mut self.names),
                    _ => None,
                };
                let Some(kind) = kind else {
                    st.malformed += 1;
                    return;
                };
                st.events += 1;
                let ev = TraceEvent {
                    time: sample.time,
                    cpu,
                    tid: sample.tid,
                    kind,
                };
                sink(Decoded::Event(ev));
                if let Some(chain) = sample.callchain {
                    sink(Decoded::EventChain(StackSample {
                        time: ev.time,
                        cpu,
                        tid: ev.tid,
                        ips: chain_ips(chain),
                    }));
                }
            }
            Target::Stack => {
                let mut ips = sample.callchain.map(chain_ips).unwrap_or_default();
                if ips.is_empty() {
                    ips.extend(sample.ip);
                }
                st.stacks += 1;
                sink(Decoded::Stack(StackSample {
                    time: sample.time,
                    cpu,
                    tid: sample.tid,
                    ips,
                }));
            }
        }
    }
}
