//! What the helper modes share: the argument that selects them, their
//! arguments' parsing, and the program that runs them.

/// The first argument that selects a helper mode.
pub const HELPER_ARG: &str = "__workload";

/// The `i`th argument, parsed, or a one-line complaint.
pub(super) fn arg<T: std::str::FromStr>(
    args: &[String],
    i: usize,
    what: &str,
) -> Result<T, String> {
    let text = args.get(i).ok_or_else(|| format!("missing {what}"))?;
    text.parse().map_err(|_| format!("bad {what} '{text}'"))
}

/// The program to run for helper processes: this binary. If it was replaced
/// on disk while latscope runs (a rebuild), `/proc/self/exe` still names the
/// running image.
pub(crate) fn helper_exe() -> std::path::PathBuf {
    match std::env::current_exe() {
        Ok(p) if p.exists() => p,
        _ => std::path::PathBuf::from("/proc/self/exe"),
    }
}
