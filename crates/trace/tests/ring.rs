//! Ring reading on synthetic buffers: records that straddle the end of the
//! ring come out whole, a full ring drops records and says how many.
#![allow(clippy::unwrap_used)]

use crate::common;

use common::{Fixture, V};
use latscope_trace::ring::{build_record, ring_segments, Records, SimRing};
use latscope_trace::{Decoded, Decoder, EventKind};

#[test]
fn segments_split_at_the_wrap_point() {
    assert_eq!(ring_segments(100, 164, 128).unwrap(), [100..128, 0..36]);
    assert_eq!(ring_segments(128, 256, 128).unwrap(), [0..128, 0..0]);
    assert_eq!(
        ring_segments(1 << 40, (1 << 40) + 8, 128).unwrap(),
        [0..8, 0..0]
    );
    assert!(ring_segments(0, 129, 128).is_err());
}

#[test]
fn records_straddling_the_wrap_are_reassembled() {
    let fx = Fixture::new(&[0]);
    // 256-byte ring, counters 80 bytes before the end (after several
    // laps) so the second record straddles the wrap point.
    let mut ring = SimRing::new(256, 1).unwrap().with_position(256 * 7 - 80);
    let a = fx.sample("softirq_entry", 0, 1, 10, &[("vec", V::I(1))]);
    let b = fx.sample(
        "sched_switch",
        0,
        1,
        11,
        &[
            ("prev_comm", V::S("first")),
            ("next_comm", V::S("second")),
            ("next_pid", V::I(77)),
        ],
    );
    assert!(
        a.len() < 80 && a.len() + b.len() > 80,
        "{} {}",
        a.len(),
        b.len()
    );
    assert!(ring.write(&a));
    assert!(ring.write(&b));
    let mut out = Vec::new();
    assert_eq!(ring.read_into(&mut out).unwrap(), a.len() + b.len());
    assert_eq!(&out[..a.len()], &a[..]);
    assert_eq!(&out[a.len()..], &b[..]);

    let mut d = Decoder::new(&fx.schema).unwrap();
    let mut evs = Vec::new();
    d.decode(0, &out, &mut |x| evs.push(x));
    assert_eq!(evs.len(), 2);
    match &evs[1] {
        Decoded::Event(e) => match e.kind {
            EventKind::SchedSwitch {
                next_pid,
                prev_comm,
                next_comm,
                ..
            } => {
                assert_eq!(next_pid, 77);
                assert_eq!(prev_comm.as_str(), "first");
                assert_eq!(next_comm.as_str(), "second");
            }
            k => panic!("{k:?}"),
        },
        x => panic!("{x:?}"),
    }
    // Nothing left.
    out.clear();
    assert_eq!(ring.read_into(&mut out).unwrap(), 0);
}

#[test]
fn a_full_ring_reports_lost_records() {
    let fx = Fixture::new(&[0]);
    let rec = fx.sample("softirq_raise", 0, 1, 10, &[("vec", V::I(2))]);
    let lost_id = fx.id("softirq_raise", 0);
    let mut ring = SimRing::new(256, lost_id).unwrap().with_position(200);
    let mut stored = 0;
    for _ in 0..20 {
        if ring.write(&rec) {
            stored += 1;
        }
    }
    let fit = 256 / rec.len();
    assert_eq!(stored, fit);
    let mut out = Vec::new();
    ring.read_into(&mut out).unwrap();
    // Space again: the next write is preceded by a LOST record.
    assert!(ring.write(&rec));
    ring.read_into(&mut out).unwrap();

    let mut d = Decoder::new(&fx.schema).unwrap();
    let mut evs = Vec::new();
    let st = d.decode(0, &out, &mut |x| evs.push(x));
    assert_eq!(st.events as usize, fit + 1);
    assert_eq!(st.lost, (20 - fit) as u64);
    assert_eq!(st.lost_records, 1);
    assert_eq!(
        evs[fit],
        Decoded::Lost {
            cpu: 0,
            count: (20 - fit) as u64
        }
    );
    assert!(matches!(evs[fit + 1], Decoded::Event(_)));
}

#[test]
fn many_wraps_keep_every_record_intact() {
    let fx = Fixture::new(&[0]);
    let mut ring = SimRing::new(512, 0).unwrap();
    let mut out = Vec::new();
    let mut expected = Vec::new();
    for i in 0..500u32 {
        let name = format!("task{i}");
        let rec = fx.sample(
            "sched_waking",
            0,
            i,
            u64::from(i),
            &[("comm", V::S(&name)), ("pid", V::I(i64::from(i)))],
        );
        expected.extend_from_slice(&rec);
        assert!(ring.write(&rec));
        if i % 3 == 0 {
            ring.read_into(&mut out).unwrap();
        }
    }
    ring.read_into(&mut out).unwrap();
    assert_eq!(out, expected);
    let n = Records::new(&out).filter(Result::is_ok).count();
    assert_eq!(n, 500);
    let rec = build_record(9, 0, &[]);
    assert_eq!(rec.len(), 8);
}
