//! A private directory under the temporary one, for the files a benchmark
//! writes at set-up (and a program it runs); removed with everything in it
//! when dropped.
//!
//! latscope runs as root and `$TMPDIR` is everyone's: the directory is
//! created in one step with a name nobody can guess and mode 0700
//! (`tempfile`), never removed and re-created at a known path, which let
//! another user own it between the two calls.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use tempfile::TempDir;

use crate::bench::BenchError;

pub(super) struct Dir(TempDir);

impl Dir {
    pub(super) fn new(name: &str) -> Result<Dir, BenchError> {
        tempfile::Builder::new()
            .prefix(&format!("latscope-micro-{name}-"))
            // `tempfile` leaves a directory's mode to the umask.
            .permissions(std::fs::Permissions::from_mode(0o700))
            .tempdir()
            .map(Dir)
            .map_err(|e| BenchError::Os {
                what: format!(
                    "creating a private directory for {name} in {}",
                    std::env::temp_dir().display()
                ),
                source: e,
            })
    }

    pub(super) fn path(&self) -> &Path {
        self.0.path()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::os::unix::fs::MetadataExt;

    use super::*;

    #[test]
    fn each_directory_is_new_private_and_removed_when_dropped() {
        let a = Dir::new("fs").unwrap();
        let b = Dir::new("fs").unwrap();
        assert_ne!(a.path(), b.path(), "two at once, two names");
        let meta = std::fs::symlink_metadata(a.path()).unwrap();
        assert!(meta.is_dir());
        assert_eq!(meta.permissions().mode() & 0o777, 0o700);
        // Owned by this process's user.
        assert_eq!(meta.uid(), std::fs::metadata("/proc/self").unwrap().uid());
        // Not at a path another user could have made beforehand.
        let old = std::env::temp_dir().join(format!("latscope-micro-{}-fs", std::process::id()));
        assert_ne!(a.path(), old.as_path());
        let path = a.path().to_path_buf();
        std::fs::write(path.join("f"), b"x").unwrap();
        drop(a);
        assert!(!path.exists());
    }
}
