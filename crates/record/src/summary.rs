use latscope_model::Nanos;
use serde::{Deserialize, Serialize};

use crate::histogram::Histogram;

/// The numbers a summary table shows for one metric. Percentiles carry the
/// histogram's 0.1 % bucket error; min, mean and max are exact.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Summary {
    pub count: u64,
    pub min: Nanos,
    pub mean: Nanos,
    pub p50: Nanos,
    pub p90: Nanos,
    pub p99: Nanos,
    pub p999: Nanos,
    pub p9999: Nanos,
    pub max: Nanos,
}

impl Summary {
    /// `None` for an empty histogram: there is no honest minimum of nothing.
    pub fn of(h: &Histogram) -> Option<Summary> {
        Some(Summary {
            count: h.count(),
            min: h.min()?,
            mean: h.mean()?,
            p50: h.quantile(0.50)?,
            p90: h.quantile(0.90)?,
            p99: h.quantile(0.99)?,
            p999: h.quantile(0.999)?,
            p9999: h.quantile(0.9999)?,
            max: h.max()?,
        })
    }
}

/// One row of the studies' log-scale tables: samples in `[low, high)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogBin {
    pub low: Nanos,
    pub high: Nanos,
    pub count: u64,
}

/// Counts in power-of-two microsecond ranges: `[0, 1 µs)`, `[1, 2 µs)`,
/// `[2, 4 µs)`, ... up to the range holding the maximum, the form of
/// Bernadat's Tables 6 and 7 and of Cota-Robles & Held's log-scale plots.
/// Every boundary is a bucket boundary of the histogram, so the counts are
/// exact.
pub fn log2_micros_table(h: &Histogram) -> Vec<LogBin> {
    let Some(max) = h.max() else {
        return Vec::new();
    };
    let mut bins = vec![LogBin {
        low: Nanos(0),
        high: Nanos(1_000),
        count: h.count_between(0, 1_000),
    }];
    let mut low = 1_000u64;
    while low <= max.0 {
        let high = low.saturating_mul(2);
        bins.push(LogBin {
            low: Nanos(low),
            high: Nanos(high),
            count: h.count_between(low, high),
        });
        if high == u64::MAX {
            break;
        }
        low = high;
    }
    bins
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_of_known_values() {
        let mut h = Histogram::new();
        for v in 1..=10_000u64 {
            h.record(v * 100);
        }
        let s = Summary::of(&h).unwrap();
        assert_eq!(s.count, 10_000);
        assert_eq!(s.min, Nanos(100));
        assert_eq!(s.max, Nanos(1_000_000));
        assert_eq!(s.mean, Nanos(500_050));
        assert!((s.p50.0 as f64 - 500_000.0).abs() <= 500.0);
        assert!((s.p99.0 as f64 - 990_000.0).abs() <= 990.0);
        assert!((s.p999.0 as f64 - 999_000.0).abs() <= 999.0);
        assert!(Summary::of(&Histogram::new()).is_none());
    }

    #[test]
    fn log_table_counts_are_exact() {
        let mut h = Histogram::new();
        let values = [
            500u64, 999, 1_000, 1_999, 2_000, 3_999, 4_000, 7_000, 130_000, 1_048_575,
        ];
        for v in values {
            h.record(v);
        }
        let t = log2_micros_table(&h);
        for bin in &t {
            let exact = values
                .iter()
                .filter(|&&v| v >= bin.low.0 && v < bin.high.0)
                .count() as u64;
            assert_eq!(bin.count, exact, "{bin:?}");
        }
        assert_eq!(t.iter().map(|b| b.count).sum::<u64>(), values.len() as u64);
        assert_eq!(t[0].high, Nanos(1_000));
        assert_eq!(t[1].low, Nanos(1_000));
        assert_eq!(t.last().unwrap().high, Nanos(2_048_000));
    }
}
