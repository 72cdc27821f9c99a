//! Recordings: written, read back and decoded through the same decoder.
#![allow(clippy::unwrap_used)]

use crate::common;

use common::{lost, stack_sample, Fixture, V};
use latscope_trace::recording::{Recording, RecordingWriter};
use latscope_trace::Decoded;

fn stream(fx: &Fixture, cpu: u32) -> Vec<u8> {
    let mut buf = Vec::new();
    buf.extend(fx.sample(
        "irq_handler_entry",
        cpu,
        0,
        5,
        &[("irq", V::I(24)), ("name", V::S("virtio0"))],
    ));
    buf.extend(fx.sample(
        "sched_switch",
        cpu,
        0,
        6,
        &[("prev_comm", V::S("a")), ("next_pid", V::I(3))],
    ));
    buf.extend(stack_sample(fx.id("stack", cpu), 1, 2, 7, cpu, &[1, 2, 3]));
    buf.extend(lost(fx.id("sched_switch", cpu), 2));
    buf
}

#[test]
fn round_trip() {
    let fx = Fixture::new(&[0, 1]);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.lstrace");
    let mut w = RecordingWriter::create(&path, &fx.schema).unwrap();
    w.write_chunk(0, &stream(&fx, 0)).unwrap();
    w.write_chunk(1, &stream(&fx, 1)).unwrap();
    w.write_chunk(0, &stream(&fx, 0)).unwrap();
    let size = w.finish().unwrap();
    assert_eq!(size, std::fs::metadata(&path).unwrap().len());

    let rec = Recording::read(&path).unwrap();
    assert!(!rec.truncated);
    assert_eq!(rec.schema(), &fx.schema);
    assert_eq!(rec.chunks.len(), 3);
    assert_eq!(rec.chunks[1].cpu, 1);

    let mut out = Vec::new();
    let d = rec.decode(&mut |x| out.push(x)).unwrap();
    assert_eq!(out.len(), 12);
    assert_eq!(d.stats().events, 6);
    assert_eq!(d.stats().stacks, 3);
    assert_eq!(d.stats().lost, 6);
    assert!(matches!(out[4], Decoded::Event(e) if e.cpu == 1));
    assert_eq!(out[7], Decoded::Lost { cpu: 1, count: 2 });

    // The same bytes through a decoder built directly give the same output.
    let mut direct = latscope_trace::Decoder::new(&fx.schema).unwrap();
    let mut out2 = Vec::new();
    for (cpu, bytes) in [
        (0, stream(&fx, 0)),
        (1, stream(&fx, 1)),
        (0, stream(&fx, 0)),
    ] {
        direct.decode(cpu, &bytes, &mut |x| out2.push(x));
    }
    assert_eq!(out, out2);
}

#[test]
fn a_cut_file_keeps_its_whole_chunks() {
    let fx = Fixture::new(&[0]);
    let mut bytes = Vec::new();
    {
        let sink: Box<dyn std::io::Write + Send> = Box::new(SharedVec);
        let mut w = RecordingWriter::new(std::path::Path::new("mem"), sink, &fx.schema).unwrap();
        w.write_chunk(0, &stream(&fx, 0)).unwrap();
        w.write_chunk(0, &stream(&fx, 0)).unwrap();
        w.finish().unwrap();
        SHARED.with(|s| bytes = s.borrow().clone());
    }
    let full = Recording::parse(&bytes).unwrap();
    assert_eq!(full.chunks.len(), 2);
    let cut = Recording::parse(&bytes[..bytes.len() - 5]).unwrap();
    assert!(cut.truncated);
    assert_eq!(cut.chunks.len(), 1);
    let cut = Recording::parse(&bytes[..bytes.len() - stream(&fx, 0).len() - 4]).unwrap();
    assert!(cut.truncated);
    assert_eq!(cut.chunks.len(), 1);

    assert!(Recording::parse(b"nonsense").is_err());
    let mut wrong = bytes.clone();
    wrong[8] = 9;
    assert!(Recording::parse(&wrong).unwrap_err().contains("version"));
    assert!(Recording::parse(&bytes[..30]).is_err());
}

thread_local! {
    static SHARED: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// A writer into a thread-local buffer (the test reads it back).
struct SharedVec;

impl std::io::Write for SharedVec {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        SHARED.with(|s| s.borrow_mut().extend_from_slice(b));
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
