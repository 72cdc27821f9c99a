//! Snapshot tests of what a noise run renders (`run --probe noise`): the
//! per-CPU noise summary, the noise by cause class, steal time, findings,
//! the `noise.gap` tables, and `cells[].noise[]` in JSON.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;

use latscope_model::{
    Capabilities, CellMeta, CpuId, Nanos, NoiseClass, NoiseClock, NoiseCpuStats, RunId, RunMeta,
    RunStatus, SystemInfo,
};
use latscope_stats::{CellResult, MetricResult, RunResult};

fn gap(cpu: u32, values: &[u64], above: u64) -> MetricResult {
    let mut m = MetricResult::new("noise.gap", Some(CpuId(cpu)));
    for &v in values {
        m.histogram.record(v);
    }
    m.threshold = Some(Nanos::from_micros(10));
    m.above_threshold = Some(above);
    m
}

fn class(count: u64, total: u64, max: u64) -> NoiseClass {
    NoiseClass {
        count,
        total_ns: Nanos(total),
        max_ns: Nanos(max),
    }
}

const THROTTLING: &str = "9 interruptions of about 50 ms, about one every 1000 ms: RT throttling (kernel.sched_rt_runtime_us=950000 of sched_rt_period_us=1000000)";

fn cpu0() -> NoiseCpuStats {
    NoiseCpuStats {
        cpu: CpuId(0),
        clock: NoiseClock::Tsc,
        tsc_hz: 2_894_561_234,
        calibration_drift_ppb: -37,
        active_ns: Nanos(9_700_000_000),
        iterations: 453_271_009,
        base_iteration_ps: 21_375,
        gap_threshold_ns: Nanos(86),
        interruptions: 12_904,
        noise_ns: Nanos(13_487_233),
        max_gap_ns: Nanos(1_402_113),
        classes: BTreeMap::from([
            ("hw".to_string(), class(10_012, 4_100_233, 9_870)),
            ("irq".to_string(), class(2_500, 5_012_000, 41_000)),
            ("softirq".to_string(), class(380, 1_300_000, 90_000)),
            ("thread".to_string(), class(12, 3_075_000, 1_402_113)),
        ]),
        steal_ns: Some(Nanos(2_000_000)),
        findings: vec![],
    }
}

fn cpu1() -> NoiseCpuStats {
    NoiseCpuStats {
        cpu: CpuId(1),
        clock: NoiseClock::Vdso,
        tsc_hz: 0,
        calibration_drift_ppb: 0,
        active_ns: Nanos(9_500_000_000),
        iterations: 190_000_000,
        base_iteration_ps: 48_120,
        gap_threshold_ns: Nanos(193),
        interruptions: 9_850,
        noise_ns: Nanos(478_000_000),
        max_gap_ns: Nanos(50_012_000),
        classes: BTreeMap::from([
            ("hw".to_string(), class(9_000, 6_000_000, 12_000)),
            ("irq".to_string(), class(800, 10_000_000, 60_000)),
            ("softirq".to_string(), class(40, 2_000_000, 150_000)),
            ("thread".to_string(), class(10, 460_000_000, 50_012_000)),
        ]),
        steal_ns: None,
        findings: vec![THROTTLING.to_string()],
    }
}

fn run_meta() -> RunMeta {
    RunMeta {
        ended_unix_ns: Some(Nanos(1_795_730_650_000_000_000)),
        status: RunStatus::Complete,
        command_line: vec![
            "latscope".into(),
            "run".into(),
            "--probe".into(),
            "noise".into(),
            "--trace".into(),
        ],
        pid: 1,
        boot_id: "b".into(),
        hostname: "host".into(),
        tool_version: "0.1.0".into(),
        ..RunMeta::new(RunId(12), Nanos(1_795_730_639_000_000_000))
    }
}

fn noise_cell() -> CellResult {
    let mut settings = BTreeMap::new();
    settings.insert("runtime_ns".to_string(), serde_json::json!(1_000_000_000));
    settings.insert("pause_ns".to_string(), serde_json::json!(0));
    settings.insert("gap_ratio".to_string(), serde_json::json!(4));
    settings.insert("fp".to_string(), serde_json::json!(false));
    settings.insert("policy".to_string(), serde_json::json!("fifo"));
    settings.insert("priority".to_string(), serde_json::json!(95));
    settings.insert("cpus".to_string(), serde_json::json!("0-1"));
    settings.insert("threshold_ns".to_string(), serde_json::json!(10_000));
    CellResult {
        noise: vec![cpu0(), cpu1()],
        ..CellResult::new(
            CellMeta::new(
                0,
                "none",
                latscope_model::CellSettings::from_json(
                    "noise",
                    serde_json::Value::Object(settings.into_iter().collect()),
                )
                .unwrap(),
                Nanos::from_secs(10),
            ),
            vec![
                gap(0, &[90, 95, 120, 300, 2_000, 9_870, 41_000, 1_402_113], 2),
                gap(1, &[200, 250, 900, 5_000, 50_012_000], 1),
            ],
        )
    }
}

fn timer_cell() -> CellResult {
    let mut lat = MetricResult::new("timer.latency", Some(CpuId(0)));
    for v in [10_000u64, 12_000, 15_000] {
        lat.histogram.record(v);
    }
    let mut settings = BTreeMap::new();
    settings.insert("period_ns".to_string(), serde_json::json!(1_000_000));
    CellResult::new(
        CellMeta {
            monotonic_start_ns: Nanos(10_000_000_000),
            ..CellMeta::new(
                1,
                "none",
                latscope_model::CellSettings::from_json(
                    "timer",
                    serde_json::Value::Object(settings.into_iter().collect()),
                )
                .unwrap(),
                Nanos::from_secs(1),
            )
        },
        vec![lat],
    )
}

fn fixture() -> RunResult {
    RunResult {
        meta: run_meta(),
        system: SystemInfo {
            hostname: "host".into(),
            kernel_release: "6.18.0".into(),
            cpu_count: 2,
            rt_runtime_us: Some(950_000),
            rt_period_us: Some(1_000_000),
            ..SystemInfo::default()
        },
        capabilities: Capabilities {
            tracepoints: true,
            ..Capabilities::default()
        },
        cells: vec![noise_cell(), timer_cell()],
    }
}

#[test]
fn noise_summary_text() {
    let run = fixture();
    let text = latscope_report::summary_tables(&run);
    // The noise figures come before the metric tables; the timer cell after
    // it renders as it always has.
    let expected = "\n\
cell 0: noise probe (fifo 95, 1.00s runtime, no pause) · workload none · 10.0s measured

noise — interruptions of the CPU-bound loop, per CPU (an iteration at least as long as the threshold counts as one)
CPU  clock  active  iterations  base iteration  threshold  interruptions  per second   noise  noise %  CPU available  longest
0    tsc     9.70s   453271009          21.4ns       86ns          12904        1330  13.5ms  0.1390%       99.8610%   1.40ms
1    vdso    9.50s   190000000          48.1ns      193ns           9850        1037   478ms  5.0316%       94.9684%   50.0ms
TSC calibration: CPU 0 2894.561 MHz, drift -37 ppb

noise by cause — occurrences and total time per class (one interruption can hold several)
CPU     HW  HW time  NMI  NMI time   IRQ  IRQ time  SIRQ  SIRQ time  THREAD  THREAD time
0    10012   4.10ms    0       0ns  2500    5.01ms   380     1.30ms      12       3.08ms
1     9000   6.00ms    0       0ns   800    10.0ms    40     2.00ms      10        460ms
steal time (the hypervisor ran something else on the CPU): CPU 0 2.00ms · CPU 1 unknown
finding (CPU 1): 9 interruptions of about 50 ms, about one every 1000 ms: RT throttling (kernel.sched_rt_runtime_us=950000 of sched_rt_period_us=1000000)

noise.gap — length of each interruption of the CPU-bound loop
CPU  samples    min    mean    p50     p90     p99   p99.9  p99.99     max  >10.0µs
0          8   90ns   182µs  300ns  1.40ms  1.40ms  1.40ms  1.40ms  1.40ms        2
1          5  200ns  10.0ms  900ns  50.0ms  50.0ms  50.0ms  50.0ms  50.0ms        1

cell 1: timer probe (clock_nanosleep, 1.00ms period, fifo 95) · workload none · 1.00s measured

timer.latency — intended expiry → user code runs
CPU  samples     min    mean     p50     p90     p99   p99.9  p99.99     max
0          3  10.0µs  12.3µs  12.0µs  15.0µs  15.0µs  15.0µs  15.0µs  15.0µs
";
    assert_eq!(text, expected, "\n{text}");
}

#[test]
fn noise_histogram_text() {
    let run = fixture();
    let text = latscope_report::histogram_tables(&run);
    // The first microsecond is split down to the shortest interruption
    // (90 ns); the timer cell keeps its plain table.
    let expected = "\n\
cell 0: noise.gap, samples per range
range           CPU 0  CPU 1
62–125 ns           3      0
125–250 ns          0      1
250–500 ns          1      1
500–1000 ns         0      1
1–2 µs              0      0
2–4 µs              1      0
4–8 µs              0      1
8–16 µs             1      0
16–32 µs            0      0
32–64 µs            1      0
64–128 µs           0      0
128–256 µs          0      0
256–512 µs          0      0
512–1024 µs         0      0
1024–2048 µs        1      0
2048–4096 µs        0      0
4096–8192 µs        0      0
8192–16384 µs       0      0
16384–32768 µs      0      0
32768–65536 µs      0      1

cell 1: timer.latency, samples per range
range    CPU 0
< 1 µs       0
1–2 µs       0
2–4 µs       0
4–8 µs       0
8–16 µs      3
";
    assert_eq!(text, expected, "\n{text}");
}

#[test]
fn noise_json() {
    let run = fixture();
    let v = serde_json::to_value(latscope_report::run_json(&run)).unwrap();
    assert_eq!(v["schema"], "latscope.run.v1");
    let cell = &v["cells"][0];
    assert_eq!(cell["probe"], "noise");
    // noise.gap is an ordinary metric.
    let m = &cell["metrics"][0];
    assert_eq!(m["name"], "noise.gap");
    assert_eq!(m["cpu"], 0);
    assert_eq!(m["count"], 8);
    assert_eq!(m["min_ns"], 90);
    assert_eq!(m["max_ns"], 1_402_113);
    assert_eq!(m["threshold_ns"], 10_000);
    assert_eq!(m["above_threshold"], 2);

    let mut noise = cell["noise"].as_array().unwrap().clone();
    assert_eq!(noise.len(), 2);
    // The derived figures, then the rest exactly.
    let derived = [
        (0, "base_iteration_ns", 21.375),
        (0, "noise_percent", 100.0 * 13_487_233.0 / 9_700_000_000.0),
        (
            0,
            "cpu_available_percent",
            100.0 - 100.0 * 13_487_233.0 / 9_700_000_000.0,
        ),
        (0, "interruptions_per_second", 12_904.0 / 9.7),
        (1, "base_iteration_ns", 48.12),
        (1, "noise_percent", 100.0 * 478.0 / 9_500.0),
        (1, "cpu_available_percent", 100.0 - 100.0 * 478.0 / 9_500.0),
        (1, "interruptions_per_second", 9_850.0 / 9.5),
    ];
    for (i, key, want) in derived {
        let got = noise[i][key].as_f64().unwrap();
        assert!((got - want).abs() < 1e-9, "CPU {i} {key}: {got} vs {want}");
        noise[i].as_object_mut().unwrap().remove(key);
    }
    let expected = serde_json::json!([
        {
            "cpu": 0, "clock": "tsc", "tsc_hz": 2_894_561_234u64, "calibration_drift_ppb": -37,
            "active_ns": 9_700_000_000u64, "iterations": 453_271_009, "base_iteration_ps": 21_375,
            "gap_threshold_ns": 86, "interruptions": 12_904, "noise_ns": 13_487_233,
            "max_gap_ns": 1_402_113,
            "classes": {
                "hw": {"count": 10_012, "total_ns": 4_100_233, "max_ns": 9_870},
                "irq": {"count": 2_500, "total_ns": 5_012_000, "max_ns": 41_000},
                "softirq": {"count": 380, "total_ns": 1_300_000, "max_ns": 90_000},
                "thread": {"count": 12, "total_ns": 3_075_000, "max_ns": 1_402_113}
            },
            "steal_ns": 2_000_000,
            "findings": []
        },
        {
            "cpu": 1, "clock": "vdso", "tsc_hz": 0, "calibration_drift_ppb": 0,
            "active_ns": 9_500_000_000u64, "iterations": 190_000_000, "base_iteration_ps": 48_120,
            "gap_threshold_ns": 193, "interruptions": 9_850, "noise_ns": 478_000_000,
            "max_gap_ns": 50_012_000,
            "classes": {
                "hw": {"count": 9_000, "total_ns": 6_000_000, "max_ns": 12_000},
                "irq": {"count": 800, "total_ns": 10_000_000, "max_ns": 60_000},
                "softirq": {"count": 40, "total_ns": 2_000_000, "max_ns": 150_000},
                "thread": {"count": 10, "total_ns": 460_000_000, "max_ns": 50_012_000}
            },
            "steal_ns": null,
            "findings": [THROTTLING]
        }
    ]);
    assert_eq!(serde_json::Value::Array(noise), expected);

    // A timer cell has an empty list.
    assert_eq!(v["cells"][1]["probe"], "timer");
    assert_eq!(v["cells"][1]["noise"], serde_json::json!([]));
}

#[test]
fn noise_json_carries_every_field_of_the_model() {
    // Whatever the model serializes must reach the document unchanged: a
    // field added to NoiseCpuStats and forgotten here fails this test.
    let run = fixture();
    let v = serde_json::to_value(latscope_report::run_json(&run)).unwrap();
    for (i, stats) in run.cells[0].noise.iter().enumerate() {
        let model = serde_json::to_value(stats).unwrap();
        let doc = &v["cells"][0]["noise"][i];
        for (key, value) in model.as_object().unwrap() {
            assert_eq!(&doc[key], value, "CPU {i} field {key}");
        }
    }
}

#[test]
fn an_untraced_noise_cell_has_no_class_table() {
    let mut run = fixture();
    run.cells.truncate(1);
    for s in &mut run.cells[0].noise {
        s.classes.clear();
        s.steal_ns = None;
        s.findings.clear();
        s.clock = NoiseClock::Vdso;
    }
    let text = latscope_report::summary_tables(&run);
    let expected = "\
\ncell 0: noise probe (fifo 95, 1.00s runtime, no pause) · workload none · 10.0s measured

noise — interruptions of the CPU-bound loop, per CPU (an iteration at least as long as the threshold counts as one)
CPU  clock  active  iterations  base iteration  threshold  interruptions  per second   noise  noise %  CPU available  longest
0    vdso    9.70s   453271009          21.4ns       86ns          12904        1330  13.5ms  0.1390%       99.8610%   1.40ms
1    vdso    9.50s   190000000          48.1ns      193ns           9850        1037   478ms  5.0316%       94.9684%   50.0ms

noise.gap — length of each interruption of the CPU-bound loop
";
    assert!(text.starts_with(expected), "\n{text}");
    let v = serde_json::to_value(latscope_report::run_json(&run)).unwrap();
    let cpu0 = &v["cells"][0]["noise"][0];
    assert_eq!(cpu0["classes"], serde_json::json!({}));
    assert_eq!(cpu0["steal_ns"], serde_json::Value::Null);
    assert_eq!(cpu0["findings"], serde_json::json!([]));

    // One CPU traced and one not: the untraced one shows dashes, a class
    // no CPU saw shows zeros, and an unknown class gets a column of its own.
    let cell = &mut run.cells[0];
    cell.noise[0].classes = cpu0_classes();
    cell.noise[0]
        .classes
        .insert("smi".to_string(), class(2, 300_000, 150_000));
    let text = latscope_report::summary_tables(&run);
    let table = "\
noise by cause — occurrences and total time per class (one interruption can hold several); - : CPU not traced
CPU     HW  HW time  NMI  NMI time   IRQ  IRQ time  SIRQ  SIRQ time  THREAD  THREAD time  SMI  SMI time
0    10012   4.10ms    0       0ns  2500    5.01ms   380     1.30ms      12       3.08ms    2     300µs
1        -        -    -         -     -         -     -          -       -            -    -         -
";
    assert!(text.contains(table), "\n{text}");
}

fn cpu0_classes() -> BTreeMap<String, NoiseClass> {
    cpu0().classes
}

#[test]
fn figures_that_do_not_exist_are_dashes_and_nulls() {
    let mut run = fixture();
    run.cells.truncate(1);
    let s = &mut run.cells[0].noise[0];
    // Stopped before the loop ran: no active time, no iteration.
    s.active_ns = Nanos::ZERO;
    s.iterations = 0;
    s.interruptions = 0;
    s.noise_ns = Nanos::ZERO;
    s.max_gap_ns = Nanos::ZERO;
    let text = latscope_report::summary_tables(&run);
    let line = text.lines().find(|l| l.starts_with("0    tsc")).unwrap();
    let cells: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(
        cells,
        ["0", "tsc", "0ns", "0", "-", "86ns", "0", "-", "0ns", "-", "-", "0ns"],
        "{line}"
    );
    let v = serde_json::to_value(latscope_report::run_json(&run)).unwrap();
    let cpu0 = &v["cells"][0]["noise"][0];
    for key in [
        "base_iteration_ns",
        "noise_percent",
        "cpu_available_percent",
        "interruptions_per_second",
    ] {
        assert_eq!(cpu0[key], serde_json::Value::Null, "{key}");
    }
}

#[test]
fn a_noise_cell_without_figures_says_so() {
    let mut run = fixture();
    run.cells.truncate(1);
    run.cells[0].noise.clear();
    let text = latscope_report::summary_tables(&run);
    assert!(
        text.contains(
            "10.0s measured\n\nnoise: no per-CPU figures were stored for this cell\n\nnoise.gap — "
        ),
        "\n{text}"
    );
    let v = serde_json::to_value(latscope_report::run_json(&run)).unwrap();
    assert_eq!(v["cells"][0]["noise"], serde_json::json!([]));
}

#[test]
fn a_noise_episode_names_what_ran_instead_of_the_loop() {
    use latscope_model::{Breakdown, Cause, CauseKind, Episode};
    let mut run = fixture();
    run.cells.truncate(1);
    let thread = Cause {
        kind: CauseKind::Thread,
        name: "kworker/1:2".into(),
        pid: Some(77),
        policy: Some("other".into()),
        priority: Some(0),
        duration_ns: Nanos(1_300_000),
        parts: Vec::new(),
    };
    run.cells[0].episodes = vec![Episode {
        seq: 1,
        cpu: CpuId(0),
        metric: "noise.gap".into(),
        expiry_ns: Nanos(3_200_000_000),
        offset_ns: Nanos(3_200_000_000),
        latency_ns: Nanos(1_402_113),
        breakdown: Breakdown {
            irq_ns: Nanos(0),
            sched_ns: Nanos(0),
            return_ns: Nanos(0),
            idle_at_expiry: false,
            causes: vec![
                thread.clone(),
                Cause {
                    kind: CauseKind::Irq,
                    name: "24:virtio0-input.0".into(),
                    pid: None,
                    policy: None,
                    priority: None,
                    duration_ns: Nanos(102_113),
                    parts: Vec::new(),
                },
            ],
            blocking: Some(thread),
            unexplained_ns: Nanos(0),
            steal_ns: None,
            steal_source: None,
            steal_irq_ns: None,
            steal_sched_ns: None,
            complete: false,
            held: None,
        },
        stacks: vec![],
    }];
    let text = latscope_report::episodes_text(&run);
    let expected = "
cell 0: 1 episodes

episode 1 · CPU 0 · 3.20s into the run · noise.gap 1.40ms: the loop did not run for that long
kind    name                pid  policy/prio  duration  % of gap
thread  kworker/1:2          77      other 0    1.30ms     92.7%
irq     24:virtio0-input.0                       102µs      7.3%
thread that ran instead: kworker/1:2 (pid 77, other 0) for 1.30ms
unexplained 0ns · steal unknown
INCOMPLETE: the event window did not reach back to the start of the gap or the kernel lost records around it; the shares are a lower bound
";
    assert_eq!(text, expected, "\n{text}");
}
