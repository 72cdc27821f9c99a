//! Decoding synthetic perf records built from the captured formats.
#![allow(clippy::unwrap_used)]

use crate::common;

use common::{lost, stack_sample, tp_sample, Fixture, V};
use latscope_platform::perf::{PERF_RECORD_LOST_SAMPLES, PERF_RECORD_THROTTLE};
use latscope_trace::decode::{Schema, SchemaEvent, Stream, StreamSource};
use latscope_trace::ring::build_record;
use latscope_trace::{Comm, Decoded, Decoder, EventFormat, EventKind, StackSample, TraceEvent};
use proptest::prelude::*;

fn decode_all(d: &mut Decoder, cpu: u32, bytes: &[u8]) -> Vec<Decoded> {
    let mut out = Vec::new();
    d.decode(cpu, bytes, &mut |x| out.push(x));
    out
}

fn event(d: &Decoded) -> &TraceEvent {
    match d {
        Decoded::Event(e) => e,
        other => panic!("not an event: {other:?}"),
    }
}

#[test]
fn every_event_kind_decodes() {
    let fx = Fixture::new(&[0, 1]);
    let mut d = Decoder::new(&fx.schema).unwrap();
    let mut buf = Vec::new();
    let t = 1_000_000_000u64;
    buf.extend(fx.sample(
        "hrtimer_start",
        1,
        42,
        t,
        &[
            ("hrtimer", V::I(0x1111)),
            ("function", V::I(0x2222)),
            ("expires", V::I(5_000)),
            ("softexpires", V::I(4_000)),
            ("mode", V::I(1)),
            ("was_armed", V::I(1)),
        ],
    ));
    buf.extend(fx.sample(
        "hrtimer_expire_entry",
        1,
        0,
        t + 1,
        &[
            ("hrtimer", V::I(0x1111)),
            ("now", V::I(5_100)),
            ("function", V::I(0x2222)),
        ],
    ));
    buf.extend(fx.sample(
        "hrtimer_expire_exit",
        1,
        0,
        t + 2,
        &[("hrtimer", V::I(0x1111))],
    ));
    buf.extend(fx.sample(
        "sched_waking",
        1,
        0,
        t + 3,
        &[
            ("comm", V::S("cyclic")),
            ("pid", V::I(42)),
            ("prio", V::I(4)),
            ("target_cpu", V::I(1)),
        ],
    ));
    buf.extend(fx.sample(
        "sched_switch",
        1,
        0,
        t + 4,
        &[
            ("prev_comm", V::S("swapper/1")),
            ("prev_pid", V::I(0)),
            ("prev_prio", V::I(120)),
            ("prev_state", V::I(0)),
            ("next_comm", V::S("a-very-long-task-name")),
            ("next_pid", V::I(42)),
            ("next_prio", V::I(4)),
        ],
    ));
    buf.extend(fx.sample(
        "irq_handler_entry",
        1,
        0,
        t + 5,
        &[("irq", V::I(24)), ("name", V::S("virtio0"))],
    ));
    buf.extend(fx.sample(
        "irq_handler_exit",
        1,
        0,
        t + 6,
        &[("irq", V::I(24)), ("ret", V::I(1))],
    ));
    buf.extend(fx.sample("softirq_raise", 1, 0, t + 7, &[("vec", V::I(1))]));
    buf.extend(fx.sample("softirq_entry", 1, 0, t + 8, &[("vec", V::I(1))]));
    buf.extend(fx.sample("softirq_exit", 1, 0, t + 9, &[("vec", V::I(1))]));
    buf.extend(fx.sample("local_timer_entry", 1, 0, t + 10, &[("vector", V::I(236))]));
    buf.extend(fx.sample("local_timer_exit", 1, 0, t + 11, &[("vector", V::I(236))]));
    buf.extend(fx.sample(
        "nmi_handler",
        1,
        0,
        t + 12,
        &[
            ("handler", V::I(0x3333)),
            ("delta_ns", V::I(-7)),
            ("handled", V::I(1)),
        ],
    ));
    buf.extend(fx.sample(
        "workqueue_execute_start",
        1,
        9,
        t + 13,
        &[("work", V::I(0x44)), ("function", V::I(0x55))],
    ));
    buf.extend(fx.sample(
        "workqueue_execute_end",
        1,
        9,
        t + 14,
        &[("work", V::I(0x44)), ("function", V::I(0x55))],
    ));
    buf.extend(fx.sample(
        "irq_handler_entry",
        1,
        0,
        t + 15,
        &[("irq", V::I(25)), ("name", V::S("virtio0"))],
    ));
    buf.extend(stack_sample(
        fx.id("stack", 1),
        0xffffffff81000010,
        42,
        t + 16,
        1,
        &[0xffffffff81000010, 0xffffffff81000500],
    ));
    buf.extend(lost(fx.id("sched_switch", 1), 17));

    let out = decode_all(&mut d, 1, &buf);
    assert_eq!(out.len(), 18);
    let names = d.names().clone();
    let e = event(&out[0]);
    assert_eq!((e.time, e.cpu, e.tid), (t, 1, 42));
    assert_eq!(
        e.kind,
        EventKind::HrtimerStart {
            hrtimer: 0x1111,
            function: 0x2222,
            expires: 5_000,
            softexpires: 4_000
        }
    );
    assert_eq!(
        event(&out[1]).kind,
        EventKind::HrtimerExpireEntry {
            hrtimer: 0x1111,
            now: 5_100,
            function: 0x2222
        }
    );
    assert_eq!(
        event(&out[2]).kind,
        EventKind::HrtimerExpireExit { hrtimer: 0x1111 }
    );
    assert_eq!(
        event(&out[3]).kind,
        EventKind::SchedWaking {
            pid: 42,
            prio: 4,
            target_cpu: 1,
            comm: Comm::from_bytes(b"cyclic")
        }
    );
    match event(&out[4]).kind {
        EventKind::SchedSwitch {
            prev_pid,
            prev_prio,
            prev_state,
            prev_comm,
            next_pid,
            next_prio,
            next_comm,
        } => {
            assert_eq!(
                (prev_pid, prev_prio, prev_state, next_pid, next_prio),
                (0, 120, 0, 42, 4)
            );
            assert_eq!(prev_comm.as_str(), "swapper/1");
            // Truncated to the kernel's 15 characters.
            assert_eq!(next_comm.as_str(), "a-very-long-tas");
        }
        ref k => panic!("{k:?}"),
    }
    match event(&out[5]).kind {
        EventKind::IrqEntry { irq: 24, name } => assert_eq!(names.get(name), "virtio0"),
        ref k => panic!("{k:?}"),
    }
    assert_eq!(event(&out[6]).kind, EventKind::IrqExit { irq: 24, ret: 1 });
    assert_eq!(event(&out[7]).kind, EventKind::SoftirqRaise { vec: 1 });
    assert_eq!(event(&out[8]).kind, EventKind::SoftirqEntry { vec: 1 });
    assert_eq!(event(&out[9]).kind, EventKind::SoftirqExit { vec: 1 });
    match (event(&out[10]).kind, event(&out[11]).kind) {
        (
            EventKind::VectorEntry {
                name: a,
                vector: 236,
            },
            EventKind::VectorExit {
                name: b,
                vector: 236,
            },
        ) => {
            assert_eq!(a, b);
            assert_eq!(names.get(a), "local_timer");
        }
        k => panic!("{k:?}"),
    }
    assert_eq!(
        event(&out[12]).kind,
        EventKind::Nmi {
            handler: 0x3333,
            delta_ns: -7,
            handled: 1
        }
    );
    assert_eq!(
        event(&out[13]).kind,
        EventKind::WorkStart {
            work: 0x44,
            function: 0x55
        }
    );
    assert_eq!(event(&out[13]).tid, 9);
    assert_eq!(
        event(&out[14]).kind,
        EventKind::WorkEnd {
            work: 0x44,
            function: 0x55
        }
    );
    // The same IRQ name is interned once.
    match (event(&out[5]).kind, event(&out[15]).kind) {
        (EventKind::IrqEntry { name: a, .. }, EventKind::IrqEntry { name: b, irq: 25 }) => {
            assert_eq!(a, b)
        }
        k => panic!("{k:?}"),
    }
    assert_eq!(
        out[16],
        Decoded::Stack(StackSample {
            time: t + 16,
            cpu: 1,
            tid: 42,
            ips: vec![0xffffffff81000010, 0xffffffff81000500]
        })
    );
    assert_eq!(out[17], Decoded::Lost { cpu: 1, count: 17 });

    let st = *d.stats();
    assert_eq!(st.records, 18);
    assert_eq!(st.events, 16);
    assert_eq!(st.stacks, 1);
    assert_eq!((st.lost_records, st.lost), (1, 17));
    assert_eq!((st.malformed, st.unknown_id, st.skipped), (0, 0, 0));
    assert_eq!(st.bytes, buf.len() as u64);
}

#[test]
fn older_layout_decodes_the_same_values() {
    // The hand-written reordered layout: same values come out.
    for set in ["formats-old", "formats-rt", "formats"] {
        let text = common::format_text(set, "timer", "hrtimer_start");
        let f = EventFormat::parse("timer", &text).unwrap();
        let schema = Schema {
            events: vec![SchemaEvent {
                system: "timer".into(),
                format: text,
            }],
            streams: vec![Stream {
                perf_id: 7,
                cpu: 0,
                sample_type: latscope_platform::perf::TRACEPOINT_SAMPLE_TYPE,
                source: StreamSource::Tracepoint { event: 0 },
            }],
        };
        let mut d = Decoder::new(&schema).unwrap();
        let raw = common::raw(
            &f,
            &[
                ("hrtimer", V::I(1)),
                ("function", V::I(2)),
                ("expires", V::I(-3)),
                ("softexpires", V::I(4)),
            ],
        );
        let out = decode_all(&mut d, 0, &tp_sample(7, 5, 6, 0, &raw));
        assert_eq!(
            event(&out[0]).kind,
            EventKind::HrtimerStart {
                hrtimer: 1,
                function: 2,
                expires: -3,
                softexpires: 4
            },
            "{set}"
        );
    }
}

#[test]
fn bad_records_are_counted_not_fatal() {
    let fx = Fixture::new(&[0]);
    let mut d = Decoder::new(&fx.schema).unwrap();
    let good = fx.sample("softirq_entry", 0, 1, 10, &[("vec", V::I(3))]);

    // Unknown id.
    let unknown = tp_sample(99_999, 1, 10, 0, &common::raw(fx.fmt("softirq_entry"), &[]));
    // Raw data shorter than the format's fields.
    let short_raw = tp_sample(fx.id("sched_switch", 0), 1, 10, 0, &[0u8; 12]);
    // A sample record cut right after the id.
    let cut = build_record(
        latscope_platform::perf::PERF_RECORD_SAMPLE,
        0,
        &fx.id("softirq_entry", 0).to_ne_bytes(),
    );
    // Throttle records are not used.
    let throttle = build_record(PERF_RECORD_THROTTLE, 0, &[0u8; 24]);
    // A LOST_SAMPLES record.
    let ls = build_record(PERF_RECORD_LOST_SAMPLES, 0, &5u64.to_ne_bytes());

    let mut buf = Vec::new();
    for r in [&good, &unknown, &short_raw, &cut, &throttle, &ls, &good] {
        buf.extend_from_slice(r);
    }
    // Then a header claiming more bytes than there are: decoding stops there.
    buf.extend_from_slice(&good[..good.len() - 8]);
    let out = decode_all(&mut d, 0, &buf);
    assert_eq!(out.len(), 3);
    assert_eq!(out[1], Decoded::Lost { cpu: 0, count: 5 });
    let st = *d.stats();
    assert_eq!(st.events, 2);
    assert_eq!(st.unknown_id, 1);
    assert_eq!(st.malformed, 3);
    assert_eq!(st.skipped, 1);
    assert_eq!(st.lost, 5);
    assert_eq!(st.records, 7);
}

#[test]
fn schema_errors() {
    let fx = Fixture::new(&[0]);
    let mut s = fx.schema.clone();
    s.streams[0].source = StreamSource::Tracepoint { event: 999 };
    assert!(Decoder::new(&s).is_err());
    let mut s = fx.schema.clone();
    s.streams[1].perf_id = s.streams[0].perf_id;
    assert!(Decoder::new(&s).is_err());
    let mut s = fx.schema.clone();
    s.events[0].format = "garbage".into();
    assert!(Decoder::new(&s).is_err());
    let mut s = fx.schema.clone();
    s.streams[0].sample_type = latscope_platform::perf::PERF_SAMPLE_RAW;
    assert!(Decoder::new(&s).is_err());
}

fn valid_stream(fx: &Fixture) -> Vec<u8> {
    let mut buf = Vec::new();
    buf.extend(fx.sample(
        "irq_handler_entry",
        0,
        0,
        5,
        &[("irq", V::I(24)), ("name", V::S("virtio0"))],
    ));
    buf.extend(fx.sample(
        "sched_switch",
        0,
        0,
        6,
        &[("prev_comm", V::S("a")), ("next_pid", V::I(3))],
    ));
    buf.extend(stack_sample(fx.id("stack", 0), 1, 2, 3, 0, &[1, 2, 3]));
    buf.extend(lost(1, 2));
    buf
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let fx = Fixture::new(&[0]);
        let mut d = Decoder::new(&fx.schema).unwrap();
        let st = d.decode(0, &bytes, &mut |_| {});
        prop_assert!(st.bytes <= bytes.len() as u64);
    }

    #[test]
    fn corrupted_valid_streams_never_panic(
        flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..16),
        cut in any::<prop::sample::Index>(),
    ) {
        let fx = Fixture::new(&[0]);
        let mut bytes = valid_stream(&fx);
        for (i, b) in &flips {
            let at = i.index(bytes.len());
            bytes[at] = *b;
        }
        bytes.truncate(cut.index(bytes.len() + 1));
        let mut d = Decoder::new(&fx.schema).unwrap();
        let mut n = 0u64;
        let st = d.decode(0, &bytes, &mut |_| n += 1);
        prop_assert_eq!(n, st.events + st.stacks + st.lost_records);
    }
}
