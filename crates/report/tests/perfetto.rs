//! The Chrome / Perfetto export of an episode: the structure the viewers
//! require, time order, and slices that are balanced and properly nested
//! whatever the window holds (a start before it, an end after it, lost
//! events).

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;

use latscope_model::{
    Breakdown, Cause, CauseKind, CpuId, Episode, EpisodeWindow, Nanos, RunId, WindowEvent,
};
use latscope_report::perfetto_trace;
use serde_json::Value;

const T: u64 = 1_000_000_000;

fn episode() -> Episode {
    Episode {
        seq: 4,
        cpu: CpuId(1),
        metric: "timer.latency".into(),
        expiry_ns: Nanos(T),
        offset_ns: Nanos(1_000_000),
        latency_ns: Nanos(612_000),
        breakdown: Breakdown {
            irq_ns: Nanos(2_000),
            sched_ns: Nanos(593_000),
            return_ns: Nanos(17_000),
            idle_at_expiry: false,
            causes: vec![Cause {
                kind: CauseKind::Thread,
                name: "burner".into(),
                pid: Some(4242),
                policy: Some("fifo".into()),
                priority: Some(90),
                duration_ns: Nanos(590_000),
                parts: Vec::new(),
            }],
            blocking: None,
            unexplained_ns: Nanos(0),
            steal_ns: None,
            steal_source: None,
            steal_irq_ns: None,
            steal_sched_ns: None,
            complete: true,
            held: None,
        },
        stacks: vec![],
    }
}

fn ev(t: u64, tid: i32, event: &str, name: &str, pid: i32, value: i64, object: u64) -> WindowEvent {
    WindowEvent {
        time_ns: t,
        cpu: 1,
        tid,
        event: event.into(),
        name: name.into(),
        pid,
        prio: 0,
        value,
        object,
    }
}

/// What the CPU did around the episode; the window starts inside an IRQ
/// handler and ends inside an RCU softirq.
fn window() -> EpisodeWindow {
    let mut events = vec![
        ev(T - 60_000, 0, "irq_handler_exit", "", 24, 0, 0),
        ev(T - 50_000, 0, "sched_switch", "burner", 4242, 0, 0),
        ev(
            T - 40_000,
            4242,
            "hrtimer_start",
            "hrtimer_wakeup",
            0,
            T as i64,
            0xa,
        ),
        ev(T + 1_000, 4242, "vector_entry", "local_timer", 236, 0, 0),
        ev(
            T + 2_000,
            4242,
            "hrtimer_expire_entry",
            "hrtimer_wakeup",
            0,
            (T + 2_000) as i64,
            0xa,
        ),
        ev(T + 3_000, 4242, "sched_waking", "latscope-timer", 100, 0, 0),
        ev(T + 4_000, 4242, "hrtimer_expire_exit", "", 0, 0, 0xa),
        ev(T + 5_000, 4242, "vector_exit", "local_timer", 236, 0, 0),
        ev(T + 5_500, 4242, "softirq_raise", "TIMER", 1, 0, 0),
        ev(T + 6_000, 4242, "softirq_entry", "TIMER", 1, 0, 0),
        ev(T + 9_000, 4242, "softirq_exit", "TIMER", 1, 0, 0),
        ev(
            T + 100_000,
            4242,
            "irq_handler_entry",
            "virtio0-input.0",
            24,
            0,
            0,
        ),
        ev(T + 104_000, 4242, "irq_handler_exit", "", 24, 1, 0),
        ev(
            T + 200_000,
            4242,
            "workqueue_execute_start",
            "vmstat_update",
            0,
            0,
            0xb,
        ),
        ev(
            T + 230_000,
            4242,
            "workqueue_execute_end",
            "vmstat_update",
            0,
            0,
            0xb,
        ),
        ev(
            T + 300_000,
            4242,
            "nmi_handler",
            "perf_event_nmi_handler",
            0,
            9_000,
            0,
        ),
        ev(
            T + 595_000,
            4242,
            "sched_switch",
            "latscope-timer",
            100,
            4242,
            0,
        ),
        ev(T + 600_000, 100, "softirq_entry", "RCU", 9, 0, 0),
    ];
    events[1].prio = 9;
    events[16].prio = 4;
    // A wake-up recorded on another CPU.
    let mut other = ev(T - 45_000, 77, "sched_waking", "kworker/1:1", 88, 0, 0);
    other.cpu = 0;
    events.push(other);
    EpisodeWindow {
        seq: 4,
        cpu: CpuId(1),
        events,
        truncated: 0,
    }
}

fn trace_events(doc: &Value) -> &Vec<Value> {
    doc["traceEvents"].as_array().unwrap()
}

fn ns(v: &Value) -> i64 {
    (v.as_f64().unwrap() * 1_000.0).round() as i64
}

/// A slice's start and end (ns from the origin) and name.
type Slice = (i64, i64, String);

/// The checks every export must pass, whatever its input.
fn assert_valid(doc: &Value) {
    // Valid JSON that parses back to itself.
    let text = serde_json::to_string(doc).unwrap();
    let back: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(&back, doc);
    assert_eq!(doc["displayTimeUnit"], "ns");
    assert!(doc["otherData"].is_object());
    let events = trace_events(doc);
    let mut seen_body = false;
    let mut last_ts = i64::MIN;
    let mut slices: BTreeMap<(u64, u64), Vec<Slice>> = BTreeMap::new();
    for e in events {
        assert!(e["name"].is_string(), "{e}");
        assert!(e["ph"].is_string(), "{e}");
        assert!(e["ts"].is_number(), "{e}");
        assert!(e["pid"].is_u64(), "{e}");
        assert!(e["tid"].is_u64(), "{e}");
        let ts = ns(&e["ts"]);
        assert!(ts >= 0, "{e}");
        match e["ph"].as_str().unwrap() {
            "M" => {
                assert!(!seen_body, "metadata after events: {e}");
                assert!(e["args"]["name"].is_string() || e["args"]["sort_index"].is_number());
            }
            "X" => {
                seen_body = true;
                assert!(ts >= last_ts, "out of order: {e}");
                last_ts = ts;
                let dur = ns(&e["dur"]);
                assert!(dur >= 0, "negative dur: {e}");
                slices
                    .entry((e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap()))
                    .or_default()
                    .push((ts, ts + dur, e["name"].as_str().unwrap().to_string()));
            }
            "i" => {
                seen_body = true;
                assert!(ts >= last_ts, "out of order: {e}");
                last_ts = ts;
                assert_eq!(e["s"], "t", "{e}");
                assert!(e.get("dur").is_none(), "{e}");
            }
            other => panic!("unexpected phase {other}: {e}"),
        }
    }
    // Slices on one track nest: any two are disjoint or one contains the
    // other.
    for (track, list) in &slices {
        for (i, a) in list.iter().enumerate() {
            for b in &list[i + 1..] {
                let disjoint = a.1 <= b.0 || b.1 <= a.0;
                let nested = (a.0 <= b.0 && b.1 <= a.1) || (b.0 <= a.0 && a.1 <= b.1);
                assert!(disjoint || nested, "{track:?}: {a:?} overlaps {b:?}");
            }
        }
    }
}

fn find<'a>(doc: &'a Value, ph: &str, name: &str) -> Vec<&'a Value> {
    trace_events(doc)
        .iter()
        .filter(|e| e["ph"] == ph && e["name"] == name)
        .collect()
}

fn thread_tid(doc: &Value, pid: u64, label: &str) -> u64 {
    trace_events(doc)
        .iter()
        .find(|e| {
            e["ph"] == "M"
                && e["name"] == "thread_name"
                && e["pid"] == pid
                && e["args"]["name"] == label
        })
        .unwrap_or_else(|| panic!("no track {label}"))["tid"]
        .as_u64()
        .unwrap()
}

#[test]
fn an_episode_becomes_a_valid_trace() {
    let doc = perfetto_trace(RunId(3), &episode(), &window());
    assert_valid(&doc);
    assert_eq!(doc["otherData"]["run"], "3");
    assert_eq!(doc["otherData"]["episode"], "4");
    // The origin is the window's first event, 60 µs before the expiry.
    assert_eq!(
        doc["otherData"]["origin_monotonic_ns"],
        (T - 60_000).to_string()
    );

    // Processes are CPUs; CPU 1 has the episode track.
    let names: Vec<_> = find(&doc, "M", "process_name")
        .iter()
        .map(|e| {
            (
                e["pid"].as_u64().unwrap(),
                e["args"]["name"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(names, [(1, "CPU 0"), (2, "CPU 1")]);
    let episode_tid = thread_tid(&doc, 2, "episode");
    let task_tid = thread_tid(&doc, 2, "running task");
    let irq_tid = thread_tid(&doc, 2, "hard IRQ handlers");

    // The episode: expiry to wake-up, split into irq, sched, return.
    let ep = find(&doc, "X", "episode 4: timer.latency 612µs");
    assert_eq!(ep.len(), 1);
    assert_eq!(ep[0]["tid"], episode_tid);
    assert_eq!(ns(&ep[0]["ts"]), 60_000);
    assert_eq!(ns(&ep[0]["dur"]), 612_000);
    assert_eq!(ep[0]["args"]["causes"][0]["name"], "burner");
    let phases: Vec<_> = trace_events(&doc)
        .iter()
        .filter(|e| e["ph"] == "X" && e["tid"] == episode_tid)
        .map(|e| (e["name"].as_str().unwrap(), ns(&e["ts"]), ns(&e["dur"])))
        .collect();
    assert_eq!(
        phases,
        [
            ("episode 4: timer.latency 612µs", 60_000, 612_000),
            ("irq 2.00µs", 60_000, 2_000),
            ("sched 593µs", 62_000, 593_000),
            ("return 17.0µs", 655_000, 17_000),
        ]
    );
    let marks = find(&doc, "i", "intended expiry");
    assert_eq!(ns(&marks[0]["ts"]), 60_000);
    let wake = find(&doc, "i", "wake-up (user code runs)");
    assert_eq!(ns(&wake[0]["ts"]), 672_000);

    // What ran: idle until the switch to burner, burner until our thread.
    let tasks: Vec<_> = trace_events(&doc)
        .iter()
        .filter(|e| e["ph"] == "X" && e["tid"] == task_tid)
        .map(|e| (e["name"].as_str().unwrap(), ns(&e["ts"]), ns(&e["dur"])))
        .collect();
    assert_eq!(
        tasks,
        [
            ("idle", 0, 10_000),
            ("burner (4242)", 10_000, 645_000),
            ("latscope-timer (100)", 655_000, 17_000),
        ]
    );

    // The IRQ handler that was running when the window opened starts at
    // the window's start, flagged; the later one is paired by number.
    let irqs: Vec<_> = trace_events(&doc)
        .iter()
        .filter(|e| e["ph"] == "X" && e["tid"] == irq_tid)
        .map(|e| (e["name"].as_str().unwrap(), ns(&e["ts"]), ns(&e["dur"])))
        .collect();
    assert_eq!(
        irqs,
        [
            ("irq 24: ?", 0, 0),
            ("irq 24: virtio0-input.0", 160_000, 4_000)
        ]
    );
    assert_eq!(
        find(&doc, "X", "irq 24: ?")[0]["args"]["start_not_seen"],
        true
    );

    // Vectors, softirqs, callbacks and work items are slices.
    let lt = find(&doc, "X", "local_timer");
    assert_eq!((ns(&lt[0]["ts"]), ns(&lt[0]["dur"])), (61_000, 4_000));
    let cb = find(&doc, "X", "hrtimer_wakeup");
    assert_eq!((ns(&cb[0]["ts"]), ns(&cb[0]["dur"])), (62_000, 2_000));
    let timer = find(&doc, "X", "TIMER");
    assert_eq!((ns(&timer[0]["ts"]), ns(&timer[0]["dur"])), (66_000, 3_000));
    let wq = find(&doc, "X", "vmstat_update");
    assert_eq!((ns(&wq[0]["ts"]), ns(&wq[0]["dur"])), (260_000, 30_000));
    // Still running when the window closed: ends at its end, flagged.
    let rcu = find(&doc, "X", "RCU");
    assert_eq!((ns(&rcu[0]["ts"]), ns(&rcu[0]["dur"])), (660_000, 12_000));
    assert_eq!(rcu[0]["args"]["end_not_seen"], true);

    // Instants.
    assert_eq!(find(&doc, "i", "hrtimer_start hrtimer_wakeup").len(), 1);
    assert_eq!(
        find(&doc, "i", "hrtimer_expire_entry hrtimer_wakeup").len(),
        1
    );
    assert_eq!(find(&doc, "i", "waking latscope-timer (100)").len(), 1);
    assert_eq!(find(&doc, "i", "raise TIMER").len(), 1);
    let nmi = find(&doc, "i", "NMI perf_event_nmi_handler");
    assert_eq!(nmi[0]["args"]["delta_ns"], 9_000);
    // The wake-up on CPU 0 is on CPU 0's process.
    let w = find(&doc, "i", "waking kworker/1:1 (88)");
    assert_eq!(w[0]["pid"], 1);
}

#[test]
fn vectors_are_recognised_in_either_naming() {
    let w = EpisodeWindow {
        seq: 4,
        cpu: CpuId(1),
        events: vec![
            ev(T + 1_000, 0, "irq_vectors:reschedule_entry", "", 253, 0, 0),
            ev(T + 2_000, 0, "irq_vectors:reschedule_exit", "", 253, 0, 0),
            ev(T + 3_000, 0, "vector_entry", "call_function", 251, 0, 0),
            ev(T + 4_000, 0, "vector_exit", "call_function", 251, 0, 0),
        ],
        truncated: 0,
    };
    let doc = perfetto_trace(RunId(3), &episode(), &w);
    assert_valid(&doc);
    let tid = thread_tid(&doc, 2, "IRQ vectors");
    let v: Vec<_> = trace_events(&doc)
        .iter()
        .filter(|e| e["ph"] == "X" && e["tid"] == tid)
        .map(|e| (e["name"].as_str().unwrap(), ns(&e["ts"]), ns(&e["dur"])))
        .collect();
    assert_eq!(
        v,
        [
            ("reschedule", 1_000, 1_000),
            ("call_function", 3_000, 1_000)
        ]
    );
}

#[test]
fn timer_callbacks_and_tasklets_are_slices_and_napi_polls_instants() {
    let mut napi = ev(T + 9_000, 0, "napi_poll", "eth0", 3, 0, 0xa0);
    napi.prio = 64;
    let w = EpisodeWindow {
        seq: 5,
        cpu: CpuId(1),
        events: vec![
            ev(
                T + 1_000,
                0,
                "timer_expire_entry",
                "process_timeout",
                0,
                0,
                7,
            ),
            ev(T + 3_000, 0, "timer_expire_exit", "", 0, 0, 7),
            ev(T + 4_000, 0, "tasklet_entry", "tl_fn", 0, 0, 9),
            ev(T + 4_500, 0, "tasklet_exit", "tl_fn", 0, 0, 9),
            napi,
        ],
        truncated: 0,
    };
    let doc = perfetto_trace(RunId(3), &episode(), &w);
    assert_valid(&doc);
    let tid = thread_tid(&doc, 2, "timer callbacks and tasklets");
    let v: Vec<_> = trace_events(&doc)
        .iter()
        .filter(|e| e["ph"] == "X" && e["tid"] == tid)
        .map(|e| (e["name"].as_str().unwrap(), ns(&e["ts"]), ns(&e["dur"])))
        .collect();
    assert_eq!(
        v,
        [("process_timeout", 1_000, 2_000), ("tl_fn", 4_000, 500)]
    );
    assert_eq!(find(&doc, "i", "napi_poll eth0 (3 of 64)").len(), 1);
}

/// As the tracer records them around an idle CPU: a switch at the window's
/// first instant, and two switches away from one task in a row (the switch
/// back in between was not recorded).
#[test]
fn switches_with_gaps_give_no_empty_task_slices() {
    let mut a = ev(T - 30_000, 15, "sched_switch", "swapper/1", 0, 15, 0);
    a.prio = 120;
    let b = ev(T - 8_000, 15, "sched_switch", "swapper/1", 0, 15, 0);
    let w = EpisodeWindow {
        seq: 4,
        cpu: CpuId(1),
        events: vec![a, b],
        truncated: 0,
    };
    let doc = perfetto_trace(RunId(3), &episode(), &w);
    assert_valid(&doc);
    let tid = thread_tid(&doc, 2, "running task");
    let tasks: Vec<_> = trace_events(&doc)
        .iter()
        .filter(|e| e["ph"] == "X" && e["tid"] == tid)
        .map(|e| (e["name"].as_str().unwrap(), ns(&e["ts"]), ns(&e["dur"])))
        .collect();
    assert_eq!(tasks, [("task 15", 0, 22_000), ("idle", 22_000, 620_000)]);
}

#[test]
fn an_empty_window_still_shows_the_episode() {
    let w = EpisodeWindow {
        seq: 4,
        cpu: CpuId(1),
        events: vec![],
        truncated: 9_000,
    };
    let doc = perfetto_trace(RunId(3), &episode(), &w);
    assert_valid(&doc);
    assert_eq!(doc["otherData"]["window_truncated"], "9000");
    let ep = find(&doc, "X", "episode 4: timer.latency 612µs");
    assert_eq!((ns(&ep[0]["ts"]), ns(&ep[0]["dur"])), (0, 612_000));
}

#[test]
fn inconsistent_breakdowns_stay_inside_the_episode() {
    let mut e = episode();
    e.breakdown.sched_ns = Nanos(5_000_000);
    let doc = perfetto_trace(RunId(3), &e, &window());
    assert_valid(&doc);
    let ret: Vec<_> = trace_events(&doc)
        .iter()
        .filter(|v| v["ph"] == "X" && v["name"].as_str().unwrap().starts_with("return"))
        .collect();
    assert!(ret.is_empty(), "no room left for return: {ret:?}");
}

/// Windows cut anywhere, with events lost anywhere: the export stays valid.
#[test]
fn truncated_and_lossy_windows_stay_balanced() {
    let full = window();
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let n = full.events.len();
    for start in 0..n {
        for end in start..=n {
            let w = EpisodeWindow {
                events: full.events[start..end].to_vec(),
                truncated: start as u64,
                ..full.clone()
            };
            assert_valid(&perfetto_trace(RunId(1), &episode(), &w));
        }
    }
    for _ in 0..300 {
        let mut events: Vec<WindowEvent> = full
            .events
            .iter()
            .filter(|_| next() % 3 != 0)
            .cloned()
            .collect();
        // Nested and repeated starts with their ends lost.
        let t = T + next() % 700_000;
        events.push(ev(t, 1, "irq_handler_entry", "dup", 24, 0, 0));
        events.push(ev(t + 10, 1, "irq_handler_entry", "dup", 24, 0, 0));
        events.push(ev(t + 20, 1, "hrtimer_expire_entry", "a", 0, 0, 1));
        events.push(ev(t + 30, 1, "hrtimer_expire_entry", "b", 0, 0, 2));
        events.push(ev(t + 40, 1, "hrtimer_expire_exit", "", 0, 0, 1));
        events.push(ev(t + (next() % 50), 1, "softirq_exit", "NET_RX", 3, 0, 0));
        let w = EpisodeWindow {
            events,
            ..full.clone()
        };
        assert_valid(&perfetto_trace(RunId(1), &episode(), &w));
    }
}

#[test]
fn the_episode_slice_carries_the_code_that_held_the_cpu() {
    use latscope_model::{HeldCpu, StackSite};
    let without = perfetto_trace(RunId(3), &episode(), &window());
    let args = &find(&without, "X", "episode 4: timer.latency 612µs")[0]["args"];
    assert!(args.get("held_at_expiry").is_none() && args.get("yielded").is_none());

    let mut e = episode();
    let site = |comm: &str, frames: &[&str]| StackSite {
        comm: comm.into(),
        pid: 4242,
        frames: frames.iter().map(|f| f.to_string()).collect(),
        ..StackSite::default()
    };
    e.breakdown.held = Some(HeldCpu {
        at_expiry: Some(site("burner", &["clear_page_erms", "clear_huge_page"])),
        yielded: Some(site(
            "burner",
            &["__cond_resched", "generic_perform_write", "vfs_write"],
        )),
        note: Some("stack map full".into()),
    });
    let doc = perfetto_trace(RunId(3), &e, &window());
    assert_valid(&doc);
    let args = &find(&doc, "X", "episode 4: timer.latency 612µs")[0]["args"];
    assert_eq!(args["held_at_expiry"]["task"], "burner");
    assert_eq!(args["held_at_expiry"]["frames"][0], "clear_page_erms");
    assert_eq!(args["yielded"]["pid"], 4242);
    assert_eq!(
        args["yielded"]["frames"],
        serde_json::json!(["__cond_resched", "generic_perform_write", "vfs_write"])
    );
    assert_eq!(args["held_note"], "stack map full");
    // The rest of the args are still there.
    assert_eq!(args["latency_ns"], 612_000);
}
