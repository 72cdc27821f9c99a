//! What the user sees while the engine runs: capability notices on stderr,
//! and the progress line (`latscope_report::ProgressBar`, which decides
//! when to redraw it) when stderr is a terminal, redrawn in place by the
//! housekeeping thread.

use std::io::Write;

use latscope_engine::probes::Progress;
use latscope_engine::{CellSpec, Observer};
use latscope_model::Nanos;
use latscope_report::ProgressBar;

pub struct CliObserver {
    show_progress: bool,
    /// The cell's progress line while one is drawn.
    bar: Option<ProgressBar>,
}

impl CliObserver {
    pub fn new(show_progress: bool) -> CliObserver {
        CliObserver {
            show_progress,
            bar: None,
        }
    }
}

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
            self.bar = Some(ProgressBar::new(cell.probe.duration()));
        }
    }

    fn progress(&mut self, _cell: &CellSpec, elapsed: Nanos, p: Progress) {
        let Some(bar) = &mut self.bar else {
            return;
        };
        if let Some(line) = bar.line(elapsed, p.samples, p.max_latency, p.overruns) {
            redraw(&line);
        }
    }

    fn cell_finished(&mut self, _cell: &CellSpec) {
        if self.bar.take().is_some() {
            redraw("");
        }
    }
}
