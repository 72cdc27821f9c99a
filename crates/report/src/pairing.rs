//! The application-probe comparison of `forecast --against` as text and
//! JSON: per scheme, the underrun rate the timer run forecasts beside the
//! rate the application cell counted, with the exact test
//! ([`latscope_stats::forecast::pairing`], docs/app-probe.md).

use latscope_stats::forecast::pairing::{CellRef, Pair};

/// The comparisons as text, one block per pair (verdicts uncoloured).
pub fn pairing_text(pairs: &[Pair]) -> String {
    pairs.iter().map(pair_text).collect()
}

/// The comparisons as the JSON document of `forecast --against --json`:
/// the first run of each side, every run of each side, the refutation
/// level and the pairs.
pub fn pairing_json(timer_runs: &[i64], app_runs: &[i64], pairs: &[Pair]) -> serde_json::Value {
    serde_json::json!({
        "timer_run": timer_runs.first(),
        "app_run": app_runs.first(),
        "timer_runs": timer_runs,
        "app_runs": app_runs,
        "refute_at": latscope_stats::forecast::REFUTE_AT,
        "comparisons": pairs,
    })
}

fn pair_text(p: &Pair) -> String {
    let c = &p.comparison;
    let s = &c.scheme;
    let ms = |ns: f64| ns / 1e6;
    let mut t = format!(
        "app {} ({}, {:.1} s) against timer {}: {:.3} ms x {} buffers, {:.3} ms compute, slack {:.3} ms\n",
        describe(&p.app_cells, None),
        p.workload,
        p.app_seconds,
        describe(&p.timer_cells, Some(p.timer_seconds)),
        ms(s.period_ns as f64),
        s.buffers,
        ms(s.compute_ns() as f64),
        ms(c.slack_ns as f64),
    );
    let line = |what: &str, r: &latscope_stats::forecast::Rate, source: String| {
        let hi = r
            .interval_per_hour
            .high
            .map_or("inf".to_string(), |h| format!("{h:.1}"));
        format!(
            "  {what:<10}{}{:.1} underruns/h  ({:.0}%: {:.1}-{hi})  {source}\n",
            if r.upper_bound { "< " } else { "" },
            r.per_hour,
            r.interval_per_hour.confidence * 100.0,
            r.interval_per_hour.low,
        )
    };
    let source = match c.predicted.events {
        Some(k) => format!(
            "{k} of {} wake-ups later than the slack",
            c.predicted.buffers
        ),
        None => format!(
            "extrapolated from the tail of {} wake-ups",
            c.predicted.buffers
        ),
    };
    t.push_str(&line("predicted", &c.predicted, source));
    t.push_str(&line(
        "observed",
        &c.observed,
        format!(
            "{} underruns in {} buffers",
            c.observed.events.unwrap_or(0),
            c.observed.buffers
        ),
    ));
    t.push_str(&format!("  test      {}: p = {:.3e}\n", c.test, c.p_value));
    t.push_str(&format!("  verdict   {}\n", c.verdict));
    if let Some(e) = &c.exposed {
        t.push_str(&format!(
            "  exposed   {:.1} underruns/h  ({:.0}%: {:.1}-{:.1})  the work exposed too: {} late + c x density ({} wake-ups in [s/2, 3s/2))\n",
            e.per_hour,
            e.interval_per_hour.confidence * 100.0,
            e.interval_per_hour.low,
            e.interval_per_hour.high.unwrap_or(f64::INFINITY),
            e.late,
            e.band,
        ));
        t.push_str(&format!("  verdict   {}\n", e.verdict));
    }
    if let Some(pc) = &p.preset {
        let word = |pass: bool| if pass { "PASS" } else { "FAIL" };
        t.push_str(&format!(
            "  preset    {}: forecast {} (MTTF {}{:.0} s), pipeline {} (MTTF {}{:.0} s{}), target {:.0} s: {}\n",
            pc.app,
            word(pc.forecast.pass),
            if pc.forecast.lower_bound { ">= " } else { "" },
            pc.forecast.mttf_s,
            word(pc.pipeline_pass),
            if c.observed.events == Some(0) { ">= " } else { "" },
            pc.pipeline_mttf_s,
            if pc.pipeline_conclusive { "" } else { ", inconclusive" },
            pc.forecast.target_s,
            if pc.confirmed { "confirmed" } else { "CONTRADICTED" },
        ));
    }
    t.push('\n');
    t
}

/// `run 3 cell 0`, or for cells pooled from several blocks `runs 3,5,7
/// (3 cells, 45.0 s)`.
fn describe(cells: &[CellRef], seconds: Option<f64>) -> String {
    if let [one] = cells {
        return format!("run {} cell {}", one.run, one.cell);
    }
    let mut runs: Vec<String> = Vec::new();
    for c in cells {
        let id = c.run.to_string();
        if !runs.contains(&id) {
            runs.push(id);
        }
    }
    let word = if runs.len() == 1 { "run" } else { "runs" };
    let time = seconds.map_or(String::new(), |s| format!(", {s:.1} s"));
    format!("{word} {} ({} cells{time})", runs.join(","), cells.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pooled_cells_are_named_by_their_runs_and_one_cell_by_itself() {
        let one = [CellRef { run: 3, cell: 0 }];
        assert_eq!(describe(&one, Some(20.0)), "run 3 cell 0");
        let two = [CellRef { run: 2, cell: 0 }, CellRef { run: 4, cell: 0 }];
        assert_eq!(describe(&two, None), "runs 2,4 (2 cells)");
        assert_eq!(describe(&two, Some(40.0)), "runs 2,4 (2 cells, 40.0 s)");
        let same_run = [CellRef { run: 5, cell: 0 }, CellRef { run: 5, cell: 1 }];
        assert_eq!(describe(&same_run, None), "run 5 (2 cells)");
    }
}
