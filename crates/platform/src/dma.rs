use std::fs::{File, OpenOptions};
use std::io::Write;

use crate::error::PlatformError;

/// Holds `/dev/cpu_dma_latency` at a target while alive.
///
/// The PM QoS interface keeps the request only as long as the file stays
/// open; closing it (when the guard drops, also on unwinding) restores the
/// previous constraint. With 0, the idle governor avoids the deep C-states
/// whose exit latency would otherwise be measured as timer latency.
pub struct DmaLatencyGuard {
    _file: File,
    target_us: i32,
}

impl DmaLatencyGuard {
    pub const PATH: &'static str = "/dev/cpu_dma_latency";

    pub fn hold(target_us: i32) -> Result<DmaLatencyGuard, PlatformError> {
        let mut file = OpenOptions::new()
            .write(true)
            .open(Self::PATH)
            .map_err(|source| PlatformError::Os {
                what: format!("cannot open {}", Self::PATH),
                source,
            })?;
        // The interface takes a binary 32-bit value.
        file.write_all(&target_us.to_ne_bytes())
            .map_err(|source| PlatformError::Os {
                what: format!("cannot write {}", Self::PATH),
                source,
            })?;
        Ok(DmaLatencyGuard {
            _file: file,
            target_us,
        })
    }

    pub fn target_us(&self) -> i32 {
        self.target_us
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_when_available() {
        match DmaLatencyGuard::hold(0) {
            Ok(g) => assert_eq!(g.target_us(), 0),
            Err(e) => eprintln!("skipped: needs writable {}: {e}", DmaLatencyGuard::PATH),
        }
    }
}
