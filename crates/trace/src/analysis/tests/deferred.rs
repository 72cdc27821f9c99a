//! Deferred work split by function and device: the parts of an episode's
//! softirq shares and the `deferred.exec.` histograms, on both paths.

use super::*;

/// A wake-up out of idle held back by a TIMER softirq with two timer-wheel
/// callbacks (20 and 5 µs) and a NET_RX softirq with two NAPI polls (30
/// and 5 µs).
fn softirqs_before_our_switch() -> Script {
    let mut s = Script::new();
    let eth = s.eth;
    let backlog = s.names.intern("(no_device)");
    s.arm(D - 901 * US, D)
        .switch(
            D - 900 * US,
            (TID, "lat-timer/1", 19),
            (0, "swapper/1", 120),
        )
        .timer_irq(D + 5 * US, D + 6 * US, D + 8 * US, 0)
        .at(D + 10 * US, 0, EventKind::SoftirqEntry { vec: 1 })
        .at(
            D + 11 * US,
            0,
            EventKind::TimerExpireEntry {
                timer: 7,
                function: 0xf1,
            },
        )
        .at(D + 31 * US, 0, EventKind::TimerExpireExit { timer: 7 })
        .at(
            D + 32 * US,
            0,
            EventKind::TimerExpireEntry {
                timer: 8,
                function: 0xf2,
            },
        )
        .at(D + 37 * US, 0, EventKind::TimerExpireExit { timer: 8 })
        .at(D + 38 * US, 0, EventKind::SoftirqExit { vec: 1 })
        .at(D + 40 * US, 0, EventKind::SoftirqEntry { vec: 3 })
        .at(D + 70 * US, 0, napi(eth))
        .at(D + 75 * US, 0, napi(backlog))
        .at(D + 76 * US, 0, EventKind::SoftirqExit { vec: 3 })
        .switch(D + 78 * US, (0, "swapper/1", 120), (TID, "lat-timer/1", 19));
    s
}

fn napi(dev: NameId) -> EventKind {
    EventKind::NapiPoll {
        napi: 0xa0 + u64::from(dev.0),
        dev,
        work: 3,
        budget: 64,
    }
}

fn parts_of(e: &Episode, kind: CauseKind, name: &str) -> Vec<(String, u32, u64)> {
    cause(e, kind, name)
        .parts
        .iter()
        .map(|p| (p.name.clone(), p.count, p.duration_ns.0))
        .collect()
}

fn check_parts(e: &Episode) {
    assert_eq!(total(e), 80 * US);
    assert_eq!(
        cause(e, CauseKind::Softirq, "TIMER").duration_ns,
        Nanos(28 * US)
    );
    assert_eq!(
        parts_of(e, CauseKind::Softirq, "TIMER"),
        vec![
            ("timer:0xf1".to_string(), 1, 20 * US),
            ("timer:0xf2".to_string(), 1, 5 * US)
        ]
    );
    assert_eq!(
        parts_of(e, CauseKind::Softirq, "NET_RX"),
        vec![
            ("napi:eth0".to_string(), 1, 30 * US),
            ("napi:(no_device)".to_string(), 1, 5 * US)
        ]
    );
    // Our own callback is the timer interrupt's business, not a part.
    assert!(cause(e, CauseKind::TimerIrq, "local_timer")
        .parts
        .is_empty());
}

#[test]
fn softirq_shares_name_their_timer_callbacks_and_napi_devices() {
    let s = softirqs_before_our_switch();
    let mut a = s.run(20 * US, &[(D, D + 80 * US)]);
    let eps = a.take_episodes();
    check_parts(&eps[0].0);
    let m = a.metrics(&s.names);
    let get = |n: &str| {
        m.iter().find(|x| x.name == n).unwrap_or_else(|| {
            panic!(
                "no {n} in {:?}",
                m.iter().map(|x| &x.name).collect::<Vec<_>>()
            )
        })
    };
    assert_eq!(
        get("deferred.exec.TIMER.timer:0xf1").histogram.max(),
        Some(Nanos(20 * US))
    );
    assert_eq!(
        get("deferred.exec.NET_RX.napi:eth0").histogram.max(),
        Some(Nanos(30 * US))
    );
    assert_eq!(
        get("deferred.exec.NET_RX.napi:(no_device)")
            .histogram
            .count(),
        1
    );
    // Our hrtimer's callback ran in the timer interrupt (200 ns).
    assert_eq!(
        get("deferred.exec.hardirq.hrtimer:0x1").histogram.max(),
        Some(Nanos(200))
    );
}

#[test]
fn the_kernel_path_gives_the_same_parts() {
    let s = softirqs_before_our_switch();
    let k = KernelSample {
        expires: D as i64,
        callback_now: D + 6 * US,
        callback_time: D + 6 * US,
        switch_in: D + 78 * US,
        steal: None,
    };
    let mut a = s.run_kernel(20 * US, &[(D, D + 80 * US, Some(k))]);
    let eps = a.take_episodes();
    check_parts(&eps[0].0);
}

#[test]
fn a_callback_whose_entry_preceded_the_window_is_its_softirq_alone() {
    let mut s = Script::new();
    s.arm(D - 901 * US, D)
        .switch(
            D - 900 * US,
            (TID, "lat-timer/1", 19),
            (0, "swapper/1", 120),
        )
        .timer_irq(D + 5 * US, D + 6 * US, D + 8 * US, 0)
        .at(D + 10 * US, 0, EventKind::SoftirqEntry { vec: 1 })
        // An exit without its entry closes nothing.
        .at(D + 20 * US, 0, EventKind::TimerExpireExit { timer: 9 })
        .at(D + 30 * US, 0, EventKind::SoftirqExit { vec: 1 })
        .switch(D + 32 * US, (0, "swapper/1", 120), (TID, "lat-timer/1", 19));
    let mut a = s.run(20 * US, &[(D, D + 34 * US)]);
    let eps = a.take_episodes();
    let e = &eps[0].0;
    assert_eq!(
        cause(e, CauseKind::Softirq, "TIMER").duration_ns,
        Nanos(20 * US)
    );
    assert!(cause(e, CauseKind::Softirq, "TIMER").parts.is_empty());
}

#[test]
fn parts_are_symbolized_and_merged_by_function() {
    struct Two;
    impl Symbolize for Two {
        fn symbol(&self, a: u64) -> Option<(String, Option<String>)> {
            (a == 0xf1 || a == 0xf2).then(|| ("delayed_work_timer_fn".to_string(), None))
        }
    }
    let mut causes = vec![latscope_model::Cause {
        kind: CauseKind::Softirq,
        name: "TIMER".into(),
        pid: None,
        policy: None,
        priority: None,
        duration_ns: Nanos(30),
        parts: vec![
            latscope_model::CausePart {
                name: "timer:0xf2".into(),
                count: 1,
                duration_ns: Nanos(5),
            },
            latscope_model::CausePart {
                name: "timer:0xf1".into(),
                count: 2,
                duration_ns: Nanos(20),
            },
            latscope_model::CausePart {
                name: "napi:eth0".into(),
                count: 1,
                duration_ns: Nanos(1),
            },
        ],
    }];
    super::super::parts::symbolize(&mut causes, &Two);
    let got: Vec<(&str, u32, u64)> = causes[0]
        .parts
        .iter()
        .map(|p| (p.name.as_str(), p.count, p.duration_ns.0))
        .collect();
    assert_eq!(
        got,
        vec![("timer:delayed_work_timer_fn", 3, 25), ("napi:eth0", 1, 1)]
    );
}
