//! `--trace`: the tracer thread. It reads the kernel's
//! per-CPU rings, takes the measuring threads' samples from their hand-over
//! rings, runs the analysis, and publishes what the housekeeping thread
//! stores at each checkpoint. It is an ordinary thread kept off the measured
//! CPUs when others exist (it inherits the housekeeping thread's affinity).
//! The cells of `run --priorities` share one session: one tracer, one
//! recording, one analysis per cell ([`Traced`]) over the same events, each
//! following its own measuring threads, each publishing its own figures.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use latscope_model::{
    CpuId, Episode, EpisodeWindow, Namer, Nanos, NoiseClass, Setting, StealSource, TraceSummary,
};
use latscope_platform::{monotonic_ns, thread_cpu_ns};
use latscope_probes::Handoff;
use latscope_record::{MetricResult, TimelineChunk};
use latscope_trace::analysis::{Analyzer, AnalyzerConfig, Environment, Measured, Symbolize};
use latscope_trace::bpf::{BpfTracer, BpfTracerConfig, DEFAULT_RECORDER_SLOTS};
use latscope_trace::{Decoded, Kallsyms, Tracer, TracerConfig};

pub use crate::config::AnalysisMode;
use crate::config::TraceBackend;
use crate::trace_bpf::BpfReader;
use crate::trace_group::Traced;

/// How long the thread sleeps between reads of perf's rings when they stay
/// below their wake-up watermark. Short, so samples wait little for their
/// events and the analysis window stays small. (The BPF reader adapts its
/// pause to its rings: `trace_bpf`.)
const READ_EVERY: Duration = Duration::from_millis(10);
/// /proc/stat steal readings, for the episodes' steal time. An episode gets
/// the steal between the readings around it, so this is the resolution of
/// its steal share; /proc/stat sums every interrupt of every CPU each time
/// it is read (15 % of the BPF tracer thread's time at ten
/// readings a second).
const STEAL_EVERY_NS: u64 = 250_000_000;

/// What the tracer thread hands to the housekeeping thread.
#[derive(Default)]
struct Shared {
    metrics: Vec<MetricResult>,
    summary: Option<TraceSummary>,
    episodes: Vec<(Episode, Option<EpisodeWindow>)>,
    /// Timeline seconds of the decomposed metrics completed since the
    /// previous checkpoint (published with `metrics`, so every second they
    /// hold is in those histograms).
    timeline: Vec<TimelineChunk>,
}

/// Metrics and summary as last published, the episodes found since the
/// previous checkpoint, and the timeline seconds completed since it.
pub type TraceCheckpoint = (
    Vec<MetricResult>,
    Option<TraceSummary>,
    Vec<(Episode, Option<EpisodeWindow>)>,
    Vec<TimelineChunk>,
);

/// Everything the session produced, at the end.
pub struct TraceFinal {
    pub metrics: Vec<MetricResult>,
    /// The decomposed metrics' timeline seconds not yet handed to a
    /// checkpoint.
    pub timeline: Vec<TimelineChunk>,
    pub summary: TraceSummary,
    pub episodes: Vec<(Episode, Option<EpisodeWindow>)>,
    /// A read error that ended tracing early, for the run's notes.
    pub error: Option<String>,
    /// Noise probe: interruptions by class, per CPU number.
    pub noise_classes: BTreeMap<u32, BTreeMap<String, NoiseClass>>,
}

pub struct TraceSession {
    /// One per group (cell), in the order given to [`TraceSession::start`].
    shared: Arc<Mutex<Vec<Shared>>>,
    stop: Arc<AtomicBool>,
    handle: JoinHandle<Vec<TraceFinal>>,
}

/// The tracer that reads the kernel's events.
pub enum Source {
    Perf(Box<Tracer>),
    /// BPF programs, with perf `cpu-clock` sampling beside them for
    /// `--stacks`.
    Bpf(Box<BpfTracer>, Option<Box<Tracer>>),
}

/// What to trace, given before the probe starts.
pub struct TraceOpen {
    pub source: Source,
    pub symbols: Option<Kallsyms>,
    /// One line: which backend and why.
    pub line: String,
    /// CLOCK_MONOTONIC when the tracer was enabled: the start of the span
    /// its interrupt and deferred-work statistics cover.
    pub enabled_at_ns: u64,
}

/// Opens and enables the tracer (before the measuring threads start, so
/// their first samples have events) with the backend asked for: `Auto`
/// tries BPF and falls back to perf. Errors come back as one line for the
/// run's capabilities. The line names the settings by `names`.
pub fn open(
    traced: &[CpuId],
    stack_cpus: &[CpuId],
    stack_period: Option<Nanos>,
    backend: TraceBackend,
    mode: AnalysisMode,
    threshold: Nanos,
    names: &dyn Namer,
) -> Result<TraceOpen, String> {
    let bpf_error = match backend {
        TraceBackend::Perf => None,
        TraceBackend::Auto | TraceBackend::Bpf => {
            match open_bpf(traced, stack_cpus, stack_period, mode, threshold) {
                Ok(source) => {
                    let enabled_at_ns = monotonic_ns();
                    let attached = match &source {
                        Source::Bpf(b, _) if !b.missing_events().is_empty() => {
                            format!("; not on this kernel: {}", b.missing_events().join(", "))
                        }
                        _ => String::new(),
                    };
                    let how = if mode == AnalysisMode::Timer {
                        "wake-ups decomposed in the kernel, events copied out for episodes only"
                    } else {
                        "events recorded in the kernel, read from its flight recorder"
                    };
                    // bench/bpf-prog-cost.sh's diagnostic switch leaves
                    // the programs doing less: a run under it says so.
                    let diag = match std::env::var("LATSCOPE_BPF_DIAG").as_deref() {
                        Ok(d @ ("recorder" | "attached" | "empty")) => format!(
                            "; LATSCOPE_BPF_DIAG={d}: a diagnostic, samples are not decomposed"
                        ),
                        Ok(d @ "recorder-off") => format!(
                            "; LATSCOPE_BPF_DIAG={d}: a diagnostic, episodes have no events"
                        ),
                        Ok(d @ "elide-own") => format!(
                            "; LATSCOPE_BPF_DIAG={d}: a diagnostic, episodes miss the measured threads' own timer events"
                        ),
                        Ok(d @ "detached") => format!(
                            "; LATSCOPE_BPF_DIAG={d}: a diagnostic, no program attached, nothing traced"
                        ),
                        Ok(d @ "no-waking-exit") => format!(
                            "; LATSCOPE_BPF_DIAG={d}: a diagnostic, sched_waking and hrtimer_expire_exit not attached"
                        ),
                        Ok(d @ "hist-off") => format!(
                            "; LATSCOPE_BPF_DIAG={d}: a diagnostic, no interrupt or work histograms"
                        ),
                        Ok(d @ ("deferred-off" | "steal-off" | "stacks-off" | "new-off")) => {
                            format!(
                                "; LATSCOPE_BPF_DIAG={d}: a diagnostic, without some of what episodes and the deferred-work tables show"
                            )
                        }
                        Ok(d @ ("softirq-at-once" | "warm-on")) => {
                            format!("; LATSCOPE_BPF_DIAG={d}: a diagnostic")
                        }
                        _ => String::new(),
                    };
                    return Ok(TraceOpen {
                        source,
                        symbols: Kallsyms::load().ok(),
                        line: format!(
                            "{}: BPF backend ({how}){attached}{diag}",
                            names.name(Setting::Trace)
                        ),
                        enabled_at_ns,
                    });
                }
                Err(e) if backend == TraceBackend::Bpf => return Err(e),
                Err(e) => Some(e),
            }
        }
    };
    let mut cfg = TracerConfig::new(traced.to_vec());
    if let Some(p) = stack_period {
        cfg.stack_cpus = stack_cpus.to_vec();
        cfg.stack_period = p;
        // With perf, the code that held the CPU comes from the call chains
        // of every callback and switch-in: a cost the user asks for with
        // `--stacks` (docs/tracing.md).
        cfg.event_chains = mode == AnalysisMode::Timer;
    }
    let tracer = Tracer::open(&cfg).map_err(|e| e.to_string())?;
    tracer.enable().map_err(|e| e.to_string())?;
    let enabled_at_ns = monotonic_ns();
    let why = match bpf_error {
        None => names.given(Setting::TraceBackend, "perf"),
        Some(e) => e,
    };
    let mut line = format!("{}: perf backend ({why})", names.name(Setting::Trace));
    if cfg.event_chains {
        line.push_str(&format!(
            "; {}: every sched_switch and hrtimer callback walks its stack",
            names.name(Setting::Stacks)
        ));
    }
    Ok(TraceOpen {
        source: Source::Perf(Box::new(tracer)),
        symbols: Kallsyms::load().ok(),
        line,
        enabled_at_ns,
    })
}

fn open_bpf(
    traced: &[CpuId],
    stack_cpus: &[CpuId],
    stack_period: Option<Nanos>,
    mode: AnalysisMode,
    threshold: Nanos,
) -> Result<Source, String> {
    let bpf = BpfTracer::open(&BpfTracerConfig {
        cpus: traced.iter().map(|c| c.0).collect(),
        recorder_slots: DEFAULT_RECORDER_SLOTS,
        histograms: mode == AnalysisMode::Timer,
        // Kernel stacks for the timer probe's episodes (the code that held
        // the CPU); the other probes' episodes are not a wake-up.
        stack_threshold_ns: if mode == AnalysisMode::Timer {
            threshold.0
        } else {
            0
        },
    })
    .map_err(|e| e.to_string())?;
    let stacks = match stack_period {
        Some(p) => {
            let mut cfg = TracerConfig::new(Vec::new());
            cfg.stack_cpus = stack_cpus.to_vec();
            cfg.stack_period = p;
            let t = Tracer::open(&cfg).map_err(|e| format!("stack sampling: {e}"))?;
            t.enable().map_err(|e| format!("stack sampling: {e}"))?;
            Some(Box::new(t))
        }
        None => None,
    };
    Ok(Source::Bpf(Box::new(bpf), stacks))
}

/// The analysis of one group's measuring threads.
fn analyzer(
    handoffs: &[Handoff],
    threshold: Nanos,
    episode_cap: usize,
    cell_start_ns: u64,
    mode: AnalysisMode,
    symbols: Option<Arc<Kallsyms>>,
) -> Analyzer {
    let measured = handoffs
        .iter()
        .map(|h| Measured {
            cpu: h.cpu,
            tid: h.tid,
        })
        .collect();
    let mut cfg = AnalyzerConfig::new(measured, threshold, cell_start_ns);
    cfg.episode_cap = episode_cap;
    cfg.noise = mode == AnalysisMode::Noise;
    if mode == AnalysisMode::Udp {
        cfg.udp = true;
        cfg.udp_receiver = handoffs.first().map(|h| Measured {
            cpu: h.cpu,
            tid: h.tid,
        });
    }
    let symbols: Box<dyn Symbolize + Send> = Box::new(Symbols(symbols));
    Analyzer::new(cfg, Box::new(ProcEnvironment::default()), symbols)
}

impl TraceSession {
    /// Starts the tracer thread for the running probes: `groups` holds
    /// each cell's hand-overs (one cell, or the cells of `run
    /// --priorities`, whose threads share CPUs and expiries).
    pub fn start(
        open: TraceOpen,
        groups: Vec<Vec<Handoff>>,
        threshold: Nanos,
        episode_cap: usize,
        cell_start_ns: u64,
        publish_every: Nanos,
        mode: AnalysisMode,
    ) -> std::io::Result<TraceSession> {
        let enabled_at_ns = open.enabled_at_ns;
        let symbols = open.symbols.map(Arc::new);
        let reader = match open.source {
            Source::Perf(t) => Reader::Perf(t),
            Source::Bpf(b, stacks) => {
                let handoffs: Vec<&[Handoff]> = groups.iter().map(Vec::as_slice).collect();
                Reader::Bpf(Box::new(
                    BpfReader::start(b, stacks, mode, &handoffs).map_err(std::io::Error::other)?,
                ))
            }
        };
        let groups: Vec<Traced> = groups
            .into_iter()
            .map(|h| {
                let a = analyzer(
                    &h,
                    threshold,
                    episode_cap,
                    cell_start_ns,
                    mode,
                    symbols.clone(),
                );
                Traced::new(a, h)
            })
            .collect();
        let shared = Arc::new(Mutex::new(
            groups.iter().map(|_| Shared::default()).collect(),
        ));
        let stop = Arc::new(AtomicBool::new(false));
        let worker = Worker {
            reader,
            groups,
            shared: Arc::clone(&shared),
            stop: Arc::clone(&stop),
            publish_every: publish_every.0.max(100_000_000),
            span: (enabled_at_ns, enabled_at_ns),
            steal_span: BTreeMap::new(),
        };
        let handle = std::thread::Builder::new()
            .name("lat-trace".into())
            .spawn(move || worker.run())?;
        Ok(TraceSession {
            shared,
            stop,
            handle,
        })
    }

    /// Group `group`'s latest published metrics and summary, and the
    /// episodes found since the last call (for a checkpoint).
    pub fn checkpoint(&self, group: usize) -> TraceCheckpoint {
        let mut all = self.shared.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(s) = all.get_mut(group) else {
            return (Vec::new(), None, Vec::new(), Vec::new());
        };
        (
            s.metrics.clone(),
            s.summary.clone(),
            std::mem::take(&mut s.episodes),
            std::mem::take(&mut s.timeline),
        )
    }

    /// Ends the session once the measuring threads have stopped: a last
    /// read, the remaining samples, the final figures, one per group.
    pub fn finish(self) -> Vec<TraceFinal> {
        self.stop.store(true, Ordering::Release);
        let groups = self
            .shared
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len();
        let mut fins = self.handle.join().unwrap_or_else(|_| {
            (0..groups)
                .map(|_| TraceFinal {
                    metrics: Vec::new(),
                    timeline: Vec::new(),
                    summary: TraceSummary::default(),
                    episodes: Vec::new(),
                    error: Some("the tracer thread panicked".into()),
                    noise_classes: BTreeMap::new(),
                })
                .collect()
        });
        // Episodes published but not yet taken by a checkpoint.
        let mut all = self.shared.lock().unwrap_or_else(PoisonError::into_inner);
        for (s, fin) in all.iter_mut().zip(fins.iter_mut()) {
            let mut pending = std::mem::take(&mut s.episodes);
            pending.append(&mut fin.episodes);
            fin.episodes = pending;
        }
        fins
    }
}

enum Reader {
    Perf(Box<Tracer>),
    Bpf(Box<BpfReader>),
}

struct Worker {
    reader: Reader,
    /// One analysis per cell (one, but for `run --priorities`).
    groups: Vec<Traced>,
    shared: Arc<Mutex<Vec<Shared>>>,
    stop: Arc<AtomicBool>,
    publish_every: u64,
    /// From the tracer's enabling to its last read (to its disabling at
    /// the end): what the statistics cover.
    span: (u64, u64),
    /// Per measured CPU: /proc/stat's steal at the first and the last
    /// reading, for the run's total beside the episodes' hypervisor share.
    steal_span: BTreeMap<CpuId, (u64, u64)>,
}

impl Worker {
    fn run(mut self) -> Vec<TraceFinal> {
        let cpu_start = thread_cpu_ns();
        let mut buf: Vec<Decoded> = Vec::with_capacity(1 << 16);
        let mut last_steal = 0u64;
        let mut steal_reader = StealReader::default();
        let mut last_publish = monotonic_ns();
        let mut error = None;
        let mut cpus: Vec<CpuId> = self
            .groups
            .iter()
            .flat_map(|g| g.handoffs.iter().map(|h| h.cpu))
            .collect();
        cpus.sort_unstable();
        cpus.dedup();
        loop {
            let finishing = self.stop.load(Ordering::Acquire);
            // Samples first, then the rings: every event up to a sample's
            // wake-up is then in this read (see analysis::Analyzer).
            for g in &mut self.groups {
                g.take_samples();
            }
            let read_at = monotonic_ns();
            self.span.1 = read_at;
            if let Err(e) = self.read(&mut buf, read_at) {
                error = Some(format!("tracing stopped early: {e}"));
            }
            let now = monotonic_ns();
            if now.saturating_sub(last_steal) >= STEAL_EVERY_NS {
                last_steal = now;
                for (cpu, steal) in steal_reader.read(&cpus) {
                    for g in &mut self.groups {
                        g.analyzer.on_steal(cpu, now, steal);
                    }
                    self.steal_span.entry(cpu).or_insert((steal, steal)).1 = steal;
                }
                for g in &mut self.groups {
                    g.analyzer.trim();
                }
            }
            let publish = now.saturating_sub(last_publish) >= self.publish_every;
            if publish {
                last_publish = now;
                if let Reader::Bpf(r) = &mut self.reader {
                    r.publish(&mut self.groups);
                }
            }
            self.hand_over(publish, cpu_start);
            if finishing || error.is_some() {
                break;
            }
            match &self.reader {
                Reader::Perf(t) => {
                    let _ = t.wait(READ_EVERY);
                }
                Reader::Bpf(r) => r.wait(),
            }
        }
        self.end(error, cpu_start)
    }

    /// One read of the rings, analysed by every group.
    fn read(&mut self, buf: &mut Vec<Decoded>, read_at: u64) -> Result<(), String> {
        match &mut self.reader {
            Reader::Perf(tracer) => {
                buf.clear();
                let res = tracer
                    .read(&mut |d| buf.push(d))
                    .map(|_| ())
                    .map_err(|e| e.to_string());
                let names = tracer.names();
                for g in &mut self.groups {
                    for (cpu, d, u) in g.samples.drain(..) {
                        g.analyzer.on_sample(cpu, d, u, names);
                    }
                    for d in buf.iter() {
                        g.analyzer.on_decoded(d, names);
                    }
                    g.analyzer.flush(read_at, names);
                }
                res
            }
            Reader::Bpf(r) => r.step(&mut self.groups, read_at),
        }
    }

    /// Episodes found, and at a publication each group's figures, to the
    /// housekeeping thread.
    fn hand_over(&mut self, publish: bool, cpu_start: u64) {
        let mut out: Vec<(Found, Option<Published>)> = Vec::with_capacity(self.groups.len());
        for i in 0..self.groups.len() {
            let episodes = self.groups[i].analyzer.take_episodes();
            let published = publish.then(|| Published {
                metrics: self.groups[i].analyzer.metrics(self.names()),
                timeline: self.groups[i].analyzer.drain_timeline(false),
                summary: self.summary(i, cpu_start),
            });
            out.push((episodes, published));
        }
        if out.iter().all(|(e, p)| e.is_empty() && p.is_none()) {
            return;
        }
        let mut all = self.shared.lock().unwrap_or_else(PoisonError::into_inner);
        for (s, (episodes, published)) in all.iter_mut().zip(out) {
            s.episodes.extend(episodes);
            if let Some(p) = published {
                s.metrics = p.metrics;
                s.timeline.extend(p.timeline);
                s.summary = Some(p.summary);
            }
        }
    }

    /// The last read done: the tracer disabled, every group's final
    /// figures.
    fn end(mut self, mut error: Option<String>, cpu_start: u64) -> Vec<TraceFinal> {
        match &mut self.reader {
            Reader::Perf(t) => {
                let _ = t.disable();
            }
            Reader::Bpf(r) => {
                r.disable();
                if let Some(note) = r.publish_final(&mut self.groups) {
                    error.get_or_insert(note);
                }
            }
        }
        self.span.1 = monotonic_ns();
        let mut out = Vec::with_capacity(self.groups.len());
        for i in 0..self.groups.len() {
            let names = match &self.reader {
                Reader::Perf(t) => t.names(),
                Reader::Bpf(r) => r.names(),
            };
            let g = &mut self.groups[i];
            g.analyzer.finish(names);
            for Handoff { cpu, ring, .. } in &g.handoffs {
                g.analyzer.add_undecomposed(*cpu, ring.dropped());
            }
            let mut timeline = std::mem::take(
                &mut self.shared.lock().unwrap_or_else(PoisonError::into_inner)[i].timeline,
            );
            let g = &mut self.groups[i];
            timeline.extend(g.analyzer.drain_timeline(true));
            let metrics = g.analyzer.metrics(names);
            let episodes = g.analyzer.take_episodes();
            let noise_classes = g.analyzer.noise_classes().clone();
            out.push(TraceFinal {
                metrics,
                timeline,
                summary: self.summary(i, cpu_start),
                episodes,
                error: error.clone(),
                noise_classes,
            });
        }
        out
    }

    fn names(&self) -> &latscope_trace::Names {
        match &self.reader {
            Reader::Perf(t) => t.names(),
            Reader::Bpf(r) => r.names(),
        }
    }

    /// Group `group`'s summary: its analysis's account with the session's
    /// (the tracer thread's CPU time and span are the whole session's).
    fn summary(&self, group: usize, cpu_start: u64) -> TraceSummary {
        let mut s = self
            .groups
            .get(group)
            .map(|g| g.analyzer.summary())
            .unwrap_or_default();
        s.tracer_cpu_ns = thread_cpu_ns().saturating_sub(cpu_start);
        (s.traced_from_ns, s.traced_to_ns) = self.span;
        match &self.reader {
            Reader::Perf(t) => {
                s.backend = "perf".into();
                s.missing_events = t.missing_events().to_vec();
                s.steal_source = Some(StealSource::ProcStat);
            }
            Reader::Bpf(r) => r.summarize(group, &mut s),
        }
        s.proc_stat_steal_ns = (!self.steal_span.is_empty()).then(|| {
            Nanos(
                self.steal_span
                    .values()
                    .map(|(first, last)| last.saturating_sub(*first))
                    .sum(),
            )
        });
        s
    }
}

/// A group's episodes found since the last hand-over.
type Found = Vec<(Episode, Option<EpisodeWindow>)>;

/// A group's figures at a publication.
struct Published {
    metrics: Vec<MetricResult>,
    timeline: Vec<TimelineChunk>,
    summary: TraceSummary,
}

/// Cumulative steal time per CPU from /proc/stat (in USER_HZ ticks,
/// converted with `sysconf(_SC_CLK_TCK)`).
pub fn read_steal(cpus: &[CpuId]) -> Vec<(CpuId, u64)> {
    StealReader::default().read(cpus)
}

/// [`read_steal`] kept open, for the tracer thread's four readings a second:
/// the file stays open and the text's buffer is reused (a fresh open of
/// /proc/stat was a tenth of the thread's time with the BPF backend).
#[derive(Default)]
struct StealReader {
    file: Option<std::fs::File>,
    text: String,
}

impl StealReader {
    fn read(&mut self, cpus: &[CpuId]) -> Vec<(CpuId, u64)> {
        use std::io::{Read, Seek, SeekFrom};
        if self.file.is_none() {
            self.file = std::fs::File::open("/proc/stat").ok();
        }
        let Some(file) = self.file.as_mut() else {
            return Vec::new();
        };
        self.text.clear();
        if file.seek(SeekFrom::Start(0)).is_err() || file.read_to_string(&mut self.text).is_err() {
            self.file = None;
            return Vec::new();
        }
        parse_steal(&self.text, cpus)
    }
}

/// The steal times of `cpus` from /proc/stat's text, in ns. Only the `cpuN`
/// lines at its head are read: the whole file's parser
/// (`procstat::parse::parse_stat`) also splits the `intr` line, thousands
/// of numbers, which made it half of a reading's cost.
fn parse_steal(text: &str, cpus: &[CpuId]) -> Vec<(CpuId, u64)> {
    let ns_per_tick = 1_000_000_000 / latscope_platform::process::clock_ticks_per_sec().max(1);
    let mut out = Vec::with_capacity(cpus.len());
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("cpu") else {
            break;
        };
        // The all-CPU line, "cpu  ...", has no number after "cpu".
        if !rest.starts_with(|c: char| c.is_ascii_digit()) {
            continue;
        }
        let mut fields = rest.split_ascii_whitespace();
        let Some(Ok(n)) = fields.next().map(str::parse::<u32>) else {
            continue;
        };
        if !cpus.contains(&CpuId(n)) {
            continue;
        }
        // user nice system idle iowait irq softirq steal ...
        let steal = fields
            .nth(7)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0);
        out.push((CpuId(n), steal.saturating_mul(ns_per_tick)));
    }
    out
}

/// Scheduling policies from /proc/PID/stat, cached per pid.
#[derive(Default)]
struct ProcEnvironment {
    cache: RefCell<HashMap<i32, Option<String>>>,
}

impl Environment for ProcEnvironment {
    fn policy(&self, pid: i32) -> Option<String> {
        if pid <= 0 {
            return None;
        }
        if let Some(p) = self.cache.borrow().get(&pid) {
            return p.clone();
        }
        let p = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|s| policy_from_stat(&s));
        let mut cache = self.cache.borrow_mut();
        if cache.len() > 65_536 {
            cache.clear();
        }
        cache.insert(pid, p.clone());
        p
    }
}

/// Field 41 of /proc/PID/stat (counting from 1), after the parenthesised
/// comm, which may itself hold spaces and parentheses.
fn policy_from_stat(stat: &str) -> Option<String> {
    let rest = &stat[stat.rfind(')')? + 1..];
    // rest starts with field 3 (state).
    let policy: u32 = rest.split_whitespace().nth(41 - 3)?.parse().ok()?;
    Some(
        match policy {
            0 => "other",
            1 => "fifo",
            2 => "rr",
            3 => "batch",
            5 => "idle",
            6 => "deadline",
            _ => return None,
        }
        .to_string(),
    )
}

struct Symbols(Option<Arc<Kallsyms>>);

impl Symbolize for Symbols {
    fn symbol(&self, addr: u64) -> Option<(String, Option<String>)> {
        let s = self.0.as_ref()?.resolve(addr)?;
        Some((s.name.to_string(), s.module.map(str::to_string)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steal_is_read_per_cpu_in_nanoseconds() {
        let text = "cpu  10 0 5 100 0 0 0 7 0 0\ncpu0 5 0 2 50 0 0 0 3 0 0\ncpu1 5 0 3 50 0 0 0 4 0 0\nintr 1\n";
        assert_eq!(parse_steal(text, &[CpuId(1)]), vec![(CpuId(1), 40_000_000)]);
        // Both CPUs, in the file's order; a kernel without the steal column
        // reads as 0; nothing after the cpu lines is looked at.
        assert_eq!(
            parse_steal(text, &[CpuId(1), CpuId(0)]),
            vec![(CpuId(0), 30_000_000), (CpuId(1), 40_000_000)]
        );
        assert_eq!(
            parse_steal(
                "cpu  1 2 3 4\ncpu3 1 2 3 4\nintr 5\ncpu4 1 1 1 1 1 1 1 9\n",
                &[CpuId(3), CpuId(4)]
            ),
            vec![(CpuId(3), 0)]
        );
        assert_eq!(parse_steal("", &[CpuId(0)]), vec![]);
        // The all-CPU line's first count is not a CPU number.
        assert_eq!(
            parse_steal(
                "cpu  7 0 0 0 0 0 0 9\ncpu0 1 0 0 0 0 0 0 2\n",
                &[CpuId(7), CpuId(0)]
            ),
            vec![(CpuId(0), 20_000_000)]
        );
    }

    #[test]
    fn the_kept_open_reader_rereads_the_whole_file() {
        let mut r = StealReader::default();
        let first = r.read(&[CpuId(0)]);
        let second = r.read(&[CpuId(0)]);
        assert_eq!(first.len(), 1, "{first:?}");
        assert_eq!(second.len(), 1, "{second:?}");
        assert!(second[0].1 >= first[0].1);
        assert_eq!(read_steal(&[CpuId(0)]).len(), 1);
    }

    #[test]
    fn policy_comes_from_field_41_even_with_odd_comms() {
        let mut fields: Vec<String> = (3..=52).map(|i| i.to_string()).collect();
        fields[41 - 3] = "1".into();
        let stat = format!("42 (a) b (c)) {}", fields.join(" "));
        assert_eq!(policy_from_stat(&stat).as_deref(), Some("fifo"));
        let own = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
        assert_eq!(policy_from_stat(&own).as_deref(), Some("other"));
    }
}
