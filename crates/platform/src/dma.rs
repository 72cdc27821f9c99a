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
    use std::io::Read;

    /// The constraint in force (µs), as the device reports it: a binary
    /// 32-bit value. Opening the device to read adds no constraint of its
    /// own (it asks for the default, the loosest).
    fn current_us() -> std::io::Result<i32> {
        let mut b = [0u8; 4];
        File::open(DmaLatencyGuard::PATH)?.read_exact(&mut b)?;
        Ok(i32::from_ne_bytes(b))
    }

    #[test]
    fn the_constraint_holds_while_the_guard_lives_and_goes_with_it() {
        // 7 µs: a value no other program asks for (latscope holds 0), so
        // whatever the device shows after the drop, it must not be 7.
        const TARGET: i32 = 7;
        let before = match current_us() {
            Ok(v) => v,
            Err(e) => {
                eprintln!("skipped: needs readable {}: {e}", DmaLatencyGuard::PATH);
                return;
            }
        };
        let guard = match DmaLatencyGuard::hold(TARGET) {
            Ok(g) => g,
            Err(e) => {
                eprintln!("skipped: needs writable {}: {e}", DmaLatencyGuard::PATH);
                return;
            }
        };
        assert_eq!(guard.target_us(), TARGET);
        let held = current_us().unwrap_or_else(|e| panic!("{e}"));
        // The device reports the tightest request of all holders.
        assert!(held <= TARGET, "held at {held} µs, asked for {TARGET}");
        if before <= TARGET {
            eprintln!("note: another program holds {before} µs, so the hold itself cannot be seen");
        }
        drop(guard);
        let after = current_us().unwrap_or_else(|e| panic!("{e}"));
        assert_ne!(
            after, TARGET,
            "the request outlived the guard (before: {before} µs)"
        );
        if before > TARGET {
            eprintln!("held {held} µs; before {before} µs, after {after} µs");
        }
    }
}
