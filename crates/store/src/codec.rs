//! Column encodings that SQLite has no type for.

use latscope_model::CpuId;
use latscope_stats::SecondStats;

/// Bytes per second in a timeline blob: count, max, above as little-endian u64.
const SECOND_BYTES: usize = 24;

/// The longest timeline a reader will rebuild (ten years): a damaged
/// `first_second` must give an error, not an attempt to allocate exabytes.
pub(crate) const MAX_TIMELINE_SECONDS: usize = 10 * 366 * 86_400;

/// `None` (system-wide) is stored as -1 so UNIQUE constraints see it as one value.
pub(crate) fn cpu_to_sql(cpu: Option<CpuId>) -> i64 {
    cpu.map_or(-1, |c| i64::from(c.0))
}

/// The inverse of [`cpu_to_sql`]; `None` (the outer one) for a value no CPU has.
#[allow(clippy::option_option)]
pub(crate) fn cpu_from_sql(v: i64) -> Option<Option<CpuId>> {
    if v == -1 {
        Some(None)
    } else {
        u32::try_from(v).ok().map(|c| Some(CpuId(c)))
    }
}

pub(crate) fn encode_timeline(seconds: &[SecondStats]) -> Vec<u8> {
    let mut out = Vec::with_capacity(seconds.len() * SECOND_BYTES);
    for s in seconds {
        out.extend_from_slice(&s.count.to_le_bytes());
        out.extend_from_slice(&s.max.to_le_bytes());
        out.extend_from_slice(&s.above.to_le_bytes());
    }
    out
}

/// `None` when the blob is not a whole number of seconds.
pub(crate) fn decode_timeline(data: &[u8]) -> Option<Vec<SecondStats>> {
    let seconds = data.chunks_exact(SECOND_BYTES);
    if !seconds.remainder().is_empty() {
        return None;
    }
    seconds
        .map(|c| {
            Some(SecondStats {
                count: le_u64(c.get(0..8)?)?,
                max: le_u64(c.get(8..16)?)?,
                above: le_u64(c.get(16..24)?)?,
            })
        })
        .collect()
}

fn le_u64(bytes: &[u8]) -> Option<u64> {
    bytes.try_into().ok().map(u64::from_le_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeline_round_trips() {
        let secs = vec![
            SecondStats {
                count: 1,
                max: u64::MAX,
                above: 0,
            },
            SecondStats::default(),
            SecondStats {
                count: 1000,
                max: 123_456,
                above: 7,
            },
        ];
        let bytes = encode_timeline(&secs);
        assert_eq!(bytes.len(), 72);
        assert_eq!(&bytes[0..8], &1u64.to_le_bytes());
        assert_eq!(decode_timeline(&bytes), Some(secs));
        assert_eq!(decode_timeline(&bytes[..71]), None);
        assert_eq!(decode_timeline(&[]), Some(vec![]));
    }

    #[test]
    fn cpu_encoding() {
        assert_eq!(cpu_to_sql(None), -1);
        assert_eq!(cpu_to_sql(Some(CpuId(3))), 3);
        assert_eq!(cpu_from_sql(-1), Some(None));
        assert_eq!(cpu_from_sql(3), Some(Some(CpuId(3))));
        assert_eq!(cpu_from_sql(-2), None);
        assert_eq!(cpu_from_sql(i64::MAX), None);
    }
}
