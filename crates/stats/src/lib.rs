//! Histograms, per-second timelines, summaries and tail math.
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
pub mod blocks;
pub mod compare;
pub mod forecast;
mod histogram;
pub mod intervals;
pub mod late_mode;
mod layout;
pub mod micro;
pub mod periodic;
mod results;
pub mod sched;
mod summary;
mod timeline;

pub use atomic::AtomicHistogram;
pub use histogram::{DecodeError, Histogram};
pub use intervals::{Interval, IntervalPercentiles, IntervalSeries};
pub use late_mode::{late_mode, LateBy, LateMode, Spacing};
pub use layout::{HIGHEST_TRACKABLE, SIGNIFICANT_DIGITS};
pub use periodic::{find_period, PeriodSearch, Periodicity};
pub use results::{CellResult, MetricResult, RunResult, TimelineChunk};
pub use summary::{log2_micros_table, LogBin, Summary};
pub use timeline::{SecondStats, TimelineRing, TIMELINE_RING_SECONDS};
