//! What the user sees while the engine runs: capability notices on stderr,
//! and the progress line (`latscope_report::progress_line`) when stderr is
//! a terminal, redrawn in place by the housekeeping thread.

use std::io::Write;

use latscope_engine::probes::Progress;
use latscope_engine::{CellSpec, Observer};
use latscope_model::Nanos;

pub struct CliObserver {
    show_progress: bool,
    /// The cell's length while a progress line is drawn (`Some(None)`: a
    /// cell without end).
    bar: Option<Option<Nanos>>,
    last_draw: Option<Nanos>,
}

impl CliObserver {
    pub fn new(show_progress: bool) -> CliObserver {
        CliObserver {
            show_progress,
            bar: None,
            last_draw: None,
        }
    }
}

/// The progress line is redrawn at most twice a second.
const REDRAW: Nanos = Nanos::from_millis(500);

/// Replaces the line on stderr with `line`.
fn redraw(line: &str) {
    let mut err = std::io::stderr().lock();
    let _ = write!(err, "\r\x1b[2K{line}");
    let _ = err.flush();
}

impl Observer for CliObserver {
    fn notice(&mut self, line: &str) {
        eprintln!("latscope: {line}");
    }

    fn cell_started(&mut self, cell: &CellSpec) {
        if self.show_progress {
            self.bar = Some(cell.probe.duration());
            self.last_draw = None;
        }
    }

    fn progress(&mut self, _cell: &CellSpec, elapsed: Nanos, p: Progress) {
        let Some(total) = self.bar else {
            return;
        };
        if self
            .last_draw
            .is_none_or(|t| elapsed.0.saturating_sub(t.0) >= REDRAW.0)
        {
            let line = latscope_report::progress_line(
                elapsed,
                total,
                p.samples,
                p.max_latency,
                p.overruns,
            );
            redraw(&line);
            self.last_draw = Some(elapsed);
        }
    }

    fn cell_finished(&mut self, _cell: &CellSpec) {
        if self.bar.take().is_some() {
            redraw("");
        }
    }
}
