//! Decomposition and attribution on scripted event streams: each test lays
//! out what the kernel would record around one sample and checks the parts
//! and causes against the numbers it was built from.

use super::*;
use crate::event::{Comm, NameId};

const TID: i32 = 100;
const H: u64 = 0xffff_0000_1000;
const D: u64 = 10_000_000_000;
const US: u64 = 1_000;

struct Script {
    names: Names,
    lt: NameId,
    eth: NameId,
    events: Vec<TraceEvent>,
}

impl Script {
    fn new() -> Script {
        let mut names = Names::default();
        let lt = names.intern("local_timer");
        let eth = names.intern("eth0");
        Script {
            names,
            lt,
            eth,
            events: Vec::new(),
        }
    }

    fn at(&mut self, time: u64, tid: i32, kind: EventKind) -> &mut Script {
        self.events.push(TraceEvent {
            time,
            cpu: 1,
            tid,
            kind,
        });
        self
    }

    fn switch(&mut self, time: u64, prev: (i32, &str, i32), next: (i32, &str, i32)) -> &mut Script {
        self.at(
            time,
            prev.0,
            EventKind::SchedSwitch {
                prev_pid: prev.0,
                prev_prio: prev.2,
                prev_state: 0,
                prev_comm: Comm::from_bytes(prev.1.as_bytes()),
                next_pid: next.0,
                next_prio: next.2,
                next_comm: Comm::from_bytes(next.1.as_bytes()),
            },
        )
    }

    /// Our thread arms its timer for `deadline` and goes to sleep.
    fn arm(&mut self, time: u64, deadline: u64) -> &mut Script {
        self.at(
            time,
            TID,
            EventKind::HrtimerStart {
                hrtimer: H,
                function: 0x1,
                expires: deadline as i64,
                softexpires: deadline as i64,
            },
        )
    }

    /// The timer interrupt, in `tid`'s context, with our callback at `cb`
    /// (its `now` = `cb`).
    fn timer_irq(&mut self, entry: u64, cb: u64, exit: u64, tid: i32) -> &mut Script {
        let lt = self.lt;
        self.at(
            entry,
            tid,
            EventKind::VectorEntry {
                name: lt,
                vector: 236,
            },
        )
        .at(
            cb,
            tid,
            EventKind::HrtimerExpireEntry {
                hrtimer: H,
                now: cb as i64,
                function: 0x1,
            },
        )
        .at(
            cb + 100,
            tid,
            EventKind::SchedWaking {
                pid: TID,
                prio: 19,
                target_cpu: 1,
                comm: Comm::from_bytes(b"lat-timer/1"),
            },
        )
        .at(cb + 200, tid, EventKind::HrtimerExpireExit { hrtimer: H })
        .at(
            exit,
            tid,
            EventKind::VectorExit {
                name: lt,
                vector: 236,
            },
        )
    }

    fn run(&self, threshold: u64, samples: &[(u64, u64)]) -> Analyzer {
        let mut a = Analyzer::new(
            AnalyzerConfig::new(
                vec![Measured {
                    cpu: CpuId(1),
                    tid: TID,
                }],
                Nanos(threshold),
                D - 1_000_000_000,
            ),
            Box::new(NoEnvironment),
            Box::new(NoSymbols),
        );
        a.keep_decompositions();
        for &(d, u) in samples {
            a.on_sample(CpuId(1), d, u, &self.names);
        }
        for e in &self.events {
            a.on_decoded(&Decoded::Event(*e), &self.names);
        }
        a.finish(&self.names);
        a
    }
}

fn cause<'a>(e: &'a Episode, kind: CauseKind, name: &str) -> &'a latscope_model::Cause {
    e.breakdown
        .causes
        .iter()
        .find(|c| c.kind == kind && c.name == name)
        .unwrap_or_else(|| panic!("no {kind} {name} in {:#?}", e.breakdown.causes))
}

fn total(e: &Episode) -> u64 {
    e.breakdown.causes.iter().map(|c| c.duration_ns.0).sum()
}

#[test]
fn quick_wake_from_idle_decomposes_into_irq_sched_return() {
    let mut s = Script::new();
    s.arm(D - 901 * US, D)
        .switch(
            D - 900 * US,
            (TID, "lat-timer/1", 19),
            (0, "swapper/1", 120),
        )
        .timer_irq(D + 3 * US, D + 4 * US, D + 6 * US, 0)
        .switch(D + 8 * US, (0, "swapper/1", 120), (TID, "lat-timer/1", 19))
        .at(D + 20 * US, 0, EventKind::SoftirqRaise { vec: 1 });
    let a = s.run(100 * US, &[(D, D + 10 * US)]);
    let dec = a.decompositions();
    assert_eq!(dec.len(), 1);
    let d = dec[0];
    assert_eq!((d.irq, d.sched, d.ret), (4 * US, 4 * US, 2 * US));
    assert_eq!(d.irq + d.sched + d.ret, d.wake - d.deadline);
    assert_eq!(d.expires, D as i64);
    let m = a.metrics(&s.names);
    let get = |n: &str| {
        m.iter()
            .find(|x| x.name == n && x.cpu == Some(CpuId(1)))
            .unwrap_or_else(|| panic!("{n}"))
    };
    assert_eq!(get("timer.irq").histogram.max(), Some(Nanos(4 * US)));
    assert_eq!(get("timer.sched").histogram.max(), Some(Nanos(4 * US)));
    assert_eq!(get("timer.return").histogram.max(), Some(Nanos(2 * US)));
    assert_eq!(a.summary().episodes_total, 0);
}

#[test]
fn higher_priority_thread_is_named_as_blocking_and_takes_the_latency() {
    let mut s = Script::new();
    // burner: SCHED_FIFO 90 (kernel prio 9), busy from before the expiry.
    s.arm(D - 901 * US, D)
        .switch(
            D - 900 * US,
            (TID, "lat-timer/1", 19),
            (0, "swapper/1", 120),
        )
        .switch(D - 100 * US, (0, "swapper/1", 120), (200, "burner", 9))
        .timer_irq(D + 2 * US, D + 3 * US, D + 5 * US, 200)
        .switch(D + 500 * US, (200, "burner", 9), (TID, "lat-timer/1", 19));
    let mut a = s.run(50 * US, &[(D, D + 502 * US)]);
    let eps = a.take_episodes();
    assert_eq!(eps.len(), 1);
    let (e, w) = &eps[0];
    assert_eq!(e.latency_ns, Nanos(502 * US));
    assert_eq!(total(e), 502 * US, "causes partition the latency");
    let b = e
        .breakdown
        .blocking
        .as_ref()
        .unwrap_or_else(|| panic!("no blocking"));
    assert_eq!((b.name.as_str(), b.pid), ("burner", Some(200)));
    assert_eq!((b.policy.as_deref(), b.priority), (Some("rt"), Some(90)));
    assert_eq!(b.duration_ns, Nanos(495 * US));
    assert!(b.duration_ns.0 * 10 >= e.latency_ns.0 * 8, "at least 80%");
    assert_eq!(
        cause(e, CauseKind::TimerIrq, "local_timer").duration_ns,
        Nanos(3 * US)
    );
    assert_eq!(
        cause(e, CauseKind::Return, "lat-timer/1").duration_ns,
        Nanos(2 * US)
    );
    assert_eq!(
        cause(
            e,
            CauseKind::Unexplained,
            "timer interrupt late while burner ran"
        )
        .duration_ns,
        Nanos(2 * US)
    );
    assert_eq!(e.breakdown.irq_ns, Nanos(3 * US));
    assert_eq!(e.breakdown.sched_ns, Nanos(497 * US));
    assert_eq!(e.breakdown.return_ns, Nanos(2 * US));
    assert!(!e.breakdown.idle_at_expiry);
    assert!(e.breakdown.complete);
    let w = w.as_ref().unwrap_or_else(|| panic!("window"));
    assert!(w
        .events
        .iter()
        .any(|x| x.event == "sched_switch" && x.name == "burner"));
    assert_eq!(e.offset_ns, Nanos(1_000_000_000));
}

#[test]
fn late_timer_out_of_idle_is_idle_time_and_interrupts_are_named() {
    let mut s = Script::new();
    let eth = s.eth;
    s.arm(D - 901 * US, D)
        .switch(
            D - 900 * US,
            (TID, "lat-timer/1", 19),
            (0, "swapper/1", 120),
        )
        .timer_irq(D + 40 * US, D + 41 * US, D + 43 * US, 0)
        // A device interrupt and the softirq it raised, before we run.
        .at(D + 44 * US, 0, EventKind::IrqEntry { irq: 24, name: eth })
        .at(D + 45 * US, 0, EventKind::SoftirqRaise { vec: 3 })
        .at(D + 54 * US, 0, EventKind::IrqExit { irq: 24, ret: 1 })
        .at(D + 55 * US, 0, EventKind::SoftirqEntry { vec: 3 })
        .at(D + 75 * US, 0, EventKind::SoftirqExit { vec: 3 })
        .switch(D + 77 * US, (0, "swapper/1", 120), (TID, "lat-timer/1", 19));
    let mut a = s.run(20 * US, &[(D, D + 79 * US)]);
    let eps = a.take_episodes();
    let (e, _) = &eps[0];
    assert!(e.breakdown.idle_at_expiry);
    assert_eq!(total(e), 79 * US);
    assert_eq!(
        cause(e, CauseKind::Idle, "CPU idle, timer interrupt late").duration_ns,
        Nanos(40 * US)
    );
    assert_eq!(
        cause(e, CauseKind::Irq, "24:eth0").duration_ns,
        Nanos(10 * US)
    );
    assert_eq!(
        cause(e, CauseKind::Softirq, "NET_RX").duration_ns,
        Nanos(20 * US)
    );
    assert_eq!(
        cause(e, CauseKind::TimerIrq, "local_timer").duration_ns,
        Nanos(3 * US)
    );
    // Idle between the handlers and the switch: our own wake-up path.
    assert_eq!(
        cause(e, CauseKind::Wakeup, "switch from idle").duration_ns,
        Nanos(4 * US)
    );
    assert!(e.breakdown.blocking.is_none());
    let m = a.metrics(&s.names);
    let delay = m
        .iter()
        .find(|x| x.name == "softirq.delay.NET_RX")
        .unwrap_or_else(|| panic!("delay"));
    assert_eq!(delay.histogram.max(), Some(Nanos(10 * US)));
}

#[test]
fn an_nmi_takes_its_time_from_what_it_interrupted() {
    let mut s = Script::new();
    s.arm(D - 901 * US, D)
        .switch(
            D - 900 * US,
            (TID, "lat-timer/1", 19),
            (0, "swapper/1", 120),
        )
        .switch(
            D - 100 * US,
            (0, "swapper/1", 120),
            (300, "kworker/1:1", 120),
        )
        .timer_irq(D + 2 * US, D + 3 * US, D + 5 * US, 300)
        .at(
            D + 60 * US,
            300,
            EventKind::Nmi {
                handler: 7,
                delta_ns: 15_000,
                handled: 1,
            },
        )
        .switch(
            D + 100 * US,
            (300, "kworker/1:1", 120),
            (TID, "lat-timer/1", 19),
        );
    let mut a = s.run(50 * US, &[(D, D + 101 * US)]);
    let (e, _) = &a.take_episodes()[0];
    assert_eq!(total(e), 101 * US);
    assert_eq!(cause(e, CauseKind::Nmi, "NMI").duration_ns, Nanos(15 * US));
    let kw = cause(e, CauseKind::Thread, "kworker/1:1");
    assert_eq!(kw.duration_ns, Nanos(95 * US - 15 * US));
    assert_eq!(
        (kw.policy.as_deref(), kw.priority),
        (Some("other"), Some(0))
    );
}

#[test]
fn a_window_that_starts_after_the_expiry_is_incomplete_and_says_so() {
    let mut s = Script::new();
    // Nothing recorded before the expiry (the window lost it).
    s.timer_irq(D + 30 * US, D + 31 * US, D + 33 * US, 0)
        .switch(D + 35 * US, (0, "swapper/1", 120), (TID, "lat-timer/1", 19));
    let mut a = s.run(20 * US, &[(D, D + 37 * US)]);
    assert_eq!(
        a.summary().samples_undecomposed,
        1,
        "no hrtimer_start: no pairing"
    );
    let (e, _) = &a.take_episodes()[0];
    assert!(!e.breakdown.complete);
    assert_eq!(total(e), 37 * US);
    assert!(e.breakdown.unexplained_ns.0 >= 30 * US);
}

#[test]
fn lost_records_mark_episodes_incomplete_and_are_counted() {
    let mut s = Script::new();
    s.arm(D - 901 * US, D).switch(
        D - 900 * US,
        (TID, "lat-timer/1", 19),
        (0, "swapper/1", 120),
    );
    let tail = {
        let mut t = Script::new();
        t.timer_irq(D + 30 * US, D + 31 * US, D + 33 * US, 0)
            .switch(D + 35 * US, (0, "swapper/1", 120), (TID, "lat-timer/1", 19));
        t.events
    };
    let mut a = Analyzer::new(
        AnalyzerConfig::new(
            vec![Measured {
                cpu: CpuId(1),
                tid: TID,
            }],
            Nanos(20 * US),
            0,
        ),
        Box::new(NoEnvironment),
        Box::new(NoSymbols),
    );
    a.on_sample(CpuId(1), D, D + 37 * US, &s.names);
    for e in &s.events {
        a.on_decoded(&Decoded::Event(*e), &s.names);
    }
    a.on_decoded(&Decoded::Lost { cpu: 1, count: 17 }, &s.names);
    for e in &tail {
        a.on_decoded(&Decoded::Event(*e), &s.names);
    }
    a.finish(&s.names);
    let sum = a.summary();
    assert_eq!(sum.lost_records, 17);
    assert_eq!(sum.lost_per_cpu.get(&1), Some(&17));
    let (e, _) = &a.take_episodes()[0];
    assert!(!e.breakdown.complete);
}

#[test]
fn episodes_past_the_cap_are_counted_and_summed_not_kept() {
    let mut s = Script::new();
    let mut samples = Vec::new();
    s.arm(D - 901 * US, D).switch(
        D - 900 * US,
        (TID, "lat-timer/1", 19),
        (0, "swapper/1", 120),
    );
    for k in 0..3u64 {
        let d = D + k * 1_000 * US;
        s.timer_irq(d + 60 * US, d + 61 * US, d + 63 * US, 0)
            .switch(d + 65 * US, (0, "swapper/1", 120), (TID, "lat-timer/1", 19))
            .arm(d + 69 * US, d + 1_000 * US)
            .switch(d + 70 * US, (TID, "lat-timer/1", 19), (0, "swapper/1", 120));
        samples.push((d, d + 67 * US));
    }
    let mut cfg = AnalyzerConfig::new(
        vec![Measured {
            cpu: CpuId(1),
            tid: TID,
        }],
        Nanos(20 * US),
        0,
    );
    cfg.episode_cap = 2;
    let mut a = Analyzer::new(cfg, Box::new(NoEnvironment), Box::new(NoSymbols));
    for &(d, u) in &samples {
        a.on_sample(CpuId(1), d, u, &s.names);
    }
    for e in &s.events {
        a.on_decoded(&Decoded::Event(*e), &s.names);
    }
    a.finish(&s.names);
    let sum = a.summary();
    assert_eq!((sum.episodes_total, sum.episodes_kept), (3, 2));
    assert_eq!(a.take_episodes().len(), 2);
    let idle = sum
        .cause_totals
        .iter()
        .find(|c| c.kind == CauseKind::Idle)
        .unwrap_or_else(|| panic!("idle total"));
    assert_eq!(idle.episodes, 3);
    assert_eq!(idle.total_ns, Nanos(3 * 60 * US));
    assert_eq!(sum.samples_decomposed, 3);
}

#[test]
fn a_sample_handed_over_after_its_events_is_found_by_looking_back() {
    let mut s = Script::new();
    s.arm(D - 901 * US, D)
        .switch(
            D - 900 * US,
            (TID, "lat-timer/1", 19),
            (0, "swapper/1", 120),
        )
        .timer_irq(D + 3 * US, D + 4 * US, D + 6 * US, 0)
        .switch(D + 8 * US, (0, "swapper/1", 120), (TID, "lat-timer/1", 19))
        .switch(D + 12 * US, (TID, "lat-timer/1", 19), (0, "swapper/1", 120))
        .arm(D + 11 * US, D + 1_000 * US);
    let mut a = s.run(100 * US, &[]);
    a.on_sample(CpuId(1), D, D + 10 * US, &s.names);
    let dec = a.decompositions();
    assert_eq!(dec.len(), 1);
    assert_eq!(
        (dec[0].irq, dec[0].sched, dec[0].ret),
        (4 * US, 4 * US, 2 * US)
    );
}

#[test]
fn steal_time_is_taken_from_the_readings_around_the_episode() {
    let mut s = Script::new();
    s.arm(D - 901 * US, D)
        .switch(
            D - 900 * US,
            (TID, "lat-timer/1", 19),
            (0, "swapper/1", 120),
        )
        .timer_irq(D + 300 * US, D + 301 * US, D + 303 * US, 0)
        .switch(
            D + 305 * US,
            (0, "swapper/1", 120),
            (TID, "lat-timer/1", 19),
        );
    let mut a = Analyzer::new(
        AnalyzerConfig::new(
            vec![Measured {
                cpu: CpuId(1),
                tid: TID,
            }],
            Nanos(20 * US),
            0,
        ),
        Box::new(NoEnvironment),
        Box::new(NoSymbols),
    );
    a.on_steal(CpuId(1), D - 50_000 * US, 1_000_000);
    a.on_sample(CpuId(1), D, D + 307 * US, &s.names);
    for e in &s.events {
        a.on_decoded(&Decoded::Event(*e), &s.names);
    }
    a.flush(D + 1_000 * US, &s.names);
    assert!(a.take_episodes().is_empty(), "waits for the next reading");
    a.on_steal(CpuId(1), D + 50_000 * US, 1_000_000 + 4_000_000);
    let eps = a.take_episodes();
    assert_eq!(eps.len(), 1);
    assert_eq!(eps[0].0.breakdown.steal_ns, Some(Nanos(4_000_000)));
}

#[test]
fn a_switch_the_kernel_did_not_record_is_unexplained_and_the_event_tids_take_over() {
    // Seen on the development VM: on one CPU nothing is recorded while the
    // idle task runs, so the switch idle -> burner never arrives; the
    // burner's own events (with its tid) must still make it the blocking
    // thread.
    let mut s = Script::new();
    s.arm(D - 901 * US, D)
        .switch(
            D - 900 * US,
            (TID, "lat-timer/1", 19),
            (0, "swapper/1", 120),
        )
        // (missing: swapper -> burner at D - 100 us)
        .timer_irq(D + 2 * US, D + 3 * US, D + 5 * US, 200)
        .switch(D + 400 * US, (200, "burner", 9), (TID, "lat-timer/1", 19));
    let mut a = s.run(50 * US, &[(D, D + 402 * US)]);
    let (e, _) = &a.take_episodes()[0];
    assert!(
        !e.breakdown.idle_at_expiry,
        "the burner's events say it ran"
    );
    assert!(!e.breakdown.complete, "a switch is missing");
    assert_eq!(
        cause(
            e,
            CauseKind::Unexplained,
            "events missing (a context switch was not recorded)"
        )
        .duration_ns,
        Nanos(2 * US)
    );
    let b = e
        .breakdown
        .blocking
        .as_ref()
        .unwrap_or_else(|| panic!("blocking"));
    assert_eq!(b.name, "burner");
    assert_eq!(b.duration_ns, Nanos(395 * US));
    assert_eq!(total(e), 402 * US);
}

#[test]
fn a_noise_interruption_is_split_into_classes_and_our_own_time_is_hw_only_alone() {
    let mut s = Script::new();
    let eth = s.eth;
    // Our loop (TID) spins; an IRQ, its softirq, then a thread take the CPU.
    s.at(D - 100 * US, TID, EventKind::SoftirqRaise { vec: 9 })
        .at(D + 2 * US, TID, EventKind::IrqEntry { irq: 24, name: eth })
        .at(D + 12 * US, TID, EventKind::IrqExit { irq: 24, ret: 1 })
        .at(D + 13 * US, TID, EventKind::SoftirqEntry { vec: 3 })
        .at(D + 23 * US, TID, EventKind::SoftirqExit { vec: 3 })
        .switch(
            D + 24 * US,
            (TID, "lat-noise/1", 19),
            (300, "kworker/1:1", 120),
        )
        .switch(
            D + 124 * US,
            (300, "kworker/1:1", 120),
            (TID, "lat-noise/1", 19),
        );
    let mut cfg = AnalyzerConfig::new(
        vec![Measured {
            cpu: CpuId(1),
            tid: TID,
        }],
        Nanos(50 * US),
        0,
    );
    cfg.noise = true;
    let mut a = Analyzer::new(cfg, Box::new(NoEnvironment), Box::new(NoSymbols));
    // The interruption seen by the loop: D .. D+126 µs; and a lone one of
    // 2 µs later with nothing recorded in it (hardware or hypervisor).
    a.on_sample(CpuId(1), D, D + 126 * US, &s.names);
    a.on_sample(CpuId(1), D + 500 * US, D + 502 * US, &s.names);
    for e in &s.events {
        a.on_decoded(&Decoded::Event(*e), &s.names);
    }
    a.finish(&s.names);
    let classes = &a.noise_classes()[&1];
    assert_eq!(classes["irq"].total_ns, Nanos(10 * US));
    assert_eq!(classes["softirq"].total_ns, Nanos(10 * US));
    assert_eq!(classes["thread"].total_ns, Nanos(100 * US));
    assert_eq!(
        classes["hw"].total_ns,
        Nanos(2 * US),
        "only the lone one is hw"
    );
    assert_eq!(classes["hw"].count, 1);
    let eps = a.take_episodes();
    assert_eq!(eps.len(), 1);
    let (e, _) = &eps[0];
    assert_eq!(e.metric, "noise.gap");
    assert_eq!(total(e), 126 * US);
    let b = e
        .breakdown
        .blocking
        .as_ref()
        .unwrap_or_else(|| panic!("blocking"));
    assert_eq!(b.name, "kworker/1:1");
    assert_eq!(
        cause(
            e,
            CauseKind::Return,
            "kernel entry and exit around the interruption"
        )
        .duration_ns,
        Nanos(6 * US)
    );
}
