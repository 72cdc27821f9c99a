//! The noise probe's per-CPU figures (Bernadat's "preemption and interrupt
//! disturbance" test, rtla osnoise's summary): how much of the CPU a
//! spinning loop kept, how often and how long it was interrupted, and, with
//! `--trace`, by which class of cause — osnoise top's HW / NMI / IRQ / SIRQ /
//! THREAD columns.
//!
//! The interruptions themselves are the ordinary `noise.gap` metric, shown
//! by the generic tables; this module renders what the probe measured beside
//! them, and the figures derived from it that JSON and text share.

use std::collections::BTreeMap;

use latscope_model::{metric, Nanos, NoiseClass, NoiseClock, NoiseCpuStats};
use latscope_stats::{log2_micros_table, CellResult, Histogram, LogBin};

use crate::table::Table;

/// `CellMeta::probe` of a noise cell.
pub(crate) const NOISE_PROBE: &str = "noise";

/// The cause classes in osnoise top's order, with their column labels.
const CLASSES: [(&str, &str); 5] = [
    ("hw", "HW"),
    ("nmi", "NMI"),
    ("irq", "IRQ"),
    ("softirq", "SIRQ"),
    ("thread", "THREAD"),
];

/// Noise as a share of active time, percent; `None` when the loop never ran
/// (there is no honest share of nothing).
pub(crate) fn noise_percent(s: &NoiseCpuStats) -> Option<f64> {
    (s.active_ns.0 > 0).then(|| s.noise_percent())
}

/// 100 − noise %, never below 0 (noise longer than the active time would be
/// a probe's bookkeeping error, not a negative CPU).
pub(crate) fn cpu_available_percent(s: &NoiseCpuStats) -> Option<f64> {
    noise_percent(s).map(|p| (100.0 - p).max(0.0))
}

/// Interruptions per second of active time; `None` when the loop never ran.
pub(crate) fn interruptions_per_second(s: &NoiseCpuStats) -> Option<f64> {
    (s.active_ns.0 > 0).then(|| s.interruptions_per_second())
}

/// The base iteration in (fractional) nanoseconds; `None` before the first
/// iteration, when no base exists yet.
pub(crate) fn base_iteration_ns(s: &NoiseCpuStats) -> Option<f64> {
    // 0 is "not known": an import from a tool that does not record it.
    (s.iterations > 0 && s.base_iteration_ps > 0).then(|| s.base_iteration_ps as f64 / 1_000.0)
}

fn clock_name(c: NoiseClock) -> &'static str {
    match c {
        NoiseClock::Tsc => "tsc",
        NoiseClock::Vdso => "vdso",
    }
}

/// Picoseconds as nanoseconds with two decimals below 10 ns and one above,
/// rounded half up in integers so that the text is the same on every
/// machine.
fn base_text(s: &NoiseCpuStats) -> String {
    if base_iteration_ns(s).is_none() {
        return "-".to_string();
    }
    let ps = s.base_iteration_ps;
    let hundredths = ps.saturating_add(5) / 10;
    if hundredths < 1_000 {
        return format!("{}.{:02}ns", hundredths / 100, hundredths % 100);
    }
    let tenths = ps.saturating_add(50) / 100;
    format!("{}.{}ns", tenths / 10, tenths % 10)
}

fn rate_text(r: Option<f64>) -> String {
    match r {
        None => "-".to_string(),
        Some(r) if r < 10.0 => format!("{r:.2}"),
        Some(r) if r < 100.0 => format!("{r:.1}"),
        Some(r) => format!("{r:.0}"),
    }
}

fn percent_text(p: Option<f64>) -> String {
    p.map_or_else(|| "-".to_string(), |p| format!("{p:.4}%"))
}

/// What a noise cell shows before its metric tables: the per-CPU summary,
/// the TSC calibration, the noise by class of cause (with `--trace`), steal
/// time and findings. Empty for a cell of another probe that has no noise
/// figures.
pub(crate) fn noise_tables(cell: &CellResult, imported: bool) -> String {
    if cell.noise.is_empty() {
        if cell.meta.probe == NOISE_PROBE {
            return "\nnoise: no per-CPU figures were stored for this cell\n".to_string();
        }
        return String::new();
    }
    let mut out = String::new();
    out.push_str(
        "\nnoise — interruptions of the CPU-bound loop, per CPU (an iteration at least as long as the threshold counts as one)\n",
    );
    let mut t = Table::new([
        "CPU",
        "clock",
        "active",
        "iterations",
        "base iteration",
        "threshold",
        "interruptions",
        "per second",
        "noise",
        "noise %",
        "CPU available",
        "longest",
    ])
    .left_aligned(2);
    for s in &cell.noise {
        t.row([
            s.cpu.to_string(),
            clock_name(s.clock).to_string(),
            s.active_ns.to_string(),
            s.iterations.to_string(),
            base_text(s),
            s.gap_threshold_ns.to_string(),
            s.interruptions.to_string(),
            rate_text(interruptions_per_second(s)),
            s.noise_ns.to_string(),
            percent_text(noise_percent(s)),
            percent_text(cpu_available_percent(s)),
            s.max_gap_ns.to_string(),
        ]);
    }
    out.push_str(&t.render());
    if imported {
        out.push_str(&imported_clock_line(&cell.noise));
    } else {
        out.push_str(&calibration_line(&cell.noise));
    }
    out.push_str(&class_table(&cell.noise));
    out.push_str(&steal_line(&cell.noise));
    out.push_str(&findings_lines(&cell.noise));
    out
}

/// The TSC's calibrated rate and how far it moved between the start and end
/// calibrations, per CPU that read the TSC.
fn calibration_line(stats: &[NoiseCpuStats]) -> String {
    let parts: Vec<String> = stats
        .iter()
        .filter(|s| s.clock == NoiseClock::Tsc)
        .map(|s| {
            // kHz in integers: MHz with three decimals, exactly.
            let khz = s.tsc_hz.saturating_add(500) / 1_000;
            format!(
                "CPU {} {}.{:03} MHz, drift {} ppb",
                s.cpu,
                khz / 1_000,
                khz % 1_000,
                s.calibration_drift_ppb
            )
        })
        .collect();
    if parts.is_empty() {
        return String::new();
    }
    format!("TSC calibration: {}\n", parts.join(" · "))
}

/// The TSC rate another tool reported (oslat: whole MHz), without the
/// calibration drift it does not measure.
fn imported_clock_line(stats: &[NoiseCpuStats]) -> String {
    let parts: Vec<String> = stats
        .iter()
        .filter(|s| s.clock == NoiseClock::Tsc && s.tsc_hz > 0)
        .map(|s| format!("CPU {} {} MHz", s.cpu, s.tsc_hz / 1_000_000))
        .collect();
    if parts.is_empty() {
        return String::new();
    }
    format!("TSC rate as the tool reported it: {}\n", parts.join(" · "))
}

/// osnoise top's columns: count and total time per class of cause, per CPU.
/// Empty when no CPU has classes (a run without `--trace`).
fn class_table(stats: &[NoiseCpuStats]) -> String {
    if stats.iter().all(|s| s.classes.is_empty()) {
        return String::new();
    }
    // The known classes always, in osnoise's order; any other a probe
    // reports after them, so that nothing measured is hidden.
    let mut columns: Vec<(String, String)> = CLASSES
        .iter()
        .map(|(key, label)| (key.to_string(), label.to_string()))
        .collect();
    let mut others: Vec<&String> = stats
        .iter()
        .flat_map(|s| s.classes.keys())
        .filter(|k| !CLASSES.iter().any(|(known, _)| known == k))
        .collect();
    others.sort();
    others.dedup();
    columns.extend(others.into_iter().map(|k| (k.clone(), k.to_uppercase())));

    let mut header = vec!["CPU".to_string()];
    for (_, label) in &columns {
        header.push(label.clone());
        header.push(format!("{label} time"));
    }
    let mut t = Table::new(header);
    for s in stats {
        let mut row = vec![s.cpu.to_string()];
        for (key, _) in &columns {
            match class_of(&s.classes, key) {
                Some(c) => {
                    row.push(c.count.to_string());
                    row.push(c.total_ns.to_string());
                }
                None => {
                    row.push("-".to_string());
                    row.push("-".to_string());
                }
            }
        }
        t.row(row);
    }
    let untraced = if stats.iter().any(|s| s.classes.is_empty()) {
        "; - : CPU not traced"
    } else {
        ""
    };
    format!(
        "\nnoise by cause — occurrences and total time per class (one interruption can hold several){untraced}\n{}",
        t.render()
    )
}

/// A class's figures; a traced CPU that saw none of a class has zero of it,
/// an untraced CPU has nothing to say.
fn class_of(classes: &BTreeMap<String, NoiseClass>, key: &str) -> Option<NoiseClass> {
    if classes.is_empty() {
        return None;
    }
    Some(classes.get(key).cloned().unwrap_or_default())
}

fn steal_line(stats: &[NoiseCpuStats]) -> String {
    if stats.iter().all(|s| s.steal_ns.is_none()) {
        return String::new();
    }
    let parts: Vec<String> = stats
        .iter()
        .map(|s| match s.steal_ns {
            Some(n) => format!("CPU {} {n}", s.cpu),
            None => format!("CPU {} unknown", s.cpu),
        })
        .collect();
    format!(
        "steal time (the hypervisor ran something else on the CPU): {}\n",
        parts.join(" · ")
    )
}

/// One line per distinct finding, naming the CPUs it was found on.
fn findings_lines(stats: &[NoiseCpuStats]) -> String {
    let mut order: Vec<&str> = Vec::new();
    let mut cpus: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for s in stats {
        for f in &s.findings {
            let entry = cpus.entry(f.as_str()).or_default();
            if entry.is_empty() {
                order.push(f);
            }
            let cpu = s.cpu.to_string();
            if !entry.contains(&cpu) {
                entry.push(cpu);
            }
        }
    }
    let mut out = String::new();
    for f in order {
        let list = cpus.get(f).map(|c| c.join(", ")).unwrap_or_default();
        let label = if list.contains(',') { "CPUs" } else { "CPU" };
        out.push_str(&format!("finding ({label} {list}): {f}\n"));
    }
    out
}

/// The rows of a log-scale count table for one metric's histogram. For
/// `noise.gap` the range below 1 µs, where most interruptions of a fast loop
/// fall (the threshold is a few base iterations), is split into halving
/// nanosecond ranges down to `floor` (the smallest sample over the CPUs
/// shown side by side, so that every column has the same rows). Every other
/// metric keeps the plain power-of-two microsecond table.
pub(crate) fn log_rows(name: &str, h: &Histogram, floor: Option<u64>) -> Vec<LogBin> {
    let table = log2_micros_table(h);
    let floor = match floor {
        Some(f) if name == metric::NOISE_GAP && f < 1_000 => f,
        _ => return table,
    };
    if table.is_empty() {
        return table;
    }
    // Boundaries 1000, 500, 250, 125, 62, ... ns down to the first at or
    // below the floor. Below 2048 ns every histogram bucket is one
    // nanosecond, so counts between any boundaries are exact.
    let mut bounds = vec![1_000u64];
    let mut b = 1_000u64;
    while b > floor && b > 1 {
        b /= 2;
        bounds.push(b);
    }
    bounds.reverse();
    let count = |low: u64, high: u64| -> u64 {
        h.buckets()
            .filter(|&(lo, _, _)| lo >= low && lo < high)
            .map(|(_, _, c)| c)
            .sum()
    };
    let mut rows = Vec::with_capacity(bounds.len() + table.len());
    if floor < b {
        rows.push(LogBin {
            low: Nanos(0),
            high: Nanos(b),
            count: count(0, b),
        });
    }
    for w in bounds.windows(2) {
        rows.push(LogBin {
            low: Nanos(w[0]),
            high: Nanos(w[1]),
            count: count(w[0], w[1]),
        });
    }
    rows.extend(table.into_iter().skip(1));
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use latscope_model::CpuId;

    fn stats(cpu: u32) -> NoiseCpuStats {
        NoiseCpuStats {
            cpu: CpuId(cpu),
            clock: NoiseClock::Tsc,
            tsc_hz: 2_894_561_234,
            calibration_drift_ppb: 12,
            active_ns: Nanos::from_secs(1),
            iterations: 1_000,
            base_iteration_ps: 21_375,
            gap_threshold_ns: Nanos(86),
            interruptions: 3,
            noise_ns: Nanos(1_000_000),
            max_gap_ns: Nanos(900_000),
            classes: BTreeMap::new(),
            steal_ns: None,
            findings: vec![],
        }
    }

    #[test]
    fn base_iteration_has_one_or_two_decimals() {
        let mut s = stats(0);
        for (ps, text) in [
            (7_694, "7.69ns"),
            (7_695, "7.70ns"),
            (9_994, "9.99ns"),
            (9_996, "10.0ns"),
            (21_375, "21.4ns"),
            (123_449, "123.4ns"),
            // 0: not known (an import from oslat, which does not record it)
            (0, "-"),
            (u64::MAX, "18446744073709551.6ns"),
        ] {
            s.base_iteration_ps = ps;
            assert_eq!(base_text(&s), text, "{ps}");
        }
        s.iterations = 0;
        assert_eq!(base_text(&s), "-");
        assert_eq!(base_iteration_ns(&s), None);
    }

    #[test]
    fn shares_need_active_time() {
        let mut s = stats(0);
        assert_eq!(noise_percent(&s), Some(0.1));
        assert_eq!(interruptions_per_second(&s), Some(3.0));
        assert!((cpu_available_percent(&s).unwrap() - 99.9).abs() < 1e-9);
        s.noise_ns = Nanos::from_secs(2);
        assert_eq!(cpu_available_percent(&s), Some(0.0));
        s.active_ns = Nanos::ZERO;
        assert_eq!(noise_percent(&s), None);
        assert_eq!(cpu_available_percent(&s), None);
        assert_eq!(interruptions_per_second(&s), None);
        assert_eq!(rate_text(None), "-");
        assert_eq!(percent_text(None), "-");
    }

    #[test]
    fn findings_are_grouped_by_text() {
        let mut a = stats(0);
        a.findings = vec!["RT throttling".into(), "only here".into()];
        let mut b = stats(1);
        b.findings = vec!["RT throttling".into()];
        assert_eq!(
            findings_lines(&[a, b]),
            "finding (CPUs 0, 1): RT throttling\nfinding (CPU 0): only here\n"
        );
    }

    #[test]
    fn noise_gap_rows_split_the_first_microsecond_exactly() {
        let mut h = Histogram::new();
        let values = [86u64, 90, 124, 125, 400, 999, 1_000, 5_000, 50_000_000];
        for v in values {
            h.record(v);
        }
        let rows = log_rows(metric::NOISE_GAP, &h, Some(86));
        let bounds: Vec<(u64, u64)> = rows.iter().map(|r| (r.low.0, r.high.0)).collect();
        assert_eq!(
            &bounds[..5],
            &[
                (62, 125),
                (125, 250),
                (250, 500),
                (500, 1_000),
                (1_000, 2_000)
            ]
        );
        for r in &rows {
            let exact = values
                .iter()
                .filter(|&&v| v >= r.low.0 && v < r.high.0)
                .count() as u64;
            assert_eq!(r.count, exact, "{r:?}");
        }
        assert_eq!(
            rows.iter().map(|r| r.count).sum::<u64>(),
            values.len() as u64
        );
        // A floor of 0 adds a row below the smallest boundary.
        let rows = log_rows(metric::NOISE_GAP, &h, Some(0));
        assert_eq!((rows[0].low.0, rows[0].high.0), (0, 1));
        // Other metrics, and gaps all above 1 µs, keep the plain table.
        assert_eq!(
            log_rows(metric::TIMER_LATENCY, &h, Some(86)),
            log2_micros_table(&h)
        );
        assert_eq!(
            log_rows(metric::NOISE_GAP, &h, Some(1_000)),
            log2_micros_table(&h)
        );
        assert!(log_rows(metric::NOISE_GAP, &Histogram::new(), Some(86)).is_empty());
    }
}
