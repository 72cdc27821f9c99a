//! latscope's analysis: forecasts (exceedance, worst case per horizon and
//! its prediction interval, MTTF, the checked tail fits, the observed
//! blocks of long monitoring, calibration), schedulability, comparisons,
//! the periodic search, and the statistics of the microbenchmarks.
//!
//! The recording core it works on (histograms, the recorder, timelines,
//! the result types) is `latscope-record`, re-exported here whole, so that
//! a reader of results needs one crate. This crate is pure: no I/O, no
//! clocks, no threads.

pub mod blocks;
pub mod compare;
pub mod forecast;
pub mod late_mode;
pub mod micro;
pub mod periodic;
pub mod sched;

pub use late_mode::{late_mode, LateBy, LateMode, Spacing};
pub use latscope_record::*;
pub use periodic::{find_period, PeriodSearch, Periodicity};
