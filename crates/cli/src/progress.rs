//! The progress line on stderr, drawn by the housekeeping thread only.

use std::io::Write;

use latscope_engine::probes::Progress;
use latscope_model::Nanos;

pub struct ProgressBar {
    total: Option<Nanos>,
}

const WIDTH: usize = 24;

impl ProgressBar {
    pub fn new(total: Option<Nanos>) -> ProgressBar {
        ProgressBar { total }
    }

    pub fn draw(&mut self, elapsed: Nanos, p: Progress) {
        let bar = match self.total {
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
        let mut err = std::io::stderr().lock();
        let _ = write!(
            err,
            "\r\x1b[2K{bar}  samples {}  max {}  overruns {}",
            p.samples, p.max_latency, p.overruns
        );
        let _ = err.flush();
    }

    pub fn finish(&mut self) {
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[2K");
        let _ = err.flush();
    }
}
