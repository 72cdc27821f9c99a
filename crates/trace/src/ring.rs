//! perf ring logic that does not need the kernel: splitting a byte stream
//! into records, and a simulated ring for tests.
//!
//! The live ring ([`latscope_platform::perf::PerfRing`]) copies the bytes
//! between its tail and head out in one or two segments
//! ([`ring_segments`]), so a record the kernel wrote across the end of the
//! ring comes out whole. [`SimRing`] reproduces that behaviour in ordinary
//! memory, including a full ring that drops records and reports them with a
//! `PERF_RECORD_LOST`, so wrap-around and loss can be tested byte for byte
//! with the same segment code the live reader uses.

pub use latscope_platform::perf::{copy_from_ring, ring_segments};
use latscope_platform::perf::{PerfError, PERF_RECORD_LOST};

/// Size of `struct perf_event_header`: u32 type, u16 misc, u16 size.
pub const HEADER_LEN: usize = 8;

/// One perf record, header included.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RawRecord<'a> {
    pub kind: u32,
    pub misc: u16,
    /// The whole record: header, then body.
    pub bytes: &'a [u8],
}

/// A record header that cannot be right: the rest of the buffer cannot be
/// split into records any more.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Malformed {
    /// Byte position of the bad header in the buffer.
    pub at: usize,
}

/// Splits a buffer of whole perf records. Stops after the first malformed
/// header (size below 8 or past the end of the buffer), which it yields as
/// an error: perf records carry no sync marker, so nothing after a bad size
/// can be trusted.
#[derive(Clone, Debug)]
pub struct Records<'a> {
    buf: &'a [u8],
    pos: usize,
    done: bool,
}

impl<'a> Records<'a> {
    pub fn new(buf: &'a [u8]) -> Records<'a> {
        Records {
            buf,
            pos: 0,
            done: false,
        }
    }

    /// Bytes consumed by the records yielded so far.
    pub fn position(&self) -> usize {
        self.pos
    }
}

impl<'a> Iterator for Records<'a> {
    type Item = Result<RawRecord<'a>, Malformed>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done || self.pos >= self.buf.len() {
            return None;
        }
        let rest = &self.buf[self.pos..];
        let parsed =
            parse_header(rest).filter(|&(_, _, size)| size >= HEADER_LEN && size <= rest.len());
        match parsed {
            Some((kind, misc, size)) => {
                let bytes = &rest[..size];
                self.pos += size;
                Some(Ok(RawRecord { kind, misc, bytes }))
            }
            None => {
                self.done = true;
                Some(Err(Malformed { at: self.pos }))
            }
        }
    }
}

fn parse_header(b: &[u8]) -> Option<(u32, u16, usize)> {
    let kind = u32::from_ne_bytes(b.get(0..4)?.try_into().ok()?);
    let misc = u16::from_ne_bytes(b.get(4..6)?.try_into().ok()?);
    let size = u16::from_ne_bytes(b.get(6..8)?.try_into().ok()?);
    Some((kind, misc, usize::from(size)))
}

/// Builds a record: header (type, misc, size) then `body`, padded with
/// zeros to a multiple of 8 as the kernel does.
pub fn build_record(kind: u32, misc: u16, body: &[u8]) -> Vec<u8> {
    let len = (HEADER_LEN + body.len()).next_multiple_of(8);
    let size = u16::try_from(len).unwrap_or(u16::MAX);
    let mut out = Vec::with_capacity(len);
    out.extend_from_slice(&kind.to_ne_bytes());
    out.extend_from_slice(&misc.to_ne_bytes());
    out.extend_from_slice(&size.to_ne_bytes());
    out.extend_from_slice(body);
    out.resize(usize::from(size), 0);
    out
}

/// A perf ring in ordinary memory, written like the kernel writes one
/// (free-running head, records wrapping at the end, nothing overwritten
/// before the reader releases it) and read like [`PerfRing`] reads one.
///
/// [`PerfRing`]: latscope_platform::perf::PerfRing
#[derive(Clone, Debug)]
pub struct SimRing {
    data: Vec<u8>,
    head: u64,
    tail: u64,
    /// Records dropped since the last LOST record was written.
    pending_lost: u64,
    /// The id written into LOST records.
    lost_id: u64,
}

impl SimRing {
    /// A ring of `size` bytes (a power of two). `lost_id` is the event id
    /// LOST records carry.
    pub fn new(size: usize, lost_id: u64) -> Result<SimRing, PerfError> {
        ring_segments(0, 0, size)?;
        Ok(SimRing {
            data: vec![0; size],
            head: 0,
            tail: 0,
            pending_lost: 0,
            lost_id,
        })
    }

    /// Starts the counters at `pos`, to place records near the wrap point.
    pub fn with_position(mut self, pos: u64) -> SimRing {
        self.head = pos;
        self.tail = pos;
        self
    }

    pub fn head(&self) -> u64 {
        self.head
    }

    pub fn tail(&self) -> u64 {
        self.tail
    }

    fn free(&self) -> usize {
        self.data.len() - (self.head - self.tail) as usize
    }

    fn put(&mut self, bytes: &[u8]) {
        let mask = self.data.len() - 1;
        for (i, &b) in bytes.iter().enumerate() {
            let at = (self.head as usize).wrapping_add(i) & mask;
            self.data[at] = b;
        }
        self.head += bytes.len() as u64;
    }

    /// Writes one record; if the ring is too full, drops it and counts it,
    /// and the next record that fits is preceded by a PERF_RECORD_LOST with
    /// the count, as the kernel does. Returns whether the record was stored.
    pub fn write(&mut self, record: &[u8]) -> bool {
        if self.pending_lost > 0 {
            let mut body = Vec::with_capacity(16);
            body.extend_from_slice(&self.lost_id.to_ne_bytes());
            body.extend_from_slice(&self.pending_lost.to_ne_bytes());
            let lost = build_record(PERF_RECORD_LOST, 0, &body);
            if self.free() < lost.len() + record.len() {
                self.pending_lost += 1;
                return false;
            }
            self.put(&lost);
            self.pending_lost = 0;
        }
        if self.free() < record.len() {
            self.pending_lost += 1;
            return false;
        }
        self.put(record);
        true
    }

    /// Copies everything written and not yet read to the end of `out` and
    /// releases it. Returns the number of bytes.
    pub fn read_into(&mut self, out: &mut Vec<u8>) -> Result<usize, PerfError> {
        let n = copy_from_ring(&self.data, self.tail, self.head, out)?;
        self.tail = self.head;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_and_stop_at_bad_size() {
        let mut buf = build_record(9, 1, &[1, 2, 3]);
        buf.extend(build_record(2, 0, &[0; 16]));
        let recs: Vec<_> = Records::new(&buf).collect();
        assert_eq!(recs.len(), 2);
        assert_eq!(recs[0].unwrap().kind, 9);
        assert_eq!(recs[0].unwrap().bytes.len(), 16);
        assert_eq!(recs[1].unwrap().kind, 2);
        buf.extend([1, 0, 0, 0, 0, 0, 4, 0]);
        let recs: Vec<_> = Records::new(&buf).collect();
        assert_eq!(recs.len(), 3);
        assert_eq!(recs[2], Err(Malformed { at: 40 }));
    }
}
