//! File systems (the study's file tests, in the temporary directory):
//!
//! * a 128 KB file that was just written, read whole again (one `pread`)
//!   from the page cache;
//! * 8192 files of 8 KB in 32 directories, written at set-up, each opened,
//!   read whole and closed, from the page cache;
//! * a zero-length file created and deleted, and the same with an `fsync`
//!   of the file and of its directory after the creation (what a program
//!   does that must find its file after a crash).
//!
//! * the same 8192 files read cold: before each iteration, outside the
//!   timing, the files it will read are evicted from the page cache
//!   (`posix_fadvise(POSIX_FADV_DONTNEED)`) and, as root, the kernel's
//!   dentry and inode caches are dropped (`vm.drop_caches = 2`), as after
//!   the study's reboot; only the page cache of these files goes, not the
//!   program's own text. On a tmpfs nothing can be evicted: the benchmark
//!   is skipped there.

use std::cell::RefCell;
use std::fs::{self, File};
use std::io::{Read, Write};
use std::os::fd::AsFd;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::rc::Rc;

use latscope_platform::os_ops::{evict_from_page_cache, is_tmpfs, sync_all_file_systems};

use super::benchmark::{Benchmark, Placement};
use super::scratch::Dir;
use crate::bench::{BenchError, Operation};

/// An error naming what failed; the name is made only on failure (never
/// on the measuring path).
fn os(what: impl Fn() -> String) -> impl Fn(std::io::Error) -> BenchError {
    move |e| BenchError::Os {
        what: what(),
        source: e,
    }
}

/// Reads a cached 128 KB file whole.
struct ReadCached {
    file: File,
    buf: Vec<u8>,
    _dir: Dir,
}

const BIG: usize = 128 << 10;

impl ReadCached {
    fn new() -> Result<ReadCached, BenchError> {
        let dir = Dir::new("read")?;
        let path = dir.path().join("128K");
        let mut f = File::create(&path).map_err(os(|| format!("creating {}", path.display())))?;
        f.write_all(&vec![3u8; BIG])
            .map_err(os(|| format!("writing {}", path.display())))?;
        drop(f);
        let file = File::open(&path).map_err(os(|| format!("opening {}", path.display())))?;
        Ok(ReadCached {
            file,
            buf: vec![0; BIG],
            _dir: dir,
        })
    }
}

impl Operation for ReadCached {
    fn run(&mut self, ops: u64) -> Result<(), BenchError> {
        for _ in 0..ops {
            let n = self
                .file
                .read_at(&mut self.buf, 0)
                .map_err(os(|| "reading the 128 KB file".into()))?;
            if n != BIG {
                return Err(BenchError::Setup(format!("read {n} of {BIG} bytes")));
            }
        }
        Ok(())
    }
}

const SMALL_FILES: usize = 8192;
const SMALL_DIRS: usize = 32;
const SMALL: usize = 8 << 10;
/// Cold iterations of at least 10 ms, so that each reads many files and
/// the eviction before it (outside the timing) is done less often.
const COLD_ITERATION_NS: u64 = 10_000_000;

/// Opens, reads and closes each of 8192 cached 8 KB files in turn.
struct ReadMany {
    files: Rc<SmallFiles>,
    next: usize,
    buf: Vec<u8>,
}

/// The 8192 files, written once and shared by the cached and the cold
/// read (writing them takes from 0.1 s to 8 s on these VMs' disks); removed
/// when the last benchmark holding them is dropped.
struct SmallFiles {
    paths: Vec<PathBuf>,
    dir: Dir,
}

/// Where the benchmarks of one list find the file set once it is written.
type Shared = Rc<RefCell<Option<Rc<SmallFiles>>>>;

fn shared_files(shared: &Shared) -> Result<Rc<SmallFiles>, BenchError> {
    if let Some(f) = shared.borrow().as_ref() {
        return Ok(Rc::clone(f));
    }
    let (dir, paths) = small_files("many")?;
    let f = Rc::new(SmallFiles { paths, dir });
    *shared.borrow_mut() = Some(Rc::clone(&f));
    Ok(f)
}

/// Writes the 8192 files of 8 KB in 32 directories.
fn small_files(name: &str) -> Result<(Dir, Vec<PathBuf>), BenchError> {
    let dir = Dir::new(name)?;
    let data = vec![5u8; SMALL];
    let mut paths = Vec::with_capacity(SMALL_FILES);
    for d in 0..SMALL_DIRS {
        let sub = dir.path().join(format!("d{d:02}"));
        fs::create_dir(&sub).map_err(os(|| format!("creating {}", sub.display())))?;
        for f in 0..SMALL_FILES / SMALL_DIRS {
            let p = sub.join(format!("f{f:03}"));
            fs::write(&p, &data).map_err(os(|| format!("writing {}", p.display())))?;
            paths.push(p);
        }
    }
    Ok((dir, paths))
}

impl ReadMany {
    fn new(shared: &Shared) -> Result<ReadMany, BenchError> {
        Ok(ReadMany {
            files: shared_files(shared)?,
            next: 0,
            buf: vec![0; SMALL],
        })
    }
}

impl Operation for ReadMany {
    fn run(&mut self, ops: u64) -> Result<(), BenchError> {
        for _ in 0..ops {
            let paths = &self.files.paths;
            let p = &paths[self.next];
            self.next = (self.next + 1) % paths.len();
            let mut f = File::open(p).map_err(os(|| format!("opening {}", p.display())))?;
            f.read_exact(&mut self.buf)
                .map_err(os(|| format!("reading {}", p.display())))?;
        }
        Ok(())
    }
}

/// The kernel's knob that drops clean caches (root only).
const DROP_CACHES: &str = "/proc/sys/vm/drop_caches";

/// Reads each of 8192 files of 8 KB cold.
struct ReadCold {
    many: ReadMany,
    /// Whether the dentry and inode caches are dropped too (root).
    drop_slab: bool,
}

impl ReadCold {
    fn new(shared: &Shared) -> Result<ReadCold, BenchError> {
        let many = ReadMany::new(shared)?;
        if is_tmpfs(many.files.dir.path()).unwrap_or(false) {
            return Err(BenchError::Setup(format!(
                "needs a disk-backed temporary directory ({} is on tmpfs: set TMPDIR)",
                many.files.dir.path().display()
            )));
        }
        // Written back, so that eviction can drop every page.
        sync_all_file_systems();
        let drop_slab = fs::OpenOptions::new().write(true).open(DROP_CACHES).is_ok();
        Ok(ReadCold { many, drop_slab })
    }
}

impl Operation for ReadCold {
    fn run(&mut self, ops: u64) -> Result<(), BenchError> {
        self.many.run(ops)
    }

    fn before_iteration(&mut self, ops: u64) -> Result<(), BenchError> {
        let m = &self.many;
        for k in 0..ops as usize {
            let paths = &m.files.paths;
            let p = &paths[(m.next + k) % paths.len()];
            let f = File::open(p).map_err(os(|| format!("opening {}", p.display())))?;
            evict_from_page_cache(f.as_fd()).map_err(os(|| format!("evicting {}", p.display())))?;
        }
        if self.drop_slab {
            fs::write(DROP_CACHES, "2").map_err(os(|| format!("writing {DROP_CACHES}")))?;
        }
        Ok(())
    }
}

/// Creates and deletes a zero-length file, with or without `fsync`.
struct CreateDelete {
    /// The study's 128 names, used in turn.
    names: Vec<PathBuf>,
    dir_handle: File,
    fsync: bool,
    n: usize,
    _dir: Dir,
}

impl CreateDelete {
    fn new(fsync: bool) -> Result<CreateDelete, BenchError> {
        let dir = Dir::new(if fsync { "create-fsync" } else { "create" })?;
        let dir_handle =
            File::open(dir.path()).map_err(os(|| format!("opening {}", dir.path().display())))?;
        let names = (0..128)
            .map(|i| dir.path().join(format!("z{i:03}")))
            .collect();
        Ok(CreateDelete {
            names,
            dir_handle,
            fsync,
            n: 0,
            _dir: dir,
        })
    }
}

impl Operation for CreateDelete {
    fn run(&mut self, ops: u64) -> Result<(), BenchError> {
        for _ in 0..ops {
            let p = &self.names[self.n % self.names.len()];
            self.n += 1;
            let f = File::create(p).map_err(os(|| format!("creating {}", p.display())))?;
            if self.fsync {
                f.sync_all()
                    .map_err(os(|| format!("fsync of {}", p.display())))?;
                self.dir_handle
                    .sync_all()
                    .map_err(os(|| "fsync of the directory".into()))?;
            }
            drop(f);
            fs::remove_file(p).map_err(os(|| format!("deleting {}", p.display())))?;
        }
        Ok(())
    }
}

pub(super) fn benchmarks() -> Vec<Benchmark> {
    let shared: Shared = Rc::new(RefCell::new(None));
    let cold = Rc::clone(&shared);
    vec![
        Benchmark::new(
            "fs",
            "read_128K_cached",
            "one read of a just-written 128 KB file, from the page cache",
            false,
            |_: Placement| Ok(Box::new(ReadCached::new()?)),
        ),
        Benchmark::new(
            "fs",
            "read_8K_files_cached",
            "open + read + close of one of 8192 files of 8 KB in 32 directories, cached",
            false,
            move |_: Placement| Ok(Box::new(ReadMany::new(&shared)?)),
        ),
        Benchmark::new(
            "fs",
            "read_8K_files_cold",
            "open + read + close of one of 8192 files of 8 KB in 32 directories, evicted from the page cache (and, as root, the dentry and inode caches dropped) before each iteration",
            false,
            move |_: Placement| Ok(Box::new(ReadCold::new(&cold)?)),
        )
        .with_pace(COLD_ITERATION_NS, 0),
        Benchmark::new(
            "fs",
            "create_delete",
            "a zero-length file created and deleted",
            false,
            |_: Placement| Ok(Box::new(CreateDelete::new(false)?)),
        ),
        Benchmark::new(
            "fs",
            "create_fsync_delete",
            "a zero-length file created, fsync'd with its directory, and deleted",
            false,
            |_: Placement| Ok(Box::new(CreateDelete::new(true)?)),
        ),
    ]
}
