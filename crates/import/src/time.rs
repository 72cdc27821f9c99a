//! The dates rt-tests writes (`strftime("%a, %d %b %Y %T %z")`, e.g.
//! `Wed, 25 Nov 2026 21:44:29 +0000`), read into Unix nanoseconds.

use latscope_model::Nanos;

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// Days from 1970-01-01 to the given date of the proleptic Gregorian
/// calendar (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `Wed, 25 Nov 2026 21:44:29 +0000` → nanoseconds since the Unix epoch;
/// the weekday is optional and not checked. `None` for anything else, and
/// for dates before 1970.
pub(crate) fn parse_rfc2822(text: &str) -> Option<Nanos> {
    let text = text.trim();
    let text = match text.split_once(',') {
        Some((_weekday, rest)) => rest,
        None => text,
    };
    let parts: Vec<&str> = text.split_whitespace().collect();
    let [day, month, year, clock, zone] = parts.as_slice() else {
        return None;
    };
    let day: u32 = day.parse().ok().filter(|d| (1..=31).contains(d))?;
    let month = MONTHS.iter().position(|m| m.eq_ignore_ascii_case(month))? as u32 + 1;
    let year: i64 = year.parse().ok()?;
    let hms: Vec<i64> = clock
        .split(':')
        .map(|p| p.parse().ok())
        .collect::<Option<_>>()?;
    let [h, mi, s] = hms.as_slice() else {
        return None;
    };
    if !(0..24).contains(h) || !(0..60).contains(mi) || !(0..=60).contains(s) {
        return None;
    }
    let (sign, digits) = match zone.split_at_checked(1)? {
        ("+", d) => (1, d),
        ("-", d) => (-1, d),
        _ => return None,
    };
    if digits.len() != 4 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let offset_min: i64 =
        digits[..2].parse::<i64>().ok()? * 60 + digits[2..].parse::<i64>().ok()?;
    let secs = days_from_civil(year, month, day) * 86_400 + h * 3600 + mi * 60 + s
        - sign * offset_min * 60;
    u64::try_from(secs)
        .ok()
        .and_then(|s| s.checked_mul(1_000_000_000))
        .map(Nanos)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_rt_tests_dates() {
        assert_eq!(
            parse_rfc2822("Thu, 01 Jan 1970 00:00:00 +0000"),
            Some(Nanos(0))
        );
        // 2026-11-26 22:03:59 UTC, as report::format_utc's test has it.
        assert_eq!(
            parse_rfc2822("Thu, 26 Nov 2026 22:03:59 +0000"),
            Some(Nanos(1_795_730_639_000_000_000))
        );
        assert_eq!(
            parse_rfc2822("Fri, 27 Nov 2026 00:03:59 +0200"),
            Some(Nanos(1_795_730_639_000_000_000))
        );
        assert_eq!(
            parse_rfc2822("Tue, 29 Feb 2000 00:00:00 -0130"),
            Some(Nanos(951_787_800_000_000_000))
        );
        for bad in [
            "",
            "yesterday",
            "Wed, 25 Nov 2026 21:44 +0000",
            "Wed, 25 Foo 2026 21:44:29 +0000",
            "Wed, 25 Nov 2026 21:44:29 UTC",
            "Wed, 32 Nov 2026 21:44:29 +0000",
            "Wed, 25 Nov 1969 21:44:29 +0000",
        ] {
            assert_eq!(parse_rfc2822(bad), None, "{bad}");
        }
    }
}
