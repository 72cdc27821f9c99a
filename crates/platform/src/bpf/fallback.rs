//! Without the programs in this build: [`TraceBpf::open`] explains why, in
//! one line; the rest of the API exists so callers compile either way.

use super::{
    BpfConfig, BpfCounters, BpfHistBucket, BpfHistTotal, RecordedEvent, RecorderRead, TimerRecord,
};
use crate::error::PlatformError;

fn not_built() -> PlatformError {
    PlatformError::Invalid(
        "BPF: this build has no BPF programs (built without clang or with LATSCOPE_NO_BPF=1)"
            .to_string(),
    )
}

/// The BPF backend's kernel half (not in this build).
pub struct TraceBpf {
    _private: (),
}

impl TraceBpf {
    pub fn open(_config: &BpfConfig) -> Result<TraceBpf, PlatformError> {
        Err(not_built())
    }
    pub fn watch(&mut self, _tids: &[u32]) -> Result<(), PlatformError> {
        Err(not_built())
    }
    pub fn missing(&self) -> &[String] {
        &[]
    }
    pub fn steal_counter(&self) -> Option<super::StealCounter> {
        None
    }
    pub fn drain_samples(&mut self, _out: &mut Vec<TimerRecord>) -> usize {
        0
    }
    pub fn drain(&mut self, _out: &mut Vec<TimerRecord>) -> usize {
        0
    }
    pub fn fill_since_last(&mut self) -> f64 {
        0.0
    }
    pub fn counters(&self) -> Result<BpfCounters, PlatformError> {
        Ok(BpfCounters::default())
    }
    pub fn recorder_window(
        &self,
        _cpu: u32,
        _from_time: u64,
        _to_time: u64,
        _out: &mut Vec<RecordedEvent>,
    ) -> RecorderRead {
        RecorderRead::default()
    }
    pub fn recorder_since(
        &self,
        _cpu: u32,
        after_seq: u64,
        _out: &mut Vec<RecordedEvent>,
    ) -> (u64, u64) {
        (after_seq, 0)
    }
    pub fn recorder_head(&self, _cpu: u32) -> Option<u64> {
        None
    }
    pub fn drain_histograms(
        &mut self,
        _buckets: &mut Vec<BpfHistBucket>,
        _totals: &mut Vec<BpfHistTotal>,
    ) -> Result<(), PlatformError> {
        Ok(())
    }
    pub fn prog_stats(&self) -> Vec<(String, u64, u64)> {
        Vec::new()
    }
    pub fn napi_name(&self, _napi: u64) -> Option<String> {
        None
    }
    pub fn take_held(&mut self, _cpu: u32, _tid: u32, _expires: u64) -> Option<super::HeldRecord> {
        None
    }
    pub fn stack(&self, _id: u32) -> Option<Vec<u64>> {
        None
    }
}

/// Keeps the kernel's BPF run-time statistics on (not in this build).
pub struct BpfStatsGuard {
    _private: (),
}

pub fn enable_bpf_stats() -> Result<BpfStatsGuard, PlatformError> {
    Err(not_built())
}
