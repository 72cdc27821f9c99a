//! Cota-Robles & Held's Table 3: the worst interrupt (ISR), deferred
//! (DPC) and thread latency per workload, here `timer.irq`, the worst
//! `softirq.delay.<VEC>` and `timer.sched` / `timer.latency` at two
//! real-time priorities, measured maxima over the run beside the
//! forecast's worst case per hour, day and week.

use latscope_model::metric;
use latscope_stats::forecast::Provenance;
use latscope_studies::Study;

use crate::design::ProbeDesign;
use crate::figures::{CellFigures, HorizonFigure, RunFigures};
use crate::paired::{in_unit, Measured, PairedTable, MISSING};

const UNIT: &str = "ms";

pub(crate) fn pair(study: &Study, design: &ProbeDesign, f: &RunFigures) -> Vec<PairedTable> {
    let mut out = Vec::new();
    for table in &study.tables {
        let why = match table.number.as_str() {
            "1" => "the applications' latency tolerances, not a measurement (latscope forecast --app gives verdicts for such buffering schemes)",
            _ => "not measured by this design",
        };
        let mut t = PairedTable::from_published(table, UNIT, why);
        if table.number == "3" {
            table_3(&mut t, design, f);
        }
        out.push(t);
    }
    out
}

fn table_3(t: &mut PairedTable, design: &ProbeDesign, f: &RunFigures) {
    let kinds = design.kinds.len();
    let cell = |w: usize, k: usize| f.cell((w * kinds + k) as u32);
    let mut rows: Vec<Vec<String>> = vec![Vec::new(); 7];
    let mut notes = Vec::new();
    for (w, workload) in design.workloads.iter().enumerate() {
        let seconds = cell(w, 0).map(|c| c.duration.0 as f64 / 1e9).unwrap_or(0.0);
        t.measured_columns.extend([
            format!("{workload}: max in {seconds:.0} s"),
            format!("{workload}: hour (fc)"),
            format!("{workload}: day (fc)"),
            format!("{workload}: week (fc)"),
        ]);
        let both: Vec<&CellFigures> = (0..kinds).filter_map(|k| cell(w, k)).collect();
        rows[0].extend(measured_only(max_merged(&both, metric::TIMER_IRQ)));
        rows[1].extend(measured_only(worst_softirq(&both)));
        for (k, (sched_row, latency_row, prio)) in [(3, 4, "fifo 95"), (5, 6, "fifo 50")]
            .into_iter()
            .enumerate()
        {
            let one: Vec<&CellFigures> = cell(w, k).into_iter().collect();
            rows[sched_row].extend(measured_only(max_merged(&one, metric::TIMER_SCHED)));
            rows[latency_row].push(max_merged(&one, metric::TIMER_LATENCY));
            let fc = one.first().and_then(|c| c.forecast(metric::TIMER_LATENCY));
            for h in [fc.map(|f| &f.hour), fc.map(|f| &f.day), fc.map(|f| &f.week)] {
                rows[latency_row].push(forecast_cell(
                    h,
                    &mut notes,
                    &format!("{workload}, {prio}"),
                ));
            }
        }
    }
    let rule = "the thread latency on Linux has no deferred step: its hrtimer's callback wakes the thread from the interrupt, so irq and softirq delays are given apart (rows above)";
    let names = [
        metric::TIMER_IRQ,
        "softirq.delay.<VEC> (worst vector)",
        "",
        "timer.sched (fifo 95)",
        "timer.latency (fifo 95)",
        "timer.sched (fifo 50)",
        "timer.latency (fifo 50)",
    ];
    for (i, cells) in rows.into_iter().enumerate() {
        let measured = match i {
            2 => Measured::NoCounterpart(rule.to_string()),
            _ => Measured::Figures(cells),
        };
        t.set(i, names[i], measured);
    }
    t.notes.push("This machine: the largest value measured over each cell, \"max in N s\" (measured: the paper's \"per hour\" becomes the run's maximum when the run is shorter than an hour), then \"(fc)\": latscope's forecast of the worst case per hour, day and week of continuous use for the thread latency (obs: read from the data, fit: extrapolated from the fitted tail). The paper's high (28) and medium (24) real-time priorities are FIFO 95 and FIFO 50; its workloads have no equivalent here, the design's are named in the columns.".to_string());
    t.notes.extend(notes);
}

/// A measured maximum, then no forecast for the three horizons.
fn measured_only(max: String) -> [String; 4] {
    [max, MISSING.into(), MISSING.into(), MISSING.into()]
}

fn max_merged(cells: &[&CellFigures], name: &str) -> String {
    cells
        .iter()
        .filter_map(|c| c.merged(name)?.max())
        .max()
        .map(|n| in_unit(n.0, UNIT))
        .unwrap_or_else(|| MISSING.to_string())
}

fn worst_softirq(cells: &[&CellFigures]) -> String {
    cells
        .iter()
        .filter_map(|c| c.worst_of_family(metric::SOFTIRQ_DELAY_PREFIX))
        .filter_map(|(vec, h)| Some((h.max()?.0, vec)))
        .max()
        .map(|(ns, vec)| format!("{} ({vec})", in_unit(ns, UNIT)))
        .unwrap_or_else(|| MISSING.to_string())
}

fn forecast_cell(h: Option<&HorizonFigure>, notes: &mut Vec<String>, cell: &str) -> String {
    match h {
        None => MISSING.to_string(),
        Some(Ok((ns, p))) => {
            let how = match p {
                Provenance::Observed => "obs",
                Provenance::Extrapolated => "fit",
            };
            format!("{} ({how})", in_unit(*ns, UNIT))
        }
        Some(Err(why)) => {
            let why = why.strip_prefix("no forecast: ").unwrap_or(why);
            let note = format!("Forecast refused ({cell}): {why}");
            if !notes.contains(&note) {
                notes.push(note);
            }
            "refused".to_string()
        }
    }
}
