//! One analysis of the tracer thread: the measuring threads of one cell
//! (one per CPU), their hand-over rings, their samples of the current
//! read. A traced cell has one; the cells of `run --priorities` share one
//! tracer and one recording, and each has its own analysis over the same
//! events (docs/tracing.md, "Several priorities").

use latscope_model::CpuId;
use latscope_probes::Handoff;
use latscope_trace::analysis::Analyzer;

pub(crate) struct Traced {
    pub(crate) analyzer: Analyzer,
    pub(crate) handoffs: Vec<Handoff>,
    /// Samples taken from the hand-over rings for the current read.
    pub(crate) samples: Vec<(CpuId, u64, u64)>,
}

impl Traced {
    pub(crate) fn new(analyzer: Analyzer, handoffs: Vec<Handoff>) -> Traced {
        Traced {
            analyzer,
            handoffs,
            samples: Vec::with_capacity(1 << 14),
        }
    }

    /// Takes the samples the measuring threads handed over since the last
    /// read (before the rings are read: see `analysis::Analyzer`).
    pub(crate) fn take_samples(&mut self) {
        let samples = &mut self.samples;
        for Handoff { cpu, ring, .. } in &self.handoffs {
            ring.drain(|d, u| samples.push((*cpu, d, u)));
        }
    }
}
