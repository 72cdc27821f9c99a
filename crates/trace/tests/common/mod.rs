//! Helpers shared by the integration tests: fixture formats, and perf
//! records built byte by byte the way the kernel lays them out.
#![allow(dead_code, clippy::unwrap_used)]

use std::collections::HashMap;
use std::path::PathBuf;

use latscope_platform::perf::{
    CPU_CLOCK_SAMPLE_TYPE, PERF_RECORD_LOST, PERF_RECORD_SAMPLE, TRACEPOINT_SAMPLE_TYPE,
};
use latscope_trace::decode::{Schema, SchemaEvent, Stream, StreamSource};
use latscope_trace::format::DataLoc;
use latscope_trace::ring::build_record;
use latscope_trace::EventFormat;

pub fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

pub fn format_text(set: &str, system: &str, name: &str) -> String {
    let p = fixtures().join(set).join(system).join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

pub fn format(system: &str, name: &str) -> EventFormat {
    EventFormat::parse(system, &format_text("formats", system, name)).unwrap()
}

/// Every fixture format as (system, name).
pub fn all_fixture_events() -> Vec<(String, String)> {
    let mut out = Vec::new();
    for sys in std::fs::read_dir(fixtures().join("formats")).unwrap() {
        let sys = sys.unwrap();
        for ev in std::fs::read_dir(sys.path()).unwrap() {
            out.push((
                sys.file_name().into_string().unwrap(),
                ev.unwrap().file_name().into_string().unwrap(),
            ));
        }
    }
    out.sort();
    out
}

/// A field value for [`raw`].
pub enum V<'a> {
    I(i64),
    S(&'a str),
}

/// The raw tracepoint data of `f` with the given fields set (others zero),
/// `common_type` set to the event id, strings NUL-terminated.
pub fn raw(f: &EventFormat, values: &[(&str, V)]) -> Vec<u8> {
    let fixed = f.fields.iter().map(|x| x.offset + x.size).max().unwrap();
    let mut out = vec![0u8; fixed];
    let put_int = |out: &mut Vec<u8>, off: usize, size: usize, v: i64| {
        let b = v.to_ne_bytes();
        // Little-endian machines: the low bytes come first.
        out[off..off + size].copy_from_slice(&b[..size]);
    };
    let ct = f.field("common_type").unwrap();
    put_int(&mut out, ct.offset, ct.size, f.id as i64);
    for (name, v) in values {
        let field = f.field(name).unwrap_or_else(|| panic!("no field {name}"));
        match v {
            V::I(i) => put_int(&mut out, field.offset, field.size, *i),
            V::S(s) if field.loc == DataLoc::Inline => {
                let n = s.len().min(field.size - 1);
                out[field.offset..field.offset + n].copy_from_slice(&s.as_bytes()[..n]);
            }
            V::S(s) => {
                let at = out.len();
                out.extend_from_slice(s.as_bytes());
                out.push(0);
                let len = s.len() + 1;
                let off = if field.loc == DataLoc::Relative {
                    at - (field.offset + field.size)
                } else {
                    at
                };
                let loc = (off as u32) | ((len as u32) << 16);
                put_int(&mut out, field.offset, 4, i64::from(loc));
            }
        }
    }
    out
}

/// A PERF_RECORD_SAMPLE with TRACEPOINT_SAMPLE_TYPE.
pub fn tp_sample(id: u64, tid: u32, time: u64, cpu: u32, raw: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend_from_slice(&id.to_ne_bytes());
    body.extend_from_slice(&tid.to_ne_bytes()); // pid
    body.extend_from_slice(&tid.to_ne_bytes());
    body.extend_from_slice(&time.to_ne_bytes());
    body.extend_from_slice(&cpu.to_ne_bytes());
    body.extend_from_slice(&0u32.to_ne_bytes());
    // The kernel pads the raw data so that u32 size + data is 8-aligned
    // and counts the padding in size.
    let padded = (raw.len() + 4).next_multiple_of(8) - 4;
    body.extend_from_slice(&(padded as u32).to_ne_bytes());
    body.extend_from_slice(raw);
    body.resize(body.len() + padded - raw.len(), 0);
    build_record(PERF_RECORD_SAMPLE, 0, &body)
}

/// A PERF_RECORD_SAMPLE with CPU_CLOCK_SAMPLE_TYPE (kernel chain).
pub fn stack_sample(id: u64, ip: u64, tid: u32, time: u64, cpu: u32, chain: &[u64]) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend_from_slice(&id.to_ne_bytes());
    body.extend_from_slice(&ip.to_ne_bytes());
    body.extend_from_slice(&tid.to_ne_bytes());
    body.extend_from_slice(&tid.to_ne_bytes());
    body.extend_from_slice(&time.to_ne_bytes());
    body.extend_from_slice(&cpu.to_ne_bytes());
    body.extend_from_slice(&0u32.to_ne_bytes());
    // PERF_CONTEXT_KERNEL marker, then the addresses.
    body.extend_from_slice(&((chain.len() + 1) as u64).to_ne_bytes());
    body.extend_from_slice(&(-128i64 as u64).to_ne_bytes());
    for ip in chain {
        body.extend_from_slice(&ip.to_ne_bytes());
    }
    build_record(latscope_platform::perf::PERF_RECORD_SAMPLE, 0, &body)
}

pub fn lost(id: u64, count: u64) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend_from_slice(&id.to_ne_bytes());
    body.extend_from_slice(&count.to_ne_bytes());
    build_record(PERF_RECORD_LOST, 0, &body)
}

/// A schema over every fixture format on `cpus`, with stack sampling on
/// each; and the perf id of each (event name, cpu) ("stack" for cpu-clock).
pub struct Fixture {
    pub schema: Schema,
    pub formats: HashMap<String, EventFormat>,
    pub ids: HashMap<(String, u32), u64>,
}

impl Fixture {
    pub fn new(cpus: &[u32]) -> Fixture {
        let mut schema = Schema::default();
        let mut formats = HashMap::new();
        let mut ids = HashMap::new();
        let mut next_id = 100u64;
        for (i, (sys, name)) in all_fixture_events().into_iter().enumerate() {
            let text = format_text("formats", &sys, &name);
            formats.insert(name.clone(), EventFormat::parse(&sys, &text).unwrap());
            schema.events.push(SchemaEvent {
                system: sys,
                format: text,
            });
            for &cpu in cpus {
                schema.streams.push(Stream {
                    perf_id: next_id,
                    cpu,
                    sample_type: TRACEPOINT_SAMPLE_TYPE,
                    source: StreamSource::Tracepoint { event: i },
                });
                ids.insert((name.clone(), cpu), next_id);
                next_id += 1;
            }
        }
        for &cpu in cpus {
            schema.streams.push(Stream {
                perf_id: next_id,
                cpu,
                sample_type: CPU_CLOCK_SAMPLE_TYPE,
                source: StreamSource::CpuClock,
            });
            ids.insert(("stack".to_string(), cpu), next_id);
            next_id += 1;
        }
        Fixture {
            schema,
            formats,
            ids,
        }
    }

    pub fn id(&self, name: &str, cpu: u32) -> u64 {
        self.ids[&(name.to_string(), cpu)]
    }

    pub fn fmt(&self, name: &str) -> &EventFormat {
        &self.formats[name]
    }

    /// A tracepoint sample of event `name` on `cpu`.
    pub fn sample(
        &self,
        name: &str,
        cpu: u32,
        tid: u32,
        time: u64,
        values: &[(&str, V)],
    ) -> Vec<u8> {
        let raw = raw(self.fmt(name), values);
        tp_sample(self.id(name, cpu), tid, time, cpu, &raw)
    }
}
