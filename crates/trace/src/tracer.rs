//! The live tracer: every supported tracepoint on every traced CPU, plus
//! optional `cpu-clock` stack samples, into one perf ring per CPU.
//!
//! One ring per CPU (the first event opened on a CPU owns it; the others
//! are redirected with `PERF_EVENT_IOC_SET_OUTPUT`) keeps each CPU's records
//! in the order they happened, with one `poll` fd and one copy per CPU per
//! read, instead of a ring per event. Records from one CPU are decoded
//! together; merging CPUs by time is the consumer's business, as it is
//! cheap only for a consumer that knows what it needs.
//!
//! Events outside the required set may be missing on a given kernel; they
//! are listed by [`Tracer::missing_events`] and the run goes on without
//! them. Lost records (the ring was full) are counted per CPU and handed to
//! the sink as [`Decoded::Lost`]: the analysis must know when its picture
//! of a CPU has holes.

use std::os::fd::{AsFd, BorrowedFd};
use std::path::Path;
use std::time::Duration;

use latscope_model::{CpuId, Nanos};
use latscope_platform::perf::{
    page_size, poll_readable, PerfEvent, PerfEventAttr, PerfRing, CPU_CLOCK_SAMPLE_TYPE,
    TRACEPOINT_CHAIN_SAMPLE_TYPE, TRACEPOINT_SAMPLE_TYPE,
};

use crate::decode::{
    check_format, DecodeStats, Decoder, Schema, SchemaEvent, Stream, StreamSource, EVENTS,
    IRQ_VECTORS,
};
use crate::error::TraceError;
use crate::event::{Decoded, Names};
use crate::format::EventFormat;
use crate::recording::RecordingWriter;
use crate::tracefs::Tracefs;

/// Data pages per CPU ring: 128 pages = 512 KiB with 4 KiB pages.
///
/// Why this size: the scheduler and timer events of a busy CPU come to
/// roughly 1–2 MB/s (about 20k records/s of 50–100 bytes), so 512 KiB holds
/// a few hundred milliseconds, ample for a reader woken at half full. It is
/// also what an unprivileged CAP_PERFMON user may lock per CPU by default
/// (`perf_event_mlock_kb` = 516 = 512 KiB + the metadata page), so the
/// default works without root. Raise it for stack sampling at high rates.
pub const DEFAULT_RING_PAGES: usize = 128;

/// Wake the reader when half of the default ring is used: a read then
/// drains up to 256 KiB at once (few wake-ups), and the other half leaves
/// the reader as long again to get scheduled before anything is lost.
pub const DEFAULT_WAKEUP_BYTES: u32 = 256 * 1024;

/// Default `cpu-clock` period for stack samples: 1 kHz per CPU, cheap
/// enough to leave on, fine enough to see what ran for a millisecond.
pub const DEFAULT_STACK_PERIOD: Nanos = Nanos::from_millis(1);

/// What to trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TracerConfig {
    /// CPUs whose tracepoints are recorded.
    pub cpus: Vec<CpuId>,
    /// CPUs on which to take `cpu-clock` stack samples (kernel call chains).
    /// Samples are taken only while the CPU runs kernel code of a task or
    /// interrupt: user mode is excluded, and an idle CPU (tickless) gives
    /// none on the 6.18 kernel measured here.
    pub stack_cpus: Vec<CpuId>,
    /// Period of the stack samples.
    pub stack_period: Nanos,
    /// Whether `sched:sched_switch` and `timer:hrtimer_expire_entry` carry
    /// their kernel call chain (the perf backend's episode stacks: where
    /// the task our thread replaced yielded, and what our timer's
    /// interrupt interrupted). Every hit then walks its stack.
    pub event_chains: bool,
    /// Data pages per ring (a power of two).
    pub ring_pages: usize,
    /// Bytes in a ring before [`Tracer::wait`] wakes up.
    pub wakeup_bytes: u32,
}

impl TracerConfig {
    /// Tracepoints on `cpus`, no stack samples, default ring and watermark.
    pub fn new(cpus: Vec<CpuId>) -> TracerConfig {
        TracerConfig {
            cpus,
            stack_cpus: Vec::new(),
            stack_period: DEFAULT_STACK_PERIOD,
            event_chains: false,
            ring_pages: DEFAULT_RING_PAGES,
            wakeup_bytes: DEFAULT_WAKEUP_BYTES,
        }
    }
}

impl Default for TracerConfig {
    /// No CPUs: set `cpus` before opening.
    fn default() -> TracerConfig {
        TracerConfig::new(Vec::new())
    }
}

/// Counters since the tracer was opened.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TracerStats {
    pub total: DecodeStats,
    /// One entry per ring, by CPU.
    pub per_cpu: Vec<(CpuId, DecodeStats)>,
}

/// What one [`Tracer::read`] drained.
pub type ReadStats = DecodeStats;

struct CpuRing {
    cpu: u32,
    ring: PerfRing,
    /// Index into `Tracer::events` of the event that owns the ring.
    owner: usize,
}

/// A candidate event that tracefs describes and the decoder understands.
struct Candidate {
    system: String,
    name: String,
    text: String,
    id: u64,
    required: bool,
}

/// The live tracer (see the module docs).
pub struct Tracer {
    events: Vec<PerfEvent>,
    rings: Vec<CpuRing>,
    schema: Schema,
    decoder: Decoder,
    missing: Vec<String>,
    stack_cpus: Vec<CpuId>,
    buf: Vec<u8>,
    stats: TracerStats,
    recording: Option<RecordingWriter>,
    // Keeps a tracefs that latscope mounted mounted while tracing.
    _tracefs: Tracefs,
}

impl std::fmt::Debug for Tracer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tracer")
            .field("events", &self.events.len())
            .field(
                "cpus",
                &self.rings.iter().map(|r| r.cpu).collect::<Vec<_>>(),
            )
            .field("missing", &self.missing)
            .finish()
    }
}

impl Tracer {
    /// Opens every supported tracepoint on every CPU of `config.cpus` and
    /// stack sampling on `config.stack_cpus`, all disabled until
    /// [`Tracer::enable`]. Fails if a required event is unavailable or perf
    /// is not permitted ([`TraceError::is_permission`]).
    pub fn open(config: &TracerConfig) -> Result<Tracer, TraceError> {
        let tracefs = Tracefs::locate()?;
        Tracer::open_with(config, tracefs)
    }

    /// [`Tracer::open`] with a given tracefs.
    pub fn open_with(config: &TracerConfig, tracefs: Tracefs) -> Result<Tracer, TraceError> {
        if config.cpus.is_empty() && config.stack_cpus.is_empty() {
            return Err(TraceError::Invalid("no CPUs to trace".to_string()));
        }
        if config.ring_pages == 0 || !config.ring_pages.is_power_of_two() {
            return Err(TraceError::Invalid(format!(
                "ring of {} pages: must be a power of two",
                config.ring_pages
            )));
        }
        let (candidates, mut missing) = candidates(&tracefs)?;

        let mut ring_cpus: Vec<u32> = config
            .cpus
            .iter()
            .chain(&config.stack_cpus)
            .map(|c| c.0)
            .collect();
        ring_cpus.sort_unstable();
        ring_cpus.dedup();
        let mut tracer_cpus: Vec<u32> = config.cpus.iter().map(|c| c.0).collect();
        tracer_cpus.sort_unstable();
        tracer_cpus.dedup();

        let mut b = Builder {
            events: Vec::new(),
            owners: vec![None; ring_cpus.len()],
            rings: Vec::new(),
            ring_cpus,
            pages: config.ring_pages,
            streams: Vec::new(),
        };
        let mut schema_events = Vec::new();
        for group in &candidates {
            let chains = config.event_chains;
            let opened = match open_group(group, &tracer_cpus, config.wakeup_bytes, chains) {
                Ok(opened) => opened,
                Err((c, e)) => {
                    let event = format!("{}:{}", c.system, c.name);
                    // The first (required) event tells whether perf is
                    // permitted at all. A later EPERM is the kernel refusing
                    // that one event (x86 forbids sampling irq_work_exit,
                    // which perf's own irq_work would re-trigger).
                    if c.required && e.is_permission() {
                        return Err(e);
                    }
                    if c.required {
                        return Err(TraceError::MissingEvent {
                            event,
                            reason: e.to_string(),
                        });
                    }
                    let reason = if e.is_permission() {
                        "the kernel refuses to sample it".to_string()
                    } else {
                        e.to_string()
                    };
                    for other in group {
                        let name = format!("{}:{}", other.system, other.name);
                        if name == event {
                            missing.push(format!("{name} ({reason})"));
                        } else {
                            missing.push(format!("{name} (its pair {event} is unavailable)"));
                        }
                    }
                    continue;
                }
            };
            for (c, per_cpu) in group.iter().zip(opened) {
                let index = schema_events.len();
                schema_events.push(SchemaEvent {
                    system: c.system.clone(),
                    format: c.text.clone(),
                });
                let sample_type = if chains && carries_chain(c) {
                    TRACEPOINT_CHAIN_SAMPLE_TYPE
                } else {
                    TRACEPOINT_SAMPLE_TYPE
                };
                for (cpu, ev) in per_cpu {
                    b.attach(
                        cpu,
                        ev,
                        sample_type,
                        StreamSource::Tracepoint { event: index },
                    )?;
                }
            }
        }

        let mut stack_cpus = Vec::new();
        if !config.stack_cpus.is_empty() {
            let attr = PerfEventAttr::cpu_clock(config.stack_period.0)
                .wakeup_watermark(config.wakeup_bytes);
            let mut opened = Vec::new();
            let mut failure = None;
            for cpu in &config.stack_cpus {
                match PerfEvent::open_cpu(&attr, cpu.0) {
                    Ok(ev) => opened.push((cpu.0, ev)),
                    Err(e) => {
                        failure = Some(TraceError::from(e));
                        break;
                    }
                }
            }
            match failure {
                // With tracepoints open, perf as such is permitted and stack
                // samples are an optional extra; without, they were the
                // whole point.
                Some(e) if config.cpus.is_empty() => return Err(e),
                Some(e) => missing.push(format!("cpu-clock stack samples ({e})")),
                None => {
                    for (cpu, ev) in opened {
                        b.attach(cpu, ev, CPU_CLOCK_SAMPLE_TYPE, StreamSource::CpuClock)?;
                        stack_cpus.push(CpuId(cpu));
                    }
                }
            }
        }

        let schema = Schema {
            events: schema_events,
            streams: b.streams,
        };
        // The live decoder is built from the schema a recording stores, so
        // recordings decode exactly as the live stream did.
        let decoder = Decoder::new(&schema)?;
        let mut rings = b.rings;
        rings.sort_by_key(|r| r.cpu);
        let stats = TracerStats {
            total: DecodeStats::default(),
            per_cpu: rings
                .iter()
                .map(|r| (CpuId(r.cpu), DecodeStats::default()))
                .collect(),
        };
        let buf_cap = config.ring_pages.saturating_mul(page_size());
        Ok(Tracer {
            events: b.events,
            rings,
            schema,
            decoder,
            missing,
            stack_cpus,
            buf: Vec::with_capacity(buf_cap),
            stats,
            recording: None,
            _tracefs: tracefs,
        })
    }

    /// Starts recording on every event.
    pub fn enable(&self) -> Result<(), TraceError> {
        for ev in &self.events {
            ev.enable()?;
        }
        Ok(())
    }

    /// Stops recording; what is in the rings can still be read.
    pub fn disable(&self) -> Result<(), TraceError> {
        for ev in &self.events {
            ev.disable()?;
        }
        Ok(())
    }

    /// Waits until a ring passes its watermark or `timeout` passes.
    /// Returns whether some ring is ready.
    pub fn wait(&self, timeout: Duration) -> Result<bool, TraceError> {
        let fds: Vec<BorrowedFd<'_>> = self
            .rings
            .iter()
            .filter_map(|r| self.events.get(r.owner).map(AsFd::as_fd))
            .collect();
        Ok(poll_readable(&fds, Some(timeout))? > 0)
    }

    /// Drains every ring, CPU by CPU, decoding into `sink` (and copying the
    /// raw records into the recording, if one is attached). Within a CPU the
    /// results come in the order the kernel wrote them.
    pub fn read(&mut self, sink: &mut dyn FnMut(Decoded)) -> Result<ReadStats, TraceError> {
        let mut total = DecodeStats::default();
        let mut first_err = None;
        for (i, r) in self.rings.iter_mut().enumerate() {
            self.buf.clear();
            if let Err(e) = r.ring.read_into(&mut self.buf) {
                // Corrupt counters: the ring was reset; the gap is counted.
                total.malformed += 1;
                first_err.get_or_insert(TraceError::from(e));
                continue;
            }
            if self.buf.is_empty() {
                continue;
            }
            let st = self.decoder.decode(r.cpu, &self.buf, sink);
            if let Some(slot) = self.stats.per_cpu.get_mut(i) {
                slot.1.add(&st);
            }
            total.add(&st);
            if let Some(w) = &mut self.recording {
                if let Err(e) = w.write_chunk(r.cpu, &self.buf) {
                    // Stop recording but keep tracing; report it once.
                    self.recording = None;
                    first_err.get_or_insert(e);
                }
            }
        }
        self.stats.total.add(&total);
        match first_err {
            Some(e) => Err(e),
            None => Ok(total),
        }
    }

    /// Interned IRQ and vector names of the decoded events.
    pub fn names(&self) -> &Names {
        self.decoder.names()
    }

    /// Supported events this kernel lacks, or that could not be opened,
    /// each with the reason; the run goes on without them.
    pub fn missing_events(&self) -> &[String] {
        &self.missing
    }

    /// `system:name` of every tracepoint being recorded.
    pub fn opened_events(&self) -> &[String] {
        self.decoder.event_names()
    }

    /// CPUs with stack sampling active.
    pub fn stack_cpus(&self) -> &[CpuId] {
        &self.stack_cpus
    }

    /// CPUs with a ring.
    pub fn cpus(&self) -> Vec<CpuId> {
        self.rings.iter().map(|r| CpuId(r.cpu)).collect()
    }

    pub fn stats(&self) -> &TracerStats {
        &self.stats
    }

    /// Records the kernel dropped, over all CPUs, since opening.
    pub fn lost_total(&self) -> u64 {
        self.stats.total.lost
    }

    /// What a recording needs to decode this tracer's records.
    pub fn schema(&self) -> &Schema {
        &self.schema
    }

    /// Copies every record read from now on into a new recording at `path`.
    pub fn record_to(&mut self, path: &Path) -> Result<(), TraceError> {
        let w = RecordingWriter::create(path, &self.schema)?;
        self.recording = Some(w);
        Ok(())
    }

    /// Attaches (or with None detaches) a recording; returns the previous one.
    pub fn set_recording(&mut self, w: Option<RecordingWriter>) -> Option<RecordingWriter> {
        std::mem::replace(&mut self.recording, w)
    }

    /// Flushes and detaches the recording; returns its size in bytes.
    pub fn finish_recording(&mut self) -> Result<Option<u64>, TraceError> {
        match self.recording.take() {
            Some(w) => w.finish().map(Some),
            None => Ok(None),
        }
    }
}

impl Drop for Tracer {
    fn drop(&mut self) {
        for ev in &self.events {
            let _ = ev.disable();
        }
        if let Some(w) = self.recording.take() {
            let _ = w.finish();
        }
        // The rings first (an event is released when its last reference,
        // fd or mapping, goes), then every event at once.
        self.rings.clear();
        PerfEvent::close_all(std::mem::take(&mut self.events));
    }
}

/// Collects opened events and sets up one ring per CPU.
struct Builder {
    events: Vec<PerfEvent>,
    ring_cpus: Vec<u32>,
    /// Per ring CPU: index into `events` of the ring's owner.
    owners: Vec<Option<usize>>,
    rings: Vec<CpuRing>,
    pages: usize,
    streams: Vec<Stream>,
}

impl Builder {
    fn attach(
        &mut self,
        cpu: u32,
        ev: PerfEvent,
        sample_type: u64,
        source: StreamSource,
    ) -> Result<(), TraceError> {
        let slot = self
            .ring_cpus
            .iter()
            .position(|&c| c == cpu)
            .ok_or_else(|| TraceError::Invalid(format!("CPU {cpu} has no ring")))?;
        let index = self.events.len();
        match self.owners[slot] {
            Some(owner) => ev.set_output(&self.events[owner])?,
            None => {
                let ring = ev.map_ring(self.pages)?;
                self.rings.push(CpuRing {
                    cpu,
                    ring,
                    owner: index,
                });
                self.owners[slot] = Some(index);
            }
        }
        self.streams.push(Stream {
            perf_id: ev.id()?,
            cpu,
            sample_type,
            source,
        });
        self.events.push(ev);
        Ok(())
    }
}

/// The supported events this kernel has and the decoder can read, and a
/// list of the ones it cannot (with reasons). Fails if a required one is
/// unusable.
fn candidates(tracefs: &Tracefs) -> Result<(Vec<Vec<Candidate>>, Vec<String>), TraceError> {
    // Groups are opened together or not at all: an entry event without its
    // exit would only mislead the analysis.
    let mut wanted: Vec<Vec<(String, String, bool)>> = EVENTS
        .iter()
        .map(|s| vec![(s.system.to_string(), s.name.to_string(), s.required)])
        .collect();
    let vectors = tracefs.list_events(IRQ_VECTORS);
    for name in &vectors {
        if let Some(stem) = name.strip_suffix("_entry") {
            let exit = format!("{stem}_exit");
            if vectors.contains(&exit) {
                wanted.push(vec![
                    (IRQ_VECTORS.to_string(), name.clone(), false),
                    (IRQ_VECTORS.to_string(), exit, false),
                ]);
            }
        }
    }
    let mut out = Vec::new();
    let mut missing = Vec::new();
    for group in wanted {
        let mut ok = Vec::with_capacity(group.len());
        let mut failed = None;
        for (system, name, required) in group.iter().cloned() {
            match candidate(tracefs, system, name, required)? {
                Ok(c) => ok.push(c),
                Err(m) => {
                    failed = Some(m);
                    break;
                }
            }
        }
        match failed {
            None => out.push(ok),
            Some(m) => {
                for (system, name, _) in &group {
                    let full = format!("{system}:{name}");
                    if m.starts_with(&full) {
                        missing.push(m.clone());
                    } else {
                        missing.push(format!("{full} (its pair is unavailable)"));
                    }
                }
            }
        }
    }
    Ok((out, missing))
}

/// One event checked against tracefs and the decoder: Ok(Ok) usable,
/// Ok(Err(why)) missing, Err for a required event or no permission.
fn candidate(
    tracefs: &Tracefs,
    system: String,
    name: String,
    required: bool,
) -> Result<Result<Candidate, String>, TraceError> {
    let full = format!("{system}:{name}");
    let checked = if tracefs.has_event(&system, &name) {
        tracefs.read_format_text(&system, &name).and_then(|text| {
            let f = EventFormat::parse(&system, &text).map_err(|e| TraceError::Format {
                event: full.clone(),
                reason: e.0,
            })?;
            check_format(&f).map_err(|reason| TraceError::Format {
                event: full.clone(),
                reason,
            })?;
            Ok((text, f.id))
        })
    } else {
        Err(TraceError::MissingEvent {
            event: full.clone(),
            reason: "not in this kernel".to_string(),
        })
    };
    match checked {
        Ok((text, id)) => Ok(Ok(Candidate {
            system,
            name,
            text,
            id,
            required,
        })),
        Err(e) if e.is_permission() => Err(e),
        Err(e @ TraceError::MissingEvent { .. }) if required => Err(e),
        Err(e) if required => Err(TraceError::MissingEvent {
            event: full,
            reason: e.to_string(),
        }),
        Err(TraceError::MissingEvent { reason, .. }) => Ok(Err(format!("{full} ({reason})"))),
        Err(e) => Ok(Err(format!("{full} ({e})"))),
    }
}

/// Opens every event of a group on every CPU. On failure returns the event
/// that failed and why; what was opened is closed again.
#[allow(clippy::type_complexity)]
/// Per event of a group, its perf event on each CPU.
type Opened = Vec<Vec<(u32, PerfEvent)>>;

/// Frames an event's call chain keeps, as the BPF backend's stacks.
pub const CHAIN_DEPTH: u16 = 48;

/// The events whose call chain the episode stacks use.
fn carries_chain(c: &Candidate) -> bool {
    matches!(
        (c.system.as_str(), c.name.as_str()),
        ("sched", "sched_switch") | ("timer", "hrtimer_expire_entry")
    )
}

fn open_group<'a>(
    group: &'a [Candidate],
    cpus: &[u32],
    wakeup_bytes: u32,
    chains: bool,
) -> Result<Opened, (&'a Candidate, TraceError)> {
    let mut all = Vec::with_capacity(group.len());
    for c in group {
        let mut attr = PerfEventAttr::tracepoint(c.id).wakeup_watermark(wakeup_bytes);
        if chains && carries_chain(c) {
            attr = attr.with_kernel_chain(CHAIN_DEPTH);
        }
        let mut per_cpu = Vec::with_capacity(cpus.len());
        for &cpu in cpus {
            let ev = PerfEvent::open_cpu(&attr, cpu).map_err(|e| (c, TraceError::from(e)))?;
            per_cpu.push((cpu, ev));
        }
        all.push(per_cpu);
    }
    Ok(all)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tracer_can_move_to_a_reader_thread() {
        fn assert_send<T: Send>() {}
        assert_send::<Tracer>();
    }

    #[test]
    fn bad_configs_are_refused_before_touching_the_kernel() {
        let e =
            Tracer::open_with(&TracerConfig::default(), Tracefs::at("/nonexistent")).unwrap_err();
        assert!(e.to_string().contains("no CPUs"), "{e}");
        let mut c = TracerConfig::new(vec![CpuId(0)]);
        c.ring_pages = 3;
        let e = Tracer::open_with(&c, Tracefs::at("/nonexistent")).unwrap_err();
        assert!(e.to_string().contains("power of two"), "{e}");
        // A tracefs without the required events.
        let e = Tracer::open_with(
            &TracerConfig::new(vec![CpuId(0)]),
            Tracefs::at("/nonexistent"),
        )
        .unwrap_err();
        assert!(matches!(e, TraceError::MissingEvent { .. }), "{e}");
        assert!(e.to_string().contains("sched:sched_switch"), "{e}");
    }
}
