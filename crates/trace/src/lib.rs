//! Kernel tracepoints through `perf_event_open`, decoded at run time from
//! the tracefs format files, and the analysis built on them: decomposition
//! of each timer sample, interrupt and deferred-work statistics, and the
//! cause breakdown of every long latency (episodes).
//!
//! The decoder reads live per-CPU rings and saved event streams through the
//! same code, so the analysis is tested on recorded fixtures.

pub mod analysis;
pub mod bpf;
pub mod decode;
mod error;
pub mod event;
pub mod format;
pub mod kallsyms;
pub mod recording;
pub mod ring;
pub mod tracefs;
pub mod tracer;

pub use decode::{DecodeStats, Decoder, Schema};
pub use error::TraceError;
pub use event::{
    Comm, Decoded, DeferredKind, EventKind, NameId, Names, StackSample, TraceEvent, HARDIRQ_CONTEXT,
};
pub use format::{EventFormat, Field};
pub use kallsyms::{Kallsyms, Symbol};
pub use recording::{Recording, RecordingWriter};
pub use tracefs::Tracefs;
pub use tracer::{ReadStats, Tracer, TracerConfig, TracerStats};
