//! Another tool's histogram, rebuilt as latscope's: each bucket's count is
//! recorded at the value the tool gives the bucket, so it lands in the
//! latscope bucket holding that value; samples beyond the tool's range
//! keep their count and the file's maximum, and a note says what is not
//! known of them.

use latscope_model::{CpuId, Nanos};
use latscope_record::{Histogram, MetricResult};

use crate::ImportError;

/// One thread's (or CPU's) histogram as a tool writes it, in the tool's
/// unit.
#[derive(Clone, Debug, Default)]
pub(crate) struct ToolHistogram {
    /// Nanoseconds per unit: 1000 for microseconds, 1 for nanoseconds.
    pub unit_ns: u64,
    /// Each bucket's value (what the tool calls it, in units) and count.
    pub buckets: Vec<(u64, u64)>,
    /// How wide each bucket is, in units: a bucket holds its value and
    /// the `width - 1` above it. Only checks the file's minimum and
    /// maximum against the buckets.
    pub width: u64,
    /// Samples the tool counted but kept in no bucket: beyond its range.
    pub overflow: u64,
    /// The smallest value a sample beyond the range can have, in units;
    /// `None` when the file does not say (then: above the highest bucket).
    pub range_end: Option<u64>,
    /// The file's own figures, in units.
    pub min: Option<u64>,
    pub max: Option<u64>,
    pub avg: Option<f64>,
}

/// A rebuilt histogram and, when samples were beyond the tool's range,
/// the note that says so.
#[derive(Debug)]
pub(crate) struct Rebuilt {
    pub histogram: Histogram,
    pub note: Option<String>,
}

impl ToolHistogram {
    /// The rebuilt histogram as metric `name` of `cpu`, and its note; an
    /// error names the file's `format`.
    pub fn metric(
        &self,
        name: &str,
        cpu: CpuId,
        who: &str,
        format: &'static str,
    ) -> Result<(MetricResult, Option<String>), ImportError> {
        let rebuilt = self
            .rebuild(who)
            .map_err(|e| ImportError::invalid(format, e))?;
        let mut m = MetricResult::new(name, Some(cpu));
        m.histogram = rebuilt.histogram;
        Ok((m, rebuilt.note))
    }

    fn ns(&self, units: u64, what: &str) -> Result<u64, String> {
        units
            .checked_mul(self.unit_ns)
            .ok_or_else(|| format!("{what} {units} is too large"))
    }

    /// Rebuilds the histogram; `who` names the thread or CPU in messages
    /// ("thread 1", "CPU 3 (Thr)"). An error is a file that contradicts
    /// itself.
    pub fn rebuild(&self, who: &str) -> Result<Rebuilt, String> {
        let mut in_range: u64 = 0;
        let mut lowest: Option<u64> = None;
        let mut highest: Option<u64> = None;
        for &(value, count) in self.buckets.iter().filter(|(_, c)| *c > 0) {
            in_range = in_range
                .checked_add(count)
                .ok_or_else(|| format!("{who}: the bucket counts overflow"))?;
            self.ns(value, "a bucket of")?;
            lowest = Some(lowest.map_or(value, |l| l.min(value)));
            highest = Some(highest.map_or(value, |m| m.max(value)));
        }
        let total = in_range
            .checked_add(self.overflow)
            .ok_or_else(|| format!("{who}: the sample count overflows"))?;
        let mut h = Histogram::new();
        if total == 0 {
            return Ok(Rebuilt {
                histogram: h,
                note: None,
            });
        }
        let width = self.width.max(1);
        if let (Some(min), Some(low)) = (self.min, lowest) {
            if min > low.saturating_add(width - 1) || min < low {
                return Err(format!(
                    "{who}: the minimum {min} lies outside the lowest bucket ({low})"
                ));
            }
        }
        if self.overflow == 0 {
            if let (Some(max), Some(high)) = (self.max, highest) {
                if max < high || max > high.saturating_add(width - 1) {
                    return Err(format!(
                        "{who}: the maximum {max} lies outside the highest bucket ({high}) and no sample is counted beyond the histogram"
                    ));
                }
            }
        }
        // Where buckets are wider than one unit, the file's exact extremes
        // are kept: the lowest bucket's samples are at least the minimum,
        // and one sample of the highest bucket is the maximum.
        let floor = self.min.unwrap_or(0);
        let mut max_at = match self.overflow {
            0 => self.max.filter(|&m| Some(m) != highest).zip(highest),
            _ => None,
        };
        for &(value, count) in self.buckets.iter().filter(|(_, c)| *c > 0) {
            let mut left = count;
            if let Some((max, _)) = max_at.filter(|&(_, high)| high == value) {
                h.record(self.ns(max, "the maximum")?);
                left -= 1;
                max_at = None;
            }
            h.record_n(self.ns(value.max(floor), "a bucket of")?, left);
        }
        let placed_sum = h.sum();
        let mut note = None;
        if self.overflow > 0 {
            let floor = match (self.range_end, highest) {
                (Some(end), _) => end,
                (None, Some(high)) => high.saturating_add(width),
                (None, None) => 0,
            };
            // With nothing inside the range, the minimum is one of them.
            let floor = match (self.min, in_range) {
                (Some(min), 0) => floor.max(min),
                _ => floor,
            };
            let unit = if self.unit_ns == 1 { "ns" } else { "µs" };
            let range = match self.range_end {
                Some(end) => format!("the histogram's range ({end} {unit})"),
                None => format!(
                    "the highest bucket ({} {unit}; the file does not give the histogram's range)",
                    highest.unwrap_or(0)
                ),
            };
            match self.max {
                Some(max) if max >= floor => {
                    h.record_n(self.ns(floor, "the histogram's range")?, self.overflow - 1);
                    h.record(self.ns(max, "the maximum")?);
                    note = Some(format!(
                        "{who}: {} sample{} above {range}; the file does not say their values: stored at {}, the least they can be, but the largest at the file's maximum, {}",
                        self.overflow,
                        if self.overflow == 1 { " was" } else { "s were" },
                        Nanos(self.ns(floor, "the histogram's range")?),
                        Nanos(self.ns(max, "the maximum")?),
                    ));
                }
                Some(max) => {
                    return Err(format!(
                        "{who}: {} samples are counted above {range} but the maximum is {max}",
                        self.overflow
                    ))
                }
                None => {
                    h.record_n(self.ns(floor, "the histogram's range")?, self.overflow);
                    note = Some(format!(
                        "{who}: {} sample{} above {range} and the file gives no maximum: stored at {}, the least they can be",
                        self.overflow,
                        if self.overflow == 1 { " was" } else { "s were" },
                        Nanos(self.ns(floor, "the histogram's range")?),
                    ));
                }
            }
        }
        // Where buckets are wider than a unit, or samples beyond the range
        // sit at its edge, the placed values undercount; the tool's own
        // average (also of values cut to its unit) is the better sum, and
        // the larger of the two the better lower bound.
        if self.overflow > 0 || width > 1 {
            if let Some(avg) = self.avg.filter(|a| a.is_finite() && *a >= 0.0) {
                let from_avg = avg * total as f64 * self.unit_ns as f64;
                if from_avg < 3.0e38 {
                    let from_avg = from_avg.round() as u128;
                    let best = from_avg.max(placed_sum);
                    // Refused (left as placed) when the average contradicts
                    // the extremes: the file's figures disagree slightly.
                    h.set_sum(best);
                }
            }
        }
        Ok(Rebuilt { histogram: h, note })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn us(buckets: &[(u64, u64)]) -> ToolHistogram {
        ToolHistogram {
            unit_ns: 1000,
            buckets: buckets.to_vec(),
            width: 1,
            ..ToolHistogram::default()
        }
    }

    #[test]
    fn each_bucket_lands_at_its_value() {
        let t = ToolHistogram {
            min: Some(10),
            max: Some(97),
            ..us(&[(10, 4), (11, 9), (97, 1)])
        };
        let r = t.rebuild("thread 0").unwrap();
        let h = r.histogram;
        assert_eq!(h.count(), 14);
        assert_eq!(h.min(), Some(Nanos(10_000)));
        assert_eq!(h.max(), Some(Nanos(97_000)));
        assert_eq!(h.sum(), 4 * 10_000 + 9 * 11_000 + 97_000);
        let buckets: Vec<_> = h.buckets().collect();
        assert_eq!(buckets.len(), 3);
        assert!(buckets[0].0 <= 10_000 && 10_000 <= buckets[0].1);
        assert_eq!(buckets[0].2, 4);
        assert!(r.note.is_none());
    }

    #[test]
    fn overflows_keep_their_count_and_the_maximum() {
        let t = ToolHistogram {
            overflow: 7,
            range_end: Some(100),
            min: Some(11),
            max: Some(2592),
            avg: Some(20.05),
            ..us(&[(11, 18), (12, 159), (97, 1)])
        };
        let r = t.rebuild("thread 1").unwrap();
        let h = r.histogram;
        assert_eq!(h.count(), 185);
        assert_eq!(h.max(), Some(Nanos(2_592_000)));
        // 6 at the range's 100 µs, 1 at 2.59 ms, 1 at 97 µs
        assert_eq!(h.count_above(98_000), 7);
        assert_eq!(h.count_above(100_100), 1);
        // The tool's average gives the sum: 20.05 µs × 185.
        assert_eq!(h.mean(), Some(Nanos(20_050)));
        let note = r.note.unwrap();
        assert!(
            note.starts_with("thread 1: 7 samples were above the histogram's range (100 µs)"),
            "{note}"
        );
        assert!(note.contains("2.59ms"), "{note}");
        assert!(!note.contains('\n'));
    }

    #[test]
    fn all_beyond_the_range_uses_the_minimum() {
        let t = ToolHistogram {
            unit_ns: 1,
            overflow: 1000,
            range_end: Some(50),
            min: Some(14_762),
            max: Some(57_797),
            ..ToolHistogram::default()
        };
        let h = t.rebuild("thread 0").unwrap().histogram;
        assert_eq!(h.count(), 1000);
        assert_eq!(h.min(), Some(Nanos(14_762)));
        assert_eq!(h.max(), Some(Nanos(57_797)));
    }

    #[test]
    fn wide_buckets_keep_the_exact_extremes() {
        let t = ToolHistogram {
            width: 10,
            min: Some(13),
            max: Some(47),
            avg: Some(25.0),
            ..us(&[(10, 5), (20, 3), (40, 2)])
        };
        let h = t.rebuild("CPU 0").unwrap().histogram;
        assert_eq!(h.count(), 10);
        assert_eq!(h.min(), Some(Nanos(13_000)));
        assert_eq!(h.max(), Some(Nanos(47_000)));
        assert_eq!(h.mean(), Some(Nanos(25_000)));
    }

    #[test]
    fn contradictions_are_errors() {
        let t = ToolHistogram {
            min: Some(5),
            ..us(&[(10, 1)])
        };
        assert!(t.rebuild("t").unwrap_err().contains("minimum 5"));
        let t = ToolHistogram {
            max: Some(50),
            ..us(&[(10, 1), (60, 1)])
        };
        assert!(t.rebuild("t").unwrap_err().contains("maximum 50"));
        let t = ToolHistogram {
            overflow: 2,
            range_end: Some(100),
            max: Some(90),
            ..us(&[(10, 1)])
        };
        assert!(t
            .rebuild("t")
            .unwrap_err()
            .contains("above the histogram's range"));
        let t = us(&[(u64::MAX, 1)]);
        assert!(t.rebuild("t").unwrap_err().contains("too large"));
    }

    #[test]
    fn nothing_is_an_empty_histogram() {
        let r = us(&[(10, 0)]).rebuild("t").unwrap();
        assert!(r.histogram.is_empty());
        assert!(r.note.is_none());
    }
}
