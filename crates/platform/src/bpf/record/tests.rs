use super::*;
use proptest::prelude::*;

fn name16(s: &str) -> [u8; 16] {
    let mut n = [0u8; 16];
    n[..s.len()].copy_from_slice(s.as_bytes());
    n
}

fn samples() -> Vec<RecordedKind> {
    vec![
        RecordedKind::Switch {
            prev_pid: 7,
            prev_prio: 89,
            prev_state: 0x100,
            prev_comm: name16("sleeper"),
            next_pid: 0,
            next_prio: 120,
            next_comm: name16("swapper/0"),
        },
        RecordedKind::Waking {
            pid: -3,
            prio: 139,
            target_cpu: 1,
            comm: name16("kworker/1:2"),
        },
        RecordedKind::HrtimerStart {
            hrtimer: u64::MAX,
            function: 0xffff_ffff_8100_0000,
            expires: -1,
            softexpires: i64::MIN,
        },
        RecordedKind::HrtimerExpireEntry {
            hrtimer: 1,
            now: 2,
            function: 3,
        },
        RecordedKind::HrtimerExpireExit { hrtimer: 9 },
        RecordedKind::IrqEntry {
            irq: 24,
            name: name16("virtio0-input.0"),
        },
        RecordedKind::IrqExit { irq: 24, ret: 1 },
        RecordedKind::SoftirqRaise { vec: 9 },
        RecordedKind::SoftirqEntry { vec: 1 },
        RecordedKind::SoftirqExit { vec: u32::MAX },
        RecordedKind::VectorEntry {
            name: "local_timer",
            vector: 236,
        },
        RecordedKind::VectorExit {
            name: "deferred_error_apic",
            vector: -1,
        },
        RecordedKind::Nmi {
            handler: 5,
            delta_ns: 1234,
            handled: 1,
        },
        RecordedKind::WorkStart {
            work: 10,
            function: 11,
        },
        RecordedKind::WorkEnd {
            work: 10,
            function: 11,
        },
        RecordedKind::TimerEntry {
            timer: 0xffff_8880_0000_0040,
            function: 0xffff_ffff_8110_2030,
        },
        RecordedKind::TimerExit { timer: u64::MAX },
        RecordedKind::TaskletEntry {
            tasklet: 12,
            function: 13,
        },
        RecordedKind::TaskletExit {
            tasklet: 12,
            function: 0,
        },
        RecordedKind::NapiPoll {
            napi: 0xffff_8880_7dc2_9a10,
            work: 1,
            budget: 64,
            dev: name16(NAPI_NO_DEVICE),
        },
        RecordedKind::NapiPoll {
            napi: 1,
            work: i32::MIN,
            budget: -1,
            dev: name16("enp0s1234567890"),
        },
    ]
}

#[test]
fn every_kind_round_trips_and_short_bytes_are_refused() {
    for (i, kind) in samples().into_iter().enumerate() {
        // A switch's tid is its prev_pid (the layout stores it once).
        let tid = match kind {
            RecordedKind::Switch { prev_pid, .. } => prev_pid,
            _ => -(i as i32),
        };
        let ev = RecordedEvent {
            time: 1_000_000 + i as u64,
            cpu: 70_000,
            tid,
            kind,
        };
        let b = ev.to_bytes(42).unwrap();
        assert_eq!(u64::from_ne_bytes(b[..8].try_into().unwrap()), 42);
        assert_eq!(RecordedEvent::parse(&b, 70_000), Some(ev));
        for n in 0..RECORD_BYTES {
            assert_eq!(RecordedEvent::parse(&b[..n], 70_000), None);
        }
    }
}

#[test]
fn a_switch_out_of_a_released_pid_keeps_both_pids() {
    let ev = RecordedEvent {
        time: 5,
        cpu: 1,
        tid: -1,
        kind: samples()[0],
    };
    let b = ev.to_bytes(1).unwrap();
    assert_eq!(b[21], 1);
    assert_eq!(RecordedEvent::parse(&b, 1), Some(ev));
    // What the layout cannot hold is refused, not truncated.
    let changed = |tid: i32, change: fn(&mut i32, &mut i64, &mut i32)| {
        let mut e = RecordedEvent { tid, ..ev };
        if let RecordedKind::Switch {
            prev_pid,
            prev_state,
            next_prio,
            ..
        } = &mut e.kind
        {
            change(prev_pid, prev_state, next_prio);
        }
        e.to_bytes(1)
    };
    assert!(changed(7, |_, _, _| {}).is_some());
    assert_eq!(changed(8, |_, _, _| {}), None);
    assert_eq!(changed(7, |_, state, _| *state = 0x1_0000), None);
    assert_eq!(changed(7, |_, _, prio| *prio = 40_000), None);
    assert!(changed(-1, |pid, _, _| *pid = 12).is_some());
}

#[test]
fn unknown_kinds_and_vector_indices_are_refused() {
    let mut b = [0u8; RECORD_BYTES];
    for k in [0u8, KIND_LAST + 1, 200, 255] {
        b[20] = k;
        assert_eq!(RecordedEvent::parse(&b, 0), None);
    }
    b[20] = KIND_VECTOR_ENTRY;
    b[21] = VECTOR_NAMES.len() as u8;
    assert_eq!(RecordedEvent::parse(&b, 0), None);
    let ev = RecordedEvent {
        time: 0,
        cpu: 0,
        tid: 0,
        kind: RecordedKind::VectorExit {
            name: "no_such_vector",
            vector: 1,
        },
    };
    assert_eq!(ev.to_bytes(1), None);
}

proptest! {
    #[test]
    fn parse_never_panics_and_what_it_reads_writes_back(
        bytes in proptest::collection::vec(any::<u8>(), 0..200)
    ) {
        if let Some(ev) = RecordedEvent::parse(&bytes, 3) {
            prop_assert!(bytes.len() >= RECORD_BYTES);
            // Re-encoding gives the same event (padding bytes aside).
            let again = ev.to_bytes(0).and_then(|b| RecordedEvent::parse(&b, 3));
            prop_assert_eq!(again, Some(ev));
        }
    }

    #[test]
    fn any_kind_byte_with_random_payload_parses_or_is_refused(
        kind in any::<u8>(), aux in any::<u8>(),
        payload in proptest::collection::vec(any::<u8>(), RECORD_BYTES..RECORD_BYTES + 1)
    ) {
        let mut b = payload;
        b[20] = kind;
        b[21] = aux;
        let parsed = RecordedEvent::parse(&b, 0);
        let known = (1..=KIND_LAST).contains(&kind)
            && (!(kind == KIND_VECTOR_ENTRY || kind == KIND_VECTOR_EXIT)
                || usize::from(aux) < VECTOR_NAMES.len());
        prop_assert_eq!(parsed.is_some(), known);
    }

    #[test]
    fn new_kinds_round_trip_with_any_fields(
        object in any::<u64>(), function in any::<u64>(), work in any::<i32>(),
        budget in any::<i32>(), dev in any::<[u8; 16]>(), which in 0u8..5,
        time in any::<u64>(), tid in any::<i32>()
    ) {
        let kind = match which {
            0 => RecordedKind::TimerEntry { timer: object, function },
            1 => RecordedKind::TimerExit { timer: object },
            2 => RecordedKind::TaskletEntry { tasklet: object, function },
            3 => RecordedKind::TaskletExit { tasklet: object, function },
            _ => RecordedKind::NapiPoll { napi: object, work, budget, dev },
        };
        let ev = RecordedEvent { time, cpu: 1, tid, kind };
        let b = ev.to_bytes(9);
        prop_assert!(b.is_some());
        let b = b.unwrap_or([0; RECORD_BYTES]);
        prop_assert_eq!(b[20], KIND_TIMER_ENTRY + which);
        prop_assert_eq!(RecordedEvent::parse(&b, 1), Some(ev));
    }
}

/// The kind numbers are `enum rec_kind`'s in timer.bpf.c.
#[test]
fn the_new_kinds_are_the_c_ones() {
    let c = include_str!("../../../bpf/timer.bpf.c");
    for (name, k) in [
        ("K_TIMER_ENTRY", KIND_TIMER_ENTRY),
        ("K_TIMER_EXIT", KIND_TIMER_EXIT),
        ("K_TASKLET_ENTRY", KIND_TASKLET_ENTRY),
        ("K_TASKLET_EXIT", KIND_TASKLET_EXIT),
        ("K_NAPI_POLL", KIND_NAPI_POLL),
    ] {
        assert!(c.contains(&format!("    {name} = {k},")), "{name}");
    }
    assert!(c.contains("const char none[16] = \"(no_device)\";"));
}
