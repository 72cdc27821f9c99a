//! Metric names. They are stable API: JSON, the store and exports use them
//! verbatim, so they are constants here and nowhere else.

/// Intended expiry → our user code runs (what cyclictest reports).
pub const TIMER_LATENCY: &str = "timer.latency";
/// Spacing between consecutive wake-ups (Jones & Regehr's callback spacing).
pub const TIMER_INTERVAL: &str = "timer.interval";
