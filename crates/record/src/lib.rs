//! The recording core: what every probe records into, the tracer counts
//! with, the store keeps and every renderer reads. The analysis
//! (forecasts, schedulability, comparisons) is in `latscope-stats`, which
//! re-exports all of this.
//!
//! This crate is pure: no I/O, no clocks, no threads. The measuring side uses
//! [`AtomicHistogram`] and [`TimelineRing`], which a single measuring thread
//! writes without allocation or locks while a housekeeping thread reads them
//! for checkpoints; everything else works on owned snapshots ([`Histogram`],
//! [`SecondStats`]) that the store persists and the renderers read.
//!
//! The histogram is an HDR histogram (Gil Tene's layout): nanoseconds from
//! 1 ns to 2^36 ns (68.7 s), three significant decimal digits, 27 648 fixed
//! buckets, so memory is bounded however long a run lasts and every recorded
//! value is known to within 0.1 %. The recorder holds all buckets (216 KiB);
//! an owned [`Histogram`] allocates them in chunks of 256 as values arrive,
//! so one of values between 10 µs and 1 ms takes about 56 KiB.

mod atomic;
mod histogram;
pub mod intervals;
pub mod layout;
mod results;
pub mod sink;
mod summary;
mod timeline;

pub use atomic::AtomicHistogram;
pub use histogram::{DecodeError, Histogram};
pub use intervals::{Interval, IntervalPercentiles, IntervalSeries};
pub use layout::{HIGHEST_TRACKABLE, SIGNIFICANT_DIGITS};
pub use results::{CellResult, MetricResult, RunResult, TimelineChunk};
pub use sink::{CellKey, Checkpoint, Sink, SinkError};
pub use summary::{log2_micros_table, LogBin, Summary};
pub use timeline::{SecondStats, TimelineRing, TIMELINE_RING_SECONDS};
