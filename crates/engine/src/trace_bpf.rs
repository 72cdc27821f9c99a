//! The tracer thread's work with the BPF backend: one read of the kernel's
//! per-wake-up records (timer probe) or of the flight recorder (noise and
//! UDP probes), handed to the same analysis as perf's events
//! ([`KernelFeed`]).

use std::time::Duration;

use latscope_model::{CpuId, TraceSummary};
use latscope_probes::Handoff;
use latscope_trace::bpf::{BpfTracer, KernelFeed, KernelRecord};
use latscope_trace::{Decoded, Names, Tracer};

use crate::config::AnalysisMode;
use crate::trace_group::Traced;

/// The reader's pause between reads: it starts at the perf reader's
/// 10 ms and adapts to the busiest ring. Longer pauses cost the tracer
/// thread less (each wake-up, read and sleep costs tens of µs of CPU, and
/// at 10 ms a third of the thread's time was sleeping and waking); the
/// kernel's rings overwrite, so the pause must stay well below the time
/// the busiest one takes to wrap. After a read in which some ring filled
/// more than an eighth of itself the pause halves; below a sixteenth it
/// doubles, up to 100 ms (the wait a sample has before its decomposition
/// is published, far below the 1 s of the published metrics). With the
/// doubling below a thirty-second and 50 ms at most, the recorder's fill
/// at 1 ms on both CPUs held the pause at 40 ms, 25 wake-ups a second; now
/// it settles at 80 ms, 12.5 a second (`strace` of the thread). Fewer
/// wake-ups of a thread that shares the measured CPUs, at least 8 times
/// below a ring's wrap as before. Its CPU time did not change by what
/// 6 alternating pairs of 20 s runs could resolve (22.6 and 21.9 ms).
const PAUSE_MIN: Duration = Duration::from_millis(5);
const PAUSE_START: Duration = Duration::from_millis(10);
const PAUSE_MAX: Duration = Duration::from_millis(100);

/// The next pause after a read in which the busiest ring filled `fill`
/// (a share of its slots) during `pause`.
fn next_pause(pause: Duration, fill: f64) -> Duration {
    if fill > 1.0 / 8.0 {
        (pause / 2).max(PAUSE_MIN)
    } else if fill < 1.0 / 16.0 {
        (pause * 2).min(PAUSE_MAX)
    } else {
        pause
    }
}

pub(crate) struct BpfReader {
    bpf: Box<BpfTracer>,
    /// `--stacks`: perf `cpu-clock` sampling beside BPF.
    stacks: Option<Box<Tracer>>,
    mode: AnalysisMode,
    /// One per analysis (per cell), in the order of the groups.
    feeds: Vec<KernelFeed>,
    records: Vec<KernelRecord>,
    stack_buf: Vec<Decoded>,
    pause: Duration,
}

impl BpfReader {
    /// Follows the measuring threads of every group's `handoffs` (timer
    /// mode: the kernel pairs their wake-ups from now on, several threads
    /// per CPU with `run --priorities`).
    pub(crate) fn start(
        mut bpf: Box<BpfTracer>,
        stacks: Option<Box<Tracer>>,
        mode: AnalysisMode,
        groups: &[&[Handoff]],
    ) -> Result<BpfReader, String> {
        let threads =
            |h: &[Handoff]| -> Vec<(CpuId, i32)> { h.iter().map(|h| (h.cpu, h.tid)).collect() };
        if mode == AnalysisMode::Timer {
            let tids: Vec<i32> = groups
                .iter()
                .flat_map(|g| g.iter().map(|h| h.tid))
                .collect();
            bpf.watch(&tids).map_err(|e| e.to_string())?;
        }
        Ok(BpfReader {
            bpf,
            stacks,
            mode,
            feeds: groups
                .iter()
                .map(|g| KernelFeed::new(&threads(g)))
                .collect(),
            records: Vec::with_capacity(4096),
            stack_buf: Vec::with_capacity(1024),
            pause: PAUSE_START,
        })
    }

    pub(crate) fn names(&self) -> &Names {
        self.bpf.names()
    }

    /// One read: each group's samples (taken from the hand-over rings
    /// before it) are analysed with the kernel's records of its threads,
    /// or (noise and UDP probes, one group) with the recorder's events.
    pub(crate) fn step(&mut self, groups: &mut [Traced], read_at: u64) -> Result<(), String> {
        let mut error = None;
        if let Some(t) = &mut self.stacks {
            self.stack_buf.clear();
            let buf = &mut self.stack_buf;
            if let Err(e) = t.read(&mut |d| buf.push(d)) {
                error = Some(format!("stack sampling stopped early: {e}"));
            }
            for g in groups.iter_mut() {
                for d in &self.stack_buf {
                    g.analyzer.on_decoded(d, self.bpf.names());
                }
            }
        }
        if self.mode == AnalysisMode::Timer {
            self.records.clear();
            self.bpf.drain(&mut self.records);
            for (feed, g) in self.feeds.iter_mut().zip(groups.iter_mut()) {
                feed.timer_from(
                    &self.records,
                    &mut self.bpf,
                    &mut g.analyzer,
                    &mut g.samples,
                );
            }
        } else if let (Some(feed), Some(g)) = (self.feeds.first_mut(), groups.first_mut()) {
            feed.recorded(&mut self.bpf, &mut g.analyzer, &mut g.samples, read_at);
        }
        self.pause = next_pause(self.pause, self.bpf.fill_since_last());
        error.map_or(Ok(()), Err)
    }

    /// Before publishing: the kernel's interrupt and work histograms (the
    /// same system-wide ones for every group).
    pub(crate) fn publish(&mut self, groups: &mut [Traced]) {
        if self.mode == AnalysisMode::Timer {
            let hist = self.bpf.work_histograms();
            for g in groups {
                g.analyzer.set_work_histograms(hist.clone());
            }
        }
    }

    /// At the end: all of the kernel's histograms; a line for the run's
    /// notes if some of them could not be read.
    pub(crate) fn publish_final(&mut self, groups: &mut [Traced]) -> Option<String> {
        if self.mode == AnalysisMode::Timer {
            let hist = self.bpf.final_work_histograms();
            for g in groups {
                g.analyzer.set_work_histograms(hist.clone());
            }
        }
        let n = self.bpf.drain_errors();
        (n > 0).then(|| {
            format!("{n} reads of the kernel's interrupt histograms failed; their counts may be incomplete")
        })
    }

    pub(crate) fn wait(&self) {
        self.bpf.wait(self.pause);
    }

    pub(crate) fn disable(&mut self) {
        if let Some(t) = &self.stacks {
            let _ = t.disable();
        }
    }

    /// The backend's part of group `group`'s summary.
    pub(crate) fn summarize(&self, group: usize, s: &mut TraceSummary) {
        s.backend = "bpf".into();
        s.events += self.feeds.get(group).map_or(0, KernelFeed::received);
        s.lost_records += self.bpf.lost();
        s.missing_events = self.bpf.missing_events().to_vec();
        s.bpf_prog_ns = self.bpf.prog_ns();
        s.steal_source = Some(
            self.bpf
                .steal_source()
                .unwrap_or(latscope_model::StealSource::ProcStat),
        );
        let (full, failed) = self.bpf.stack_failures();
        s.stacks_map_full = full;
        s.stacks_failed = failed;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pause_follows_the_busiest_ring() {
        // Quiet rings stretch it to the ceiling and no further.
        let mut p = PAUSE_START;
        for _ in 0..10 {
            p = next_pause(p, 0.0);
        }
        assert_eq!(p, PAUSE_MAX);
        // A ring that filled an eighth or more halves it, down to the floor.
        assert_eq!(next_pause(PAUSE_MAX, 0.2), PAUSE_MAX / 2);
        let mut p = PAUSE_MAX;
        for _ in 0..10 {
            p = next_pause(p, 0.9);
        }
        assert_eq!(p, PAUSE_MIN);
        // In between it holds; below a sixteenth it doubles.
        assert_eq!(
            next_pause(Duration::from_millis(20), 0.08),
            Duration::from_millis(20)
        );
        assert_eq!(
            next_pause(Duration::from_millis(20), 0.05),
            Duration::from_millis(40)
        );
    }
}
