#![allow(clippy::unwrap_used)]

use latscope_model::{CpuId, CpuSet, Nanos, Setting, TimerSlack};
use latscope_platform::SchedPolicy;
use latscope_probes::timer::{Phase, TimerApi};
use latscope_probes::SettingError;

use super::*;
use crate::actions::Action;
use crate::config::{ProbeSpec, TracePlanError};
use crate::cpus::CpuChoiceError;

fn online() -> CpuSet {
    (0..4).map(CpuId).collect()
}

fn plan(r: &RunRequest) -> Result<RunPlan, RequestError> {
    r.plan(&online())
}

fn timer(p: &RunPlan) -> &latscope_probes::timer::TimerConfig {
    match &p.probe {
        ProbeSpec::Timer(t) => t,
        other => panic!("not a timer: {other:?}"),
    }
}

#[test]
fn the_defaults_are_a_30s_timer_run_on_every_cpu() {
    let p = plan(&RunRequest::default()).unwrap();
    let t = timer(&p);
    assert_eq!(t.period, Nanos::from_millis(1));
    assert_eq!(t.duration, Some(Nanos::from_secs(30)));
    assert_eq!((t.policy, t.priority), (SchedPolicy::Fifo, 95));
    assert_eq!((t.api, t.phase), (TimerApi::ClockNanosleep, Phase::Fixed));
    assert_eq!(t.timer_slack, TimerSlack::MINIMUM);
    assert_eq!(t.threshold, None);
    assert_eq!(t.cpus.len(), 4);
    assert_eq!(p.cpus, online());
    assert!(p.trace.is_none());
    assert_eq!(p.checkpoint, Nanos::from_secs(10));
    assert_eq!(p.warmup, Nanos::from_secs(2));
    assert_eq!(p.workloads, ["none"]);
    assert_eq!(p.load_level, "normal");
    assert_eq!(p.action_limit, Limit::default());
    let cells = p.cells();
    assert_eq!(cells.len(), 1);
    assert_eq!(cells[0].label(), "timer, fifo 95, none");
}

#[test]
fn each_probe_has_its_defaults() {
    let r = |probe| RunRequest {
        probe,
        ..RunRequest::default()
    };
    let p = plan(&r(ProbeKind::Udp)).unwrap();
    match &p.probe {
        ProbeSpec::Udp(u) => {
            assert_eq!(u.period, Nanos::from_millis(10));
            assert_eq!((u.sender_cpu, u.receiver_cpu), (CpuId(0), CpuId(1)));
            assert_eq!(u.payload, 64);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(p.cpus.to_string(), "0-1", "the first two online CPUs");
    match plan(&r(ProbeKind::Noise)).unwrap().probe {
        ProbeSpec::Noise(n) => {
            assert_eq!(
                (n.runtime, n.pause),
                (Nanos::from_millis(33), Nanos::from_millis(33))
            );
            assert_eq!(n.gap_ratio, 4);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn one_cell_per_workload_in_the_order_given() {
    let r = RunRequest {
        workloads: vec!["cpu".into(), "idle".into()],
        ..RunRequest::default()
    };
    let cells = plan(&r).unwrap().cells();
    let names: Vec<_> = cells
        .iter()
        .map(|c| (c.index, c.of, c.workload.as_str()))
        .collect();
    assert_eq!(names, [(0, 2, "cpu"), (1, 2, "idle")]);
}

#[test]
fn the_udp_pair_keeps_the_order_written() {
    let r = RunRequest {
        probe: ProbeKind::Udp,
        cpus: Some("1,0".into()),
        ..RunRequest::default()
    };
    match plan(&r).unwrap().probe {
        ProbeSpec::Udp(u) => assert_eq!((u.sender_cpu, u.receiver_cpu), (CpuId(1), CpuId(0))),
        other => panic!("{other:?}"),
    }
    let three = RunRequest {
        cpus: Some("0-2".into()),
        ..r
    };
    assert!(matches!(plan(&three), Err(RequestError::UdpCpus(c)) if c == "0-2"));
}

#[test]
fn tracing_sets_every_probes_threshold() {
    let traced = RunRequest {
        trace: TraceOptions {
            on: true,
            ..RunRequest::default().trace
        },
        ..RunRequest::default()
    };
    let p = plan(&traced).unwrap();
    assert_eq!(
        p.trace.as_ref().unwrap().threshold,
        TracePlan::DEFAULT_THRESHOLD
    );
    assert_eq!(timer(&p).threshold, Some(TracePlan::DEFAULT_THRESHOLD));
    assert!(timer(&p).handoff > 0);
    // Under a stop limit the default threshold is at most the limit.
    let stop = Nanos::from_micros(40);
    let p = plan(&RunRequest {
        stop_above: Some(stop),
        ..traced.clone()
    })
    .unwrap();
    assert_eq!(p.trace.unwrap().threshold, stop);
    // A threshold above the stop limit would stop on a non-episode.
    let e = plan(&RunRequest {
        stop_above: Some(stop),
        threshold: Some(Nanos::from_micros(50)),
        ..traced.clone()
    })
    .unwrap_err();
    assert!(matches!(e, RequestError::ThresholdAboveStop { .. }), "{e}");
    let e = plan(&RunRequest {
        threshold: Some(Nanos(0)),
        ..traced.clone()
    })
    .unwrap_err();
    assert!(matches!(
        e,
        RequestError::Trace(TracePlanError::ZeroThreshold)
    ));
    let mut stacks = traced.clone();
    stacks.trace.stacks = true;
    stacks.trace.stack_period = Nanos::from_secs(2);
    assert!(matches!(
        plan(&stacks),
        Err(RequestError::Trace(TracePlanError::StackPeriod))
    ));
}

/// Every cross-option rule, each broken alone.
#[test]
fn each_rule_is_its_own_error() {
    let d = RunRequest::default;
    let mut stacks = d();
    stacks.trace.stacks = true;
    let mut cap = d();
    cap.trace.episode_cap = 5;
    let mut app_traced = RunRequest {
        probe: ProbeKind::App,
        ..d()
    };
    app_traced.trace.on = true;
    let cases: Vec<(RunRequest, &str)> = vec![
        (stacks, "TraceOptionsWithoutTrace"),
        (cap, "TraceOptionsWithoutTrace"),
        (
            RunRequest {
                actions: vec![Action::parse("snapshot").unwrap()],
                ..d()
            },
            "ActionsWithoutTrace",
        ),
        (app_traced, "TraceWithAppProbe"),
        (
            RunRequest {
                stop_above: Some(Nanos(0)),
                ..d()
            },
            "BoundZero(StopAbove)",
        ),
        (
            RunRequest {
                fail_above: Some(Nanos(0)),
                ..d()
            },
            "BoundZero(FailAbove)",
        ),
        (
            RunRequest {
                checkpoint: Nanos::from_millis(99),
                ..d()
            },
            "CheckpointTooShort",
        ),
        (
            RunRequest {
                probe: ProbeKind::Noise,
                timer: TimerOptions {
                    slack: Some(TimerSlack::MINIMUM),
                    ..d().timer
                },
                ..d()
            },
            "TimerSlackWithoutTimer",
        ),
        (
            RunRequest {
                noise: NoiseOptions {
                    fp: true,
                    ..NoiseOptions::default()
                },
                ..d()
            },
            "NoiseOptionsWithoutNoise",
        ),
        (
            RunRequest {
                udp: UdpOptions {
                    payload: Some(100),
                    path: None,
                },
                ..d()
            },
            "UdpOptionsWithoutUdp",
        ),
        (
            RunRequest {
                app: AppOptions {
                    buffers: Some(3),
                    ..AppOptions::default()
                },
                ..d()
            },
            "AppOptionsWithoutApp",
        ),
        (
            RunRequest {
                duration: None,
                period: Some(Nanos::from_micros(20)),
                ..d()
            },
            "UnboundedPeriod",
        ),
    ];
    for (r, name) in cases {
        let e = plan(&r).unwrap_err();
        assert!(format!("{e:?}").starts_with(name), "{name}: {e:?}");
        // The lines name settings, never an option.
        assert!(!e.to_string().contains("--"), "{e}");
    }
}

#[test]
fn the_probes_checks_come_through_typed() {
    let r = RunRequest {
        period: Some(Nanos(0)),
        ..RunRequest::default()
    };
    assert!(matches!(
        plan(&r),
        Err(RequestError::Setting(SettingError::PeriodZero))
    ));
    let r = RunRequest {
        duration: Some(Nanos::from_millis(1)),
        period: Some(Nanos::from_millis(10)),
        ..RunRequest::default()
    };
    match plan(&r) {
        Err(RequestError::Setting(e)) => assert_eq!(e.subject(), Some(Setting::Duration)),
        other => panic!("{other:?}"),
    }
    let r = RunRequest {
        probe: ProbeKind::Noise,
        noise: NoiseOptions {
            gap_ratio: Some(1),
            ..NoiseOptions::default()
        },
        ..RunRequest::default()
    };
    assert!(matches!(
        plan(&r),
        Err(RequestError::Setting(SettingError::GapRatio))
    ));
    let r = RunRequest {
        cpus: Some("9".into()),
        ..RunRequest::default()
    };
    assert!(matches!(
        plan(&r),
        Err(RequestError::Cpus(CpuChoiceError::Offline { .. }))
    ));
}

#[test]
fn a_run_without_end_takes_its_period_range() {
    let r = RunRequest {
        duration: None,
        period: Some(Nanos::from_millis(2)),
        ..RunRequest::default()
    };
    let p = plan(&r).unwrap();
    assert_eq!(timer(&p).duration, None);
    assert!(r.check_rules().is_ok());
    let slow = RunRequest {
        period: Some(Nanos::from_secs(2)),
        ..r
    };
    assert!(matches!(
        slow.check_rules(),
        Err(RequestError::UnboundedPeriod(p)) if p == Nanos::from_secs(2)
    ));
}

#[test]
fn several_priorities_become_cells_measured_together_per_workload() {
    let r = RunRequest {
        priorities: parse_priority_list("95, rr:50 ,other").unwrap(),
        workloads: vec!["idle".into(), "cpu".into()],
        ..RunRequest::default()
    };
    let p = plan(&r).unwrap();
    let cells = p.cells();
    let labels: Vec<String> = cells.iter().map(|c| c.label()).collect();
    assert_eq!(
        labels,
        [
            "timer, fifo 95, idle",
            "timer, rr 50, idle",
            "timer, other, idle",
            "timer, fifo 95, cpu",
            "timer, rr 50, cpu",
            "timer, other, cpu",
        ]
    );
    assert!(cells.iter().all(|c| c.of == 6));
    assert_eq!(cells[1].together, [0, 1, 2]);
    assert_eq!(cells[5].together, [3, 4, 5]);
    // One grid: the same CPUs, period and duration for every priority.
    let grid = |c: &crate::CellSpec| match &c.probe {
        ProbeSpec::Timer(t) => (t.cpus.clone(), t.period, t.duration, t.nice),
        other => panic!("not a timer: {other:?}"),
    };
    assert!(cells.iter().all(|c| grid(c) == grid(&cells[0])));
    let s = cells[2].settings(20);
    assert_eq!(s.common().together, Some(vec![0, 1, 2]));
    assert_eq!((s.common().policy, s.priority()), (Policy::Other, 0));
    // Without the list: one cell per workload, alone.
    let alone = plan(&RunRequest::default()).unwrap().cells();
    assert!(alone[0].together.is_empty());
    assert_eq!(alone[0].settings(20).common().together, None);
}

#[test]
fn priority_lists_read_every_form_and_refuse_the_rest() {
    assert_eq!(
        parse_priority_list("1,fifo:99,rr:2,other,batch,idle").unwrap(),
        [
            (SchedPolicy::Fifo, 1),
            (SchedPolicy::Fifo, 99),
            (SchedPolicy::Rr, 2),
            (SchedPolicy::Other, 0),
            (SchedPolicy::Batch, 0),
            (SchedPolicy::Idle, 0),
        ]
    );
    for bad in [
        "0", "100", "rr:0", "deadline", "fifo:", "x:5", "", "95,,50", "-1",
    ] {
        assert!(
            matches!(parse_priority_list(bad), Err(RequestError::PriorityItem(_))),
            "{bad}"
        );
    }
    // Duplicates are kept by the parser and refused by the request.
    assert_eq!(parse_priority_list("95,fifo:95").unwrap().len(), 2);
}

#[test]
fn several_priorities_refuse_what_would_break_the_shared_grid() {
    let with = |list: &str| RunRequest {
        priorities: parse_priority_list(list).unwrap(),
        ..RunRequest::default()
    };
    let err = |r: RunRequest| plan(&r).err().map(|e| e.to_string()).unwrap_or_default();
    // Traced: one tracer for the group, one analysis per priority.
    let traced = RunRequest {
        trace: TraceOptions {
            on: true,
            ..RunRequest::default().trace
        },
        ..with("95,50")
    };
    assert!(plan(&traced).unwrap().trace.is_some());
    // The noise probe's analysis follows one thread per CPU.
    let noise_traced = RunRequest {
        probe: ProbeKind::Noise,
        ..traced.clone()
    };
    assert!(matches!(
        plan(&noise_traced),
        Err(RequestError::PrioritiesWithTrace)
    ));
    assert!(matches!(
        plan(&with("95")),
        Err(RequestError::PrioritiesTooFew)
    ));
    match plan(&with("idle,50,idle")) {
        Err(RequestError::PriorityTwice(p)) => assert_eq!(p, "idle"),
        other => panic!("{other:?}"),
    }
    let cases = [
        (
            RunRequest {
                probe: ProbeKind::Udp,
                ..with("95,50")
            },
            "needs the timer probe or the noise probe",
        ),
        (
            RunRequest {
                priority: Some(80),
                ..with("95,50")
            },
            "replaces policy, priority",
        ),
        (
            RunRequest {
                policy: Policy::Rr,
                ..with("95,50")
            },
            "replaces policy, priority",
        ),
        (
            RunRequest {
                sched: SchedOptions {
                    nice: Some(5),
                    ..SchedOptions::default()
                },
                ..with("95,other")
            },
            "replaces policy, priority",
        ),
        (
            RunRequest {
                timer: TimerOptions {
                    api: TimerApi::Nanosleep,
                    phase: Phase::Random,
                    ..RunRequest::default().timer
                },
                ..with("95,50")
            },
            "fixed phase",
        ),
    ];
    for (r, want) in cases {
        let line = err(r);
        assert!(line.contains(want), "want '{want}': {line}");
        assert!(
            !line.contains("--"),
            "no option names in the engine: {line}"
        );
    }
}

#[test]
fn a_shared_real_time_priority_gives_each_thread_its_own_cell() {
    let r = RunRequest {
        priorities: parse_priority_list("fifo:50,50,rr:50,60,rr:50").unwrap(),
        ..RunRequest::default()
    };
    let cells = plan(&r).unwrap().cells();
    let labels: Vec<String> = cells.iter().map(|c| c.label()).collect();
    assert_eq!(
        labels,
        [
            "timer, fifo 50, none",
            "timer, fifo 50 #2, none",
            "timer, rr 50, none",
            "timer, fifo 60, none",
            "timer, rr 50 #2, none",
        ]
    );
    let s: Vec<_> = cells.iter().map(|c| c.settings(20)).collect();
    let instances: Vec<Option<u32>> = s.iter().map(|s| s.common().instance).collect();
    assert_eq!(instances, [None, Some(2), None, None, Some(2)]);
    assert!(
        !s[0].same_cell_as(&s[1]),
        "the two fifo 50 threads are two cells"
    );
    assert_eq!(s[1].sched_label(), "fifo 50 #2");
    // Stable: the same list gives the same cells again.
    let again: Vec<_> = plan(&r)
        .unwrap()
        .cells()
        .iter()
        .map(|c| c.settings(20))
        .collect();
    assert!(s.iter().zip(&again).all(|(a, b)| a.same_cell_as(b)));
    // A list without a repeated priority stores no instance at all.
    let plain = RunRequest {
        priorities: parse_priority_list("95,50").unwrap(),
        ..RunRequest::default()
    };
    let plain = plan(&plain).unwrap().cells();
    assert!(plain
        .iter()
        .all(|c| c.settings(20).common().instance.is_none()));
}

#[test]
fn the_noise_probe_at_several_priorities_spins_without_pause_unless_told() {
    let with = |list: &str, pause: Option<Nanos>| RunRequest {
        probe: ProbeKind::Noise,
        priorities: parse_priority_list(list).unwrap(),
        noise: NoiseOptions {
            pause,
            ..NoiseOptions::default()
        },
        ..RunRequest::default()
    };
    let cells = plan(&with("rr:50,rr:50", None)).unwrap().cells();
    assert_eq!(cells.len(), 2);
    assert_eq!(cells[0].together, [0, 1]);
    for c in &cells {
        match &c.probe {
            ProbeSpec::Noise(n) => {
                assert_eq!((n.policy, n.priority), (SchedPolicy::Rr, 50));
                assert_eq!(n.pause, Nanos(0), "Table 6: continuous spinning");
            }
            other => panic!("not noise: {other:?}"),
        }
    }
    assert_eq!(cells[1].label(), "noise, rr 50 #2, none");
    let paused = plan(&with("fifo:60,fifo:50", Some(Nanos::from_millis(33))))
        .unwrap()
        .cells();
    assert!(matches!(&paused[1].probe, ProbeSpec::Noise(n) if n.pause == Nanos::from_millis(33)));
    // Alone, the noise probe keeps its default pause.
    let alone = RunRequest {
        probe: ProbeKind::Noise,
        ..RunRequest::default()
    };
    assert!(
        matches!(plan(&alone).unwrap().probe, ProbeSpec::Noise(n) if n.pause == RunRequest::DEFAULT_PAUSE)
    );
    // Still refused, one line each: a fair-share policy twice, another probe.
    for (r, want) in [
        (with("other,other", None), "other is listed twice"),
        (
            RunRequest {
                probe: ProbeKind::App,
                ..with("rr:50,rr:50", None)
            },
            "needs the timer probe or the noise probe",
        ),
    ] {
        let line = plan(&r).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(line.contains(want), "want '{want}': {line}");
        assert!(!line.contains('\n'), "{line}");
    }
}
