//! The pairing and rendering on synthetic figures: every published figure
//! appears, both sides are there, missing counterparts are marked and the
//! measured values land in their rows.

use latscope_model::{metric, MicroResult, Nanos};
use latscope_stats::Histogram;

use crate::*;

fn hist(values: &[(u64, u64)]) -> Histogram {
    let mut h = Histogram::new();
    for &(v, n) in values {
        h.record_n(v, n);
    }
    h
}

fn m(name: &str, cpu: Option<u32>, values: &[(u64, u64)]) -> MetricFigures {
    MetricFigures {
        name: name.to_string(),
        cpu,
        histogram: hist(values),
    }
}

/// Every cell of a probe design with the same synthetic metrics: the
/// latency family's maximum is `base` ns plus 1000 per cell index.
fn probe_figures(d: &ProbeDesign, base: u64) -> RunFigures {
    let n = (d.workloads.len() * d.kinds.len()) as u32;
    let cells = (0..n)
        .map(|i| {
            let top = base + 1000 * u64::from(i);
            CellFigures {
                index: i,
                workload: d.cell(i).map(|(w, _)| w).unwrap_or("idle").to_string(),
                duration: Nanos::from_secs(3),
                metrics: vec![
                    m(metric::TIMER_IRQ, Some(0), &[(2_000, 100), (top, 1)]),
                    m("softirq.delay.TIMER", Some(0), &[(top + 7, 1)]),
                    m("softirq.delay.RCU", Some(1), &[(500, 1)]),
                    m(metric::TIMER_SCHED, Some(1), &[(top + 1, 1)]),
                    m(
                        metric::TIMER_LATENCY,
                        Some(0),
                        &[(3_000, 1000), (top + 2, 1)],
                    ),
                    m(metric::NOISE_GAP, Some(0), &[(top + 3, 1)]),
                    m(metric::UDP_RECV, None, &[(top + 4, 1)]),
                    m(metric::UDP_SEND, None, &[(top + 5, 1)]),
                    m(
                        metric::TIMER_INTERVAL,
                        Some(0),
                        &[(1_050_000, 900), (2_350_000, 2), (3_050_000, 1)],
                    ),
                    m(metric::TIMER_INTERVAL, Some(1), &[(999_000, 10)]),
                ],
                forecasts: vec![ForecastFigures {
                    metric: metric::TIMER_LATENCY.to_string(),
                    hour: Ok((
                        4_560_000,
                        latscope_stats::forecast::Provenance::Extrapolated,
                    )),
                    day: Err("the horizon is too far beyond the run".to_string()),
                    week: Err("the horizon is too far beyond the run".to_string()),
                }],
            }
        })
        .collect();
    RunFigures {
        run_id: Some(7),
        cells,
        micro: Vec::new(),
    }
}

fn micro(bench: &str, median_ns: f64, ops: u64, non_timer: f64) -> MicroResult {
    let mut r: MicroResult = zeroed();
    r.bench = bench.to_string();
    r.median_ns = median_ns;
    r.ops_per_iteration = ops;
    r.non_timer_interrupts_per_iteration = Some(non_timer);
    r
}

/// A MicroResult with every figure zero.
fn zeroed() -> MicroResult {
    MicroResult {
        bench: String::new(),
        group: String::new(),
        name: String::new(),
        operation: String::new(),
        cpu: 0,
        other_cpu: None,
        skipped: None,
        iterations: 10,
        ops_per_iteration: 1,
        overhead_ns: 0.0,
        min_ns: 0.0,
        median_ns: 0.0,
        mean_ns: 0.0,
        stddev_ns: 0.0,
        max_ns: 0.0,
        uncorrected_median_ns: 0.0,
        overhead_share: 0.0,
        per_iteration_ns: Vec::new(),
        counters: Vec::new(),
        interrupts_per_iteration: None,
        non_timer_interrupts_per_iteration: None,
        softirqs_per_iteration: None,
        bytes: None,
    }
}

fn figures_for(_id: &str, d: &Design) -> RunFigures {
    match d {
        Design::Probe(p) => probe_figures(p, 10_000),
        Design::Micro(_) => RunFigures {
            run_id: Some(8),
            cells: Vec::new(),
            micro: vec![
                micro("syscall.dup_close", 423.2, 2245, 0.0),
                micro("fs.read_8K_files_cold", 87_390.0, 113, 113.0),
                micro("fs.create_fsync_delete", 178_060.0, 6, 24.0),
            ],
        },
    }
}

fn line_of<'a>(text: &'a str, start: &str) -> &'a str {
    text.lines()
        .find(|l| l.trim_start().starts_with(start))
        .unwrap_or_else(|| panic!("no line starting with {start:?} in\n{text}"))
}

/// The measured side of a line: its words after the bar.
fn measured(line: &str) -> Vec<&str> {
    line.split_once('‖')
        .map_or(Vec::new(), |(_, m)| m.split_whitespace().collect())
}

#[test]
fn every_published_figure_appears_beside_this_machines_columns() {
    for id in STUDY_IDS {
        for quick in [true, false] {
            let d = design(id, quick).expect("design");
            let r = reproduce(id, &d, &figures_for(id, &d)).expect("reproduced");
            let text = render(&r);
            let study = latscope_studies::study(id).unwrap().unwrap();
            assert_eq!(
                r.tables
                    .iter()
                    .filter(|t| !t.number.starts_with("Fig"))
                    .count(),
                study.tables.len(),
                "{id}"
            );
            for table in &study.tables {
                let t = r.tables.iter().find(|t| t.number == table.number).unwrap();
                let rendered = crate::table(t);
                assert!(rendered.contains("published (paper)"), "{id} {}", t.number);
                assert!(rendered.contains("this machine"), "{id} {}", t.number);
                for row in &table.rows {
                    for f in &row.figures {
                        assert!(
                            rendered.contains(&f.printed),
                            "{id} {}: {}",
                            t.number,
                            f.printed
                        );
                    }
                }
                for row in &t.rows {
                    if let Measured::Figures(cells) = &row.measured {
                        assert_eq!(cells.len(), t.measured_columns.len(), "{id} {}", row.label);
                    }
                }
            }
            assert!(text.contains("run 7") || text.contains("run 8"), "{id}");
        }
    }
}

#[test]
fn cota_robles_held_gives_the_maxima_per_workload_and_the_forecast() {
    let d = design("cota-robles-held", true).unwrap();
    let r = reproduce("cota-robles-held", &d, &figures_for("", &d)).unwrap();
    let t = r.tables.iter().find(|t| t.number == "3").unwrap();
    assert_eq!(t.measured_columns.len(), 8);
    assert_eq!(t.measured_columns[0], "idle: max in 3 s");
    let text = crate::table(t);
    // Cells 0 and 1 (idle, fifo 95 and 50): the irq row is the larger,
    // 11,000 ns = 0.011 ms; cpu (cells 2, 3): 13,000 ns.
    let irq = line_of(&text, "H/W Int. to S/W ISR");
    assert!(irq.contains("0.011") && irq.contains("0.013"), "{irq}");
    let softirq = line_of(&text, "S/W ISR to DPC");
    assert!(softirq.contains("0.011 (TIMER)"), "{softirq}");
    let high = line_of(&text, "H/W Int. to kernel RT thread (High Priority)");
    assert!(high.contains("0.010") && high.contains("4.56 (fit)") && high.contains("refused"));
    let med = line_of(&text, "H/W Int. to kernel RT thread (Med. Priority)");
    assert!(
        med.contains("0.011") && med.contains("timer.latency (fifo 50)"),
        "{med}"
    );
    assert!(line_of(&text, "H/W Interrupt to DPC").contains("no counterpart:"));
    assert!(text.contains("Forecast refused (idle, fifo 95): the horizon is too far"));
    let t1 = crate::table(r.tables.iter().find(|t| t.number == "1").unwrap());
    assert!(line_of(&t1, "ADSL").contains("no counterpart:"));
}

#[test]
fn jones_regehr_bins_the_intervals_by_100_us_per_cpu() {
    let d = design("jones-regehr", true).unwrap();
    let r = reproduce("jones-regehr", &d, &figures_for("", &d)).unwrap();
    let t2 = crate::table(r.tables.iter().find(|t| t.number == "2").unwrap());
    assert_eq!(
        measured(line_of(&t2, "1000-1100 µs")),
        ["900", "timer.interval"]
    );
    assert_eq!(
        measured(line_of(&t2, "900-1000 µs")),
        ["10", "timer.interval"]
    );
    assert_eq!(
        measured(line_of(&t2, "2300-2400 µs")),
        ["2", "timer.interval"]
    );
    assert_eq!(
        measured(line_of(&t2, "3000-3100 µs (no row in the paper)")),
        ["1", "timer.interval"]
    );
    let t1 = crate::table(r.tables.iter().find(|t| t.number == "1").unwrap());
    // cpu 0: minimum 1050 µs (HDR, three digits), maximum 3050.
    let min = line_of(&t1, "Minimum µs");
    assert_eq!(measured(min), ["1050", "999", "timer.interval"]);
    assert!(line_of(&t1, "Maximum µs").contains("305"), "{t1}");
    assert!(t1.contains("cpu 0") && t1.contains("cpu 1"));
}

#[test]
fn bernadat_marks_what_the_quick_design_leaves_out() {
    let d = design("bernadat", true).unwrap();
    let r = reproduce("bernadat", &d, &figures_for("", &d)).unwrap();
    let t = crate::table(r.tables.iter().find(|t| t.number == "15").unwrap());
    assert!(t.contains("idle (paper's Idle)") && t.contains("cpu (paper's CPU)"));
    // Cell 0 is idle's noise cell: 10,003 ns; cell 3 cpu's: 13,003.
    let noise = line_of(&t, "Periodic CPU Preemptions");
    assert!(noise.contains("10.0") && noise.contains("13.0"), "{noise}");
    assert!(line_of(&t, "Timer services: Sleep").contains("no counterpart: not in this design"));
    let udp = line_of(&t, "UDP Stack: receive");
    assert!(udp.contains("12.0") && udp.contains("15.0"), "{udp}");
    let full = design("bernadat", false).unwrap();
    let r = reproduce("bernadat", &full, &RunFigures::default()).unwrap();
    let t = crate::table(r.tables.iter().find(|t| t.number == "15").unwrap());
    assert!(line_of(&t, "Timer services: Sleep").contains("—"), "{t}");
    let t6 = crate::table(r.tables.iter().find(|t| t.number == "6").unwrap());
    assert!(line_of(&t6, "1 - 2").contains("no counterpart"));
}

#[test]
fn chen_gives_the_primitives_and_the_nonclock_interrupts_per_file() {
    let quick = design("chen-et-al", true).unwrap();
    let r = reproduce("chen-et-al", &quick, &figures_for("", &quick)).unwrap();
    let t4 = crate::table(r.tables.iter().find(|t| t.number == "IV").unwrap());
    assert!(line_of(&t4, "(all)").contains("no counterpart: not in the quick design"));
    let d = design("chen-et-al", false).unwrap();
    let r = reproduce("chen-et-al", &d, &figures_for("", &d)).unwrap();
    let text = render(&r);
    assert!(
        line_of(&text, "Syscall benchmark").contains("0.423"),
        "{text}"
    );
    assert!(line_of(&text, "Null benchmark").contains("—"));
    let t4 = crate::table(r.tables.iter().find(|t| t.number == "IV").unwrap());
    assert_eq!(measured(line_of(&t4, "(all)"))[..2], ["1.00", "8192"]);
    let t5 = crate::table(r.tables.iter().find(|t| t.number == "V").unwrap());
    assert_eq!(measured(line_of(&t5, "(all)"))[..2], ["4.00", "512"]);
    let t6 = crate::table(r.tables.iter().find(|t| t.number == "VI").unwrap());
    assert!(t6.contains("no counterpart: the Pentium's"));
}

#[test]
fn an_unknown_study_or_a_mismatched_design_is_an_error() {
    let d = design("chen-et-al", true).unwrap();
    assert_eq!(
        reproduce("smith", &d, &RunFigures::default()).unwrap_err(),
        ReproduceError::UnknownStudy("smith".into())
    );
    assert!(matches!(
        reproduce("bernadat", &d, &RunFigures::default()),
        Err(ReproduceError::WrongDesign(_))
    ));
    assert!(title("smith").is_err());
}
