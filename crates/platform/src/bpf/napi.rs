//! The names of NAPI instances: timer.bpf.c enters each `napi_struct` its
//! programs time in `napi_names` with its device's name at first sight
//! (`name_napi`), and the histograms carry only the pointer.

use aya::maps::HashMap;

use super::loaded::TraceBpf;

/// `struct napi_name` of the programs.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct NapiName([u8; 16]);

// SAFETY: #[repr(C)] array of bytes: no padding, every bit pattern valid.
unsafe impl aya::Pod for NapiName {}

/// The text of a NUL-terminated 16-byte name.
pub(super) fn name_text(raw: &[u8; 16]) -> String {
    let n = raw.iter().position(|&b| b == 0).unwrap_or(raw.len());
    String::from_utf8_lossy(&raw[..n]).into_owned()
}

impl TraceBpf {
    /// The device name of NAPI instance `napi` (a [`BpfDeferredKind::Napi`]
    /// histogram's source) as the `napi_poll` tracepoint reports it
    /// (`(no_device)` without a device); `None` when the programs have not
    /// named it (their map is bounded) or it cannot be read. One system
    /// call: callers keep what it returns.
    ///
    /// [`BpfDeferredKind::Napi`]: super::BpfDeferredKind::Napi
    pub fn napi_name(&self, napi: u64) -> Option<String> {
        let map = self.ebpf.map("napi_names")?;
        let names: HashMap<_, u64, NapiName> = HashMap::try_from(map).ok()?;
        names.get(&napi, 0).ok().map(|n| name_text(&n.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_stop_at_their_nul_or_fill_all_16_bytes() {
        let mut raw = [0u8; 16];
        raw[..11].copy_from_slice(b"(no_device)");
        assert_eq!(name_text(&raw), "(no_device)");
        assert_eq!(name_text(&[b'a'; 16]), "a".repeat(16));
        assert_eq!(name_text(&[0; 16]), "");
    }
}
