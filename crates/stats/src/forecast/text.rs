//! Numbers in words for the forecasts' messages.

/// `ns` as "1.25 ms", "12.5 µs" or "800 ns".
pub(crate) fn fmt_ns(ns: i64) -> String {
    let a = ns.unsigned_abs() as f64;
    let sign = if ns < 0 { "-" } else { "" };
    if a >= 1e6 {
        format!("{sign}{:.2} ms", a / 1e6)
    } else if a >= 1e3 {
        format!("{sign}{:.1} µs", a / 1e3)
    } else {
        format!("{sign}{a} ns")
    }
}
