//! latscope-engine's integration tests as one binary (linked once, not three
//! times).
#![allow(clippy::unwrap_used)]

mod kill;
mod lifecycle;
mod micro_lifecycle;
mod together;
mod validation;
mod wording;
