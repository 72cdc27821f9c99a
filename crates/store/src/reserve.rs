//! A little disk space held back while a run is written, so that the run's
//! final status fits even when the disk fills up during the run.
//!
//! On a full disk every checkpoint fails, and without room for the last
//! update the stored run would stay `running` (read back as `interrupted`)
//! instead of `failed` with its cause. [`Reserve`] is an unnamed file of
//! [`Reserve::SIZE`] bytes in the store's directory (`O_TMPFILE`, or a file
//! unlinked as soon as it is created), held open while the run goes on.
//! Dropping it gives the space back at once, and because it has no name it
//! never outlives the process, not even a `kill -9`, and two runs on one
//! store never share one.

use std::fs::File;
use std::io::Write;
use std::path::Path;

/// Space held back for the end of a run. Dropping it frees the space.
#[derive(Debug)]
pub(crate) struct Reserve {
    _file: File,
}

impl Reserve {
    /// 128 KiB: the final update of a run (its status, end time and notes)
    /// needs a few WAL frames of 4 KiB; 32 leave a wide margin. It is kept
    /// small so that a disk a run filled stays full for everything else:
    /// the reserve is for the store's last word, not for the rescue file.
    pub(crate) const SIZE: usize = 128 * 1024;

    /// Holds [`Reserve::SIZE`] bytes beside `store`; `None` when the disk
    /// (or the directory's permissions) cannot give them, in which case the
    /// run goes on without a reserve.
    pub(crate) fn take(store: &Path) -> Option<Reserve> {
        let dir = match store.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let mut file = tempfile::tempfile_in(dir).ok()?;
        // Written, not only sized: a sparse file would hold no space.
        let zeros = [0u8; 4096];
        for _ in 0..Self::SIZE / zeros.len() {
            file.write_all(&zeros).ok()?;
        }
        file.flush().ok()?;
        Some(Reserve { _file: file })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn a_reserve_holds_its_bytes_and_leaves_no_name_behind() {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("latscope.db");
        let reserve = Reserve::take(&store).expect("a reserve in a writable directory");
        let held = reserve._file.metadata().unwrap().len();
        assert_eq!(held, Reserve::SIZE as u64);
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert!(names.is_empty(), "the reserve has no name: {names:?}");
        drop(reserve);
    }

    #[test]
    fn no_reserve_where_the_directory_cannot_hold_one() {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("missing").join("latscope.db");
        assert!(Reserve::take(&store).is_none());
    }
}
