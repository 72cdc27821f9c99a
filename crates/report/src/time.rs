use latscope_model::Nanos;

/// `2026-11-20 22:03:59` (UTC) from nanoseconds since the Unix epoch.
pub fn format_utc(t: Nanos) -> String {
    let secs = t.0 / 1_000_000_000;
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

/// `Thu, 26 Nov 2026 22:03:59 +0000`: the date as rt-tests writes it
/// (`strftime("%a, %d %b %Y %T %z")`), in UTC.
pub fn format_rfc2822(t: Nanos) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let secs = t.0 / 1_000_000_000;
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let (y, m, d) = civil_from_days(days);
    format!(
        "{}, {d:02} {} {y:04} {:02}:{:02}:{:02} +0000",
        DAYS[days.rem_euclid(7) as usize],
        MONTHS[(m - 1) as usize],
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

/// Days since 1970-01-01 → (year, month, day) in the proleptic Gregorian
/// calendar (Howard Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_known_instants() {
        assert_eq!(format_utc(Nanos(0)), "1970-01-01 00:00:00");
        assert_eq!(
            format_utc(Nanos(1_795_730_639_000_000_000)),
            "2026-11-26 22:03:59"
        );
        assert_eq!(
            format_utc(Nanos(951_782_400_000_000_000)),
            "2000-02-29 00:00:00"
        );
    }

    #[test]
    fn formats_rt_tests_dates() {
        assert_eq!(format_rfc2822(Nanos(0)), "Thu, 01 Jan 1970 00:00:00 +0000");
        assert_eq!(
            format_rfc2822(Nanos(1_795_730_639_000_000_000)),
            "Thu, 26 Nov 2026 22:03:59 +0000"
        );
        assert_eq!(
            format_rfc2822(Nanos(951_782_400_000_000_000)),
            "Tue, 29 Feb 2000 00:00:00 +0000"
        );
    }
}
