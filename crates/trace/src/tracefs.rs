//! Finding tracefs and reading event descriptions from it.
//!
//! tracefs is where the kernel publishes each tracepoint's id (what
//! `perf_event_open` needs) and record layout (what the decoder needs).
//! Depending on the distribution it is mounted at `/sys/kernel/tracing`,
//! only under debugfs at `/sys/kernel/debug/tracing`, or not at all; as root
//! latscope mounts it itself for the duration of the run rather than give
//! up tracing.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use latscope_platform::{mount_tracefs, MountGuard, PlatformError};

use crate::error::TraceError;
use crate::format::EventFormat;

const TRACEFS: &str = "/sys/kernel/tracing";
const DEBUGFS_TRACING: &str = "/sys/kernel/debug/tracing";

/// A usable tracefs directory (the one holding `events/`).
#[derive(Debug)]
pub struct Tracefs {
    root: PathBuf,
    /// Present when latscope mounted tracefs; unmounts on drop.
    _mount: Option<MountGuard>,
}

impl Tracefs {
    /// Finds tracefs: a tracefs mount listed in `/proc/mounts`, then the two
    /// usual places; failing those, mounts it on `/sys/kernel/tracing`
    /// (which needs root).
    pub fn locate() -> Result<Tracefs, TraceError> {
        let mounted = fs::read_to_string("/proc/mounts")
            .ok()
            .and_then(|m| tracefs_from_mounts(&m));
        let mut denied = None;
        for root in mounted
            .into_iter()
            .chain([PathBuf::from(TRACEFS), PathBuf::from(DEBUGFS_TRACING)])
        {
            match fs::metadata(root.join("events")) {
                Ok(m) if m.is_dir() => return Ok(Tracefs::at(root)),
                Err(e) if e.kind() == io::ErrorKind::PermissionDenied && denied.is_none() => {
                    denied = Some((root, e));
                }
                _ => {}
            }
        }
        // tracefs is there but root-only: a permission problem, not a
        // missing feature.
        if let Some((root, e)) = denied {
            return Err(TraceError::io(
                format!("cannot read {}", root.join("events").display()),
                e,
            ));
        }
        let target = Path::new(TRACEFS);
        if !target.is_dir() {
            return Err(TraceError::NoTracefs(format!(
                "not mounted, and {TRACEFS} does not exist (kernel without CONFIG_TRACING?)"
            )));
        }
        match mount_tracefs(target) {
            Ok(guard) if has_events(target) => Ok(Tracefs {
                root: target.to_path_buf(),
                _mount: Some(guard),
            }),
            Ok(_) => Err(TraceError::NoTracefs(format!(
                "mounted tracefs on {TRACEFS} but it has no events/"
            ))),
            Err(PlatformError::Os { what, source })
                if source.kind() == io::ErrorKind::PermissionDenied =>
            {
                Err(TraceError::io(
                    format!("tracefs is not mounted and {what}"),
                    source,
                ))
            }
            Err(e) => Err(TraceError::NoTracefs(format!(
                "not mounted, and mounting it failed: {e}"
            ))),
        }
    }

    /// A tracefs (or a copy of its `events/` tree) at `root`.
    pub fn at(root: impl Into<PathBuf>) -> Tracefs {
        Tracefs {
            root: root.into(),
            _mount: None,
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Whether `latscope` mounted this tracefs itself.
    pub fn mounted_by_us(&self) -> bool {
        self._mount.is_some()
    }

    fn event_dir(&self, system: &str, name: &str) -> PathBuf {
        self.root.join("events").join(system).join(name)
    }

    /// Whether `system:name` exists on this kernel.
    pub fn has_event(&self, system: &str, name: &str) -> bool {
        self.event_dir(system, name).join("format").is_file()
    }

    /// The text of `events/<system>/<name>/format`.
    pub fn read_format_text(&self, system: &str, name: &str) -> Result<String, TraceError> {
        let path = self.event_dir(system, name).join("format");
        fs::read_to_string(&path)
            .map_err(|e| TraceError::io(format!("cannot read {}", path.display()), e))
    }

    /// The parsed format of `system:name`.
    pub fn read_format(&self, system: &str, name: &str) -> Result<EventFormat, TraceError> {
        let text = self.read_format_text(system, name)?;
        EventFormat::parse(system, &text).map_err(|e| TraceError::Format {
            event: format!("{system}:{name}"),
            reason: e.0,
        })
    }

    /// `events/<system>/<name>/id`.
    pub fn event_id(&self, system: &str, name: &str) -> Result<u64, TraceError> {
        let path = self.event_dir(system, name).join("id");
        let text = fs::read_to_string(&path)
            .map_err(|e| TraceError::io(format!("cannot read {}", path.display()), e))?;
        text.trim().parse().map_err(|_| TraceError::Format {
            event: format!("{system}:{name}"),
            reason: format!("bad id {:?}", text.trim()),
        })
    }

    /// The events of one system, sorted (empty if the system is absent).
    pub fn list_events(&self, system: &str) -> Vec<String> {
        let Ok(dir) = fs::read_dir(self.root.join("events").join(system)) else {
            return Vec::new();
        };
        let mut names: Vec<String> = dir
            .filter_map(Result::ok)
            .filter(|e| e.path().join("format").is_file())
            .filter_map(|e| e.file_name().into_string().ok())
            .collect();
        names.sort();
        names
    }
}

fn has_events(root: &Path) -> bool {
    root.join("events").is_dir()
}

/// The first tracefs mount point in the text of `/proc/mounts`.
pub fn tracefs_from_mounts(mounts: &str) -> Option<PathBuf> {
    mounts.lines().find_map(|line| {
        let mut f = line.split_whitespace();
        let _source = f.next()?;
        let target = f.next()?;
        let fstype = f.next()?;
        (fstype == "tracefs").then(|| PathBuf::from(unescape_mount_path(target)))
    })
}

/// `/proc/mounts` escapes blanks and backslashes as octal (`\040`).
fn unescape_mount_path(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 4 <= b.len() {
            let digits = &b[i + 1..i + 4];
            if digits.iter().all(|d| (b'0'..=b'7').contains(d)) {
                let v = digits
                    .iter()
                    .fold(0u32, |acc, d| acc * 8 + u32::from(d - b'0'));
                if let Ok(v) = u8::try_from(v) {
                    out.push(v);
                    i += 4;
                    continue;
                }
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mounts() {
        let text = "proc /proc proc rw 0 0\nnodev /sys/kernel/tracing tracefs rw,relatime 0 0\n";
        assert_eq!(
            tracefs_from_mounts(text),
            Some(PathBuf::from("/sys/kernel/tracing"))
        );
        assert_eq!(tracefs_from_mounts("proc /proc proc rw 0 0\n"), None);
        assert_eq!(
            tracefs_from_mounts("nodev /a\\040b tracefs rw 0 0"),
            Some(PathBuf::from("/a b"))
        );
        assert_eq!(unescape_mount_path("x\\04"), "x\\04");
    }
}
