//! Feeding the analysis from the BPF backend: what the tracer thread does
//! with each read, shared by the engine and the tests that hold the two
//! backends to the same answers.

use std::collections::{HashMap, VecDeque};

use foldhash::fast::FixedState;

use latscope_model::CpuId;

use super::{BpfTracer, KernelRecord};
use crate::analysis::{Analyzer, KernelSample};
use crate::event::Decoded;

/// How far a record's switch-in may fall outside its sample's
/// [expiry, wake-up] and still be its (clock reads of two contexts).
const MATCH_TOLERANCE_NS: u64 = 1_000;

/// Pairs the probe's samples with the kernel's per-wake-up records.
///
/// Its maps are looked up a few times per sample, thousands of times a
/// second, with small integer keys that no outsider chooses: they hash with
/// foldhash's fast fixed hasher, not the standard SipHash (8 % of the
/// tracer thread's time).
#[derive(Debug, Default)]
pub struct KernelFeed {
    /// Records not yet matched with a sample, per measuring thread.
    queued: HashMap<i32, VecDeque<KernelSample>, FixedState>,
    /// The measuring thread of each CPU.
    tid_of: HashMap<u32, i32, FixedState>,
    records: Vec<KernelRecord>,
    events: Vec<Decoded>,
    received: u64,
}

impl KernelFeed {
    /// For these measuring threads (CPU, thread id).
    pub fn new(threads: &[(CpuId, i32)]) -> KernelFeed {
        KernelFeed {
            tid_of: threads.iter().map(|&(c, t)| (c.0, t)).collect(),
            records: Vec::with_capacity(4096),
            ..KernelFeed::default()
        }
    }

    /// Per-wake-up records received so far.
    pub fn received(&self) -> u64 {
        self.received
    }

    /// Timer probe: `samples` (expiry, wake-up per CPU, taken before this
    /// read) with the kernel's records, and for those above the threshold
    /// their window from the flight recorder.
    pub fn timer(
        &mut self,
        bpf: &mut BpfTracer,
        analyzer: &mut Analyzer,
        samples: &mut Vec<(CpuId, u64, u64)>,
    ) {
        let mut records = std::mem::take(&mut self.records);
        records.clear();
        bpf.drain(&mut records);
        self.timer_from(&records, bpf, analyzer, samples);
        self.records = records;
    }

    /// [`Self::timer`] with records the caller drained from `bpf` itself:
    /// with several measuring threads per CPU (`run --priorities`) one
    /// read serves one feed and one analysis per priority, each taking the
    /// records of its own threads.
    pub fn timer_from(
        &mut self,
        records: &[KernelRecord],
        bpf: &mut BpfTracer,
        analyzer: &mut Analyzer,
        samples: &mut Vec<(CpuId, u64, u64)>,
    ) {
        for r in records {
            // Records of threads another feed follows are not this one's.
            if self.tid_of.get(&r.cpu) == Some(&r.tid) || self.tid_of.values().any(|&t| t == r.tid)
            {
                self.received += 1;
                self.queued.entry(r.tid).or_default().push_back(r.sample);
            }
        }
        for (cpu, d, u) in samples.drain(..) {
            let tid = self.tid_of.get(&cpu.0).copied();
            let found = tid
                .and_then(|tid| self.queued.get_mut(&tid))
                .and_then(|q| take_match(q, d, u));
            if analyzer.above_threshold(u.saturating_sub(d)) {
                let from = d.saturating_sub(Analyzer::replay_ns());
                // The code that held the CPU, by the kernel's expiry.
                let held = found.and_then(|k| u64::try_from(k.expires).ok());
                let held = held.and_then(|e| bpf.held(cpu.0, tid?, e));
                analyzer.set_held(held);
                // The analysis reads the window up to the wake-up only.
                let (events, complete, names) = bpf.window(cpu.0, from, u);
                analyzer.on_kernel_sample(cpu, d, u, found, Some((events, complete)), names);
                analyzer.set_held(None);
            } else {
                analyzer.on_kernel_sample(cpu, d, u, found, None, bpf.names());
            }
        }
    }

    /// Noise and UDP probes: every event the recorder holds since the last
    /// read goes to the analysis, as perf's would.
    pub fn recorded(
        &mut self,
        bpf: &mut BpfTracer,
        analyzer: &mut Analyzer,
        samples: &mut Vec<(CpuId, u64, u64)>,
        read_at: u64,
    ) {
        self.events.clear();
        let events = &mut self.events;
        bpf.follow(&mut |d| events.push(d));
        let names = bpf.names();
        for (cpu, d, u) in samples.drain(..) {
            analyzer.on_sample(cpu, d, u, names);
        }
        for d in &self.events {
            analyzer.on_decoded(d, names);
        }
        analyzer.flush(read_at, names);
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
            steal: None,
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
