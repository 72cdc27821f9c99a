//! Robustness of the decoders on untrusted input (issue 17).
//!
//! Every entry point of latscope-trace that reads bytes or text it did not
//! write itself is fed generated and mutated inputs: the perf record
//! splitter and the ring's copy-out ([`Records`], [`ring_segments`],
//! [`copy_from_ring`], [`SimRing`]), the decoder ([`Decoder`], with the
//! real tracefs formats of `tests/fixtures` and the real recording of
//! `tests/fixtures/streams`), the format parser ([`EventFormat::parse`],
//! [`Tracefs`] on files), the recording reader ([`Recording::parse`]) and
//! the kallsyms parser, and the BPF backend's records (the flight
//! recorder's events, [`RecordedEvent::parse`] and their conversion, and
//! the per-wake-up [`TimerRecord::parse`]). Generators are structure-aware: most inputs start
//! valid (records built from the formats, real records, real files) and are
//! then mutated where it matters (sizes that lie, `__data_loc` locators out
//! of bounds, call chains longer than the record, numbers out of range,
//! duplicated and missing fields), then byte by byte.
//!
//! Each case must return (Ok, a clean Err, or a record counted as
//! malformed: never a panic, which in a debug build includes every
//! arithmetic overflow), and the books must balance: every record the
//! splitter yields is counted exactly once as an event, a stack, a loss, a
//! skipped, an unknown or a malformed record, each with its output; lost
//! counts reach the output whole. Unmutated inputs must decode to exactly
//! what was encoded, and a mutation never changes what the records before it
//! decode to.
//!
//! Case counts: `LATSCOPE_ROBUST_CASES` is the total over the file (default
//! [`DEFAULT_CASES`]), shared among the tests by fixed weights. Cases are
//! deterministic (`LATSCOPE_ROBUST_SEED` changes the seed). A failing case
//! prints its test, seed and input; `LATSCOPE_ROBUST_REPLAY=<seed>` runs
//! only that case in every test (filter the test by name). Each test prints
//! its case count and time to standard error (`--nocapture`).
#![allow(clippy::unwrap_used)]

use crate::common;

use std::cell::RefCell;
use std::collections::HashMap;
use std::io::Read;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use latscope_platform::perf::{
    CPU_CLOCK_SAMPLE_TYPE, PERF_CONTEXT_MAX, PERF_RECORD_LOST, PERF_RECORD_LOST_SAMPLES,
    PERF_RECORD_SAMPLE, PERF_RECORD_THROTTLE, PERF_RECORD_UNTHROTTLE, PERF_SAMPLE_CALLCHAIN,
    PERF_SAMPLE_IDENTIFIER, PERF_SAMPLE_READ, TRACEPOINT_CHAIN_SAMPLE_TYPE, TRACEPOINT_SAMPLE_TYPE,
};
use latscope_trace::decode::{check_format, Schema, SchemaEvent, Stream, StreamSource};
use latscope_trace::format::DataLoc;
use latscope_trace::recording::{Recording, RecordingHeader, RecordingWriter};
use latscope_trace::ring::{
    build_record, copy_from_ring, ring_segments, Malformed, Records, SimRing, HEADER_LEN,
};
use latscope_trace::tracefs::tracefs_from_mounts;
use latscope_trace::{
    Comm, DecodeStats, Decoded, Decoder, EventFormat, EventKind, Field, Kallsyms, Names,
    StackSample, Tracefs,
};

// ---------------------------------------------------------------------------
// Harness: case counts, seeds, reporting.

/// Cases over the whole file when `LATSCOPE_ROBUST_CASES` is not set: two
/// million in an optimised build (`--release`: about 9 s on the 2-core
/// development VM), and what fits well within a minute in the unoptimised
/// build of a plain `cargo test` (about 10 times slower per case: 400 000
/// in about 16 s). The unoptimised build checks arithmetic for overflow.
const DEFAULT_CASES: u64 = if cfg!(debug_assertions) {
    400_000
} else {
    2_000_000
};

/// Weights of the tests, in parts of [`WEIGHT_TOTAL`] of the file's cases
/// (they add up to it).
const WEIGHT_TOTAL: u64 = 10_000;

fn total_cases() -> u64 {
    std::env::var("LATSCOPE_ROBUST_CASES")
        .ok()
        .and_then(|v| v.trim().replace('_', "").parse().ok())
        .unwrap_or(DEFAULT_CASES)
}

fn base_seed() -> u64 {
    std::env::var("LATSCOPE_ROBUST_SEED")
        .ok()
        .and_then(|v| parse_u64(&v))
        .unwrap_or(0x1a75_c0de_0017_0017)
}

fn parse_u64(v: &str) -> Option<u64> {
    let v = v.trim();
    match v.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => v.parse().ok(),
    }
}

/// SplitMix64: small, fast, and good enough to drive mutations.
struct Rng(u64);

impl Rng {
    fn u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn u32(&mut self) -> u32 {
        self.u64() as u32
    }
    /// Uniform in `0..n` (0 when n is 0).
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.u64() % n as u64) as usize
        }
    }
    /// Uniform in `lo..=hi`.
    fn within(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi - lo + 1)
    }
    fn chance(&mut self, num: u64, den: u64) -> bool {
        self.u64() % den < num
    }
    fn pick<'a, T>(&mut self, s: &'a [T]) -> &'a T {
        &s[self.below(s.len())]
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.u64() as u8).collect()
    }
}

fn mix(seed: u64, i: u64) -> u64 {
    let mut r = Rng(seed ^ i.wrapping_mul(0xd6e8_feb8_6659_fd93));
    r.u64()
}

fn name_hash(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

thread_local! {
    /// The input of the running case, printed if it fails.
    static INPUT: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

fn note_input(b: &[u8]) {
    INPUT.with(|i| {
        let mut i = i.borrow_mut();
        i.clear();
        i.extend_from_slice(b);
    });
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Runs the test's share (`weight` of [`WEIGHT_TOTAL`]) of the file's cases,
/// each from its own seed. At least one case always runs.
fn run(name: &str, weight: u64, mut case: impl FnMut(&mut Rng)) -> u64 {
    let seed = base_seed() ^ name_hash(name);
    let replay = std::env::var("LATSCOPE_ROBUST_REPLAY")
        .ok()
        .and_then(|v| parse_u64(&v));
    let n = if replay.is_some() {
        1
    } else {
        (total_cases() * weight / WEIGHT_TOTAL).max(1)
    };
    let start = Instant::now();
    for i in 0..n {
        let case_seed = replay.unwrap_or_else(|| mix(seed, i));
        let mut rng = Rng(case_seed);
        if let Err(p) = catch_unwind(AssertUnwindSafe(|| case(&mut rng))) {
            let input = INPUT.with(|x| x.borrow().clone());
            let shown = &input[..input.len().min(8192)];
            eprintln!(
                "robust {name}: case {i} failed: LATSCOPE_ROBUST_REPLAY={case_seed:#x}\n\
                 input ({} bytes{}): {}",
                input.len(),
                if shown.len() < input.len() {
                    ", first 8192 shown"
                } else {
                    ""
                },
                hex(shown)
            );
            std::panic::resume_unwind(p);
        }
    }
    eprintln!(
        "robust {name}: {n} cases in {:.2} s",
        start.elapsed().as_secs_f64()
    );
    n
}

/// Outcomes of a test's cases, printed after its case count: what the
/// inputs reached.
#[derive(Default)]
struct Tally(std::collections::BTreeMap<&'static str, u64>);

impl Tally {
    fn add(&mut self, what: &'static str, n: u64) {
        *self.0.entry(what).or_default() += n;
    }
    fn stats(&mut self, st: &DecodeStats) {
        self.add("records", st.records);
        self.add("events", st.events);
        self.add("stacks", st.stacks);
        self.add("lost records", st.lost_records);
        self.add("skipped", st.skipped);
        self.add("unknown id", st.unknown_id);
        self.add("malformed", st.malformed);
    }
    fn print(&self, name: &str) {
        let parts: Vec<String> = self.0.iter().map(|(k, v)| format!("{k} {v}")).collect();
        eprintln!("robust {name}: {}", parts.join(", "));
    }
}

// ---------------------------------------------------------------------------
// Inputs: interesting values and generic byte mutations.

fn put(b: &mut [u8], at: usize, width: usize, v: u64) -> bool {
    let Some(dst) = at.checked_add(width).and_then(|end| b.get_mut(at..end)) else {
        return false;
    };
    dst.copy_from_slice(&v.to_ne_bytes()[..width]);
    true
}

fn get(b: &[u8], at: usize, width: usize) -> Option<u64> {
    let src = b.get(at..at.checked_add(width)?)?;
    let mut a = [0u8; 8];
    a[..width].copy_from_slice(src);
    Some(u64::from_ne_bytes(a))
}

/// Values that sit on boundaries, near `hint` (a length or count that the
/// field should have), or anywhere.
fn interesting(rng: &mut Rng, hint: u64) -> u64 {
    const FIXED: [u64; 24] = [
        0,
        1,
        2,
        3,
        7,
        8,
        9,
        15,
        16,
        0x7f,
        0x80,
        0xff,
        0x100,
        0x7fff,
        0x8000,
        0xffff,
        0x1_0000,
        0x7fff_ffff,
        0x8000_0000,
        0xffff_ffff,
        1 << 61,
        (1 << 61) + 1,
        i64::MAX as u64,
        u64::MAX,
    ];
    match rng.below(4) {
        0 => rng.u64(),
        1 => *rng.pick(&FIXED),
        2 => hint.wrapping_add(rng.below(17) as u64).wrapping_sub(8),
        _ => *rng.pick(&[
            hint,
            hint.wrapping_add(1),
            hint.wrapping_sub(1),
            hint.wrapping_mul(2),
            hint / 2,
            !hint,
            PERF_CONTEXT_MAX,
            (-128i64) as u64,
        ]),
    }
}

/// One generic mutation; returns the lowest position it changed.
fn mutate_bytes(rng: &mut Rng, b: &mut Vec<u8>, donor: &[u8]) -> usize {
    let len = b.len();
    let op = if len == 0 { 5 } else { rng.below(10) };
    match op {
        0 => {
            let at = rng.below(len);
            b[at] ^= 1 << rng.below(8);
            at
        }
        1 => {
            let at = rng.below(len);
            b[at] = *rng.pick(&[0, 1, 8, 0x7f, 0x80, 0xff]);
            at
        }
        2 => {
            let width = *rng.pick(&[2, 4, 8]);
            let at = rng.below(len);
            let hint = get(b, at, width).unwrap_or(len as u64);
            let v = interesting(rng, hint);
            if put(b, at, width, v) {
                at
            } else {
                b[at] = v as u8;
                at
            }
        }
        3 => {
            let at = rng.below(len);
            b.truncate(at);
            at
        }
        4 => {
            let at = rng.below(len);
            let n = rng.within(1, 16).min(len - at);
            b.drain(at..at + n);
            at
        }
        5 => {
            let at = rng.below(len + 1);
            let n = rng.within(1, 16);
            let ins = rng.bytes(n);
            b.splice(at..at, ins);
            at
        }
        6 => {
            let from = rng.below(len);
            let n = rng.within(1, 32).min(len - from);
            let to = rng.below(len + 1);
            let piece = b[from..from + n].to_vec();
            b.splice(to..to, piece);
            to
        }
        7 => {
            let at = rng.below(len);
            let n = rng.within(1, 16).min(len - at);
            for x in &mut b[at..at + n] {
                *x = rng.u64() as u8;
            }
            at
        }
        8 if !donor.is_empty() => {
            let from = rng.below(donor.len());
            let n = rng.within(1, 64).min(donor.len() - from);
            b.extend_from_slice(&donor[from..from + n]);
            len
        }
        _ => {
            // Swap two 8-byte words (records are 8-aligned).
            if len < 16 {
                b.reverse();
                return 0;
            }
            let (x, y) = (rng.below(len / 8) * 8, rng.below(len / 8) * 8);
            let (lo, hi) = (x.min(y), x.max(y));
            if lo == hi || hi + 8 > len {
                return len;
            }
            for k in 0..8 {
                b.swap(lo + k, hi + k);
            }
            lo
        }
    }
}

// ---------------------------------------------------------------------------
// The world of the decoder: a schema, its formats and perf ids.

#[derive(Clone, Copy, Debug)]
enum Target {
    Tp(usize),
    Stack,
}

struct World {
    schema: Schema,
    formats: Vec<EventFormat>,
    /// (perf id, event index) of every tracepoint stream.
    tp_ids: Vec<(u64, usize)>,
    stack_ids: Vec<u64>,
    /// Tracepoint streams whose samples carry a call chain.
    chained: std::collections::HashSet<u64>,
    targets: HashMap<u64, Target>,
    decoder: Decoder,
}

impl World {
    fn new(schema: Schema) -> World {
        let formats: Vec<EventFormat> = schema
            .events
            .iter()
            .map(|e| EventFormat::parse(&e.system, &e.format).unwrap())
            .collect();
        let mut tp_ids = Vec::new();
        let mut stack_ids = Vec::new();
        let mut chained = std::collections::HashSet::new();
        let mut targets = HashMap::new();
        for s in &schema.streams {
            match s.source {
                StreamSource::Tracepoint { event } => {
                    if s.sample_type == TRACEPOINT_CHAIN_SAMPLE_TYPE {
                        chained.insert(s.perf_id);
                    } else {
                        assert_eq!(s.sample_type, TRACEPOINT_SAMPLE_TYPE);
                    }
                    tp_ids.push((s.perf_id, event));
                    targets.insert(s.perf_id, Target::Tp(event));
                }
                StreamSource::CpuClock => {
                    assert_eq!(s.sample_type, CPU_CLOCK_SAMPLE_TYPE);
                    stack_ids.push(s.perf_id);
                    targets.insert(s.perf_id, Target::Stack);
                }
            }
        }
        let decoder = Decoder::new(&schema).unwrap();
        World {
            schema,
            formats,
            tp_ids,
            stack_ids,
            chained,
            targets,
            decoder,
        }
    }

    /// Every fixture format (`tests/fixtures/formats`) on CPUs 0 and 1;
    /// on CPU 1 `sched_switch` and `hrtimer_expire_entry` carry call
    /// chains, as the tracer opens them for `--stacks`.
    fn fixtures() -> World {
        let mut schema = common::Fixture::new(&[0, 1]).schema;
        let chained: Vec<usize> = schema
            .events
            .iter()
            .enumerate()
            .filter(|(_, e)| {
                e.format.starts_with("name: sched_switch\n")
                    || e.format.starts_with("name: hrtimer_expire_entry\n")
            })
            .map(|(i, _)| i)
            .collect();
        assert_eq!(chained.len(), 2, "the fixtures have both chained events");
        for s in &mut schema.streams {
            if let StreamSource::Tracepoint { event } = s.source {
                if s.cpu == 1 && chained.contains(&event) {
                    s.sample_type = TRACEPOINT_CHAIN_SAMPLE_TYPE;
                }
            }
        }
        World::new(schema)
    }

    /// The call chain a record of stream `id` carries (built by tests
    /// that need no particular chain): empty for a chained stream.
    fn no_chain(&self, id: u64) -> Option<&'static [u64]> {
        self.chained.contains(&id).then_some(&[])
    }

    /// Where the RAW size is in a record of stream `id` with an empty chain.
    fn raw_at(&self, id: u64) -> usize {
        TP_RAW_AT + if self.chained.contains(&id) { 8 } else { 0 }
    }

    /// A few events only: a small recording header.
    fn small() -> World {
        let mut schema = Schema::default();
        for (i, (sys, name)) in [
            ("irq", "irq_handler_entry"),
            ("sched", "sched_switch"),
            ("irq", "softirq_entry"),
            ("timer", "hrtimer_start"),
        ]
        .into_iter()
        .enumerate()
        {
            schema.events.push(SchemaEvent {
                system: sys.to_string(),
                format: common::format_text("formats", sys, name),
            });
            for cpu in 0..2 {
                schema.streams.push(Stream {
                    perf_id: 10 + 2 * i as u64 + u64::from(cpu),
                    cpu,
                    sample_type: TRACEPOINT_SAMPLE_TYPE,
                    source: StreamSource::Tracepoint { event: i },
                });
            }
        }
        schema.streams.push(Stream {
            perf_id: 99,
            cpu: 0,
            sample_type: CPU_CLOCK_SAMPLE_TYPE,
            source: StreamSource::CpuClock,
        });
        World::new(schema)
    }
}

/// The recording captured on the development VM (see the fixtures' README):
/// parsed, and its records one by one.
struct RealRecording {
    parsed: Recording,
    records: Vec<Vec<u8>>,
}

fn real_recording() -> RealRecording {
    let path = common::fixtures().join("streams/burner-cpu0.lstrace.gz");
    let mut file = Vec::new();
    flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap())
        .read_to_end(&mut file)
        .unwrap();
    let parsed = Recording::parse(&file).unwrap();
    let mut records = Vec::new();
    for c in &parsed.chunks {
        for r in Records::new(&c.bytes) {
            records.push(r.unwrap().bytes.to_vec());
        }
    }
    assert!(records.len() > 1000, "{}", records.len());
    RealRecording { parsed, records }
}

/// A decoded value, as the generator wrote it and as the decoder read it.
/// Integers are compared as their 64-bit two's complement.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Val {
    Int(u64),
    Comm(Comm),
    Name(String),
}

/// Values by field name.
type Fields = Vec<(String, Val)>;

/// What one generated record must decode to.
#[derive(Clone, Debug)]
enum Expect {
    Event {
        time: u64,
        cpu: u32,
        tid: i32,
        event: usize,
        fields: Fields,
        /// The call chain decoded after it (chained streams), markers
        /// dropped.
        chain: Option<Vec<u64>>,
    },
    Stack(StackSample),
    Lost(u64),
    Skipped,
    Unknown,
    Malformed,
}

/// Where the fields of a record are, for structure-aware mutations.
#[derive(Clone, Copy, Debug)]
enum What {
    /// A tracepoint sample: the u32 RAW size is at `raw_at`.
    Tp {
        event: usize,
        raw_at: usize,
    },
    /// A stack sample: the u64 call-chain length is at `nr_at`.
    Stack {
        nr_at: usize,
    },
    Other,
}

#[derive(Clone, Copy, Debug)]
struct Meta {
    start: usize,
    len: usize,
    what: What,
}

/// Byte offsets in a sample of the two sample types latscope opens:
/// header, id, pid/tid, time, cpu/res, then RAW size (tracepoints) or ip
/// before pid/tid and the chain length after cpu/res (stacks).
const TP_RAW_AT: usize = HEADER_LEN + 32;
const STACK_NR_AT: usize = HEADER_LEN + 40;

/// Where a chained tracepoint sample's RAW size is: after the chain, whose
/// length sits where an unchained sample has it (`None`: not chained).
fn chained_raw_at(world: &World, rec: &[u8]) -> Option<usize> {
    let id = get(rec, HEADER_LEN, 8)?;
    if !world.chained.contains(&id) {
        return None;
    }
    let nr = usize::try_from(get(rec, TP_RAW_AT, 8)?).ok()?;
    Some(TP_RAW_AT + 8 + nr.min(rec.len()) * 8)
}

/// The records of a buffer and what each is (from its id).
fn metas(world: &World, bytes: &[u8]) -> Vec<Meta> {
    let mut out = Vec::new();
    let mut at = 0;
    for r in Records::new(bytes) {
        let Ok(r) = r else { break };
        let what = match (r.kind, get(r.bytes, HEADER_LEN, 8)) {
            (PERF_RECORD_SAMPLE, Some(id)) => match world.targets.get(&id) {
                Some(&Target::Tp(event)) => What::Tp {
                    event,
                    raw_at: chained_raw_at(world, r.bytes).unwrap_or(TP_RAW_AT),
                },
                Some(Target::Stack) => What::Stack { nr_at: STACK_NR_AT },
                None => What::Other,
            },
            _ => What::Other,
        };
        out.push(Meta {
            start: at,
            len: r.bytes.len(),
            what,
        });
        at += r.bytes.len();
    }
    out
}

/// Text-like bytes: ASCII, sometimes a NUL inside, sometimes bytes that are
/// not UTF-8, sometimes no NUL at all.
fn text_bytes(rng: &mut Rng, n: usize) -> Vec<u8> {
    let mode = rng.below(4);
    let mut v: Vec<u8> = (0..n)
        .map(|_| match mode {
            0 => b"abcdefghijklmnopqrstuvwxyz0123456789-_/:"[rng.below(40)],
            1 => rng.u64() as u8,
            2 => *rng.pick(&[b'a', b'/', 0xc3, 0xa9, 0xff, 0x80, b'0']),
            _ => {
                if rng.chance(1, 6) {
                    0
                } else {
                    b'x'
                }
            }
        })
        .collect();
    if n > 0 && rng.chance(1, 2) {
        v[n - 1] = 0;
    }
    v
}

fn sign_extend(v: u64, size: usize, signed: bool) -> u64 {
    if !signed || size >= 8 {
        return v;
    }
    let shift = 64 - 8 * size as u32;
    (((v << shift) as i64) >> shift) as u64
}

/// The raw tracepoint data of `f` with every field random (integers often
/// on a boundary), and the values the decoder must read. Returns None when
/// the format's fixed part is too large to build (mutated formats).
fn gen_raw(rng: &mut Rng, f: &EventFormat) -> Option<(Vec<u8>, Fields)> {
    let mut fixed = 0usize;
    for x in &f.fields {
        fixed = fixed.max(x.offset.checked_add(x.size)?);
    }
    if fixed > 4096 {
        return None;
    }
    let mut raw = rng.bytes(fixed);
    let mut vals = Vec::new();
    for x in &f.fields {
        let (off, size) = (x.offset, x.size);
        match x.loc {
            DataLoc::Inline if x.array_len.is_none() && matches!(size, 1 | 2 | 4 | 8) => {
                let v = if x.name == "common_type" {
                    f.id
                } else {
                    let bound = if size == 8 {
                        u64::MAX
                    } else {
                        (1u64 << (8 * size)) - 1
                    };
                    let v = interesting(rng, bound / 2) & bound;
                    if rng.chance(1, 4) {
                        bound & !(bound >> 1) // the sign bit
                    } else {
                        v
                    }
                };
                put(&mut raw, off, size, v);
                let read = get(&raw, off, size).unwrap_or(0);
                vals.push((x.name.clone(), Val::Int(sign_extend(read, size, x.signed))));
            }
            DataLoc::Inline => {
                let b = text_bytes(rng, size);
                raw[off..off + size].copy_from_slice(&b);
                vals.push((x.name.clone(), Val::Comm(Comm::from_bytes(&b))));
            }
            DataLoc::Absolute | DataLoc::Relative => {
                let n = rng.below(48);
                let payload = text_bytes(rng, n);
                let at = raw.len();
                raw.extend_from_slice(&payload);
                let base = if x.loc == DataLoc::Relative {
                    off + size
                } else {
                    0
                };
                let loc = ((at - base) as u64 & 0xffff) | ((n as u64) << 16);
                put(&mut raw, off, size.min(4), loc);
                let end = payload.iter().position(|&c| c == 0).unwrap_or(n);
                vals.push((
                    x.name.clone(),
                    Val::Name(String::from_utf8_lossy(&payload[..end]).into_owned()),
                ));
            }
        }
    }
    Some((raw, vals))
}

/// A PERF_RECORD_SAMPLE of TRACEPOINT_SAMPLE_TYPE around `raw` (with
/// `chain`, of TRACEPOINT_CHAIN_SAMPLE_TYPE); the RAW size is padded as the
/// kernel does (with random bytes), or, one time in four or when `exact`,
/// not padded.
fn tp_record(
    rng: &mut Rng,
    id: u64,
    (tid, time, cpu): (i32, u64, u32),
    raw: &[u8],
    exact: bool,
    chain: Option<&[u64]>,
) -> Vec<u8> {
    let mut body = Vec::with_capacity(40 + raw.len());
    body.extend_from_slice(&id.to_ne_bytes());
    body.extend_from_slice(&rng.u32().to_ne_bytes()); // pid
    body.extend_from_slice(&tid.to_ne_bytes());
    body.extend_from_slice(&time.to_ne_bytes());
    body.extend_from_slice(&cpu.to_ne_bytes());
    body.extend_from_slice(&rng.u32().to_ne_bytes()); // res
    if let Some(chain) = chain {
        body.extend_from_slice(&(chain.len() as u64).to_ne_bytes());
        for a in chain {
            body.extend_from_slice(&a.to_ne_bytes());
        }
    }
    let size = if !exact && rng.chance(3, 4) {
        (raw.len() + 4).next_multiple_of(8) - 4
    } else {
        raw.len()
    };
    body.extend_from_slice(&(size as u32).to_ne_bytes());
    body.extend_from_slice(raw);
    let pad = rng.bytes(size - raw.len());
    body.extend_from_slice(&pad);
    build_record(PERF_RECORD_SAMPLE, rng.u64() as u16, &body)
}

fn gen_tp(rng: &mut Rng, world: &World, id: u64, event: usize) -> (Vec<u8>, Expect) {
    let (raw, fields) = gen_raw(rng, &world.formats[event]).unwrap();
    let tid = rng.u32() as i32;
    let time = interesting(rng, 1 << 40);
    let cpu = rng.below(4) as u32;
    let chain = world.chained.contains(&id).then(|| gen_chain(rng));
    let rec = tp_record(rng, id, (tid, time, cpu), &raw, false, chain.as_deref());
    let chain = chain.map(|c| c.into_iter().filter(|&a| a < PERF_CONTEXT_MAX).collect());
    (
        rec,
        Expect::Event {
            time,
            cpu,
            tid,
            event,
            fields,
            chain,
        },
    )
}

/// A kernel call chain with perf's context markers among its addresses.
fn gen_chain(rng: &mut Rng) -> Vec<u64> {
    let n = rng.below(24);
    (0..n)
        .map(|_| {
            if rng.chance(1, 4) {
                *rng.pick(&[
                    (-128i64) as u64,
                    (-512i64) as u64,
                    PERF_CONTEXT_MAX,
                    u64::MAX,
                ])
            } else {
                0xffff_ffff_8100_0000 + rng.below(1 << 24) as u64
            }
        })
        .collect()
}

fn gen_stack(rng: &mut Rng, id: u64) -> (Vec<u8>, Expect) {
    let ip = rng.u64();
    let tid = rng.u32() as i32;
    let time = rng.u64();
    let cpu = rng.below(4) as u32;
    let chain = gen_chain(rng);
    let n = chain.len();
    let mut body = Vec::new();
    body.extend_from_slice(&id.to_ne_bytes());
    body.extend_from_slice(&ip.to_ne_bytes());
    body.extend_from_slice(&rng.u32().to_ne_bytes());
    body.extend_from_slice(&tid.to_ne_bytes());
    body.extend_from_slice(&time.to_ne_bytes());
    body.extend_from_slice(&cpu.to_ne_bytes());
    body.extend_from_slice(&0u32.to_ne_bytes());
    body.extend_from_slice(&(n as u64).to_ne_bytes());
    for a in &chain {
        body.extend_from_slice(&a.to_ne_bytes());
    }
    let mut ips: Vec<u64> = chain
        .iter()
        .copied()
        .filter(|&a| a < PERF_CONTEXT_MAX)
        .collect();
    if ips.is_empty() {
        ips.push(ip);
    }
    (
        build_record(PERF_RECORD_SAMPLE, 0, &body),
        Expect::Stack(StackSample {
            time,
            cpu,
            tid,
            ips,
        }),
    )
}

/// One record of any kind the decoder must handle, valid or not, with what
/// it must decode to.
fn gen_record(rng: &mut Rng, world: &World) -> (Vec<u8>, Expect) {
    match rng.below(100) {
        0..=59 => {
            let &(id, event) = rng.pick(&world.tp_ids);
            gen_tp(rng, world, id, event)
        }
        60..=71 if !world.stack_ids.is_empty() => {
            let id = *rng.pick(&world.stack_ids);
            gen_stack(rng, id)
        }
        72..=79 => {
            let count = interesting(rng, 100);
            let mut body = rng.u64().to_ne_bytes().to_vec();
            body.extend_from_slice(&count.to_ne_bytes());
            (
                build_record(PERF_RECORD_LOST, 0, &body),
                Expect::Lost(count),
            )
        }
        80..=84 => {
            let count = interesting(rng, 100);
            (
                build_record(PERF_RECORD_LOST_SAMPLES, 0, &count.to_ne_bytes()),
                Expect::Lost(count),
            )
        }
        85..=89 => {
            let kind = loop {
                let any = rng.u32();
                let k = *rng.pick(&[
                    PERF_RECORD_THROTTLE,
                    PERF_RECORD_UNTHROTTLE,
                    1,
                    3,
                    4,
                    7,
                    10,
                    any,
                ]);
                if !matches!(
                    k,
                    PERF_RECORD_SAMPLE | PERF_RECORD_LOST | PERF_RECORD_LOST_SAMPLES
                ) {
                    break k;
                }
            };
            let n = rng.below(40);
            let body = rng.bytes(n);
            (build_record(kind, 0, &body), Expect::Skipped)
        }
        90..=94 => {
            // An id no stream has.
            let id = (1u64 << 40) + rng.below(1000) as u64;
            let n = rng.below(64);
            let mut body = id.to_ne_bytes().to_vec();
            body.extend(rng.bytes(n));
            (build_record(PERF_RECORD_SAMPLE, 0, &body), Expect::Unknown)
        }
        _ => {
            // Malformed in one of the ways a record can be.
            let &(id, _) = rng.pick(&world.tp_ids);
            let rec = match rng.below(5) {
                // Cut before the id.
                0 => {
                    // (The header's size says so: the kernel's padding
                    // would make 8 bytes of anything.)
                    let n = rng.below(8);
                    let mut r = build_record(PERF_RECORD_SAMPLE, 0, &rng.bytes(n));
                    r.truncate(HEADER_LEN + n);
                    put(&mut r, 6, 2, (HEADER_LEN + n) as u64);
                    r
                }
                // Cut right after the id.
                1 => build_record(PERF_RECORD_SAMPLE, 0, &id.to_ne_bytes()),
                // RAW shorter than any event's own fields (they start at 8).
                2 => {
                    let n = rng.below(8);
                    let raw = rng.bytes(n);
                    tp_record(rng, id, (1, 2, 0), &raw, true, world.no_chain(id))
                }
                // RAW size larger than the record.
                3 => {
                    let n = rng.below(32);
                    let raw = rng.bytes(n);
                    let mut r = tp_record(rng, id, (1, 2, 0), &raw, false, world.no_chain(id));
                    let at = world.raw_at(id);
                    let room = (r.len() - at - 4) as u64;
                    let lie = room + 1 + rng.below(1 << 20) as u64;
                    put(&mut r, at, 4, lie.min(u64::from(u32::MAX)));
                    r
                }
                // A LOST record without its count, a LOST_SAMPLES without anything.
                _ => {
                    if rng.chance(1, 2) {
                        build_record(PERF_RECORD_LOST, 0, &rng.u64().to_ne_bytes())
                    } else {
                        build_record(PERF_RECORD_LOST_SAMPLES, 0, &[])
                    }
                }
            };
            (rec, Expect::Malformed)
        }
    }
}

fn gen_stream(rng: &mut Rng, world: &World, max: usize) -> (Vec<u8>, Vec<Expect>) {
    let n = rng.within(1, max);
    let mut bytes = Vec::new();
    let mut expects = Vec::with_capacity(n);
    for _ in 0..n {
        let (r, e) = gen_record(rng, world);
        bytes.extend_from_slice(&r);
        expects.push(e);
    }
    (bytes, expects)
}

/// The event's name (as its format names it) and the fields the decoder
/// read, by their format names.
fn observed(k: &EventKind, names: &Names) -> (String, Vec<(&'static str, Val)>) {
    let i = |v: i64| Val::Int(v as u64);
    let u = Val::Int;
    let (name, fields) = match *k {
        EventKind::HrtimerStart {
            hrtimer,
            function,
            expires,
            softexpires,
        } => (
            "hrtimer_start".to_string(),
            vec![
                ("hrtimer", u(hrtimer)),
                ("function", u(function)),
                ("expires", i(expires)),
                ("softexpires", i(softexpires)),
            ],
        ),
        EventKind::HrtimerExpireEntry {
            hrtimer,
            now,
            function,
        } => (
            "hrtimer_expire_entry".to_string(),
            vec![
                ("hrtimer", u(hrtimer)),
                ("now", i(now)),
                ("function", u(function)),
            ],
        ),
        EventKind::HrtimerExpireExit { hrtimer } => (
            "hrtimer_expire_exit".to_string(),
            vec![("hrtimer", u(hrtimer))],
        ),
        EventKind::SchedWaking {
            pid,
            prio,
            target_cpu,
            comm,
        } => (
            "sched_waking".to_string(),
            vec![
                ("pid", i(pid.into())),
                ("prio", i(prio.into())),
                ("target_cpu", i(target_cpu.into())),
                ("comm", Val::Comm(comm)),
            ],
        ),
        EventKind::SchedSwitch {
            prev_pid,
            prev_prio,
            prev_state,
            prev_comm,
            next_pid,
            next_prio,
            next_comm,
        } => (
            "sched_switch".to_string(),
            vec![
                ("prev_pid", i(prev_pid.into())),
                ("prev_prio", i(prev_prio.into())),
                ("prev_state", i(prev_state)),
                ("prev_comm", Val::Comm(prev_comm)),
                ("next_pid", i(next_pid.into())),
                ("next_prio", i(next_prio.into())),
                ("next_comm", Val::Comm(next_comm)),
            ],
        ),
        EventKind::IrqEntry { irq, name } => (
            "irq_handler_entry".to_string(),
            vec![
                ("irq", i(irq.into())),
                ("name", Val::Name(names.get(name).to_string())),
            ],
        ),
        EventKind::IrqExit { irq, ret } => (
            "irq_handler_exit".to_string(),
            vec![("irq", i(irq.into())), ("ret", i(ret.into()))],
        ),
        EventKind::SoftirqRaise { vec } => {
            ("softirq_raise".to_string(), vec![("vec", u(vec.into()))])
        }
        EventKind::SoftirqEntry { vec } => {
            ("softirq_entry".to_string(), vec![("vec", u(vec.into()))])
        }
        EventKind::SoftirqExit { vec } => {
            ("softirq_exit".to_string(), vec![("vec", u(vec.into()))])
        }
        EventKind::VectorEntry { name, vector } => (
            format!("{}_entry", names.get(name)),
            vec![("vector", i(vector.into()))],
        ),
        EventKind::VectorExit { name, vector } => (
            format!("{}_exit", names.get(name)),
            vec![("vector", i(vector.into()))],
        ),
        EventKind::Nmi {
            handler,
            delta_ns,
            handled,
        } => (
            "nmi_handler".to_string(),
            vec![
                ("handler", u(handler)),
                ("delta_ns", i(delta_ns)),
                ("handled", i(handled.into())),
            ],
        ),
        EventKind::WorkStart { work, function } => (
            "workqueue_execute_start".to_string(),
            vec![("work", u(work)), ("function", u(function))],
        ),
        EventKind::WorkEnd { work, function } => (
            "workqueue_execute_end".to_string(),
            vec![("work", u(work)), ("function", u(function))],
        ),
        EventKind::TimerExpireEntry { timer, function } => (
            "timer_expire_entry".to_string(),
            vec![("timer", u(timer)), ("function", u(function))],
        ),
        EventKind::TimerExpireExit { timer } => {
            ("timer_expire_exit".to_string(), vec![("timer", u(timer))])
        }
        EventKind::TaskletEntry { tasklet, function } => (
            "tasklet_entry".to_string(),
            vec![("tasklet", u(tasklet)), ("func", u(function))],
        ),
        EventKind::TaskletExit { tasklet, function } => (
            "tasklet_exit".to_string(),
            vec![("tasklet", u(tasklet)), ("func", u(function))],
        ),
        EventKind::NapiPoll {
            napi,
            dev,
            work,
            budget,
        } => (
            "napi_poll".to_string(),
            vec![
                ("napi", u(napi)),
                ("dev_name", Val::Name(names.get(dev).to_string())),
                ("work", i(work.into())),
                ("budget", i(budget.into())),
            ],
        ),
    };
    (name, fields)
}

// ---------------------------------------------------------------------------
// The decoder's books.

/// Decodes `bytes` and checks that the books balance: every record the
/// splitter yields is counted once, outputs match the counters, lost counts
/// arrive whole, and the decoder's totals grow by exactly this call.
fn decode_checked(d: &mut Decoder, cpu: u32, bytes: &[u8]) -> (Vec<Decoded>, DecodeStats) {
    let before = *d.stats();
    let mut out = Vec::new();
    let st = d.decode(cpu, bytes, &mut |x| out.push(x));

    let mut whole = 0u64;
    let mut framing = 0u64;
    let mut end = 0usize;
    for r in Records::new(bytes) {
        match r {
            Ok(r) => {
                whole += 1;
                end += r.bytes.len();
            }
            Err(_) => framing += 1,
        }
    }
    assert_eq!(st.records, whole, "{st:?}");
    assert_eq!(st.bytes, end as u64, "{st:?}");
    assert_eq!(framing == 0, end == bytes.len(), "{st:?}");
    assert_eq!(
        st.events + st.stacks + st.lost_records + st.skipped + st.unknown_id + st.malformed,
        st.records + framing,
        "every record is counted once: {st:?}"
    );
    let mut events = 0;
    let mut stacks = 0;
    let mut losses = 0;
    let mut lost = 0u64;
    let mut last_event = None;
    for o in &out {
        match o {
            Decoded::Event(e) => {
                events += 1;
                last_event = Some(*e);
            }
            Decoded::Stack(_) => {
                stacks += 1;
                last_event = None;
            }
            Decoded::EventChain(c) => {
                // A chain follows the event it belongs to, nothing else.
                let e = last_event.take().expect("a chain follows its event");
                assert_eq!((c.time, c.cpu, c.tid), (e.time, e.cpu, e.tid));
            }
            Decoded::Lost { cpu: c, count } => {
                last_event = None;
                assert_eq!(*c, cpu);
                losses += 1;
                lost = lost.saturating_add(*count);
            }
        }
    }
    assert_eq!(
        (events, stacks, losses, lost),
        (st.events, st.stacks, st.lost_records, st.lost),
        "outputs and counters disagree: {st:?}"
    );
    let mut sum = before;
    sum.add(&st);
    assert_eq!(*d.stats(), sum);
    (out, st)
}

/// Checks a decode of an unmutated generated stream against what was
/// generated, value by value.
fn check_expected(world: &World, d: &Decoder, cpu: u32, out: &[Decoded], exp: &[Expect]) {
    let wanted: Vec<&Expect> = exp
        .iter()
        .filter(|e| matches!(e, Expect::Event { .. } | Expect::Stack(_) | Expect::Lost(_)))
        .collect();
    let chains = wanted
        .iter()
        .filter(|e| matches!(e, Expect::Event { chain: Some(_), .. }))
        .count();
    assert_eq!(out.len(), wanted.len() + chains, "{out:?}\n{exp:?}");
    let mut out = out.iter();
    for e in wanted {
        let Some(o) = out.next() else { break };
        match (o, e) {
            (
                Decoded::Event(ev),
                Expect::Event {
                    time,
                    cpu: c,
                    tid,
                    event,
                    fields,
                    chain,
                },
            ) => {
                if let Some(want) = chain {
                    match out.next() {
                        Some(Decoded::EventChain(got)) => assert_eq!(&got.ips, want),
                        other => panic!("expected the chain of {ev:?}, decoded {other:?}"),
                    }
                }
                assert_eq!((ev.time, ev.cpu, ev.tid), (*time, *c, *tid));
                let (name, obs) = observed(&ev.kind, d.names());
                assert_eq!(name, world.formats[*event].name);
                for (k, v) in obs {
                    let want = fields.iter().find(|(n, _)| n == k);
                    assert_eq!(Some(&v), want.map(|w| &w.1), "field {k} of {name}");
                }
            }
            (Decoded::Stack(s), Expect::Stack(w)) => assert_eq!(s, w),
            (Decoded::Lost { cpu: c, count }, Expect::Lost(n)) => {
                assert_eq!((*c, *count), (cpu, *n));
            }
            (o, e) => panic!("decoded {o:?}, expected {e:?}"),
        }
    }
    let st = d.stats();
    let count = |f: fn(&Expect) -> bool| exp.iter().filter(|e| f(e)).count() as u64;
    assert_eq!(st.skipped, count(|e| matches!(e, Expect::Skipped)));
    assert_eq!(st.unknown_id, count(|e| matches!(e, Expect::Unknown)));
    assert_eq!(st.malformed, count(|e| matches!(e, Expect::Malformed)));
}

/// One structure-aware mutation of a record of `metas`: header sizes and
/// kinds, sample ids, RAW sizes, fields inside the RAW data (locators of
/// `__data_loc` strings above all), call-chain lengths. Returns the lowest
/// position changed.
fn mutate_structure(rng: &mut Rng, world: &World, b: &mut [u8], metas: &[Meta]) -> Option<usize> {
    let m = *rng.pick(metas);
    let at = |off: usize| m.start + off;
    let choice = rng.below(10);
    match (choice, m.what) {
        (0 | 1, _) => {
            // The header's size lies.
            let rest = (b.len() - m.start) as u64;
            let near = interesting(rng, m.len as u64);
            let short = rng.below(HEADER_LEN) as u64;
            let v = *rng.pick(&[near, rest, rest + 1, rest - 1, short]);
            put(b, at(6), 2, v).then_some(at(6))
        }
        (2, _) => {
            let any = rng.u32();
            let k = *rng.pick(&[
                PERF_RECORD_SAMPLE,
                PERF_RECORD_LOST,
                PERF_RECORD_LOST_SAMPLES,
                PERF_RECORD_THROTTLE,
                any,
            ]);
            put(b, at(0), 4, k.into()).then_some(at(0))
        }
        (3, What::Tp { .. } | What::Stack { .. }) => {
            // Another stream's id: the body is read with another layout.
            let id = match rng.below(4) {
                0 if !world.stack_ids.is_empty() => *rng.pick(&world.stack_ids),
                1 => rng.u64(),
                _ => rng.pick(&world.tp_ids).0,
            };
            put(b, at(HEADER_LEN), 8, id).then_some(at(HEADER_LEN))
        }
        (4 | 5, What::Tp { raw_at, .. }) => {
            let room = m.len.saturating_sub(raw_at + 4) as u64;
            let v = interesting(rng, room);
            put(b, at(raw_at), 4, v).then_some(at(raw_at))
        }
        (6..=8, What::Tp { event, raw_at }) => {
            let f = &world.formats[event];
            let x = rng.pick(&f.fields);
            let pos = at(raw_at + 4).checked_add(x.offset)?;
            if x.is_dynamic() {
                let raw_len = get(b, at(raw_at), 4)?;
                let off = interesting(rng, raw_len) & 0xffff;
                let len = interesting(rng, raw_len.saturating_sub(off)) & 0xffff;
                put(b, pos, 4, off | len << 16).then_some(pos)
            } else if x.array_len.is_some() {
                let end = pos.checked_add(x.size)?.min(b.len());
                for c in b.get_mut(pos..end)? {
                    *c = rng.u64() as u8 | 1; // no NUL
                }
                Some(pos)
            } else {
                let v = interesting(rng, 1 << 31);
                put(b, pos, x.size.min(8), v).then_some(pos)
            }
        }
        (4..=8, What::Stack { nr_at }) => {
            let nr = get(b, at(nr_at), 8)?;
            let v = interesting(rng, nr);
            put(b, at(nr_at), 8, v).then_some(at(nr_at))
        }
        _ => {
            // Random bytes in the record's body.
            let n = rng.within(1, 8);
            let pos = m.start + rng.below(m.len);
            for k in pos..(pos + n).min(b.len()) {
                b[k] = rng.u64() as u8;
            }
            Some(pos)
        }
    }
}

/// Mutates a stream: a few structure-aware mutations, then byte mutations.
/// Returns the lowest position changed (the records wholly before it are
/// as they were).
fn mutate_stream(
    rng: &mut Rng,
    world: &World,
    b: &mut Vec<u8>,
    metas: &[Meta],
    donor: &[u8],
) -> usize {
    let mut first = b.len();
    let n_struct = if metas.is_empty() { 0 } else { rng.below(4) };
    for _ in 0..n_struct {
        if let Some(p) = mutate_structure(rng, world, b, metas) {
            first = first.min(p);
        }
    }
    let n_bytes = if n_struct == 0 {
        rng.within(1, 6)
    } else {
        rng.below(3)
    };
    for _ in 0..n_bytes {
        first = first.min(mutate_bytes(rng, b, donor));
    }
    first
}

/// Decodes a mutated stream and its unmutated prefix (the records wholly
/// before the first change): the mutated stream must decode the prefix to
/// the same outputs, and both decodes must balance their books. Returns the
/// counters of the mutated stream.
fn check_mutated(
    d: &mut Decoder,
    cpu: u32,
    mutated: &[u8],
    metas: &[Meta],
    first: usize,
) -> DecodeStats {
    let prefix_end = metas
        .iter()
        .map(|m| m.start + m.len)
        .take_while(|&end| end <= first)
        .last()
        .unwrap_or(0);
    let (p, _) = decode_checked(d, cpu, &mutated[..prefix_end]);
    let (m, st) = decode_checked(d, cpu, mutated);
    assert!(m.len() >= p.len(), "{} < {}", m.len(), p.len());
    assert_eq!(&m[..p.len()], &p[..], "records before the mutation changed");
    st
}

// ---------------------------------------------------------------------------
// (a) The perf record splitter and the ring.

/// The record boundaries of `buf` as the perf ABI defines them, and where
/// a malformed header stops the split.
fn reference_split(buf: &[u8]) -> (Vec<(usize, usize)>, Option<usize>) {
    let mut recs = Vec::new();
    let mut pos = 0;
    while pos < buf.len() {
        if buf.len() - pos < HEADER_LEN {
            return (recs, Some(pos));
        }
        let size = usize::from(u16::from_ne_bytes([buf[pos + 6], buf[pos + 7]]));
        if size < HEADER_LEN || size > buf.len() - pos {
            return (recs, Some(pos));
        }
        recs.push((pos, size));
        pos += size;
    }
    (recs, None)
}

fn check_split(buf: &[u8]) {
    let (want, bad) = reference_split(buf);
    let mut it = Records::new(buf);
    for &(start, len) in &want {
        let r = it.next().unwrap().unwrap();
        assert!(std::ptr::eq(r.bytes, &buf[start..start + len]));
        assert_eq!(
            r.kind,
            u32::from_ne_bytes(buf[start..start + 4].try_into().unwrap())
        );
        assert_eq!(r.misc, u16::from_ne_bytes([buf[start + 4], buf[start + 5]]));
        assert_eq!(it.position(), start + len);
    }
    if let Some(at) = bad {
        assert_eq!(it.next(), Some(Err(Malformed { at })));
        assert_eq!(it.position(), at);
    } else {
        assert_eq!(it.position(), buf.len());
    }
    // Nothing after the end or after a malformed header, however often asked.
    assert_eq!(it.next(), None);
    assert_eq!(it.next(), None);
}

#[test]
fn ring_records_split_as_the_perf_abi_says() {
    run("ring_records", 2000, |rng| {
        let buf = if rng.chance(1, 4) {
            let n = rng.below(96);
            rng.bytes(n)
        } else {
            let mut buf = Vec::new();
            let mut starts = Vec::new();
            for _ in 0..rng.below(8) {
                starts.push(buf.len());
                let n = rng.below(48);
                let body = rng.bytes(n);
                buf.extend(build_record(rng.u32() % 16, rng.u64() as u16, &body));
            }
            for _ in 0..rng.below(3) {
                if let Some(&s) = starts.get(rng.below(starts.len())) {
                    let hint = get(&buf, s + 6, 2).unwrap_or(8);
                    let v = interesting(rng, hint);
                    put(&mut buf, s + 6, 2, v);
                }
            }
            for _ in 0..rng.below(3) {
                mutate_bytes(rng, &mut buf, &[]);
            }
            buf
        };
        note_input(&buf);
        check_split(&buf);
    });
}

#[test]
fn ring_counters_that_lie_are_refused() {
    run("ring_counters", 600, |rng| {
        let size = if rng.chance(7, 8) {
            1usize << rng.within(3, 12)
        } else {
            rng.below(5000)
        };
        let near = *rng.pick(&[0, u64::MAX, 1 << 63, (size as u64).wrapping_mul(1 << 40)]);
        let tail = match rng.below(3) {
            0 => rng.u64(),
            1 => near.wrapping_add(rng.u64() % 4096).wrapping_sub(2048),
            _ => rng.u64() % (1 << 20),
        };
        let head = match rng.below(4) {
            0 => rng.u64(),
            1 => tail.wrapping_sub(1 + rng.below(64) as u64),
            _ => tail.wrapping_add(rng.below(size.saturating_mul(2) + 2) as u64),
        };
        let mut input = tail.to_ne_bytes().to_vec();
        input.extend_from_slice(&head.to_ne_bytes());
        input.extend_from_slice(&(size as u64).to_ne_bytes());
        note_input(&input);

        let valid = size.is_power_of_two() && head >= tail && head - tail <= size as u64;
        match ring_segments(tail, head, size) {
            Ok([a, b]) => {
                assert!(valid);
                assert_eq!((a.len() + b.len()) as u64, head - tail);
                assert_eq!(a.start as u64, tail % size as u64);
                assert!(a.start <= a.end && a.end <= size && b.start == 0);
                assert!(b.is_empty() || (a.end == size && b.end <= a.start));
            }
            Err(_) => assert!(!valid),
        }
        if size <= 4096 {
            let ring = rng.bytes(size);
            let mut out = vec![7u8; rng.below(4)];
            let kept = out.clone();
            match copy_from_ring(&ring, tail, head, &mut out) {
                Ok(n) => {
                    assert!(valid);
                    assert_eq!(n as u64, head - tail);
                    assert_eq!(&out[..kept.len()], &kept[..]);
                    for (k, &x) in out[kept.len()..].iter().enumerate() {
                        assert_eq!(x, ring[((tail + k as u64) % size as u64) as usize]);
                    }
                    // Whatever the ring held, splitting it never panics.
                    check_split(&out[kept.len()..]);
                }
                Err(_) => assert!(!valid && out == kept),
            }
        }
    });
}

#[test]
fn sim_ring_wraps_and_counts_every_lost_record() {
    let world = World::fixtures();
    let mut d = world.decoder.clone();
    let mut case = 0u64;
    run("sim_ring", 400, |rng| {
        case += 1;
        if case % 512 == 0 {
            d = world.decoder.clone();
        }
        let size = 1usize << rng.within(6, 12);
        let laps = rng.below(1 << 20) as u64;
        let pos = match rng.below(3) {
            0 => 0,
            1 => (laps * size as u64).saturating_sub(rng.below(size) as u64),
            _ => rng.u64() >> 2,
        };
        let lost_id = rng.u64();
        let mut ring = SimRing::new(size, lost_id).unwrap().with_position(pos);
        let mut out = Vec::new();
        let mut stored = Vec::new();
        let (mut written, mut dropped) = (0u64, 0u64);
        for _ in 0..rng.within(1, 40) {
            let (rec, e) = if rng.chance(1, 6) {
                let n = rng.below(size * 2);
                let body = rng.bytes(n.min(1000));
                (
                    build_record(PERF_RECORD_THROTTLE, 0, &body),
                    Expect::Skipped,
                )
            } else if rng.chance(1, 8) {
                gen_stack(rng, world.stack_ids[0])
            } else {
                let &(id, event) = rng.pick(&world.tp_ids);
                gen_tp(rng, &world, id, event)
            };
            written += 1;
            if ring.write(&rec) {
                stored.push((rec, e));
            } else {
                dropped += 1;
            }
            if rng.chance(1, 3) {
                ring.read_into(&mut out).unwrap();
                assert_eq!(ring.head(), ring.tail());
            }
        }
        ring.read_into(&mut out).unwrap();
        // A last small record brings the count of drops still pending.
        let flush = build_record(0x7777, 0, &[]);
        assert!(ring.write(&flush));
        ring.read_into(&mut out).unwrap();
        stored.push((flush, Expect::Skipped));
        note_input(&out);

        // Every stored record comes out whole and in order, with LOST
        // records between them that add up to the drops.
        let mut lost_sum = 0u64;
        let mut lost_records = 0u64;
        let mut next = stored.iter();
        for r in Records::new(&out) {
            let r = r.unwrap();
            if r.kind == PERF_RECORD_LOST {
                assert_eq!(get(r.bytes, HEADER_LEN, 8), Some(lost_id));
                lost_sum += get(r.bytes, HEADER_LEN + 8, 8).unwrap();
                lost_records += 1;
            } else {
                assert_eq!(r.bytes, &next.next().unwrap().0[..]);
            }
        }
        assert!(next.next().is_none());
        assert_eq!(lost_sum, dropped);
        assert_eq!(stored.len() as u64 - 1, written - dropped);

        // The decoder counts them too.
        let (decoded, st) = decode_checked(&mut d, 0, &out);
        assert_eq!(st.lost, dropped);
        assert_eq!(st.lost_records, lost_records);
        assert_eq!(st.malformed + st.unknown_id, 0);
        let events = stored
            .iter()
            .filter(|(_, e)| matches!(e, Expect::Event { .. }))
            .count();
        assert_eq!(st.events as usize, events);
        let lost_out: u64 = decoded
            .iter()
            .map(|x| match x {
                Decoded::Lost { count, .. } => *count,
                _ => 0,
            })
            .sum();
        assert_eq!(lost_out, dropped);

        // A header in the copied-out bytes that lies stops the split there.
        if !out.is_empty() && rng.chance(1, 2) {
            let mut bad = out.clone();
            let m = *rng.pick(&metas(&world, &bad));
            let v = interesting(rng, m.len as u64);
            put(&mut bad, m.start + 6, 2, v);
            check_split(&bad);
            decode_checked(&mut d, 0, &bad);
        }
    });
}

// ---------------------------------------------------------------------------
// (b) The decoder.

#[test]
fn decoder_valid_streams_decode_exactly() {
    let world = World::fixtures();
    run("decoder_valid", 800, |rng| {
        let (bytes, exp) = gen_stream(rng, &world, 12);
        note_input(&bytes);
        let mut d = world.decoder.clone();
        let cpu = rng.below(4) as u32;
        let (out, _) = decode_checked(&mut d, cpu, &bytes);
        check_expected(&world, &d, cpu, &out, &exp);
    });
}

#[test]
fn decoder_mutated_streams_never_panic_and_balance() {
    let world = World::fixtures();
    let real = real_recording();
    let real_world = World::new(real.parsed.schema().clone());
    let mut d = world.decoder.clone();
    let mut rd = real_world.decoder.clone();
    let mut case = 0u64;
    let mut tally = Tally::default();
    run("decoder_mutated", 2420, |rng| {
        case += 1;
        if case % 512 == 0 {
            d = world.decoder.clone();
            rd = real_world.decoder.clone();
        }
        let use_real = rng.chance(1, 3);
        let (w, dec) = if use_real {
            (&real_world, &mut rd)
        } else {
            (&world, &mut d)
        };
        let mut bytes = if use_real && rng.chance(3, 4) {
            // A window of real records from the development VM.
            let n = rng.within(1, 12);
            let at = rng.below(real.records.len() - n);
            real.records[at..at + n].concat()
        } else {
            gen_stream(rng, w, 10).0
        };
        let donor = &real.records[rng.below(real.records.len())];
        let m = metas(w, &bytes);
        let first = mutate_stream(rng, w, &mut bytes, &m, donor);
        note_input(&bytes);
        let cpu = rng.below(4) as u32;
        tally.stats(&check_mutated(dec, cpu, &bytes, &m, first));
    });
    tally.print("decoder_mutated");
}

#[test]
fn decoder_random_bodies_are_counted() {
    let world = World::fixtures();
    let mut d = world.decoder.clone();
    let mut case = 0u64;
    run("decoder_random_bodies", 800, |rng| {
        case += 1;
        if case % 512 == 0 {
            d = world.decoder.clone();
        }
        // Valid headers and ids, random bodies of random lengths.
        let mut bytes = Vec::new();
        for _ in 0..rng.within(1, 8) {
            let kind = *rng.pick(&[
                PERF_RECORD_SAMPLE,
                PERF_RECORD_SAMPLE,
                PERF_RECORD_SAMPLE,
                PERF_RECORD_LOST,
                PERF_RECORD_LOST_SAMPLES,
            ]);
            let n = rng.below(160);
            let mut body = rng.bytes(n);
            if kind == PERF_RECORD_SAMPLE && rng.chance(7, 8) {
                let id = if rng.chance(1, 4) {
                    *rng.pick(&world.stack_ids)
                } else {
                    rng.pick(&world.tp_ids).0
                };
                put(&mut body, 0, 8, id);
            }
            bytes.extend(build_record(kind, 0, &body));
        }
        note_input(&bytes);
        decode_checked(&mut d, 0, &bytes);
        // The whole buffer random as well.
        let n = rng.below(256);
        let junk = rng.bytes(n);
        note_input(&junk);
        decode_checked(&mut d, 1, &junk);
    });
}

/// `irq_handler_entry` with its `__data_loc` name, and the same event with
/// the name as `__rel_loc` (payload offset counted from the field's end).
fn data_loc_decoder() -> (Decoder, EventFormat) {
    let text = common::format_text("formats", "irq", "irq_handler_entry");
    let rel = text.replace("__data_loc char[] name", "__rel_loc char[] name");
    assert_ne!(rel, text);
    let stream = |perf_id, event| Stream {
        perf_id,
        cpu: 0,
        sample_type: TRACEPOINT_SAMPLE_TYPE,
        source: StreamSource::Tracepoint { event },
    };
    let schema = Schema {
        events: vec![
            SchemaEvent {
                system: "irq".into(),
                format: text.clone(),
            },
            SchemaEvent {
                system: "irq".into(),
                format: rel,
            },
        ],
        streams: vec![stream(1, 0), stream(2, 1)],
    };
    (
        Decoder::new(&schema).unwrap(),
        EventFormat::parse("irq", &text).unwrap(),
    )
}

#[test]
fn decoder_data_loc_locators_are_bounds_checked() {
    let (base, f) = data_loc_decoder();
    let irq_f = f.field("irq").unwrap().clone();
    let name_f = f.field("name").unwrap().clone();
    let fixed = name_f.offset + name_f.size;
    assert_eq!((irq_f.offset, irq_f.size, fixed), (8, 4, 16));
    let mut d = base.clone();
    let mut case = 0u64;
    let mut tally = Tally::default();
    run("decoder_data_loc", 800, |rng| {
        case += 1;
        if case % 512 == 0 {
            d = base.clone();
        }
        let rel = rng.chance(1, 2);
        let n = rng.below(64);
        let mut raw = rng.bytes(fixed);
        raw.extend(text_bytes(rng, n));
        // The RAW size may cut into the fixed part.
        let r = if rng.chance(1, 4) {
            rng.below(raw.len() + 1)
        } else {
            raw.len()
        };
        let irq = rng.u32() as i32;
        put(&mut raw, irq_f.offset, 4, irq as u32 as u64);
        let base_off = if rel { fixed } else { 0 };
        let off = match rng.below(6) {
            0 => (fixed - base_off) as u64,
            1 => rng.below(0x1_0000) as u64,
            2 => (r as u64).wrapping_sub(base_off as u64) & 0xffff,
            _ => interesting(rng, r as u64) & 0xffff,
        };
        let abs = off + base_off as u64;
        let len = match rng.below(5) {
            0 => (r as u64).saturating_sub(abs),
            1 => 0,
            2 => 0xffff,
            _ => interesting(rng, (r as u64).saturating_sub(abs)) & 0xffff,
        };
        put(&mut raw, name_f.offset, 4, off | len << 16);
        raw.truncate(r);
        // RAW exactly `r` bytes long, so the oracle knows its end.
        let mut body = Vec::new();
        body.extend_from_slice(&(if rel { 2u64 } else { 1 }).to_ne_bytes());
        body.extend_from_slice(&[0; 24]); // pid, tid, time, cpu, res
        body.extend_from_slice(&(r as u32).to_ne_bytes());
        body.extend_from_slice(&raw);
        let rec = build_record(PERF_RECORD_SAMPLE, 0, &body);
        note_input(&rec);

        let (out, st) = decode_checked(&mut d, 0, &rec);
        let inside = r >= fixed && abs + len <= r as u64;
        tally.add(if inside { "in bounds" } else { "out of bounds" }, 1);
        if len == 0 && inside {
            tally.add("empty", 1);
        }
        if inside {
            assert_eq!((st.events, st.malformed), (1, 0), "{st:?}");
            let payload = &raw[abs as usize..(abs + len) as usize];
            let end = payload
                .iter()
                .position(|&c| c == 0)
                .unwrap_or(payload.len());
            match &out[0] {
                Decoded::Event(e) => match e.kind {
                    EventKind::IrqEntry { irq: i, name } => {
                        assert_eq!(i, irq);
                        assert_eq!(
                            d.names().get(name),
                            String::from_utf8_lossy(&payload[..end])
                        );
                    }
                    k => panic!("{k:?}"),
                },
                o => panic!("{o:?}"),
            }
        } else {
            assert_eq!((st.events, st.malformed), (0, 1), "{st:?}");
        }
    });
    tally.print("decoder_data_loc");
}

// ---------------------------------------------------------------------------
// (c) The format parser, and tracefs.

/// Numbers a format file should never hold.
const BAD_NUMBERS: [&str; 18] = [
    "0",
    "-1",
    "4294967295",
    "65535",
    "65536",
    "9223372036854775807",
    "18446744073709551615",
    "18446744073709551616",
    "340282366920938463463374607431768211456",
    "",
    " ",
    "0x10",
    "+1",
    "1e3",
    "\u{663}",
    "1_0",
    "99999999999999999999999999999999",
    "7 7",
];

/// Tokens of format files, to replace one another.
const TOKENS: [&str; 22] = [
    "field:",
    "offset:",
    "size:",
    "signed:",
    "name:",
    "ID:",
    "format:",
    "print fmt:",
    "__data_loc",
    "__rel_loc",
    "char",
    "[16]",
    "[]",
    "[",
    "]",
    ";",
    ":",
    "\t",
    "\n",
    "common_",
    "\r",
    "\u{e9}",
];

/// One to four mutations of a format file: lines deleted, duplicated,
/// swapped or borrowed from another format; numbers replaced; tokens
/// replaced, deleted or inserted; the text cut; bytes changed.
fn mutate_format(rng: &mut Rng, text: &str, donors: &[String]) -> String {
    let mut t = text.to_string();
    for _ in 0..rng.within(1, 4) {
        let mut lines: Vec<String> = t.split('\n').map(str::to_string).collect();
        let n = lines.len();
        match rng.below(10) {
            0 if n > 1 => {
                lines.remove(rng.below(n));
            }
            1 => {
                // A duplicated field, at the same place or elsewhere.
                let l = lines[rng.below(n)].clone();
                lines.insert(rng.below(n + 1), l);
            }
            2 if n > 1 => {
                let (a, b) = (rng.below(n), rng.below(n));
                lines.swap(a, b);
            }
            3 => {
                let donor = rng.pick(donors);
                let dl: Vec<&str> = donor.split('\n').collect();
                let l = dl[rng.below(dl.len())].to_string();
                lines.insert(rng.below(n + 1), l);
            }
            4 | 5 => {
                // A number (offset, size, signed, ID, array length) replaced.
                let i = rng.below(n);
                let line = &lines[i];
                let digits: Vec<usize> = line
                    .char_indices()
                    .filter(|(_, c)| c.is_ascii_digit())
                    .map(|(k, _)| k)
                    .collect();
                if let Some(&at) = digits.get(rng.below(digits.len())) {
                    let end = line[at..]
                        .find(|c: char| !c.is_ascii_digit())
                        .map_or(line.len(), |e| at + e);
                    let new = *rng.pick(&BAD_NUMBERS);
                    lines[i] = format!("{}{new}{}", &line[..at], &line[end..]);
                }
            }
            6 => {
                let i = rng.below(n);
                let from = *rng.pick(&TOKENS);
                let to = if rng.chance(1, 3) {
                    ""
                } else {
                    *rng.pick(&TOKENS)
                };
                lines[i] = lines[i].replacen(from, to, 1);
            }
            7 => {
                let i = rng.below(n);
                let chars: Vec<char> = lines[i].chars().collect();
                let at = rng.below(chars.len() + 1);
                let mut s: String = chars[..at].iter().collect();
                if rng.chance(1, 2) {
                    let tok = *rng.pick(&TOKENS);
                    s.push_str(tok);
                    s.extend(&chars[at..]);
                } else {
                    s.extend(chars.iter().skip(at + 1));
                }
                lines[i] = s;
            }
            8 => {
                let i = rng.below(n);
                let keep = rng.below(lines[i].chars().count() + 1);
                lines[i] = lines[i].chars().take(keep).collect();
                if rng.chance(1, 2) {
                    lines.truncate(i + 1);
                }
            }
            _ => {
                let mut b = lines.join("\n").into_bytes();
                mutate_bytes(rng, &mut b, &[]);
                t = String::from_utf8_lossy(&b).into_owned();
                continue;
            }
        }
        t = lines.join("\n");
    }
    t
}

fn is_ident(s: &str) -> bool {
    !s.is_empty()
        && !s.starts_with(|c: char| c.is_ascii_digit())
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// What `read_array` must return, from the definition of the locators.
fn reference_array<'a>(x: &Field, rec: &'a [u8]) -> Option<&'a [u8]> {
    let own = rec.get(x.offset..x.offset.checked_add(x.size)?)?;
    if x.loc == DataLoc::Inline {
        return Some(own);
    }
    if !matches!(own.len(), 1 | 2 | 4 | 8) {
        return None;
    }
    let loc = u32::try_from(get(own, 0, own.len())?).ok()?;
    let mut off = (loc & 0xffff) as usize;
    if x.loc == DataLoc::Relative {
        off += x.offset + x.size;
    }
    rec.get(off..off.checked_add((loc >> 16) as usize)?)
}

/// Parses a (possibly mutated) format and checks everything built on it:
/// the parse is Ok or a one-line Err; parsed fields are sane and read
/// within bounds; a decoder is built exactly when `check_format` accepts
/// the event, and decodes records generated from it and from `original`.
fn check_format_text(
    rng: &mut Rng,
    system: &str,
    text: &str,
    original: Option<&EventFormat>,
) -> &'static str {
    let parsed = EventFormat::parse(system, text);
    let f = match parsed {
        Err(e) => {
            assert!(!e.0.is_empty() && !e.0.contains('\n'), "{e:?}");
            let schema = one_event_schema(system, text);
            assert_one_line(&Decoder::new(&schema).unwrap_err().to_string());
            return "parse error";
        }
        Ok(f) => f,
    };
    assert!(!f.fields.is_empty());
    assert_eq!(f.system, system);
    for (k, x) in f.fields.iter().enumerate() {
        assert!(is_ident(&x.name), "{:?}", x.name);
        assert_eq!(x.common, x.name.starts_with("common_"));
        let want_loc = if x.type_text.starts_with("__data_loc") {
            DataLoc::Absolute
        } else if x.type_text.starts_with("__rel_loc") {
            DataLoc::Relative
        } else {
            DataLoc::Inline
        };
        assert_eq!(x.loc, want_loc);
        // Lookups by name find the first of duplicated fields.
        let first = f.fields.iter().position(|y| y.name == x.name).unwrap();
        assert!(first <= k);
        assert!(std::ptr::eq(f.field(&x.name).unwrap(), &f.fields[first]));
    }
    assert_eq!(
        f.own_fields().count(),
        f.fields.iter().filter(|x| !x.common).count()
    );
    // Field reads on records of any length stay within them.
    for _ in 0..2 {
        let n = rng.below(80);
        let rec = rng.bytes(n);
        for x in &f.fields {
            let own = x
                .offset
                .checked_add(x.size)
                .and_then(|end| rec.get(x.offset..end));
            assert_eq!(x.raw_bytes(&rec), own);
            let int = own.is_some() && matches!(x.size, 1 | 2 | 4 | 8);
            assert_eq!(x.read_u64(&rec).is_some(), int);
            assert_eq!(x.read_i64(&rec).is_some(), int);
            assert_eq!(x.read_array(&rec), reference_array(x, &rec));
        }
    }
    let accepted = check_format(&f).is_ok();
    let schema = one_event_schema(system, text);
    let d = Decoder::new(&schema);
    assert_eq!(d.is_ok(), accepted, "{:?}", d.err());
    let mut d = match d {
        Ok(d) => d,
        Err(e) => {
            assert_one_line(&e.to_string());
            return "parsed, refused by the decoder";
        }
    };
    let mut bytes = Vec::new();
    for fmt in [Some(&f), original].into_iter().flatten() {
        if let Some((raw, _)) = gen_raw(rng, fmt) {
            bytes.extend(tp_record(rng, 1, (1, 2, 0), &raw, false, None));
        }
    }
    let n = rng.below(64);
    let junk = rng.bytes(n);
    bytes.extend(tp_record(rng, 1, (1, 2, 0), &junk, false, None));
    decode_checked(&mut d, 0, &bytes);
    "decoder built"
}

/// An error message: something, on one line, without control characters
/// (it may quote untrusted text).
fn assert_one_line(e: &str) {
    assert!(!e.is_empty() && !e.contains(char::is_control), "{e:?}");
}

fn one_event_schema(system: &str, text: &str) -> Schema {
    Schema {
        events: vec![SchemaEvent {
            system: system.to_string(),
            format: text.to_string(),
        }],
        streams: vec![Stream {
            perf_id: 1,
            cpu: 0,
            sample_type: TRACEPOINT_SAMPLE_TYPE,
            source: StreamSource::Tracepoint { event: 0 },
        }],
    }
}

/// Every format file of the fixtures (all sets), as (system, text).
fn fixture_formats() -> Vec<(String, String)> {
    let mut out = Vec::new();
    for set in ["formats", "formats-old", "formats-rt"] {
        let dir = common::fixtures().join(set);
        for sys in std::fs::read_dir(&dir).unwrap() {
            let sys = sys.unwrap();
            for ev in std::fs::read_dir(sys.path()).unwrap() {
                let text = std::fs::read_to_string(ev.unwrap().path()).unwrap();
                out.push((sys.file_name().into_string().unwrap(), text));
            }
        }
    }
    out.sort();
    assert!(out.len() >= 21, "{}", out.len());
    out
}

#[test]
fn format_parser_on_mutated_format_files() {
    let formats = fixture_formats();
    let parsed: Vec<EventFormat> = formats
        .iter()
        .map(|(s, t)| EventFormat::parse(s, t).unwrap())
        .collect();
    let donors: Vec<String> = formats.iter().map(|(_, t)| t.clone()).collect();
    let mut tally = Tally::default();
    run("format_mutated", 900, |rng| {
        let k = rng.below(formats.len());
        let (system, text) = &formats[k];
        let system = if rng.chance(1, 16) {
            *rng.pick(&["irq_vectors", "sched", "timer", "", "x\ny"])
        } else {
            system.as_str()
        };
        let mutated = mutate_format(rng, text, &donors);
        note_input(mutated.as_bytes());
        tally.add(
            check_format_text(rng, system, &mutated, Some(&parsed[k])),
            1,
        );
    });
    tally.print("format_mutated");
}

#[test]
fn format_parser_on_random_text() {
    let mut tally = Tally::default();
    run("format_random", 500, |rng| {
        // Random lines, often of the right shape, with the names of events
        // and fields the decoder knows: some texts make a decoder.
        let mut t = String::new();
        if rng.chance(1, 2) {
            let name = *rng.pick(&["e_entry", "softirq_raise", "irq_handler_entry"]);
            t.push_str(&format!("name: {name}\nID: 5\nformat:\n"));
        }
        for _ in 0..rng.below(12) {
            match rng.below(5) {
                0 => {
                    let n = rng.below(24);
                    t.push_str(&String::from_utf8_lossy(&rng.bytes(n)));
                }
                1 | 2 => {
                    let ty = *rng.pick(&["int", "char", "u8", "__data_loc char[]", "void *", ""]);
                    let name = *rng.pick(&[
                        "vec",
                        "vector",
                        "irq",
                        "name",
                        "x",
                        "9",
                        "",
                        "a b",
                        "common_pid",
                    ]);
                    let arr = *rng.pick(&[
                        "",
                        "",
                        "[4]",
                        "[]",
                        "[N]",
                        "[",
                        "]",
                        "[99999999999999999999]",
                    ]);
                    let offset = if rng.chance(1, 2) {
                        *rng.pick(&["8", "12", "0", "16"])
                    } else {
                        *rng.pick(&BAD_NUMBERS)
                    };
                    t.push_str(&format!(
                        "\tfield:{ty} {name}{arr};\toffset:{offset};\tsize:{};\tsigned:{};",
                        rng.pick(&["1", "2", "4", "8", "16", "0", "3"]),
                        rng.pick(&["0", "1", "2", ""]),
                    ));
                }
                _ => {
                    for _ in 0..rng.below(6) {
                        let tok = *rng.pick(&TOKENS);
                        t.push_str(tok);
                        if rng.chance(1, 2) {
                            let num = *rng.pick(&BAD_NUMBERS);
                            t.push_str(num);
                        }
                    }
                }
            }
            t.push('\n');
        }
        note_input(t.as_bytes());
        let system = *rng.pick(&["irq", "irq_vectors"]);
        tally.add(check_format_text(rng, system, &t, None), 1);
    });
    tally.print("format_random");
}

/// Writes a new file over `path`. (Not truncated in place: ext4 flushes a
/// file rewritten that way when it is closed, which costs milliseconds.)
fn rewrite(path: &std::path::Path, bytes: &[u8]) {
    let _ = std::fs::remove_file(path);
    std::fs::write(path, bytes).unwrap();
}

/// `/proc/mounts` text of random lines, some tracefs, with escapes.
fn mounts_text(rng: &mut Rng) -> String {
    let mut t = String::new();
    for _ in 0..rng.below(6) {
        let mut fields: Vec<String> = Vec::new();
        for _ in 0..rng.below(7) {
            let f = match rng.below(6) {
                0 => "tracefs".to_string(),
                1 => "/sys/kernel/tracing".to_string(),
                2 => {
                    let esc = *rng.pick(&["\\040", "\\134", "\\0", "\\777", "\\", "\\12", "\\400"]);
                    format!("/a{esc}b")
                }
                3 => {
                    let n = rng.below(8);
                    String::from_utf8_lossy(&rng.bytes(n)).into_owned()
                }
                _ => (*rng.pick(&["nodev", "proc", "rw", "0", "\u{e9}"])).to_string(),
            };
            fields.push(f);
        }
        t.push_str(&fields.join(*rng.pick(&[" ", "\t", "  "])));
        t.push('\n');
    }
    t
}

#[test]
fn tracefs_reads_mutated_files() {
    let formats = fixture_formats();
    let donors: Vec<String> = formats.iter().map(|(_, t)| t.clone()).collect();
    let dir = tempfile::tempdir().unwrap();
    let fs = Tracefs::at(dir.path());
    for (system, _) in &formats {
        std::fs::create_dir_all(dir.path().join("events").join(system).join("e")).unwrap();
    }
    run("tracefs_files", 20, |rng| {
        let (system, text) = rng.pick(&formats);
        let ev = dir.path().join("events").join(system).join("e");
        let mut bytes = mutate_format(rng, text, &donors).into_bytes();
        if rng.chance(1, 8) {
            // Not UTF-8.
            bytes.push(0xff);
        }
        note_input(&bytes);
        rewrite(&ev.join("format"), &bytes);
        let id = format!(
            "{}{}",
            rng.pick(&BAD_NUMBERS),
            rng.pick(&["\n", "", " \n\n"])
        );
        rewrite(&ev.join("id"), id.as_bytes());
        let from_file = fs.read_format(system, "e").map_err(|e| e.to_string());
        match std::str::from_utf8(&bytes) {
            Ok(t) => {
                let direct = EventFormat::parse(system, t);
                assert_eq!(from_file.is_ok(), direct.is_ok());
                if let (Ok(a), Ok(b)) = (&from_file, &direct) {
                    assert_eq!(a, b);
                }
            }
            Err(_) => assert!(from_file.is_err()),
        }
        if let Err(e) = &from_file {
            assert!(!e.is_empty());
        }
        let want = id.trim().parse::<u64>().ok();
        assert_eq!(fs.event_id(system, "e").ok(), want);
        assert_eq!(fs.list_events(system), ["e"]);
    });
    run("tracefs_mounts", 100, |rng| {
        let text = mounts_text(rng);
        note_input(text.as_bytes());
        let found = tracefs_from_mounts(&text);
        let any = text
            .lines()
            .any(|l| l.split_whitespace().nth(2) == Some("tracefs"));
        assert_eq!(found.is_some(), any);
    });
}

// ---------------------------------------------------------------------------
// (d) The recording reader.

/// A writer into memory shared with the test.
#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Shared {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A recording written by [`RecordingWriter`] with `chunks`, and the
/// position of every chunk header in it.
fn write_recording(schema: &Schema, chunks: &[(u32, Vec<u8>)]) -> (Vec<u8>, Vec<usize>) {
    let out = Shared::default();
    let mut w =
        RecordingWriter::new(std::path::Path::new("mem"), Box::new(out.clone()), schema).unwrap();
    let mut at = Vec::new();
    for (cpu, bytes) in chunks {
        at.push(w.bytes_written() as usize);
        w.write_chunk(*cpu, bytes).unwrap();
    }
    w.finish().unwrap();
    let bytes = out.0.lock().unwrap().clone();
    (bytes, at)
}

/// A schema made wrong in one of the ways a recording's can be.
fn mutate_schema(rng: &mut Rng, s: &mut Schema, donors: &[String]) {
    let ne = s.events.len();
    let ns = s.streams.len();
    match rng.below(9) {
        0 if ns > 1 => {
            let (a, b) = (rng.below(ns), rng.below(ns));
            s.streams[a].perf_id = s.streams[b].perf_id;
        }
        1 if ns > 0 => {
            let i = rng.below(ns);
            s.streams[i].source = StreamSource::Tracepoint {
                event: ne + rng.below(3) - 1,
            };
        }
        2 if ns > 0 => {
            let i = rng.below(ns);
            s.streams[i].sample_type = match rng.below(4) {
                0 => rng.u64(),
                1 => s.streams[i].sample_type | PERF_SAMPLE_READ,
                2 => s.streams[i].sample_type & !PERF_SAMPLE_IDENTIFIER,
                _ => s.streams[i].sample_type ^ PERF_SAMPLE_CALLCHAIN,
            };
        }
        3 if ns > 0 => {
            let i = rng.below(ns);
            s.streams[i].source = match s.streams[i].source {
                StreamSource::CpuClock => StreamSource::Tracepoint { event: 0 },
                StreamSource::Tracepoint { .. } => StreamSource::CpuClock,
            };
        }
        4 if ne > 0 => {
            let i = rng.below(ne);
            s.events[i].format = mutate_format(rng, &s.events[i].format, donors);
        }
        5 if ne > 0 => {
            let i = rng.below(ne);
            s.events[i].system = (*rng.pick(&[
                "irq_vectors",
                "sched",
                "",
                "bogus",
                "irq",
                "x\ny",
                "\u{1b}[2J",
            ]))
            .into();
        }
        6 if ne > 1 => {
            // Formats swapped: streams decode with another event's layout.
            let (a, b) = (rng.below(ne), rng.below(ne));
            s.events.swap(a, b);
        }
        7 if ne > 0 => {
            s.events.remove(rng.below(ne));
        }
        _ if ns > 0 => {
            let i = rng.below(ns);
            s.streams[i].cpu = rng.u32();
            s.streams[i].perf_id = interesting(rng, s.streams[i].perf_id);
        }
        _ => {}
    }
}

/// Parses a (possibly mutated) recording file and checks it: Ok or a clean
/// Err; the chunks are the file's bytes where the walk says they are, up to
/// a cut that sets `truncated`; and decoding balances per chunk and in total.
fn check_recording(b: &[u8], tally: &mut Tally) -> Option<Recording> {
    let rec = match Recording::parse(b) {
        Ok(r) => r,
        Err(e) => {
            assert_one_line(&e);
            tally.add("refused", 1);
            return None;
        }
    };
    if rec.truncated {
        tally.add("read, truncated", 1);
    }
    let hlen = get(b, 16, 4).unwrap() as usize;
    let mut pos = 20 + hlen;
    for c in &rec.chunks {
        assert_eq!(get(b, pos, 4), Some(u64::from(c.cpu)));
        assert_eq!(get(b, pos + 4, 4), Some(c.bytes.len() as u64));
        assert_eq!(&b[pos + 8..pos + 8 + c.bytes.len()], &c.bytes[..]);
        pos += 8 + c.bytes.len();
    }
    if rec.truncated {
        let rest = b.len() - pos;
        assert!(rest > 0);
        assert!(rest < 8 || get(b, pos + 4, 4).unwrap() as usize > rest - 8);
    } else {
        assert_eq!(pos, b.len());
    }
    let mut d = match rec.decoder() {
        Ok(d) => d,
        Err(e) => {
            assert_one_line(&e.to_string());
            tally.add("read, schema refused by the decoder", 1);
            return Some(rec);
        }
    };
    tally.add("read and decoded", 1);
    let mut per_chunk = d.clone();
    let mut out = Vec::new();
    let total = rec.decode_with(&mut d, &mut |x| out.push(x));
    let mut sum = DecodeStats::default();
    let mut out2 = Vec::new();
    for c in &rec.chunks {
        let (o, st) = decode_checked(&mut per_chunk, c.cpu, &c.bytes);
        sum.add(&st);
        out2.extend(o);
    }
    assert_eq!(total, sum);
    assert_eq!(*d.stats(), total);
    tally.stats(&total);
    assert_eq!(out, out2);
    Some(rec)
}

#[test]
fn recording_reader_on_mutated_files() {
    let small = World::small();
    let real = real_recording();
    let real_world = World::new(real.parsed.schema().clone());
    let donors: Vec<String> = fixture_formats().into_iter().map(|(_, t)| t).collect();
    let mut tally = Tally::default();
    run("recording", 250, |rng| {
        // A base: a small synthetic recording, or the real header with a
        // few chunks of real records.
        let use_real = rng.chance(1, 8);
        let (schema, chunks): (&Schema, Vec<(u32, Vec<u8>)>) = if use_real {
            let chunks = (0..rng.within(1, 4))
                .map(|_| {
                    let n = rng.within(1, 8);
                    let at = rng.below(real.records.len() - n);
                    (0, real.records[at..at + n].concat())
                })
                .collect();
            (real.parsed.schema(), chunks)
        } else {
            let chunks = (0..rng.within(0, 5))
                .map(|_| (rng.below(2) as u32, gen_stream(rng, &small, 6).0))
                .collect();
            (&small.schema, chunks)
        };
        let (mut b, heads) = write_recording(schema, &chunks);
        let full_len = b.len();
        let hlen = get(&b, 16, 4).unwrap() as usize;
        let mutation = rng.below(9);
        match mutation {
            0 => {
                // Cut anywhere: exactly the whole chunks before the cut.
                let cut = rng.below(b.len() + 1);
                b.truncate(cut);
                note_input(&b);
                let rec = check_recording(&b, &mut tally);
                if cut < 20 + hlen {
                    assert!(rec.is_none());
                } else {
                    let rec = rec.unwrap();
                    let whole = heads
                        .iter()
                        .zip(&chunks)
                        .filter(|(&h, c)| h + 8 + c.1.len() <= cut)
                        .count();
                    assert_eq!(rec.chunks.len(), whole);
                    let boundary = cut == 20 + hlen || cut == full_len || heads.contains(&cut);
                    assert_eq!(rec.truncated, !boundary);
                }
                return;
            }
            1 => {
                // The container header: magic, version, flags, header length.
                let at = *rng.pick(&[0, 8, 12, 16, 16, 16]);
                let v = interesting(rng, get(&b, at, 4).unwrap());
                put(&mut b, at, 4, v);
            }
            2 if !heads.is_empty() => {
                // A chunk header: its CPU, or a length that lies.
                let i = rng.below(heads.len());
                let at = heads[i] + if rng.chance(1, 4) { 0 } else { 4 };
                let hint = (b.len() - heads[i]) as u64;
                let v = interesting(rng, hint);
                put(&mut b, at, 4, v);
            }
            3 | 4 if !heads.is_empty() => {
                // Records inside a chunk (the chunk length kept right).
                let i = rng.below(heads.len());
                let start = heads[i] + 8;
                let end = start + chunks[i].1.len();
                let w = if use_real { &real_world } else { &small };
                let mut body = b[start..end].to_vec();
                let m = metas(w, &body);
                mutate_stream(rng, w, &mut body, &m, &[]);
                put(&mut b, heads[i] + 4, 4, body.len() as u64);
                b.splice(start..end, body);
            }
            5 | 6 => {
                // The schema in the JSON header, written back well-formed.
                let json = &b[20..20 + hlen];
                let mut header: RecordingHeader = serde_json::from_slice(json).unwrap();
                for _ in 0..rng.within(1, 2) {
                    mutate_schema(rng, &mut header.schema, &donors);
                }
                if rng.chance(1, 4) {
                    header.kernel = None;
                }
                let json = serde_json::to_vec(&header).unwrap();
                let mut nb = b[..16].to_vec();
                nb.extend_from_slice(&(json.len() as u32).to_le_bytes());
                nb.extend_from_slice(&json);
                nb.extend_from_slice(&b[20 + hlen..]);
                b = nb;
            }
            7 => {
                // Bytes of the JSON header.
                let at = 20 + rng.below(hlen);
                b[at] = *rng.pick(&[b'"', b'{', b'}', b'[', b'9', b'-', 0, 0xff, b'\\']);
            }
            _ => {
                for _ in 0..rng.within(1, 4) {
                    mutate_bytes(rng, &mut b, &[]);
                }
            }
        }
        note_input(&b);
        check_recording(&b, &mut tally);
    });
    tally.print("recording");
}

#[test]
fn recording_reader_reads_files_the_same_as_bytes() {
    let small = World::small();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.lstrace");
    run("recording_files", 10, |rng| {
        let chunks: Vec<(u32, Vec<u8>)> = (0..rng.within(0, 3))
            .map(|_| (0, gen_stream(rng, &small, 4).0))
            .collect();
        let (mut b, _) = write_recording(&small.schema, &chunks);
        for _ in 0..rng.below(3) {
            mutate_bytes(rng, &mut b, &[]);
        }
        note_input(&b);
        rewrite(&path, &b);
        let from_file = Recording::read(&path);
        let from_bytes = Recording::parse(&b);
        match (from_file, from_bytes) {
            (Ok(a), Ok(b)) => assert_eq!(a, b),
            (Err(e), Err(r)) => assert!(e.to_string().contains(&r)),
            (a, b) => panic!("file {a:?}, bytes {b:?}"),
        }
    });
}

// ---------------------------------------------------------------------------
// Kernel symbols (`/proc/kallsyms`, also read by the tracer).

const KALLSYMS: &str = "\
ffffffff81000000 T _stext
ffffffff81000000 T startup_64
ffffffff81000100 t __pfx_do_one
ffffffff81000110 t do_one
ffffffff81000200 D some_data
ffffffff81000300 T hrtimer_wakeup
ffffffffc0001000 t virtnet_poll\t[virtio_net]
ffffffffc0002000 T e1000_intr\t[e1000]
ffffffffc0002100 t e1000_clean\t[e1000]
";

#[test]
fn kallsyms_parser_on_mutated_text() {
    let donors = vec![KALLSYMS.to_string()];
    run("kallsyms", 100, |rng| {
        let mut lines: Vec<String> = KALLSYMS.lines().map(str::to_string).collect();
        for _ in 0..rng.within(1, 4) {
            let n = lines.len();
            let i = rng.below(n.max(1));
            match rng.below(5) {
                0 if n > 0 => {
                    lines.remove(i);
                }
                1 if n > 0 => {
                    let addr = *rng.pick(&[
                        "0",
                        "ffffffffffffffff",
                        "10000000000000000",
                        "",
                        "-1",
                        "zz",
                        "0000000000000000",
                    ]);
                    let rest = lines[i].split_once(' ').map_or("", |x| x.1).to_string();
                    lines[i] = format!("{addr} {rest}");
                }
                2 if n > 0 => {
                    let extra = *rng.pick(&["[", "]", "[]", "\t[m]\t[n]", " t", " T x"]);
                    lines[i].push_str(extra);
                }
                3 => {
                    let l = mutate_format(rng, &lines.get(i).cloned().unwrap_or_default(), &donors);
                    lines.insert(i.min(n), l);
                }
                _ => {
                    let a = rng.u64();
                    let ty = *rng.pick(&["t", "T", "d", "", "tt"]);
                    lines.push(format!("{a:016x} {ty} f{}", rng.below(9)));
                }
            }
        }
        let text = lines.join("\n");
        note_input(text.as_bytes());
        let Ok(k) = Kallsyms::parse(&text) else {
            return;
        };
        assert!(!k.is_empty());
        for _ in 0..4 {
            let addr = match rng.below(3) {
                0 => rng.u64(),
                1 => 0xffff_ffff_8100_0000 + rng.below(0x400) as u64,
                _ => *rng.pick(&[0, u64::MAX, 0xffff_ffff_c000_2100]),
            };
            if let Some(s) = k.resolve(addr) {
                assert!(s.offset < 1 << 20);
                assert!(s.offset <= addr);
                assert!(text.contains(s.name) || s.name == "?");
                assert!(s.module.map_or(true, |m| text.contains(m)));
            }
        }
    });
}

// ---------------------------------------------------------------------------
// Regressions: inputs the cases above found, kept as they were found.

/// Found by `recording_reader_on_mutated_files` (LATSCOPE_ROBUST_REPLAY=
/// 0x8fb30025339672f9): a header whose stream source reads
/// "\n\tfieltracepoint" was refused with serde_json's message, which quotes
/// the file's text as it is: two lines, and whatever escape sequences a
/// crafted recording holds.
#[test]
fn regression_bad_header_message_is_one_line() {
    let world = World::small();
    let (b, _) = write_recording(&world.schema, &[(0, Vec::new())]);
    let hlen = get(&b, 16, 4).unwrap() as usize;
    let json = std::str::from_utf8(&b[20..20 + hlen]).unwrap();
    let bad = json.replacen("\"tracepoint\"", "\"\\n\\tfieltracepoint\\u001b[2J\"", 1);
    assert_ne!(bad, json);
    let mut file = b[..16].to_vec();
    file.extend_from_slice(&(bad.len() as u32).to_le_bytes());
    file.extend_from_slice(bad.as_bytes());
    file.extend_from_slice(&b[20 + hlen..]);
    let e = Recording::parse(&file).unwrap_err();
    assert!(e.starts_with("bad header: unknown variant"), "{e}");
    assert!(e.contains("\\n\\tfieltracepoint\\u{1b}[2J"), "{e}");
    assert_one_line(&e);
}

/// Found with the one above: a recording's event names go into the
/// decoder's errors, which quoted them as they were.
#[test]
fn regression_decoder_errors_quote_recorded_names_on_one_line() {
    let text = common::format_text("formats", "sched", "sched_switch");
    for (system, format) in [
        ("x\ny", text.clone()),
        (
            "sched",
            text.replace("sched_switch\n", "sched_switch\u{1b}[2J\n"),
        ),
        ("sched\n", "garbage".to_string()),
    ] {
        let e = Decoder::new(&one_event_schema(system, &format)).unwrap_err();
        assert_one_line(&e.to_string());
    }
}

// ---------------------------------------------------------------------------
// The BPF backend's records: what the kernel's programs write into the
// flight recorder and the sample rings, read back from shared memory.

#[test]
fn bpf_records() {
    use latscope_platform::bpf::{RecordedEvent, TimerRecord, RECORD_BYTES, TIMER_RECORD_BYTES};
    let mut names = Names::default();
    let mut tally = Tally::default();
    run("bpf_records", 300, |rng| {
        let extra = rng.below(16);
        let mut b = rng.bytes(RECORD_BYTES + extra);
        // Mostly a known kind (byte 20) with a vector index in range
        // (byte 21), then mutations.
        if rng.chance(7, 8) {
            b[20] = rng.within(1, 15) as u8;
            b[21] = rng.below(12) as u8;
        }
        if rng.chance(1, 4) {
            let n = rng.below(RECORD_BYTES + 1);
            b.truncate(n);
        }
        note_input(&b);
        let cpu = rng.below(1 << 20) as u32;
        let Some(ev) = RecordedEvent::parse(&b, cpu) else {
            tally.add("refused", 1);
            return;
        };
        assert!(b.len() >= RECORD_BYTES, "a short record parsed");
        tally.add("parsed", 1);
        let again = ev.to_bytes(1).and_then(|x| RecordedEvent::parse(&x, cpu));
        assert_eq!(again, Some(ev), "a record reads back as written");
        let t =
            latscope_trace::bpf::convert(&ev, &mut names).expect("every parsed record converts");
        assert_eq!((t.time, t.cpu, t.tid), (ev.time, ev.cpu, ev.tid));
        let n = rng.below(TIMER_RECORD_BYTES + 8);
        let r = TimerRecord::parse(&b[..n.min(b.len())]);
        assert_eq!(r.is_some(), n.min(b.len()) >= TIMER_RECORD_BYTES);
    });
    tally.print("bpf_records");
}
