//! The whole page from synthetic runs: which sections appear, and escaping.

use super::*;
use latscope_model::{
    metric, Breakdown, Capabilities, Cause, CauseKind, CellMeta, CpuId, Episode, Hazard, RunId,
    RunMeta, RunStatus, StackCount, SystemInfo, TraceSummary, UdpPath, UdpStats,
};
use latscope_stats::{MetricResult, SecondStats};
use std::collections::BTreeMap;

const HOURS: u64 = 2;

fn run(with_extras: bool) -> (RunResult, Vec<Timeline>) {
    let mut settings = BTreeMap::new();
    settings.insert("policy".to_string(), serde_json::json!("fifo"));
    settings.insert("priority".to_string(), serde_json::json!(95));
    settings.insert("period_ns".to_string(), serde_json::json!(1_000_000));
    let mut m = MetricResult::new(metric::TIMER_LATENCY, Some(CpuId(0)));
    for i in 0..20_000u64 {
        m.histogram.record(10_000 + (i % 97) * 300);
    }
    m.histogram.record(3_000_000);
    let mut cell = CellResult::new(
        CellMeta::new(
            0,
            "cpu <&>",
            latscope_model::CellSettings::from_json(
                "timer",
                serde_json::Value::Object(settings.into_iter().collect()),
            )
            .unwrap(),
            Nanos::from_secs(HOURS * 3600),
        ),
        vec![m],
    );
    let mut system = SystemInfo {
        hostname: "lab<1>".into(),
        kernel_release: "6.18".into(),
        ..SystemInfo::default()
    };
    if with_extras {
        let mut irq = MetricResult::new(metric::TIMER_IRQ, Some(CpuId(0)));
        irq.histogram.record(5_000);
        let mut sirq = MetricResult::new("softirq.exec.NET_RX", Some(CpuId(0)));
        sirq.histogram.record(80_000);
        let mut napi = MetricResult::new("deferred.exec.NET_RX.napi:eth<0>", Some(CpuId(0)));
        napi.histogram.record(70_000);
        cell.metrics.push(irq);
        cell.metrics.push(sirq);
        cell.metrics.push(napi);
        cell.trace = Some(TraceSummary {
            episodes_total: 1,
            episodes_kept: 1,
            ..TraceSummary::default()
        });
        cell.episodes.push(Episode {
            seq: 1,
            cpu: CpuId(0),
            metric: metric::TIMER_LATENCY.into(),
            expiry_ns: Nanos(0),
            offset_ns: Nanos(1_000_000_000),
            latency_ns: Nanos(3_000_000),
            breakdown: Breakdown {
                causes: vec![Cause {
                    kind: CauseKind::Thread,
                    name: "kworker/<0>".into(),
                    pid: Some(7),
                    policy: Some("other".into()),
                    priority: Some(0),
                    duration_ns: Nanos(2_900_000),
                    parts: Vec::new(),
                }],
                complete: true,
                held: None,
                ..Breakdown::default()
            },
            stacks: vec![StackCount {
                function: "memset".into(),
                module: None,
                samples: 3,
            }],
        });
        system.hazards.push(Hazard {
            id: "preemption".into(),
            severity: Severity::Hazard,
            title: "preemption model none".into(),
            detail: "a <kernel> path".into(),
            remedy: "boot with preempt=full".into(),
        });
    }
    let run = RunResult {
        meta: RunMeta {
            status: RunStatus::Complete,
            command_line: vec!["latscope".into(), "run".into()],
            pid: 1,
            hostname: "lab<1>".into(),
            tool_version: "0.1.0".into(),
            ..RunMeta::new(RunId(7), Nanos(1_700_000_000_000_000_000))
        },
        system,
        capabilities: Capabilities::default(),
        cells: vec![cell],
    };
    let seconds: Vec<SecondStats> = (0..HOURS * 3600)
        .map(|s| SecondStats {
            count: 1000,
            max: if s == 4000 { 3_000_000 } else { 40_000 },
            above: 0,
        })
        .collect();
    let timelines = vec![Timeline {
        cell: 0,
        metric: metric::TIMER_LATENCY.into(),
        cpu: Some(CpuId(0)),
        first_second: 0,
        seconds,
    }];
    (run, timelines)
}

#[test]
fn sections_follow_the_data() {
    let (plain, timelines) = run(false);
    let html = html_report(&plain, &timelines, &[]);
    for want in [
        "id=\"system\"",
        "id=\"matrix\"",
        "id=\"cell-0\"",
        "id=\"forecast\"",
        "Worst case per hour",
        "period 1.00ms",
    ] {
        assert!(html.contains(want), "missing {want}");
    }
    for absent in [
        "id=\"findings\"",
        "id=\"workloads\"",
        "Decomposition",
        "Interrupts and deferred work",
        "Episodes",
        "UDP datagrams",
    ] {
        assert!(!html.contains(absent), "unexpected {absent}");
    }
    // The second hour holds the 3 ms sample; the first does not.
    let hourly = &html[html.find("Worst case per hour").unwrap_or(0)..];
    let first = hourly.find("40.0µs").unwrap_or(usize::MAX);
    let second = hourly.find("3.00ms").unwrap_or(usize::MAX);
    assert!(first < second && second < usize::MAX, "{hourly}");

    let (traced, timelines) = run(true);
    let html = html_report(&traced, &timelines, &[]);
    for want in [
        "id=\"findings\"",
        "Decomposition of the wake-up (traced)",
        "Interrupts and deferred work",
        "NET_RX",
        // The softirq's row opens into the device that polled inside it.
        "↳ eth&lt;0&gt;",
        "Episodes: what the long latencies were made of",
        "kworker/&lt;0&gt;",
        "memset × 3",
        "a &lt;kernel&gt; path",
    ] {
        assert!(html.contains(want), "missing {want}");
    }
}

#[test]
fn text_from_the_run_is_escaped() {
    let (r, t) = run(true);
    let html = html_report(&r, &t, &[]);
    assert!(html.contains("lab&lt;1&gt;"));
    assert!(html.contains("cpu &lt;&amp;&gt;"));
    assert!(!html.contains("lab<1>") && !html.contains("<&>"));
    assert!(!html.contains("http://") && !html.contains("https://"));
}

#[test]
fn a_udp_cell_shows_its_counts() {
    let (mut r, t) = run(false);
    let cell = &mut r.cells[0];
    cell.meta.probe = "udp".into();
    let mut path = MetricResult::new(metric::UDP_PATH, Some(CpuId(1)));
    path.histogram.record(40_000);
    cell.metrics = vec![path];
    cell.udp = Some(UdpStats {
        path: UdpPath::Veth,
        sender_cpu: CpuId(0),
        receiver_cpu: CpuId(1),
        payload_bytes: 64,
        period_ns: Nanos::from_millis(10),
        sent: 2_000,
        received: 1_990,
        lost: 10,
        duplicates: 3,
        missing_rx_software: 4,
        checked: 1_980,
        ..UdpStats::default()
    });
    let html = html_report(&r, &t, &[]);
    for want in [
        "<h3>UDP datagrams</h3>",
        "udp over veth: sender CPU 0 → receiver CPU 1, 64-byte payload every 10.0ms.",
        "<td>sent</td><td class=\"num\">2000</td>",
        "<td>received</td><td class=\"num\">1990</td>",
        "<td>lost</td><td class=\"num\">10 (0.5000%)</td>",
        "<td>duplicates</td><td class=\"num\">3</td>",
        "<td>reordered</td><td class=\"num\">0</td>",
        "<td>missing RX_SOFTWARE time stamp</td><td class=\"num\">4</td>",
        "<td>path shorter than send</td><td class=\"num\">0 of 1980 checked</td>",
        "udp.path",
    ] {
        assert!(html.contains(want), "missing {want}");
    }
    assert!(!html.contains("did the clock step"));

    // Paths shorter than their send are called out.
    if let Some(u) = &mut r.cells[0].udp {
        u.inconsistent = 2;
    }
    let html = html_report(&r, &t, &[]);
    assert!(html.contains("2 of 1980 checked"));
    assert!(html.contains("class=\"fail\">Some paths were shorter than their send"));
}

/// The page's forecast and `latscope forecast --json` (its defaults, the
/// way the CLI computes it from the same run and timelines) give the same
/// worst cases per hour, day and week and the same MTTF grid.
#[test]
fn the_page_and_the_forecast_json_agree() {
    use latscope_stats::forecast::{forecast_report, CpuTimeline, ForecastOptions};

    // Two CPUs, so that pooling matters: each covers two hours, pooled
    // they make four whole hours.
    let (mut r, mut timelines) = run(false);
    let mut second_cpu = r.cells[0].metrics[0].clone();
    second_cpu.cpu = Some(CpuId(1));
    second_cpu.histogram.record(7_000_000);
    r.cells[0].metrics.push(second_cpu);
    let mut t1 = timelines[0].clone();
    t1.cpu = Some(CpuId(1));
    t1.seconds[100].max = 7_000_000;
    timelines.push(t1);

    let borrowed: Vec<CpuTimeline<'_>> = timelines.iter().map(Timeline::as_cpu_timeline).collect();
    let report = forecast_report(&r, &borrowed, &[], &ForecastOptions::new()).unwrap();
    let json = crate::forecast_json(&report).unwrap();
    let m = &json["cells"][0]["metrics"][0];
    assert_eq!(m["cpus"], serde_json::json!([0, 1]));
    let html = html_report(&r, &timelines, &[]);

    for h in ["hour", "day", "week"] {
        let w = &m["worst_case"][h];
        let (value, basis) = match w["latency_ns"].as_u64() {
            Some(ns) => (Nanos(ns).to_string(), w["provenance"].as_str().unwrap()),
            None => ("n/a".to_string(), w["error"].as_str().unwrap()),
        };
        let row = format!(
            "<tr><td>per {h}</td><td class=\"num\">{value}</td><td class=\"num\">{}</td>",
            escape(basis)
        );
        assert!(html.contains(&row), "missing {row}");
    }
    assert!(m["worst_case"]["hour"]["latency_ns"].is_u64());
    // Pooled, the four observed hours include CPU 1's 7 ms second.
    let hour = &m["worst_case"]["hour"]["observed_windows"];
    assert_eq!(hour["windows"], 4);
    assert_eq!(hour["worst_ns"], 7_000_000);
    assert_eq!(hour["median_ns"], 3_000_000);
    assert!(html.contains("4 × hour: 3.00ms, 7.00ms"), "no pooled hours");

    let g = &m["grid"];
    let periods = g["periods_ns"].as_array().unwrap();
    assert_eq!(periods.len(), 9);
    assert_eq!(g["buffers"], serde_json::json!([2, 3, 4, 6, 8]));
    for (i, p) in periods.iter().enumerate() {
        let mut row = format!("<tr><td>{}</td>", Nanos(p.as_u64().unwrap()));
        for c in 0..5 {
            let lb = g["lower_bound"][i][c].as_bool().unwrap();
            let s = g["mttf_s"][i][c].as_f64().unwrap_or(f64::INFINITY);
            row.push_str(&format!(
                "<td class=\"num\">{}{}</td>",
                if lb { "&gt;" } else { "" },
                crate::seconds_text(s)
            ));
        }
        row.push_str("</tr>");
        assert!(html.contains(&row), "missing grid row {row}");
    }
}

/// Diagnostics with every part filled: a ladder of three rungs (the top
/// one's interval open), return levels observed then extrapolated, dots,
/// a Q-Q series, a passed validation and two warnings, one with markup.
fn full_diagnostics() -> latscope_stats::forecast::diagnostics::Diagnostics {
    use latscope_stats::forecast::diagnostics::{
        Diagnostics, ReturnLevel, ThresholdDiagnostics, Validation, ValidationMethod,
    };
    use latscope_stats::forecast::stability::Rung;
    use latscope_stats::forecast::{Interval, Provenance};

    let rung = |u: f64, xi: f64, high: Option<f64>| Rung {
        threshold_ns: u,
        exceedances: 1_000,
        shape: xi,
        shape_interval: Interval {
            low: xi - 0.2,
            high,
            confidence: 0.95,
        },
        scale: 5_000.0,
        modified_scale: 5_000.0 - xi * u,
        mean_excess: 6_000.0,
    };
    let rungs = vec![
        rung(20_000.0, 1.4, Some(1.7)),
        rung(50_000.0, 0.1, Some(0.4)),
        rung(200_000.0, 0.2, None),
    ];
    let level = |s: f64, ns: u64, p: Provenance, high: Option<u64>| ReturnLevel {
        seconds: s,
        latency_ns: ns,
        provenance: p,
        interval: Interval {
            low: ns * 9 / 10,
            high,
            confidence: 0.95,
        },
    };
    Diagnostics {
        threshold: Some(ThresholdDiagnostics {
            threshold_ns: rungs[1].threshold_ns,
            shape: rungs[1].shape,
            shape_interval: rungs[1].shape_interval,
            rungs,
            chosen: 1,
            mean_excess_shape: Some(0.12),
            mixture: None,
        }),
        validation: Some(Validation {
            method: ValidationMethod::TailFit,
            fit_seconds: 4_800,
            test_seconds: 2_400,
            level_ns: 90_000,
            predicted: 10.0,
            observed: 9,
            p_value: 0.87,
            passed: true,
        }),
        return_levels: vec![
            level(1.0, 40_000, Provenance::Observed, Some(41_000)),
            level(60.0, 60_000, Provenance::Observed, Some(70_000)),
            level(3_600.0, 300_000, Provenance::Extrapolated, Some(900_000)),
            level(604_800.0, 2_000_000, Provenance::Extrapolated, None),
        ],
        observed_points: vec![(7_200.0, 3_000_000), (3_600.0, 41_000), (1.0, 40_000)],
        qq: (1..=20)
            .map(|i| (i as f64 * 1_000.0, i as f64 * 1_100.0))
            .collect(),
        warnings: vec![
            "not stationary: CPU 0 changed (Pettitt p < 0.01) <script>".to_string(),
            "clustered & heavy".to_string(),
        ],
        ..Diagnostics::default()
    }
}

/// The forecast of `run(false)` with its first metric's diagnostics
/// replaced by `d`, rendered as the forecast section.
fn forecast_with(d: latscope_stats::forecast::diagnostics::Diagnostics) -> String {
    let (r, t) = run(false);
    let mut report = report_forecast(&r, &t, &[]).unwrap();
    report.cells[0].metrics[0].diagnostics = d;
    forecast::report_section(&report)
}

#[test]
fn forecast_diagnostics_show_warnings_validation_and_three_plots() {
    let html = forecast_with(full_diagnostics());
    let block = &html[html.find("<h4>Forecast diagnostics</h4>").unwrap()..];
    // The block comes before the MTTF figure, after the worst cases.
    assert!(html.find("Worst cases: hour, day, week").unwrap() < html.len() - block.len());
    assert!(block
        .contains("<li>not stationary: CPU 0 changed (Pettitt p &lt; 0.01) &lt;script&gt;</li>"));
    assert!(block.contains("<li>clustered &amp; heavy</li>"));
    assert!(!html.contains("<script>") && !html.contains("All checks passed."));
    let line = full_diagnostics()
        .validation
        .map(|v| v.describe())
        .unwrap_or_default();
    assert_eq!(
        line,
        "validated: the tail model refitted to the first 4800 CPU-seconds; seconds of the other 2400 above 90.0 µs: predicted 10.0, observed 9, p = 0.87"
    );
    assert!(block.contains(&format!("<p class=\"pass\">{}</p>", escape(&line))));
    let end = block.find("</div>").unwrap();
    let block = &block[..end];
    assert_eq!(block.matches("<svg class=\"plot\"").count(), 3, "{block}");
    for want in [
        "threshold stability",
        "ξ = 1: infinite mean",
        "chosen threshold",
        "The chosen threshold (ringed), 50.0µs",
        "ξ̂ = 0.10, interval -0.10 to 0.40",
        "return levels",
        "return level, observed",
        "return level, extrapolated",
        "per-second maxima",
        "Q-Q plot of the excesses",
        "y = x",
        "95 % interval",
    ] {
        assert!(block.contains(want), "missing {want}");
    }
    // The infinite-mean line, the extrapolated levels and the diagonal are
    // dashed, each in its plot and its legend.
    assert_eq!(
        block.matches("stroke-dasharray=\"6 4\"").count(),
        6,
        "{block}"
    );
    assert!(!block.contains("too few"));
    // Deterministic: the same data give the same page.
    assert_eq!(html, forecast_with(full_diagnostics()));
}

#[test]
fn empty_forecast_diagnostics_say_why_each_plot_is_missing() {
    let html = forecast_with(latscope_stats::forecast::diagnostics::Diagnostics::default());
    let block = &html[html.find("<h4>Forecast diagnostics</h4>").unwrap()..];
    let block = &block[..block.find("</div>").unwrap()];
    assert!(block.contains("<p class=\"pass\">All checks passed.</p>"));
    assert!(!block.contains("<svg"), "{block}");
    for want in [
        "No threshold stability plot: too few",
        "No return-level plot: too few",
        "No Q-Q plot: too few",
    ] {
        assert!(block.contains(want), "missing {want}");
    }
    assert!(!block.contains("validat"));

    // A skipped validation says why instead.
    let d = latscope_stats::forecast::diagnostics::Diagnostics {
        validation_skipped: Some("not validated: the run has <10> seconds".to_string()),
        ..Default::default()
    };
    assert!(forecast_with(d)
        .contains("<p class=\"note\">not validated: the run has &lt;10&gt; seconds</p>"));

    // The diagnostics the forecast computes itself render on the page too.
    let (r, t) = run(false);
    let page = html_report(&r, &t, &[]);
    assert_eq!(page.matches("<h4>Forecast diagnostics</h4>").count(), 1);
}

/// A run that changed shows a table of its parts, and the block-maxima
/// model a row per horizon, a disagreement marked.
#[test]
fn forecast_diagnostics_show_parts_and_block_maxima() {
    use latscope_stats::forecast::diagnostics::{GevCheck, GevLevel};
    use latscope_stats::forecast::history::PartForecast;
    use latscope_stats::forecast::{ForecastError, Interval, PseudoWorstCases};
    let iv = |low: f64, high: f64| Interval {
        low,
        high: Some(high),
        confidence: 0.95,
    };
    let mut d = full_diagnostics();
    d.gev = Some(GevCheck {
        block_seconds: 10,
        blocks: 60,
        location_ns: 1.0,
        scale_ns: 1.0,
        shape: 0.1,
        levels: vec![GevLevel {
            period_s: 3600.0,
            level_ns: 1_000_000.0,
            level_interval: iv(800_000.0, 1_500_000.0),
            pot_ns: 3_000_000,
            pot_interval: Interval {
                low: 2_500_000,
                high: None,
                confidence: 0.95,
            },
            agrees: false,
        }],
        agrees: false,
    });
    d.parts = vec![PartForecast {
        from_s: 0.0,
        to_s: 300.0,
        samples: 300_000,
        max_ns: 80_000,
        threshold_ns: None,
        shape: None,
        pseudo_worst_case: PseudoWorstCases(vec![("10min", Err(ForecastError::EmptyHistogram))]),
    }];
    let html = forecast_with(d);
    let block = &html[html.find("<h4>Forecast diagnostics</h4>").unwrap()..];
    assert!(block.contains("<h5>Forecast per part</h5>"), "{block}");
    assert!(
        block.contains("<th class=\"num\">once per 10min</th>"),
        "{block}"
    );
    assert!(
        block.contains("0-300 s") && block.contains("n/a: no samples"),
        "{block}"
    );
    assert!(
        block.contains("<h5>Block maxima against the tail fit</h5>"),
        "{block}"
    );
    assert!(
        block.contains("60 maxima of 10 s blocks (shape 0.10)"),
        "{block}"
    );
    assert!(
        block.contains("1.00ms (800µs - 1.50ms)") && block.contains("3.00ms (2.50ms - -)"),
        "{block}"
    );
    assert!(block.contains("DISAGREE"), "{block}");
}

#[test]
fn an_imported_run_names_its_source_and_claims_nothing_it_was_not_told() {
    let (mut r, t) = run(false);
    r.meta.source = Some(latscope_model::RunSource {
        tool: "cyclictest".into(),
        tool_version: Some("2.40".into()),
        format: "cyclictest-json".into(),
        file: "rig.json".into(),
        command_line: Some("cyclictest -m -p 95 -h 400".into()),
        label: None,
        imported_unix_ns: Nanos(1),
    });
    let html = html_report(&r, &t, &[]);
    assert!(
        html.contains("<dt>imported from</dt><dd>cyclictest 2.40 (cyclictest-json, rig.json)</dd>"),
        "{html}"
    );
    assert!(html.contains("command</dt><dd>cyclictest -m -p 95 -h 400</dd>"));
    assert!(html.contains("Not recorded: the run was imported from cyclictest 2.40"));
    assert!(!html.contains("they are not real-time results"));
}

/// `n` checkpoint intervals of 10 s of `timer.latency` on CPUs 0 and 1 of
/// cell 0: 100 samples each, the k-th interval's largest `(k + 1)` ms;
/// interval 2 holds nothing.
fn intervals(n: u64) -> Vec<latscope_stats::IntervalSeries> {
    (0..2)
        .map(|cpu| latscope_stats::IntervalSeries {
            cell: 0,
            metric: metric::TIMER_LATENCY.into(),
            cpu: Some(CpuId(cpu)),
            merged: 1,
            stored: n as usize,
            window: None,
            intervals: (0..n)
                .map(|k| {
                    let mut h = Histogram::new();
                    if k != 2 {
                        for i in 0..99 {
                            h.record(10_000 + i * 100);
                        }
                        h.record((k + 1) * 1_000_000 + u64::from(cpu));
                    }
                    latscope_stats::Interval {
                        start: Nanos::from_secs(10 * k),
                        end: Nanos::from_secs(10 * (k + 1)),
                        start_unix: Nanos::from_secs(1_000 + 10 * k),
                        end_unix: Nanos::from_secs(1_010 + 10 * k),
                        histogram: h,
                    }
                })
                .collect(),
        })
        .collect()
}

#[test]
fn percentiles_over_time_come_with_checkpoint_intervals() {
    let (r, t) = run(false);
    let without = html_report(&r, &t, &[]);
    assert!(!without.contains("Percentiles over time"));

    let few = html_report_full(&r, &t, &[], None, &intervals(6));
    let at = few.find("Percentiles over time").expect("the section");
    let part = &few[at..];
    assert!(part.contains("timer.latency, cell 0: percentiles over time"));
    assert!(part.contains("timer.latency, the cell&#39;s 2 CPUs pooled"));
    assert!(part.contains("6 checkpoint intervals; each point one checkpoint interval"));
    // The table: one row per interval, both CPUs' samples pooled, the
    // empty interval shown as such.
    for want in [
        "<td>0.0–10.0 s</td><td class=\"num\">200</td>",
        "<td>20.0–30.0 s</td><td class=\"num\">0</td><td class=\"num\">-</td>",
        "<td class=\"num\">6.00ms</td></tr>",
    ] {
        assert!(part.contains(want), "missing {want}");
    }
    // Four lines in the plot's legend.
    for label in [">p50<", ">p99<", ">p99.9<", ">max<"] {
        assert!(part.contains(label), "missing {label}");
    }
    // One interval is the cell's summary again: no section.
    let one = html_report_full(&r, &t, &[], None, &intervals(1));
    assert!(!one.contains("Percentiles over time"));
    // Intervals of another cell or metric are not this one's.
    let mut other = intervals(6);
    for s in &mut other {
        s.cell = 7;
    }
    assert!(!html_report_full(&r, &t, &[], None, &other).contains("Percentiles over time"));

    // Many intervals: merged to at most 400 points, no table.
    let many = html_report_full(&r, &t, &[], None, &intervals(1_000));
    let part = &many[many.find("Percentiles over time").unwrap()..];
    assert!(part.contains("1000 checkpoint intervals; each point 3 checkpoint intervals merged"));
    assert!(part.contains("too many for a table"));
    assert!(!part[..part.find("</figure>").unwrap()].contains("<table>"));
}
