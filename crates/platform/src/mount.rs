//! Mounting tracefs when nobody has, as an RAII guard.
//!
//! The tracer needs the tracefs format files to decode tracepoints. On
//! minimal systems tracefs is often not mounted; root may mount it for the
//! duration of a run. What latscope mounts it unmounts again, so the
//! machine is left as it was found.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::error::PlatformError;

/// A filesystem latscope mounted; detached again on drop.
#[derive(Debug)]
pub struct MountGuard {
    target: PathBuf,
    c_target: CString,
}

impl MountGuard {
    pub fn target(&self) -> &Path {
        &self.target
    }
}

/// Mounts tracefs at `target` (an existing, empty directory such as
/// `/sys/kernel/tracing`). Needs root (CAP_SYS_ADMIN).
pub fn mount_tracefs(target: &Path) -> Result<MountGuard, PlatformError> {
    let c_target = CString::new(target.as_os_str().as_bytes())
        .map_err(|_| PlatformError::Invalid(format!("bad path {}", target.display())))?;
    // SAFETY: all three strings are NUL-terminated and outlive the call;
    // tracefs takes no mount data, so the data pointer may be null.
    let rc = unsafe {
        libc::mount(
            c"nodev".as_ptr(),
            c_target.as_ptr(),
            c"tracefs".as_ptr(),
            0,
            std::ptr::null(),
        )
    };
    if rc != 0 {
        return Err(PlatformError::last_os(format!(
            "cannot mount tracefs on {}",
            target.display()
        )));
    }
    Ok(MountGuard {
        target: target.to_path_buf(),
        c_target,
    })
}

impl Drop for MountGuard {
    fn drop(&mut self) {
        // SAFETY: the path is NUL-terminated and alive; MNT_DETACH lets the
        // unmount complete once open files (perf events hold none) close.
        unsafe {
            libc::umount2(self.c_target.as_ptr(), libc::MNT_DETACH);
        }
    }
}
