//! Files written as root: whole or not at all, never through a symbolic
//! link someone else planted, never in a directory someone else controls.
//!
//! latscope runs as root. A file written by opening its final name (or a
//! predictable temporary one) follows a symbolic link placed there by
//! another user onto any file of the system. Every output is therefore
//! written to a new file of an unguessable name in the target directory
//! (`O_EXCL`, through `tempfile`) and renamed over the final name: a rename
//! replaces a link, it does not follow it, and a reader never sees half a
//! file.

use std::fs::{self, Permissions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::Path;

/// Writes `bytes` to `path` atomically with mode `mode` (see the module).
pub fn write_atomically(path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(".latscope-")
        .suffix(".tmp")
        .permissions(Permissions::from_mode(mode))
        .tempfile_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// Fails now if `path`'s directory cannot take a file later (a new file
/// of an unguessable name is created there and removed): checked before a
/// long measurement whose result goes there.
pub fn check_writable(path: &Path) -> io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    tempfile::NamedTempFile::new_in(dir).map(drop)
}

/// Why a directory is not this user's alone, if it is not: owned by
/// another user (root's own directories excepted, which only root
/// controls), or writable by others, or a symbolic link.
pub fn foreign_control(dir: &Path) -> io::Result<Option<String>> {
    let meta = fs::symlink_metadata(dir)?;
    if meta.file_type().is_symlink() {
        return Ok(Some(format!("{} is a symbolic link", dir.display())));
    }
    if !meta.is_dir() {
        return Ok(Some(format!("{} is not a directory", dir.display())));
    }
    let me = effective_uid()?;
    if meta.uid() != me && meta.uid() != 0 {
        return Ok(Some(format!(
            "{} belongs to user {}, not to this one",
            dir.display(),
            meta.uid()
        )));
    }
    if meta.mode() & 0o022 != 0 {
        return Ok(Some(format!(
            "{} is writable by other users (mode {:o})",
            dir.display(),
            meta.mode() & 0o7777
        )));
    }
    Ok(None)
}

/// The effective user: the owner of `/proc/self`.
pub fn effective_uid() -> io::Result<u32> {
    Ok(fs::metadata("/proc/self")?.uid())
}

/// Why a file that root would act on (a configuration naming commands to
/// run) is under another user's control, if it is: owned by another user
/// than this one or root, or writable by group or others. Links are
/// followed: what counts is the file read.
pub fn foreign_file(path: &Path) -> io::Result<Option<String>> {
    let meta = fs::metadata(path)?;
    let me = effective_uid()?;
    if meta.uid() != me && meta.uid() != 0 {
        return Ok(Some(format!(
            "{} belongs to user {}, not to this one",
            path.display(),
            meta.uid()
        )));
    }
    if meta.mode() & 0o022 != 0 {
        return Ok(Some(format!(
            "{} is writable by other users (mode {:o})",
            path.display(),
            meta.mode() & 0o7777
        )));
    }
    Ok(None)
}

/// Creates `dir` (and its missing parents) with mode 0700 where missing,
/// then checks that no other user controls it ([`foreign_control`]).
pub fn private_dir(dir: &Path) -> io::Result<()> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    match foreign_control(dir)? {
        None => Ok(()),
        Some(why) => Err(io::Error::new(io::ErrorKind::PermissionDenied, why)),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::os::unix::fs::symlink;

    use super::*;

    #[test]
    fn writability_is_checked_in_the_files_directory_and_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        check_writable(&dir.path().join("run.json")).unwrap();
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
        assert!(check_writable(&dir.path().join("missing/run.json")).is_err());
    }

    #[test]
    fn a_link_at_the_name_is_replaced_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        fs::write(&victim, b"keep").unwrap();
        let out = dir.path().join("out.json");
        symlink(&victim, &out).unwrap();
        write_atomically(&out, b"{}", 0o644).unwrap();
        assert_eq!(fs::read(&victim).unwrap(), b"keep");
        let meta = fs::symlink_metadata(&out).unwrap();
        assert!(meta.is_file());
        assert_eq!(meta.mode() & 0o777, 0o644);
        assert_eq!(fs::read(&out).unwrap(), b"{}");
        // Nothing else was left in the directory.
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 2);
    }

    #[test]
    fn a_directory_others_can_write_or_a_link_is_foreign() {
        let dir = tempfile::tempdir().unwrap();
        let own = dir.path().join("own");
        private_dir(&own).unwrap();
        assert_eq!(
            fs::metadata(&own).unwrap().mode() & 0o777,
            0o700,
            "created private"
        );
        let open = dir.path().join("open");
        fs::create_dir(&open).unwrap();
        fs::set_permissions(&open, Permissions::from_mode(0o777)).unwrap();
        assert!(foreign_control(&open)
            .unwrap()
            .unwrap()
            .contains("writable by other users"));
        assert!(private_dir(&open).is_err());
        let link = dir.path().join("link");
        symlink(&own, &link).unwrap();
        assert!(foreign_control(&link)
            .unwrap()
            .unwrap()
            .contains("symbolic link"));
        if fs::metadata("/proc/self").unwrap().uid() == 0 {
            // As root: a directory another user owns is theirs.
            let theirs = dir.path().join("theirs");
            fs::create_dir(&theirs).unwrap();
            std::os::unix::fs::chown(&theirs, Some(65_534), None).unwrap();
            assert!(foreign_control(&theirs)
                .unwrap()
                .unwrap()
                .contains("belongs to user 65534"));
        }
    }
}
