//! Column encodings that SQLite has no type for.

use std::io::{Read, Write};

use flate2::read::ZlibDecoder;
use flate2::write::ZlibEncoder;
use flate2::Compression;
use latscope_model::{CellSettings, CpuId, WindowEvent};
use latscope_record::{Histogram, SecondStats};

/// Bytes per second in a timeline blob: count, max, above as little-endian u64.
const SECOND_BYTES: usize = 24;

/// The longest timeline a reader will rebuild (ten years): a damaged
/// `first_second` must give an error, not an attempt to allocate exabytes.
pub(crate) const MAX_TIMELINE_SECONDS: usize = 10 * 366 * 86_400;

/// A cell's settings from their stored JSON. Version 7 stores the probe's
/// tag inside the object, and its migration adds the tag to older cells;
/// this still accepts the untagged form (taking the probe from the cell's
/// `probe` column) so that a value the migration left alone or a store
/// written by hand reads too. The error is one phrase for a corrupt-store
/// message.
pub(crate) fn decode_settings(probe: &str, text: &str) -> Result<CellSettings, String> {
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    CellSettings::from_json(probe, value).map_err(|e| e.to_string())
}

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

/// The most an episode window's events may inflate to (64 MiB): a damaged
/// or hostile blob gives an error instead of exhausting memory. Windows are
/// capped by the tracer at a few thousand events (well under 1 MiB).
pub(crate) const MAX_WINDOW_JSON_BYTES: u64 = 64 << 20;

/// An episode window's events as zlib-compressed JSON: the events repeat a
/// handful of names and field patterns, so this is several times smaller
/// than the JSON and needs no schema of its own.
pub(crate) fn encode_window_events(events: &[WindowEvent]) -> Result<Vec<u8>, String> {
    let json = serde_json::to_vec(events).map_err(|e| e.to_string())?;
    let mut enc = ZlibEncoder::new(Vec::with_capacity(json.len() / 4), Compression::default());
    enc.write_all(&json).map_err(|e| e.to_string())?;
    enc.finish().map_err(|e| e.to_string())
}

/// The inverse of [`encode_window_events`]; a message for a damaged blob.
pub(crate) fn decode_window_events(blob: &[u8]) -> Result<Vec<WindowEvent>, String> {
    let mut json = Vec::new();
    ZlibDecoder::new(blob)
        .take(MAX_WINDOW_JSON_BYTES + 1)
        .read_to_end(&mut json)
        .map_err(|e| format!("cannot inflate its events ({e})"))?;
    if json.len() as u64 > MAX_WINDOW_JSON_BYTES {
        return Err(format!(
            "its events inflate to more than {} MiB",
            MAX_WINDOW_JSON_BYTES >> 20
        ));
    }
    serde_json::from_slice(&json).map_err(|e| format!("its events are unreadable ({e})"))
}

/// The most a histogram's blob may inflate to: LSH1 of the fullest
/// histogram (every bucket, the longest varints) is about 560 KB.
pub(crate) const MAX_LSH1_BYTES: u64 = 1 << 20;

/// A histogram as the store keeps it (schema 14; the intervals since 13):
/// zlib over its LSH1 form. LSH1 alone is compact in the number of
/// buckets, but its (gap, count) pairs are mostly small numbers that
/// deflate codes in a few bits: 47 % of LSH1 for the cumulative
/// histograms and snapshots of an hour-long monitor, 38-40 % for 1-10 s
/// intervals (docs/store.md). Compressing into memory cannot fail; were it
/// to, LSH1 as it is would be stored, which every reader accepts.
pub(crate) fn encode_histogram(h: &Histogram) -> Vec<u8> {
    let raw = h.to_bytes();
    let mut enc = ZlibEncoder::new(Vec::with_capacity(raw.len() / 2), Compression::default());
    match enc.write_all(&raw).and_then(|()| enc.finish()) {
        Ok(blob) => blob,
        Err(_) => raw,
    }
}

/// The inverse of [`encode_histogram`], and LSH1 as it is (what stores
/// before schema 14 hold in `metrics` and `metric_snapshots`); a phrase
/// for a damaged blob.
pub(crate) fn decode_histogram(blob: &[u8]) -> Result<Histogram, String> {
    let raw = inflate_histogram(blob)?;
    Histogram::from_bytes(&raw).map_err(|e| e.to_string())
}

/// A blob's LSH1 form (inflated, or as it is).
pub(crate) fn inflate_histogram(blob: &[u8]) -> Result<std::borrow::Cow<'_, [u8]>, String> {
    if blob.starts_with(b"LSH1") {
        return Ok(std::borrow::Cow::Borrowed(blob));
    }
    let mut raw = Vec::new();
    ZlibDecoder::new(blob)
        .take(MAX_LSH1_BYTES + 1)
        .read_to_end(&mut raw)
        .map_err(|e| format!("cannot inflate it ({e})"))?;
    if raw.len() as u64 > MAX_LSH1_BYTES {
        return Err(too_large());
    }
    Ok(std::borrow::Cow::Owned(raw))
}

pub(crate) fn too_large() -> String {
    format!("it inflates to more than {} MiB", MAX_LSH1_BYTES >> 20)
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
    fn window_events_round_trip_compressed() {
        let events: Vec<WindowEvent> = (0..500)
            .map(|i| WindowEvent {
                time_ns: 1_000_000 + i * 250,
                cpu: 1,
                tid: if i % 3 == 0 { 0 } else { 4242 },
                event: if i % 2 == 0 {
                    "sched_switch"
                } else {
                    "irq_handler_entry"
                }
                .into(),
                name: "burner".into(),
                pid: 4242,
                prio: 9,
                value: -1,
                object: 0xffff_8880_0000_0000 + i,
            })
            .collect();
        let blob = encode_window_events(&events).unwrap();
        let json_len = serde_json::to_vec(&events).unwrap().len();
        assert!(blob.len() * 4 < json_len, "{} vs {json_len}", blob.len());
        assert_eq!(decode_window_events(&blob).unwrap(), events);
        assert_eq!(
            decode_window_events(&encode_window_events(&[]).unwrap()).unwrap(),
            vec![]
        );
    }

    #[test]
    fn damaged_window_blobs_give_messages() {
        let e = decode_window_events(b"not zlib").unwrap_err();
        assert!(e.contains("cannot inflate"), "{e}");
        let mut enc = ZlibEncoder::new(Vec::new(), Compression::default());
        enc.write_all(b"{\"not\": \"a list\"}").unwrap();
        let e = decode_window_events(&enc.finish().unwrap()).unwrap_err();
        assert!(e.contains("unreadable"), "{e}");
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
