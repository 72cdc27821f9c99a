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
//!
//! What a rename must not replace is a device or a pipe a user names on
//! purpose (`--json /dev/null`, `--output /dev/stdout`): renamed over, root
//! would turn the system's `/dev/null` into a regular file (this happened
//! on the development VM on 2026-11-28 and broke PostgreSQL's initdb). So
//! a character device, and a pipe in a directory no other user controls,
//! are written into. A link in such a directory (no other user can have
//! planted it) is followed: into the device or pipe it leads to
//! (`/dev/stdout`), or to the file it names, written atomically there and
//! the link kept. A link in a directory others control is replaced, as is
//! a regular file; a block device or a socket is refused.

use std::fs::{self, Permissions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// How a write to a path is made (see the module).
#[derive(Debug, PartialEq, Eq)]
enum Target {
    /// A new file renamed over this path: the one given, or the file its
    /// link names.
    Replace(PathBuf),
    /// Into the device or pipe at the path (or behind its link).
    Into,
}

fn dir_of(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// Whether no other user controls the directory holding `path` (its links
/// resolved: `/dev/fd` is a link to `/proc/self/fd`).
fn own_dir(path: &Path) -> io::Result<bool> {
    let dir = fs::canonicalize(dir_of(path))?;
    Ok(foreign_control(&dir)?.is_none())
}

fn target(path: &Path) -> io::Result<Target> {
    use std::os::unix::fs::FileTypeExt;
    let replace = || Ok(Target::Replace(path.to_path_buf()));
    let here = match fs::symlink_metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return replace(),
        r => r?.file_type(),
    };
    if here.is_file() || here.is_dir() {
        return replace();
    }
    let refuse = |what: &str| {
        Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} is {what}, not a file to write", path.display()),
        ))
    };
    if here.is_block_device() {
        return refuse("a block device");
    }
    if here.is_socket() {
        return refuse("a socket");
    }
    // Only root makes device nodes: one named here is written into.
    if here.is_char_device() {
        return Ok(Target::Into);
    }
    // A pipe or a link: another user's, in a directory they control, is
    // replaced, never opened or followed.
    if !own_dir(path)? {
        return replace();
    }
    if here.is_fifo() {
        return Ok(Target::Into);
    }
    // A link of this user's (or root's): followed.
    match fs::metadata(path).map(|m| m.file_type()) {
        Ok(t) if t.is_char_device() || t.is_fifo() => Ok(Target::Into),
        Ok(t) if t.is_file() => Ok(Target::Replace(fs::canonicalize(path)?)),
        Ok(_) => refuse("a link to neither a file, a device nor a pipe"),
        // Dangling: nothing to follow it to; the link is replaced.
        Err(_) => replace(),
    }
}

/// Writes `bytes` to `path` atomically with mode `mode`; a device or a
/// pipe is written into (see the module).
pub fn write_atomically(path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    let path = match target(path)? {
        Target::Into => {
            let mut f = fs::OpenOptions::new().write(true).open(path)?;
            return f.write_all(bytes).and_then(|()| f.flush());
        }
        Target::Replace(p) => p,
    };
    let path = path.as_path();
    let dir = dir_of(path);
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
    let path = match target(path)? {
        Target::Replace(p) => p,
        Target::Into => return check_into(path),
    };
    tempfile::NamedTempFile::new_in(dir_of(&path)).map(drop)
}

/// Whether the device or pipe at `path` opens for writing.
fn check_into(path: &Path) -> io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    // Without blocking: a pipe nobody reads yet may have a reader by the
    // time the result is written.
    match fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
    {
        Err(e) if e.raw_os_error() == Some(libc::ENXIO) => Ok(()),
        r => r.map(drop),
    }
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
    fn a_link_in_a_directory_others_can_write_is_replaced_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        fs::set_permissions(dir.path(), Permissions::from_mode(0o1777)).unwrap();
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
    fn a_link_of_ours_is_followed_to_its_file_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        fs::create_dir(&data).unwrap();
        let file = data.join("run.json");
        fs::write(&file, b"old").unwrap();
        let link = dir.path().join("latest.json");
        symlink(&file, &link).unwrap();
        check_writable(&link).unwrap();
        write_atomically(&link, b"{}", 0o644).unwrap();
        assert!(fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(fs::read(&file).unwrap(), b"{}");
        assert_eq!(
            fs::read_dir(&data).unwrap().count(),
            1,
            "no temporary file left"
        );
    }

    #[test]
    fn dev_null_and_links_to_it_are_written_into_not_replaced() {
        use std::os::unix::fs::FileTypeExt;
        let null = Path::new("/dev/null");
        let is_null = || fs::metadata(null).unwrap().file_type().is_char_device();
        check_writable(null).unwrap();
        write_atomically(null, b"{}", 0o644).unwrap();
        assert!(is_null(), "/dev/null is still the device");
        // A link in a directory of this user's: followed to the device.
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out.json");
        symlink(null, &out).unwrap();
        write_atomically(&out, b"{}", 0o644).unwrap();
        assert!(fs::symlink_metadata(&out).unwrap().file_type().is_symlink());
        // A link in a directory others can write: replaced, not followed.
        let open = dir.path().join("open");
        fs::create_dir(&open).unwrap();
        fs::set_permissions(&open, Permissions::from_mode(0o777)).unwrap();
        let planted = open.join("out.json");
        symlink(null, &planted).unwrap();
        write_atomically(&planted, b"{}", 0o644).unwrap();
        assert!(fs::symlink_metadata(&planted).unwrap().is_file());
        assert!(is_null());
        // Standard output through its link in /dev, where there is one.
        if Path::new("/dev/stdout").exists() {
            write_atomically(Path::new("/dev/stdout"), b"", 0o644).unwrap();
            assert!(fs::symlink_metadata("/dev/stdout")
                .unwrap()
                .file_type()
                .is_symlink());
        }
    }

    #[test]
    fn a_pipe_of_ours_is_written_into_and_a_socket_refused() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.unwrap().success(), "mkfifo");
        check_writable(&fifo).unwrap();
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || fs::read(fifo).unwrap())
        };
        write_atomically(&fifo, b"{}", 0o644).unwrap();
        assert_eq!(reader.join().unwrap(), b"{}");
        let sock = dir.path().join("sock");
        let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
        let e = write_atomically(&sock, b"{}", 0o644).unwrap_err();
        assert!(e.to_string().contains("is a socket"), "{e}");
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
