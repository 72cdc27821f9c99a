//! `latscope compare` of micro runs: every benchmark of each run against
//! the baseline's (`latscope_stats::micro::compare`), as the document
//! `--json` prints, the tables and the lines of `--fail-if-slower`.

use latscope_model::MicroResult;
use latscope_stats::micro::compare::{compare_runs, slower_than, BenchComparison};
use serde::Serialize;

use crate::micro::micro_compare_text;

/// One compared run.
#[derive(Serialize)]
pub struct MicroAgainst {
    pub run: i64,
    pub benchmarks: Vec<BenchComparison>,
}

/// The comparison of micro runs with the first, as `compare --json`
/// prints it (schema `latscope-micro-compare/1`).
#[derive(Serialize)]
pub struct MicroComparison {
    pub schema: &'static str,
    pub baseline: i64,
    pub fail_if_slower: Option<f64>,
    pub runs: Vec<MicroAgainst>,
}

impl MicroComparison {
    /// `runs[0]` is the baseline; each run is `(id, its results)`.
    pub fn new(runs: &[(i64, &[MicroResult])], fail_if_slower: Option<f64>) -> MicroComparison {
        let (base_id, base) = runs.first().copied().unwrap_or((0, &[]));
        MicroComparison {
            schema: "latscope-micro-compare/1",
            baseline: base_id,
            fail_if_slower,
            runs: runs
                .iter()
                .skip(1)
                .map(|(id, new)| MicroAgainst {
                    run: *id,
                    benchmarks: compare_runs(base, new),
                })
                .collect(),
        }
    }

    /// One table per compared run.
    pub fn text(&self) -> String {
        self.runs
            .iter()
            .map(|a| micro_compare_text(self.baseline, a.run, &a.benchmarks))
            .collect()
    }

    /// One line per benchmark SLOWER than the baseline's by more than
    /// `pct` percent.
    pub fn slower_lines(&self, pct: f64) -> Vec<String> {
        let mut lines = Vec::new();
        for against in &self.runs {
            for r in slower_than(&against.benchmarks, pct) {
                lines.push(format!(
                    "run {}: {} is SLOWER than run {}'s by {:.1}% (more than {pct}%)",
                    against.run,
                    r.bench,
                    self.baseline,
                    (r.ratio - 1.0) * 100.0
                ));
            }
        }
        lines
    }
}
