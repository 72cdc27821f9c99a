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
//! Not yet: the 8192 files read after the page cache was dropped (a cold
//! read needs the cache dropped between iterations, outside the timing).

use std::fs::{self, File};
use std::io::{Read, Write};
use std::os::unix::fs::FileExt;
use std::path::PathBuf;

use super::{Benchmark, Placement};
use crate::bench::{BenchError, Operation};

fn os(what: String) -> impl Fn(std::io::Error) -> BenchError {
    move |e| BenchError::Os {
        what: what.clone(),
        source: e,
    }
}

/// A private directory under the temporary one, removed on drop.
struct Dir(PathBuf);

impl Dir {
    fn new(name: &str) -> Result<Dir, BenchError> {
        let p = std::env::temp_dir().join(format!("latscope-micro-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&p);
        fs::create_dir_all(&p).map_err(os(format!("creating {}", p.display())))?;
        Ok(Dir(p))
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
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
        let path = dir.0.join("128K");
        let mut f = File::create(&path).map_err(os(format!("creating {}", path.display())))?;
        f.write_all(&vec![3u8; BIG])
            .map_err(os(format!("writing {}", path.display())))?;
        drop(f);
        let file = File::open(&path).map_err(os(format!("opening {}", path.display())))?;
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
                .map_err(os("reading the 128 KB file".into()))?;
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

/// Opens, reads and closes each of 8192 cached 8 KB files in turn.
struct ReadMany {
    paths: Vec<PathBuf>,
    next: usize,
    buf: Vec<u8>,
    _dir: Dir,
}

impl ReadMany {
    fn new() -> Result<ReadMany, BenchError> {
        let dir = Dir::new("many")?;
        let data = vec![5u8; SMALL];
        let mut paths = Vec::with_capacity(SMALL_FILES);
        for d in 0..SMALL_DIRS {
            let sub = dir.0.join(format!("d{d:02}"));
            fs::create_dir(&sub).map_err(os(format!("creating {}", sub.display())))?;
            for f in 0..SMALL_FILES / SMALL_DIRS {
                let p = sub.join(format!("f{f:03}"));
                fs::write(&p, &data).map_err(os(format!("writing {}", p.display())))?;
                paths.push(p);
            }
        }
        Ok(ReadMany {
            paths,
            next: 0,
            buf: vec![0; SMALL],
            _dir: dir,
        })
    }
}

impl Operation for ReadMany {
    fn run(&mut self, ops: u64) -> Result<(), BenchError> {
        for _ in 0..ops {
            let p = &self.paths[self.next];
            self.next = (self.next + 1) % self.paths.len();
            let mut f = File::open(p).map_err(os(format!("opening {}", p.display())))?;
            f.read_exact(&mut self.buf)
                .map_err(os(format!("reading {}", p.display())))?;
        }
        Ok(())
    }
}

/// Creates and deletes a zero-length file, with or without `fsync`.
struct CreateDelete {
    dir: Dir,
    dir_handle: File,
    fsync: bool,
    n: u64,
}

impl CreateDelete {
    fn new(fsync: bool) -> Result<CreateDelete, BenchError> {
        let dir = Dir::new(if fsync { "create-fsync" } else { "create" })?;
        let dir_handle = File::open(&dir.0).map_err(os(format!("opening {}", dir.0.display())))?;
        Ok(CreateDelete {
            dir,
            dir_handle,
            fsync,
            n: 0,
        })
    }
}

impl Operation for CreateDelete {
    fn run(&mut self, ops: u64) -> Result<(), BenchError> {
        for _ in 0..ops {
            // 128 names in turn, as the study's 128 files.
            let p = self.dir.0.join(format!("z{:03}", self.n % 128));
            self.n += 1;
            let f = File::create(&p).map_err(os(format!("creating {}", p.display())))?;
            if self.fsync {
                f.sync_all()
                    .map_err(os(format!("fsync of {}", p.display())))?;
                self.dir_handle
                    .sync_all()
                    .map_err(os("fsync of the directory".into()))?;
            }
            drop(f);
            fs::remove_file(&p).map_err(os(format!("deleting {}", p.display())))?;
        }
        Ok(())
    }
}

pub(super) fn benchmarks() -> Vec<Benchmark> {
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
            |_: Placement| Ok(Box::new(ReadMany::new()?)),
        ),
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
