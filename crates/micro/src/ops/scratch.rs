//! A private directory under the temporary one
//! (`$TMPDIR/latscope-micro-<pid>-<name>`), for the files a benchmark
//! writes at set-up; removed with everything in it when dropped.

use std::fs;
use std::path::{Path, PathBuf};

use crate::bench::BenchError;

pub(super) struct Dir(PathBuf);

impl Dir {
    pub(super) fn new(name: &str) -> Result<Dir, BenchError> {
        let p = std::env::temp_dir().join(format!("latscope-micro-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&p);
        fs::create_dir_all(&p).map_err(|e| BenchError::Os {
            what: format!("creating {}", p.display()),
            source: e,
        })?;
        Ok(Dir(p))
    }

    pub(super) fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}
