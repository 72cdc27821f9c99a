//! What the user sees while the engine runs: capability notices on stderr,
//! and the progress line when stderr is a terminal.

use latscope_engine::probes::Progress;
use latscope_engine::{CellSpec, Observer};
use latscope_model::Nanos;

use crate::progress::ProgressBar;

pub struct CliObserver {
    show_progress: bool,
    bar: Option<ProgressBar>,
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

impl Observer for CliObserver {
    fn notice(&mut self, line: &str) {
        eprintln!("latscope: {line}");
    }

    fn cell_started(&mut self, cell: &CellSpec) {
        if self.show_progress {
            self.bar = Some(ProgressBar::new(cell.probe.duration()));
            self.last_draw = None;
        }
    }

    fn progress(&mut self, _cell: &CellSpec, elapsed: Nanos, progress: Progress) {
        let Some(bar) = self.bar.as_mut() else {
            return;
        };
        if self
            .last_draw
            .is_none_or(|t| elapsed.0.saturating_sub(t.0) >= REDRAW.0)
        {
            bar.draw(elapsed, progress);
            self.last_draw = Some(elapsed);
        }
    }

    fn cell_finished(&mut self, _cell: &CellSpec) {
        if let Some(mut bar) = self.bar.take() {
            bar.finish();
        }
    }
}
