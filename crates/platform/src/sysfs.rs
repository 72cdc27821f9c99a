//! The small text files of sysfs and procfs, read under a root directory
//! (`/` on a real machine, a fixture in tests). Apart from the system
//! snapshot (`sysinfo`) so that the readers it uses (`hazards`,
//! `granularity`) need not import it back.

use std::fs;
use std::path::Path;

/// A file's text; sysfs and procfs are not promised to be UTF-8, so it is
/// decoded lossily rather than refused.
pub(crate) fn read_text(root: &Path, rel: &str) -> Option<String> {
    fs::read(root.join(rel))
        .ok()
        .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
}

/// A one-value file, trimmed; an empty file counts as absent.
pub(crate) fn read_trimmed(root: &Path, rel: &str) -> Option<String> {
    let text = read_text(root, rel)?;
    let trimmed = text.trim();
    (!trimmed.is_empty()).then(|| trimmed.to_string())
}
