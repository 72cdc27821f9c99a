//! What a forecast keeps of its run's timeline beside the fit: how much
//! the cluster rate varies between windows, and the model's check against
//! the run's own window maxima (computed in `predictive.rs`).

use serde::Serialize;

/// Seconds per window over which the cluster rate's variation is measured.
pub const DISPERSION_WINDOW_S: usize = 10;

/// The between-window variance `τ²` of the log cluster rate: each series
/// (one per CPU) is cut into whole windows of [`DISPERSION_WINDOW_S`]
/// seconds, and each window's count `c` of seconds whose maximum exceeds
/// `threshold` (one per cluster, clusters being rarer than seconds there)
/// compared with a Poisson count: if the rate varies between windows as a
/// log-normal factor of variance `τ²`, `Var c = m + m² (e^{τ²} − 1)` for
/// the mean `m` (method of moments, never below 0). `None` with fewer than
/// two windows or no busy second.
pub fn rate_dispersion(series: &[&[u64]], threshold: u64) -> Option<f64> {
    let counts: Vec<f64> = series
        .iter()
        .flat_map(|s| s.chunks_exact(DISPERSION_WINDOW_S))
        .map(|w| w.iter().filter(|&&m| m > threshold).count() as f64)
        .collect();
    if counts.len() < 2 {
        return None;
    }
    let n = counts.len() as f64;
    let mean = counts.iter().sum::<f64>() / n;
    if mean <= 0.0 {
        return None;
    }
    let var = counts.iter().map(|c| (c - mean).powi(2)).sum::<f64>() / (n - 1.0);
    Some((1.0 + ((var - mean) / (mean * mean)).max(0.0)).ln())
}

/// The run's own windows of `DISPERSION_WINDOW_S` seconds against the
/// fitted model: how many window maxima fall outside the model's central
/// 95 % range for such a window (plug-in parameters), of how many.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct SelfCheck {
    pub windows: usize,
    pub outside: usize,
    /// `P(X ≥ outside)` for `X ~ Binomial(windows, 0.05)`.
    pub p_value: f64,
}

/// Significance below which the self-check fails.
pub const SELF_CHECK_P: f64 = 0.01;
