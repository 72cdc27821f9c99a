//! Saved event streams: record now, decode later.
//!
//! A recording holds the raw perf records exactly as they came out of the
//! rings, plus what is needed to decode them anywhere: the format files of
//! the events (as text, so the layout of the recording kernel travels with
//! the data) and the perf id → event map. Decoding a recording therefore
//! goes through the same [`Decoder`] as a live ring, which is what lets the
//! analysis be tested on small fixtures captured on real kernels.
//!
//! File layout (integers of the container little-endian; the records
//! themselves native-endian, which flag bit 0 records as little-endian):
//!
//! ```text
//! "LATSCTRC"  u32 version  u32 flags  u32 header_len  header (JSON)
//! then chunks until end of file: u32 cpu  u32 len  len bytes of records
//! ```
//!
//! A file cut short (a killed run) reads back up to its last whole chunk,
//! with [`Recording::truncated`] set.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::decode::{DecodeStats, Decoder, Schema};
use crate::error::{one_line, TraceError};
use crate::event::Decoded;

pub const MAGIC: &[u8; 8] = b"LATSCTRC";
pub const VERSION: u32 = 1;
const FLAG_LITTLE_ENDIAN: u32 = 1;

/// The JSON header of a recording.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordingHeader {
    pub schema: Schema,
    /// `uname -r` of the recording machine, for the reader's information.
    #[serde(default)]
    pub kernel: Option<String>,
}

/// Writes a recording. Chunks are appended as they are read from the rings.
pub struct RecordingWriter {
    path: PathBuf,
    out: Box<dyn Write + Send>,
    chunks: u64,
    bytes: u64,
}

impl std::fmt::Debug for RecordingWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordingWriter")
            .field("path", &self.path)
            .field("chunks", &self.chunks)
            .field("bytes", &self.bytes)
            .finish()
    }
}

impl RecordingWriter {
    /// Creates (or truncates) `path` and writes the header.
    pub fn create(path: &Path, schema: &Schema) -> Result<RecordingWriter, TraceError> {
        let file = File::create(path)
            .map_err(|e| TraceError::io(format!("cannot create {}", path.display()), e))?;
        RecordingWriter::new(path, Box::new(BufWriter::new(file)), schema)
    }

    /// Writes a recording into any writer; `path` is only used in messages.
    pub fn new(
        path: &Path,
        mut out: Box<dyn Write + Send>,
        schema: &Schema,
    ) -> Result<RecordingWriter, TraceError> {
        let err = |reason: String| TraceError::Recording {
            path: path.to_path_buf(),
            reason,
        };
        let header = RecordingHeader {
            schema: schema.clone(),
            kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease")
                .ok()
                .map(|s| s.trim().to_string()),
        };
        let json = serde_json::to_vec(&header).map_err(|e| err(e.to_string()))?;
        let len = u32::try_from(json.len()).map_err(|_| err("header too large".to_string()))?;
        let flags = if cfg!(target_endian = "little") {
            FLAG_LITTLE_ENDIAN
        } else {
            0
        };
        let mut head = Vec::with_capacity(20 + json.len());
        head.extend_from_slice(MAGIC);
        head.extend_from_slice(&VERSION.to_le_bytes());
        head.extend_from_slice(&flags.to_le_bytes());
        head.extend_from_slice(&len.to_le_bytes());
        head.extend_from_slice(&json);
        out.write_all(&head).map_err(|e| err(e.to_string()))?;
        Ok(RecordingWriter {
            path: path.to_path_buf(),
            out,
            chunks: 0,
            bytes: head.len() as u64,
        })
    }

    /// Appends records read from the ring of `cpu` (whole records only).
    pub fn write_chunk(&mut self, cpu: u32, records: &[u8]) -> Result<(), TraceError> {
        let err = |reason: String| TraceError::Recording {
            path: self.path.clone(),
            reason,
        };
        // A ring read is at most the ring size (a few MiB), far below this.
        let len = u32::try_from(records.len())
            .map_err(|_| err(format!("chunk of {} bytes is too large", records.len())))?;
        let mut head = [0u8; 8];
        head[..4].copy_from_slice(&cpu.to_le_bytes());
        head[4..].copy_from_slice(&len.to_le_bytes());
        self.out
            .write_all(&head)
            .and_then(|()| self.out.write_all(records))
            .map_err(|e| err(e.to_string()))?;
        self.chunks += 1;
        self.bytes += 8 + records.len() as u64;
        Ok(())
    }

    /// Bytes written so far, header included.
    pub fn bytes_written(&self) -> u64 {
        self.bytes
    }

    /// Flushes everything to the file.
    pub fn finish(mut self) -> Result<u64, TraceError> {
        self.out.flush().map_err(|e| TraceError::Recording {
            path: self.path.clone(),
            reason: e.to_string(),
        })?;
        Ok(self.bytes)
    }
}

/// Records read from one CPU's ring in one go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Chunk {
    pub cpu: u32,
    pub bytes: Vec<u8>,
}

/// A recording read back into memory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Recording {
    pub header: RecordingHeader,
    pub chunks: Vec<Chunk>,
    /// The file ended inside a chunk (the writer was killed); the chunks
    /// before it are intact.
    pub truncated: bool,
}

impl Recording {
    pub fn read(path: &Path) -> Result<Recording, TraceError> {
        let bytes = std::fs::read(path)
            .map_err(|e| TraceError::io(format!("cannot read {}", path.display()), e))?;
        Recording::parse(&bytes).map_err(|reason| TraceError::Recording {
            path: path.to_path_buf(),
            reason,
        })
    }

    /// Parses the bytes of a recording file.
    pub fn parse(b: &[u8]) -> Result<Recording, String> {
        let le32 = |at: usize| -> Option<u32> {
            Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
        };
        if b.get(..8) != Some(MAGIC.as_slice()) {
            return Err("not a latscope trace recording (bad magic)".to_string());
        }
        let version = le32(8).ok_or("truncated header")?;
        if version != VERSION {
            return Err(format!(
                "version {version} is not supported (expected {VERSION})"
            ));
        }
        let flags = le32(12).ok_or("truncated header")?;
        let little = flags & FLAG_LITTLE_ENDIAN != 0;
        if little != cfg!(target_endian = "little") {
            return Err("recorded on a machine of the other byte order".to_string());
        }
        let hlen = le32(16).ok_or("truncated header")? as usize;
        let json = b.get(20..20 + hlen).ok_or("truncated header")?;
        let header: RecordingHeader = serde_json::from_slice(json)
            .map_err(|e| format!("bad header: {}", one_line(&e.to_string())))?;
        let mut pos = 20 + hlen;
        let mut chunks = Vec::new();
        let mut truncated = false;
        while pos < b.len() {
            let (Some(cpu), Some(len)) = (le32(pos), le32(pos + 4)) else {
                truncated = true;
                break;
            };
            let start = pos + 8;
            let Some(bytes) = start
                .checked_add(len as usize)
                .and_then(|end| b.get(start..end))
            else {
                truncated = true;
                break;
            };
            chunks.push(Chunk {
                cpu,
                bytes: bytes.to_vec(),
            });
            pos = start + len as usize;
        }
        Ok(Recording {
            header,
            chunks,
            truncated,
        })
    }

    pub fn schema(&self) -> &Schema {
        &self.header.schema
    }

    /// A decoder for this recording's events.
    pub fn decoder(&self) -> Result<Decoder, TraceError> {
        Decoder::new(&self.header.schema)
    }

    /// Decodes every chunk in file order (per-CPU order within a chunk).
    pub fn decode_with(&self, decoder: &mut Decoder, sink: &mut dyn FnMut(Decoded)) -> DecodeStats {
        let mut total = DecodeStats::default();
        for c in &self.chunks {
            total.add(&decoder.decode(c.cpu, &c.bytes, sink));
        }
        total
    }

    /// Decodes everything with a fresh decoder, which is returned for its
    /// names and stats.
    pub fn decode(&self, sink: &mut dyn FnMut(Decoded)) -> Result<Decoder, TraceError> {
        let mut d = self.decoder()?;
        self.decode_with(&mut d, sink);
        Ok(d)
    }
}
