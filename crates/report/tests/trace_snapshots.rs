//! Snapshot tests of what a traced run renders: the per-CPU timer tables,
//! the interrupts and deferred-work tables, the tracer line, the episodes,
//! and the episodes and trace summary in JSON.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;

use latscope_model::{
    Breakdown, Capabilities, Cause, CauseKind, CausePart, CauseTotal, CellMeta, CpuId, Episode,
    Nanos, RunId, RunMeta, RunStatus, StackCount, SystemInfo, TraceSummary,
};
use latscope_stats::{CellResult, MetricResult, RunResult};

fn metric(name: &str, cpu: Option<u32>, values: &[u64]) -> MetricResult {
    let mut m = MetricResult::new(name, cpu.map(CpuId));
    for &v in values {
        m.histogram.record(v);
    }
    m
}

fn thread(name: &str, pid: i32, policy: &str, prio: i32, ns: u64) -> Cause {
    Cause {
        kind: CauseKind::Thread,
        name: name.into(),
        pid: Some(pid),
        policy: Some(policy.into()),
        priority: Some(prio),
        duration_ns: Nanos(ns),
        parts: Vec::new(),
    }
}

fn plain(kind: CauseKind, name: &str, ns: u64) -> Cause {
    Cause {
        kind,
        name: name.into(),
        pid: None,
        policy: None,
        priority: None,
        duration_ns: Nanos(ns),
        parts: Vec::new(),
    }
}

fn episodes() -> Vec<Episode> {
    vec![
        Episode {
            seq: 1,
            cpu: CpuId(1),
            metric: "timer.latency".into(),
            expiry_ns: Nanos(1_002_350_000_000),
            offset_ns: Nanos(2_350_000_000),
            latency_ns: Nanos(612_000),
            breakdown: Breakdown {
                irq_ns: Nanos(5_000),
                sched_ns: Nanos(590_000),
                return_ns: Nanos(17_000),
                idle_at_expiry: false,
                causes: vec![
                    thread("burner", 4242, "fifo", 90, 580_000),
                    plain(CauseKind::Return, "latscope-timer", 17_000),
                    plain(CauseKind::Wakeup, "wakeup", 10_000),
                    plain(CauseKind::TimerIrq, "hrtimer_wakeup", 5_000),
                ],
                blocking: Some(thread("burner", 4242, "fifo", 90, 580_000)),
                unexplained_ns: Nanos(0),
                steal_ns: Some(Nanos(0)),
                steal_source: None,
                steal_irq_ns: None,
                steal_sched_ns: None,
                complete: true,
                held: None,
            },
            stacks: vec![],
        },
        Episode {
            seq: 2,
            cpu: CpuId(0),
            metric: "timer.latency".into(),
            expiry_ns: Nanos(1_004_100_000_000),
            offset_ns: Nanos(4_100_000_000),
            latency_ns: Nanos(2_400_000),
            breakdown: Breakdown {
                irq_ns: Nanos(2_380_000),
                sched_ns: Nanos(12_000),
                return_ns: Nanos(8_000),
                idle_at_expiry: true,
                causes: vec![
                    plain(
                        CauseKind::Unexplained,
                        "interrupts off or hypervisor",
                        1_900_000,
                    ),
                    plain(CauseKind::Irq, "24:virtio0-input.0", 400_000),
                    Cause {
                        parts: vec![
                            CausePart {
                                name: "napi:eth0".into(),
                                count: 2,
                                duration_ns: Nanos(70_000),
                            },
                            CausePart {
                                name: "napi:(no_device)".into(),
                                count: 1,
                                duration_ns: Nanos(6_000),
                            },
                        ],
                        ..plain(CauseKind::Softirq, "NET_RX", 80_000)
                    },
                    plain(CauseKind::Wakeup, "wakeup", 12_000),
                    plain(CauseKind::Return, "latscope-timer", 8_000),
                ],
                blocking: None,
                unexplained_ns: Nanos(1_900_000),
                steal_ns: None,
                steal_source: None,
                steal_irq_ns: None,
                steal_sched_ns: None,
                held: None,
                complete: false,
            },
            stacks: vec![
                StackCount {
                    function: "virtnet_poll".into(),
                    module: Some("virtio_net".into()),
                    samples: 14,
                },
                StackCount {
                    function: "clear_page_erms".into(),
                    module: None,
                    samples: 3,
                },
            ],
        },
    ]
}

fn trace_summary() -> TraceSummary {
    TraceSummary {
        events: 482_113,
        lost_records: 0,
        lost_per_cpu: BTreeMap::new(),
        missing_events: vec![],
        samples_decomposed: 9_990,
        samples_undecomposed: 0,
        episodes_total: 5,
        episodes_kept: 2,
        episode_cap: 2,
        threshold_ns: Nanos::from_micros(500),
        cause_totals: vec![
            CauseTotal {
                kind: CauseKind::Unexplained,
                name: "interrupts off or hypervisor".into(),
                episodes: 1,
                total_ns: Nanos(1_900_000),
                max_ns: Nanos(1_900_000),
            },
            CauseTotal {
                kind: CauseKind::Thread,
                name: "burner".into(),
                episodes: 3,
                total_ns: Nanos(1_740_000),
                max_ns: Nanos(590_000),
            },
            CauseTotal {
                kind: CauseKind::Irq,
                name: "24:virtio0-input.0".into(),
                episodes: 1,
                total_ns: Nanos(400_000),
                max_ns: Nanos(400_000),
            },
        ],
        tracer_cpu_ns: 41_000_000,
        ..TraceSummary::default()
    }
}

fn fixture() -> RunResult {
    // Stored order is alphabetical: deferred work first, timer.* after.
    let mut metrics = vec![
        metric(
            "irq.exec.24:virtio0-input.0",
            None,
            &[3_000, 4_000, 400_000],
        ),
        metric("irq.exec.vector:local_timer", None, &[2_000; 50]),
        metric("irq.exec.vector:reschedule", None, &[1_000, 1_500]),
        metric("nmi.exec", None, &[9_000]),
        metric("softirq.delay.NET_RX", None, &[2_000, 3_000, 150_000]),
        metric("softirq.delay.TIMER", None, &[1_000; 20]),
        metric("softirq.exec.NET_RX", None, &[10_000, 80_000]),
        metric("softirq.exec.RCU", None, &[500; 400]),
        metric("softirq.exec.TIMER", None, &[3_000; 20]),
        metric("deferred.exec.NET_RX.napi:eth0", None, &[9_000, 70_000]),
        metric(
            "deferred.exec.TIMER.timer:delayed_work_timer_fn",
            None,
            &[2_000; 15],
        ),
        metric(
            "deferred.exec.TIMER.timer:process_timeout",
            None,
            &[1_500; 4],
        ),
        metric(
            "deferred.exec.TIMER.timer:tcp_keepalive_timer",
            None,
            &[1_000],
        ),
        metric("deferred.exec.TIMER.timer:(other)", None, &[500]),
        metric(
            "deferred.exec.hardirq.hrtimer:tick_nohz_handler",
            None,
            &[1_200; 50],
        ),
    ];
    for cpu in [0, 1] {
        metrics.push(metric("timer.interval", Some(cpu), &[1_000_000, 1_001_000]));
        metrics.push(metric("timer.irq", Some(cpu), &[5_000, 2_380_000]));
        metrics.push(metric("timer.latency", Some(cpu), &[15_000, 2_400_000]));
        metrics.push(metric("timer.return", Some(cpu), &[8_000, 17_000]));
        metrics.push(metric("timer.sched", Some(cpu), &[2_000, 590_000]));
    }
    metrics.push(metric(
        "workqueue.exec.vmstat_update",
        None,
        &[20_000, 30_000],
    ));
    let mut settings = BTreeMap::new();
    settings.insert("period_ns".to_string(), serde_json::json!(1_000_000));
    let caps = Capabilities {
        tracepoints: true,
        ..Capabilities::default()
    };
    RunResult {
        meta: RunMeta {
            ended_unix_ns: Some(Nanos(1_795_730_649_000_000_000)),
            status: RunStatus::Complete,
            command_line: vec!["latscope".into(), "run".into(), "--trace".into()],
            pid: 1,
            boot_id: "b".into(),
            hostname: "host".into(),
            tool_version: "0.1.0".into(),
            ..RunMeta::new(RunId(3), Nanos(1_795_730_639_000_000_000))
        },
        system: SystemInfo {
            hostname: "host".into(),
            kernel_release: "6.18.0".into(),
            cpu_count: 2,
            ..SystemInfo::default()
        },
        capabilities: caps,
        cells: vec![CellResult {
            trace: Some(trace_summary()),
            episodes: episodes(),
            ..CellResult::new(
                CellMeta {
                    monotonic_start_ns: Nanos(1_000_000_000_000),
                    ..CellMeta::new(
                        0,
                        "none",
                        latscope_model::CellSettings::from_json(
                            "timer",
                            serde_json::Value::Object(settings.into_iter().collect()),
                        )
                        .unwrap(),
                        Nanos::from_secs(10),
                    )
                },
                metrics,
            )
        }],
    }
}

fn untraced() -> RunResult {
    let mut run = fixture();
    let cell = &mut run.cells[0];
    cell.trace = None;
    cell.episodes.clear();
    cell.metrics.retain(|m| m.name.starts_with("timer."));
    run
}

#[test]
fn summary_keeps_timer_metrics_and_moves_deferred_work_to_its_own_tables() {
    let run = fixture();
    let text = latscope_report::summary_tables(&run);
    // The per-CPU timer metrics in their order, none of the deferred work.
    let order: Vec<usize> = [
        "\ntimer.latency — intended expiry → user code runs\n",
        "\ntimer.interval — spacing between consecutive wake-ups\n",
        "\ntimer.irq — intended expiry → our timer's interrupt handler\n",
        "\ntimer.sched — timer interrupt → our thread switched in\n",
        "\ntimer.return — switched in → user code runs\n",
        "\nInterrupts and deferred work",
    ]
    .iter()
    .map(|h| {
        text.find(h)
            .unwrap_or_else(|| panic!("{h} missing:\n{text}"))
    })
    .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{text}");
    for name in ["softirq.", "irq.exec", "nmi.exec", "workqueue.exec"] {
        assert!(!text.contains(name), "{name} in the main tables:\n{text}");
    }
    let tail = &text[order[5]..];
    let expected = "\
\nInterrupts and deferred work — top 15 by longest single execution (all CPUs)
source                   kind       count   total     max    mean     p99
24:virtio0-input.0       irq            3   407µs   400µs   136µs   400µs
NET_RX                   softirq        2  90.0µs  80.0µs  45.0µs  80.0µs
  eth0                   napi           2  79.0µs  70.0µs  39.5µs  70.0µs
vmstat_update            workqueue      2  50.0µs  30.0µs  25.0µs  30.0µs
NMI                      nmi            1  9.00µs  9.00µs  9.00µs  9.00µs
TIMER                    softirq       20  60.0µs  3.00µs  3.00µs  3.00µs
  delayed_work_timer_fn  timer         15  30.0µs  2.00µs  2.00µs  2.00µs
  process_timeout        timer          4  6.00µs  1.50µs  1.50µs  1.50µs
  tcp_keepalive_timer    timer          1  1.00µs  1.00µs  1.00µs  1.00µs
  (1 more)
local_timer              vector        50   100µs  2.00µs  2.00µs  2.00µs
  tick_nohz_handler      hrtimer       50  60.0µs  1.20µs  1.20µs  1.20µs
reschedule               vector         2  2.50µs  1.50µs  1.25µs  1.50µs
RCU                      softirq      400   200µs   500ns   500ns   500ns

Interrupts and deferred work — top 15 by total execution time
source                   kind       count   total     max    mean     p99
24:virtio0-input.0       irq            3   407µs   400µs   136µs   400µs
RCU                      softirq      400   200µs   500ns   500ns   500ns
local_timer              vector        50   100µs  2.00µs  2.00µs  2.00µs
  tick_nohz_handler      hrtimer       50  60.0µs  1.20µs  1.20µs  1.20µs
NET_RX                   softirq        2  90.0µs  80.0µs  45.0µs  80.0µs
  eth0                   napi           2  79.0µs  70.0µs  39.5µs  70.0µs
TIMER                    softirq       20  60.0µs  3.00µs  3.00µs  3.00µs
  delayed_work_timer_fn  timer         15  30.0µs  2.00µs  2.00µs  2.00µs
  process_timeout        timer          4  6.00µs  1.50µs  1.50µs  1.50µs
  tcp_keepalive_timer    timer          1  1.00µs  1.00µs  1.00µs  1.00µs
  (1 more)
vmstat_update            workqueue      2  50.0µs  30.0µs  25.0µs  30.0µs
NMI                      nmi            1  9.00µs  9.00µs  9.00µs  9.00µs
reschedule               vector         2  2.50µs  1.50µs  1.25µs  1.50µs

Softirq delays — raise → start of the handler (the Linux counterpart of DPC latency)
vector  busiest inside                      count    mean     p99     max
TIMER   timer:delayed_work_timer_fn (80 %)     20  1.00µs  1.00µs  1.00µs
NET_RX  napi:eth0 (100 %)                       3  51.7µs   150µs   150µs

tracer: 482113 events read · 0 records lost · no tracepoint missing · episodes above 500µs: 5 seen, 2 kept (cap 2) · tracer CPU time 41.0ms (0.4% of one CPU)
";
    assert_eq!(tail, expected, "\n{tail}");

    // The log-scale tables leave the deferred work out too.
    let hist = latscope_report::histogram_tables(&run);
    assert!(hist.contains("timer.sched, samples per range"), "{hist}");
    assert!(!hist.contains("softirq"), "{hist}");
}

#[test]
fn long_source_lists_are_cut_and_lost_records_are_loud() {
    let mut run = fixture();
    let cell = &mut run.cells[0];
    for i in 0..20u64 {
        cell.metrics.push(metric(
            &format!("irq.exec.{}:dev{i}", 40 + i),
            None,
            &[1_000 + i],
        ));
    }
    let t = cell.trace.as_mut().unwrap();
    t.lost_records = 12;
    t.lost_per_cpu = BTreeMap::from([(0, 0), (1, 12)]);
    t.missing_events = vec!["irq_vectors:local_timer_entry".into()];
    t.samples_undecomposed = 86;
    t.undecomposed_per_cpu = BTreeMap::from([(0, 0), (1, 86)]);
    let text = latscope_report::summary_tables(&run);
    assert_eq!(
        text.matches("(13 more sources; all are in `show --json`)")
            .count(),
        2,
        "{text}"
    );
    let line = text.lines().find(|l| l.starts_with("tracer:")).unwrap();
    assert!(line.contains("12 records LOST on CPU 1 (12)"), "{line}");
    assert!(
        line.contains("missing tracepoints: irq_vectors:local_timer_entry"),
        "{line}"
    );
    assert!(
        line.contains("86 samples not decomposed (CPU 1: 86)"),
        "{line}"
    );
}

#[test]
fn an_untraced_run_renders_as_before() {
    let run = untraced();
    let text = latscope_report::summary_tables(&run);
    assert!(!text.contains("Interrupts and deferred work"), "{text}");
    assert!(!text.contains("tracer:"), "{text}");
    assert_eq!(
        latscope_report::episodes_text(&run),
        "\nrun 3 was not traced, so it has no episodes; record one with `latscope run --trace --threshold D`\n"
    );
    let v = serde_json::to_value(latscope_report::run_json(&run)).unwrap();
    assert_eq!(v["episodes"], serde_json::json!([]));
    assert_eq!(v["cells"][0]["trace"], serde_json::Value::Null);
}

#[test]
fn episodes_text() {
    let run = fixture();
    let text = latscope_report::episodes_text(&run);
    let expected = "
cell 0: 5 episodes above 500µs; 2 kept in full (cap 2), 3 past the cap counted in the totals only

episode 1 · CPU 1 · 2.35s into the run · timer.latency 612µs = irq 5.00µs + sched 590µs + return 17.0µs · CPU busy at expiry
kind       name             pid  policy/prio  duration  % of latency
thread     burner          4242      fifo 90     580µs         94.8%
return     latscope-timer                       17.0µs          2.8%
wakeup     wakeup                               10.0µs          1.6%
timer_irq  hrtimer_wakeup                       5.00µs          0.8%
blocking thread: burner (pid 4242, fifo 90) ran 580µs while ours was runnable
unexplained 0ns · steal 0ns (hypervisor, over the housekeeping interval, not split)

episode 2 · CPU 0 · 4.10s into the run · timer.latency 2.40ms = irq 2.38ms + sched 12.0µs + return 8.00µs · CPU idle at expiry
kind         name                          pid  policy/prio  duration  % of latency
unexplained  interrupts off or hypervisor                      1.90ms         79.2%
irq          24:virtio0-input.0                                 400µs         16.7%
softirq      NET_RX                                            80.0µs          3.3%
               napi:eth0 ×2                                    70.0µs          2.9%
               napi:(no_device)                                6.00µs          0.2%
wakeup       wakeup                                            12.0µs          0.5%
return       latscope-timer                                    8.00µs          0.3%
blocking thread: none (no other thread ran while ours was runnable)
unexplained 1.90ms · steal unknown
INCOMPLETE: the event window did not reach back to the expiry or the kernel lost records around it; the shares are a lower bound
stacks: 14 samples in virtio_net virtnet_poll, 3 samples in clear_page_erms

cell 0: where the time went over all 5 episodes
kind         name                          episodes   total     max  share
unexplained  interrupts off or hypervisor         1  1.90ms  1.90ms  47.0%
thread       burner                               3  1.74ms   590µs  43.1%
irq          24:virtio0-input.0                   1   400µs   400µs   9.9%
";
    assert_eq!(text, expected, "\n{text}");
}

#[test]
fn episode_times_count_from_the_first_cell() {
    let mut run = fixture();
    let mut second = run.cells[0].clone();
    second.meta.index = 1;
    second.meta.monotonic_start_ns = Nanos(1_012_000_000_000);
    second.episodes.truncate(1);
    second.episodes[0].seq = 6;
    run.cells.push(second);
    let text = latscope_report::episodes_text(&run);
    assert!(
        text.contains("episode 1 · CPU 1 · 2.35s into the run"),
        "{text}"
    );
    assert!(
        text.contains("episode 6 · CPU 1 · 14.3s into the run"),
        "{text}"
    );
    let v = serde_json::to_value(latscope_report::run_json(&run)).unwrap();
    let seqs: Vec<_> = v["episodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["cell"].as_u64().unwrap(), e["seq"].as_u64().unwrap()))
        .collect();
    assert_eq!(seqs, [(0, 1), (0, 2), (1, 6)]);
    assert_eq!(v["episodes"][2]["time_ns"], 2_350_000_000u64);
}

#[test]
fn json_episodes_and_trace() {
    let run = fixture();
    let v = serde_json::to_value(latscope_report::run_json(&run)).unwrap();
    assert_eq!(v["schema"], "latscope.run.v1");
    // The deferred-work metrics are ordinary metrics in JSON.
    let names: Vec<&str> = v["cells"][0]["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    for n in [
        "irq.exec.24:virtio0-input.0",
        "irq.exec.vector:local_timer",
        "nmi.exec",
        "softirq.delay.NET_RX",
        "softirq.exec.RCU",
        "workqueue.exec.vmstat_update",
        "timer.irq",
        "timer.sched",
        "timer.return",
    ] {
        assert!(names.contains(&n), "{n} missing from {names:?}");
    }
    let nmi = v["cells"][0]["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "nmi.exec")
        .unwrap();
    assert_eq!(nmi["cpu"], serde_json::Value::Null);
    assert_eq!(nmi["max_ns"], 9_000);

    let t = &v["cells"][0]["trace"];
    assert_eq!(t["events"], 482_113);
    assert_eq!(t["lost_records"], 0);
    assert_eq!(t["lost_per_cpu"], serde_json::json!({}));
    assert_eq!(t["episodes_total"], 5);
    assert_eq!(t["episodes_kept"], 2);
    assert_eq!(t["episode_cap"], 2);
    assert_eq!(t["threshold_ns"], 500_000);
    assert_eq!(t["tracer_cpu_ns"], 41_000_000);
    assert_eq!(
        t["cause_totals"][1],
        serde_json::json!({"kind": "thread", "name": "burner", "episodes": 3, "total_ns": 1_740_000, "max_ns": 590_000})
    );

    let expected = serde_json::json!([
        {
            "seq": 1, "cell": 0, "cpu": 1, "time_ns": 2_350_000_000u64,
            "expiry_ns": 1_002_350_000_000u64, "metric": "timer.latency", "latency_ns": 612_000,
            "breakdown": {
                "irq_ns": 5_000, "sched_ns": 590_000, "return_ns": 17_000, "idle_at_expiry": false,
                "causes": [
                    {"kind": "thread", "name": "burner", "pid": 4242, "policy": "fifo", "priority": 90, "duration_ns": 580_000},
                    {"kind": "return", "name": "latscope-timer", "duration_ns": 17_000},
                    {"kind": "wakeup", "name": "wakeup", "duration_ns": 10_000},
                    {"kind": "timer_irq", "name": "hrtimer_wakeup", "duration_ns": 5_000}
                ],
                "blocking": {"kind": "thread", "name": "burner", "pid": 4242, "policy": "fifo", "priority": 90, "duration_ns": 580_000},
                "unexplained_ns": 0, "steal_ns": 0, "complete": true
            },
            "stacks": []
        },
        {
            "seq": 2, "cell": 0, "cpu": 0, "time_ns": 4_100_000_000u64,
            "expiry_ns": 1_004_100_000_000u64, "metric": "timer.latency", "latency_ns": 2_400_000,
            "breakdown": {
                "irq_ns": 2_380_000, "sched_ns": 12_000, "return_ns": 8_000, "idle_at_expiry": true,
                "causes": [
                    {"kind": "unexplained", "name": "interrupts off or hypervisor", "duration_ns": 1_900_000},
                    {"kind": "irq", "name": "24:virtio0-input.0", "duration_ns": 400_000},
                    {"kind": "softirq", "name": "NET_RX", "duration_ns": 80_000, "parts": [
                        {"name": "napi:eth0", "count": 2, "duration_ns": 70_000},
                        {"name": "napi:(no_device)", "count": 1, "duration_ns": 6_000}
                    ]},
                    {"kind": "wakeup", "name": "wakeup", "duration_ns": 12_000},
                    {"kind": "return", "name": "latscope-timer", "duration_ns": 8_000}
                ],
                "blocking": null,
                "unexplained_ns": 1_900_000, "complete": false
            },
            "stacks": [
                {"function": "virtnet_poll", "module": "virtio_net", "samples": 14},
                {"function": "clear_page_erms", "module": null, "samples": 3}
            ]
        }
    ]);
    assert_eq!(v["episodes"], expected);
}
