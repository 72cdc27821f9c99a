//! The tracer thread's work with the BPF backend: one read of the kernel's
//! per-wake-up records (timer probe) or of the flight recorder (noise and
//! UDP probes), handed to the same analysis as perf's events.

use std::collections::{HashMap, VecDeque};

use latscope_model::{CpuId, TraceSummary};
use latscope_probes::Handoff;
use latscope_trace::analysis::{Analyzer, KernelSample};
use latscope_trace::bpf::{BpfTracer, KernelRecord};
use latscope_trace::{Decoded, Names, Tracer};

use crate::trace_session::AnalysisMode;

/// How far a record's switch-in may fall outside its sample's
/// [expiry, wake-up] and still be its (clock reads of two contexts).
const MATCH_TOLERANCE_NS: u64 = 1_000;

pub(crate) struct BpfReader {
    bpf: Box<BpfTracer>,
    /// `--stacks`: perf `cpu-clock` sampling beside BPF.
    stacks: Option<Box<Tracer>>,
    mode: AnalysisMode,
    records: Vec<KernelRecord>,
    /// Records not yet matched with a sample, per measuring thread.
    queued: HashMap<i32, VecDeque<KernelSample>>,
    /// The measuring thread of each CPU.
    tid_of: HashMap<u32, i32>,
    kernel_records: u64,
    stack_buf: Vec<Decoded>,
}

impl BpfReader {
    pub(crate) fn new(
        bpf: Box<BpfTracer>,
        stacks: Option<Box<Tracer>>,
        mode: AnalysisMode,
    ) -> BpfReader {
        BpfReader {
            bpf,
            stacks,
            mode,
            records: Vec::with_capacity(4096),
            queued: HashMap::new(),
            tid_of: HashMap::new(),
            kernel_records: 0,
            stack_buf: Vec::with_capacity(1024),
        }
    }

    /// Follows the measuring threads (timer mode: the kernel pairs their
    /// wake-ups from now on).
    pub(crate) fn watch(&mut self, handoffs: &[Handoff]) -> Result<(), String> {
        for h in handoffs {
            self.tid_of.insert(h.cpu.0, h.tid);
        }
        if self.mode == AnalysisMode::Timer {
            let tids: Vec<i32> = handoffs.iter().map(|h| h.tid).collect();
            self.bpf.watch(&tids).map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    pub(crate) fn names(&self) -> &Names {
        self.bpf.names()
    }

    /// One read: `samples` (taken from the hand-over rings before it) are
    /// analysed with the kernel's records or the recorder's events.
    pub(crate) fn step(
        &mut self,
        analyzer: &mut Analyzer,
        samples: &mut Vec<(CpuId, u64, u64)>,
        read_at: u64,
    ) -> Result<(), String> {
        let mut error = None;
        if let Some(t) = &mut self.stacks {
            self.stack_buf.clear();
            let buf = &mut self.stack_buf;
            if let Err(e) = t.read(&mut |d| buf.push(d)) {
                error = Some(format!("stack sampling stopped early: {e}"));
            }
            for d in &self.stack_buf {
                analyzer.on_decoded(d, self.bpf.names());
            }
        }
        if self.mode != AnalysisMode::Timer {
            // Noise and UDP: every event of the measured CPUs, as with perf.
            let mut events = Vec::new();
            self.bpf.follow(&mut |d| events.push(d));
            let names = self.bpf.names();
            for (cpu, d, u) in samples.drain(..) {
                analyzer.on_sample(cpu, d, u, names);
            }
            for d in &events {
                analyzer.on_decoded(d, names);
            }
            analyzer.flush(read_at, names);
            return error.map_or(Ok(()), Err);
        }
        self.records.clear();
        self.bpf.drain(&mut self.records);
        self.kernel_records += self.records.len() as u64;
        for r in &self.records {
            self.queued.entry(r.tid).or_default().push_back(r.sample);
        }
        for (cpu, d, u) in samples.drain(..) {
            let found = self
                .tid_of
                .get(&cpu.0)
                .and_then(|tid| self.queued.get_mut(tid))
                .and_then(|q| take_match(q, d, u));
            if analyzer.above_threshold(u.saturating_sub(d)) {
                let from = d.saturating_sub(Analyzer::replay_ns());
                let (events, complete, names) = self.bpf.window(cpu.0, from);
                analyzer.on_kernel_sample(cpu, d, u, found, Some((events, complete)), names);
            } else {
                analyzer.on_kernel_sample(cpu, d, u, found, None, self.bpf.names());
            }
        }
        error.map_or(Ok(()), Err)
    }

    /// Before publishing: the kernel's interrupt and work histograms.
    pub(crate) fn publish(&mut self, analyzer: &mut Analyzer) {
        if self.mode == AnalysisMode::Timer {
            analyzer.set_work_histograms(self.bpf.work_histograms());
        }
    }

    pub(crate) fn wait(&self) {
        self.bpf.wait(crate::trace_session::READ_EVERY);
    }

    pub(crate) fn disable(&mut self) {
        if let Some(t) = &self.stacks {
            let _ = t.disable();
        }
    }

    /// The backend's part of the summary.
    pub(crate) fn summarize(&self, s: &mut TraceSummary) {
        s.backend = "bpf".into();
        let (_events, lost) = self.bpf.counts();
        s.events += self.kernel_records;
        s.lost_records += lost;
        s.missing_events = self.bpf.missing_events().to_vec();
        s.bpf_prog_ns = self.bpf.prog_ns();
    }
}

/// The kernel's record for the sample (expiry `d`, wake-up `u`): records
/// of wake-ups before it that no sample claimed are dropped; a record after
/// it stays for the next sample.
fn take_match(q: &mut VecDeque<KernelSample>, d: u64, u: u64) -> Option<KernelSample> {
    while let Some(k) = q.front() {
        if k.switch_in + MATCH_TOLERANCE_NS < d {
            q.pop_front();
            continue;
        }
        if k.switch_in > u + MATCH_TOLERANCE_NS {
            return None;
        }
        return q.pop_front();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(switch_in: u64) -> KernelSample {
        KernelSample {
            expires: 0,
            callback_now: switch_in,
            callback_time: switch_in,
            switch_in,
        }
    }

    #[test]
    fn records_match_their_samples_and_strays_are_dropped() {
        let mut q: VecDeque<KernelSample> = [k(500), k(10_200), k(20_100)].into();
        // A record before the sample's expiry belongs to no sample.
        assert_eq!(take_match(&mut q, 10_000, 10_300), Some(k(10_200)));
        assert_eq!(q.len(), 1);
        // A sample whose record is missing leaves the next one alone.
        assert_eq!(take_match(&mut q, 15_000, 15_100), None);
        assert_eq!(take_match(&mut q, 20_000, 20_150), Some(k(20_100)));
        assert!(q.is_empty());
        assert_eq!(take_match(&mut q, 30_000, 30_100), None);
    }
}
