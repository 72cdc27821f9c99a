//! The pure parts of the microbenchmarks (`latscope micro`): the cache
//! levels a memory-latency curve shows, and the comparison of two runs'
//! benchmarks (ratio of medians with a bootstrap interval and a verdict).

pub mod compare;
pub mod levels;

/// The median of sorted values (the mean of the middle two for an even
/// count); 0 for none.
pub fn median_sorted(sorted: &[f64]) -> f64 {
    match sorted.len() {
        0 => 0.0,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

/// A working set's or a cache's size as the tables name it: `512B`,
/// `1.5K`, `48K`, `32M`.
pub fn size_name(bytes: u64) -> String {
    let (unit, div) = if bytes >= 1 << 20 {
        ("M", (1u64 << 20) as f64)
    } else if bytes >= 1 << 10 {
        ("K", 1024.0)
    } else {
        return format!("{bytes}B");
    };
    let v = bytes as f64 / div;
    if v.fract() == 0.0 {
        format!("{v:.0}{unit}")
    } else {
        format!("{v:.1}{unit}")
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn sizes_are_named_as_the_tables_show_them() {
        use super::size_name;
        assert_eq!(size_name(512), "512B");
        assert_eq!(size_name(768), "768B");
        assert_eq!(size_name(1536), "1.5K");
        assert_eq!(size_name(48 << 10), "48K");
        assert_eq!(size_name(3 << 19), "1.5M");
        assert_eq!(size_name(32 << 20), "32M");
    }
}
