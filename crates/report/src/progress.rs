//! The progress line a run shows on a terminal while it measures.

use latscope_model::Nanos;

/// The bar's width in characters.
const WIDTH: usize = 24;

/// A bar over the cell's duration `total` (the seconds elapsed alone for a
/// cell without end), then the samples, the largest value and the overruns
/// so far.
pub fn progress_line(
    elapsed: Nanos,
    total: Option<Nanos>,
    samples: u64,
    max_latency: Nanos,
    overruns: u64,
) -> String {
    let bar = match total {
        Some(t) if t.0 > 0 => {
            let filled = ((elapsed.0 as f64 / t.0 as f64) * WIDTH as f64) as usize;
            let filled = filled.min(WIDTH);
            format!(
                "[{}{}] {:.0}/{:.0}s",
                "#".repeat(filled),
                ".".repeat(WIDTH - filled),
                elapsed.as_secs_f64(),
                t.as_secs_f64()
            )
        }
        _ => format!("{:.0}s", elapsed.as_secs_f64()),
    };
    format!("{bar}  samples {samples}  max {max_latency}  overruns {overruns}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bar_fills_with_the_elapsed_share() {
        let line = progress_line(
            Nanos::from_secs(15),
            Some(Nanos::from_secs(30)),
            1500,
            Nanos(42_000),
            0,
        );
        assert!(line.starts_with("[############............] 15/30s  samples 1500  max "));
        assert!(line.ends_with("  overruns 0"), "{line}");
        assert!(progress_line(Nanos::from_secs(7), None, 0, Nanos(0), 0).starts_with("7s  "));
    }
}
