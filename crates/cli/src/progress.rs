//! The progress line on stderr (`latscope_report::progress_line`), drawn
//! by the housekeeping thread only.

use std::io::Write;

use latscope_engine::probes::Progress;
use latscope_model::Nanos;

pub struct ProgressBar {
    total: Option<Nanos>,
}

impl ProgressBar {
    pub fn new(total: Option<Nanos>) -> ProgressBar {
        ProgressBar { total }
    }

    pub fn draw(&mut self, elapsed: Nanos, p: Progress) {
        let line = latscope_report::progress_line(
            elapsed,
            self.total,
            p.samples,
            p.max_latency,
            p.overruns,
        );
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[2K{line}");
        let _ = err.flush();
    }

    pub fn finish(&mut self) {
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[2K");
        let _ = err.flush();
    }
}
