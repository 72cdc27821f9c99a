//! The progress line a run shows on a terminal while it measures, and
//! when to redraw it.

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

/// The progress line is redrawn at most twice a second.
const REDRAW: Nanos = Nanos::from_millis(500);

/// The progress line of one cell, redrawn in place: the first progress
/// report draws it, then at most one every 500 ms. The front end clears
/// it when the cell ends.
pub struct ProgressBar {
    /// The cell's length (`None`: a cell without end).
    total: Option<Nanos>,
    last_draw: Option<Nanos>,
}

impl ProgressBar {
    /// A bar over a cell of length `total` (`None`: a cell without end).
    pub fn new(total: Option<Nanos>) -> ProgressBar {
        ProgressBar {
            total,
            last_draw: None,
        }
    }

    /// The line to draw at `elapsed` ([`progress_line`]), or `None` while
    /// the last one is younger than 500 ms.
    pub fn line(
        &mut self,
        elapsed: Nanos,
        samples: u64,
        max_latency: Nanos,
        overruns: u64,
    ) -> Option<String> {
        if self
            .last_draw
            .is_some_and(|t| elapsed.0.saturating_sub(t.0) < REDRAW.0)
        {
            return None;
        }
        self.last_draw = Some(elapsed);
        Some(progress_line(
            elapsed,
            self.total,
            samples,
            max_latency,
            overruns,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bar_is_redrawn_at_most_every_500ms() {
        let mut bar = ProgressBar::new(Some(Nanos::from_secs(10)));
        let drawn: Vec<u64> = [100, 200, 599, 600, 1_000, 1_100, 1_100, 5_000]
            .into_iter()
            .filter(|&ms| bar.line(Nanos::from_millis(ms), 0, Nanos(0), 0).is_some())
            .collect();
        assert_eq!(drawn, [100, 600, 1_100, 5_000]);
        let line = bar.line(Nanos::from_millis(5_500), 9, Nanos(42_000), 1);
        assert_eq!(
            line,
            Some(progress_line(
                Nanos::from_millis(5_500),
                Some(Nanos::from_secs(10)),
                9,
                Nanos(42_000),
                1
            ))
        );
    }

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
