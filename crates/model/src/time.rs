use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A span or instant in integer nanoseconds.
///
/// Instants are nanoseconds of `CLOCK_MONOTONIC` (or of the Unix epoch where a
/// field says so). Subtraction is saturating or checked, never wrapping: an
/// unsigned underflow in a latency tool turns a clock-read race into a
/// 584-year latency.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct Nanos(pub u64);

impl Nanos {
    pub const ZERO: Nanos = Nanos(0);
    pub const MAX: Nanos = Nanos(u64::MAX);

    pub const fn from_micros(us: u64) -> Nanos {
        Nanos(us.saturating_mul(1_000))
    }
    pub const fn from_millis(ms: u64) -> Nanos {
        Nanos(ms.saturating_mul(1_000_000))
    }
    pub const fn from_secs(s: u64) -> Nanos {
        Nanos(s.saturating_mul(1_000_000_000))
    }
    pub const fn as_u64(self) -> u64 {
        self.0
    }
    pub const fn saturating_sub(self, other: Nanos) -> Nanos {
        Nanos(self.0.saturating_sub(other.0))
    }
    pub const fn checked_sub(self, other: Nanos) -> Option<Nanos> {
        match self.0.checked_sub(other.0) {
            Some(v) => Some(Nanos(v)),
            None => None,
        }
    }
    pub const fn saturating_add(self, other: Nanos) -> Nanos {
        Nanos(self.0.saturating_add(other.0))
    }

    /// Seconds as a float, for display and rates only.
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }

    /// Parses a duration such as `500us`, `1ms`, `8s`, `2m`, `1h`, `1.5ms` or
    /// `250ns`. A bare number is rejected: a unit-less period is the most
    /// common way to measure the wrong thing by a factor of a thousand.
    pub fn parse_duration(text: &str) -> Result<Nanos, ParseDurationError> {
        let t = text.trim();
        let err = || ParseDurationError(text.to_string());
        let split = t
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(err)?;
        let (num, unit) = t.split_at(split);
        if num.is_empty() {
            return Err(err());
        }
        let scale: u64 = match unit.trim() {
            "ns" => 1,
            "us" | "µs" => 1_000,
            "ms" => 1_000_000,
            "s" | "sec" => 1_000_000_000,
            "m" | "min" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            "d" => 86_400_000_000_000,
            _ => return Err(err()),
        };
        let (int_part, frac_part) = match num.split_once('.') {
            Some((i, f)) => (i, f),
            None => (num, ""),
        };
        if frac_part.contains('.') || (int_part.is_empty() && frac_part.is_empty()) {
            return Err(err());
        }
        let int: u64 = if int_part.is_empty() {
            0
        } else {
            int_part.parse().map_err(|_| err())?
        };
        let mut total = int.checked_mul(scale).ok_or_else(err)?;
        // Fractions are exact in decimal: walk the digits instead of going
        // through f64, so `0.1ms` is exactly 100000 ns.
        let mut place = scale;
        for d in frac_part.chars() {
            let digit = u64::from(d.to_digit(10).ok_or_else(err)?);
            place /= 10;
            if place == 0 {
                if digit != 0 {
                    return Err(err());
                }
                continue;
            }
            total = total.checked_add(digit * place).ok_or_else(err)?;
        }
        Ok(Nanos(total))
    }
}

impl FromStr for Nanos {
    type Err = ParseDurationError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Nanos::parse_duration(s)
    }
}

/// Scaled for reading: `850ns`, `12.3µs`, `4.56ms`, `2.00s`.
impl fmt::Display for Nanos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = self.0;
        let text = if v < 1_000 {
            format!("{v}ns")
        } else if v < 1_000_000 {
            scaled(v as f64 / 1e3, "µs")
        } else if v < 1_000_000_000 {
            scaled(v as f64 / 1e6, "ms")
        } else {
            scaled(v as f64 / 1e9, "s")
        };
        f.pad(&text)
    }
}

fn scaled(x: f64, unit: &str) -> String {
    if x < 10.0 {
        format!("{x:.2}{unit}")
    } else if x < 100.0 {
        format!("{x:.1}{unit}")
    } else {
        format!("{x:.0}{unit}")
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid duration '{0}': {reason}", reason = if .0.trim_start().starts_with('-') { "durations cannot be negative" } else { "expected a number with a unit, e.g. 500us, 1ms, 8s, 2m, 1h" })]
pub struct ParseDurationError(pub String);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_units() {
        assert_eq!(Nanos::parse_duration("250ns"), Ok(Nanos(250)));
        assert_eq!(Nanos::parse_duration("500us"), Ok(Nanos(500_000)));
        assert_eq!(Nanos::parse_duration("500µs"), Ok(Nanos(500_000)));
        assert_eq!(Nanos::parse_duration("1ms"), Ok(Nanos(1_000_000)));
        assert_eq!(Nanos::parse_duration("8s"), Ok(Nanos(8_000_000_000)));
        assert_eq!(Nanos::parse_duration("2m"), Ok(Nanos(120_000_000_000)));
        assert_eq!(Nanos::parse_duration("1h"), Ok(Nanos(3_600_000_000_000)));
        assert_eq!(Nanos::parse_duration(" 3s "), Ok(Nanos(3_000_000_000)));
    }

    #[test]
    fn parses_exact_fractions() {
        assert_eq!(Nanos::parse_duration("0.1ms"), Ok(Nanos(100_000)));
        assert_eq!(Nanos::parse_duration("1.5ms"), Ok(Nanos(1_500_000)));
        assert_eq!(Nanos::parse_duration(".5s"), Ok(Nanos(500_000_000)));
        assert_eq!(Nanos::parse_duration("1.0ns"), Ok(Nanos(1)));
        assert!(Nanos::parse_duration("1.5ns").is_err());
    }

    #[test]
    fn rejects_malformed() {
        for bad in [
            "",
            "1",
            "ms",
            "-1ms",
            "1 parsec",
            "1..2ms",
            "1.2.3s",
            "abc",
            "1e3us",
            "99999999999999999999h",
        ] {
            assert!(Nanos::parse_duration(bad).is_err(), "{bad} should fail");
        }
    }

    #[test]
    fn displays_scaled() {
        assert_eq!(Nanos(850).to_string(), "850ns");
        assert_eq!(Nanos(12_345).to_string(), "12.3µs");
        assert_eq!(Nanos(4_560_000).to_string(), "4.56ms");
        assert_eq!(Nanos(2_000_000_000).to_string(), "2.00s");
        assert_eq!(Nanos(150_000).to_string(), "150µs");
    }

    #[test]
    fn subtraction_never_wraps() {
        assert_eq!(Nanos(5).saturating_sub(Nanos(7)), Nanos::ZERO);
        assert_eq!(Nanos(5).checked_sub(Nanos(7)), None);
        assert_eq!(Nanos(7).checked_sub(Nanos(5)), Some(Nanos(2)));
    }
}
