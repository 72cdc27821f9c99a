//! Kernel addresses resolved to names, or not.

/// Resolves kernel addresses (stack samples, workqueue functions).
pub trait Symbolize {
    /// (function, module) for a kernel text address.
    fn symbol(&self, addr: u64) -> Option<(String, Option<String>)>;
}

/// Resolves nothing: addresses are printed in hex.
pub struct NoSymbols;

impl Symbolize for NoSymbols {
    fn symbol(&self, _addr: u64) -> Option<(String, Option<String>)> {
        None
    }
}
