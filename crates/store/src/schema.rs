//! Opening, recognising and migrating a store file.
//!
//! Nothing is written to a file until it is known to be a latscope store (or
//! empty): the checks read the file's header and then query it through a
//! read-only connection, so a wrong path never damages someone's data.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Read;
use std::path::Path;
use std::sync::OnceLock;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, TransactionBehavior};

use crate::error::{classify, StoreError};

/// `PRAGMA cache_size` of a connection that writes: 512 KiB (negative:
/// KiB), not SQLite's default 2 MiB. A writer appends, so its working set
/// is the right edge of each table and index, a few dozen pages. The
/// default cache filled over a traced run's first minutes as the file
/// grew, and with the heap fragmentation its pages brought it was most of
/// the run's growth in resident memory (+2.4 MiB in 4 minutes against
/// +0.5 MiB with a 256 KiB cache, two runs side by side). Checkpoint and
/// fill times did not change with 512 KiB (bench/README.md,
/// "trace-memory.sh"). Readers keep the default.
const WRITER_CACHE_SIZE: i64 = -512;

/// `PRAGMA application_id` of a latscope store: "LATS" in ASCII.
pub const APPLICATION_ID: i32 = 0x4C41_5453;

/// The migrations, in order; version N is `MIGRATIONS[N - 1]`.
pub(crate) const MIGRATIONS: &[(u32, &str, &str)] = &[
    (1, "init", include_str!("../migrations/0001_init.sql")),
    (2, "trace", include_str!("../migrations/0002_trace.sql")),
    (3, "noise", include_str!("../migrations/0003_noise.sql")),
    (
        4,
        "workload_stats",
        include_str!("../migrations/0004_workload_stats.sql"),
    ),
    (5, "udp", include_str!("../migrations/0005_udp.sql")),
    (
        6,
        "timer_stats",
        include_str!("../migrations/0006_timer_stats.sql"),
    ),
    (
        7,
        "typed_settings",
        include_str!("../migrations/0007_typed_settings.sql"),
    ),
    (
        8,
        "metric_snapshots",
        include_str!("../migrations/0008_metric_snapshots.sql"),
    ),
    (9, "micro", include_str!("../migrations/0009_micro.sql")),
    (
        10,
        "monitor",
        include_str!("../migrations/0010_monitor.sql"),
    ),
    (
        11,
        "run_source",
        include_str!("../migrations/0011_run_source.sql"),
    ),
    (
        12,
        "run_uuid",
        include_str!("../migrations/0012_run_uuid.sql"),
    ),
    (
        13,
        "checkpoint_intervals",
        include_str!("../migrations/0013_checkpoint_intervals.sql"),
    ),
    (
        14,
        "compressed_histograms",
        include_str!("../migrations/0014_compressed_histograms.sql"),
    ),
];

/// The schema version this build writes and understands.
pub const SCHEMA_VERSION: u32 = MIGRATIONS.len() as u32;

const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";

#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Create the file if missing; it must be writable.
    Write,
    /// The file must exist already.
    ReadExisting,
}

/// What a database says it is.
struct Identity {
    application_id: i32,
    version: u32,
    objects: i64,
}

impl Identity {
    fn read(conn: &Connection) -> rusqlite::Result<Identity> {
        Ok(Identity {
            application_id: conn.query_row("PRAGMA application_id", [], |r| r.get(0))?,
            version: user_version(conn)?,
            objects: conn.query_row("SELECT count(*) FROM sqlite_schema", [], |r| r.get(0))?,
        })
    }

    /// Whether nothing has been created in the database yet.
    fn is_blank(&self) -> bool {
        self.objects == 0 && self.version == 0
    }

    fn check(&self, path: &Path) -> Result<(), StoreError> {
        if self.application_id != APPLICATION_ID && !self.is_blank() {
            return Err(StoreError::ForeignDatabase {
                path: path.to_path_buf(),
            });
        }
        if self.version > SCHEMA_VERSION {
            return Err(StoreError::NewerSchema {
                path: path.to_path_buf(),
                found: self.version,
                supported: SCHEMA_VERSION,
            });
        }
        Ok(())
    }
}

pub(crate) fn user_version(conn: &Connection) -> rusqlite::Result<u32> {
    conn.query_row("PRAGMA user_version", [], |r| r.get(0))
}

pub(crate) fn open(path: &Path, mode: Mode) -> Result<Connection, StoreError> {
    let existed = inspect_file(path, mode)?;
    if existed {
        // Validate through a read-only connection: closing it can never
        // checkpoint, roll back or otherwise write someone else's database.
        let ro = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|e| classify(path, "opening", e))?;
        ro.busy_timeout(BUSY_TIMEOUT)
            .map_err(|e| classify(path, "opening", e))?;
        let id = Identity::read(&ro).map_err(|e| classify(path, "reading the header", e))?;
        id.check(path)?;
        if mode == Mode::ReadExisting && id.is_blank() {
            return Err(StoreError::NotAStore {
                path: path.to_path_buf(),
                reason: "it is an empty database".to_string(),
            });
        }
        drop(ro);
    }

    let mut flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    if mode == Mode::Write {
        flags |= OpenFlags::SQLITE_OPEN_CREATE;
    }
    let mut conn =
        Connection::open_with_flags(path, flags).map_err(|e| classify(path, "opening", e))?;
    let err = |action| move |e| classify(path, action, e);
    conn.busy_timeout(BUSY_TIMEOUT).map_err(err("opening"))?;
    let read_only = conn
        .is_readonly(rusqlite::DatabaseName::Main)
        .map_err(err("opening"))?;
    if mode == Mode::Write && read_only {
        return Err(StoreError::ReadOnly {
            path: path.to_path_buf(),
        });
    }
    conn.pragma_update(None, "foreign_keys", true)
        .map_err(err("enabling foreign keys"))?;

    // Checked again on this connection: the file may have changed since.
    let id = Identity::read(&conn).map_err(err("reading the header"))?;
    id.check(path)?;
    if id.version < SCHEMA_VERSION && read_only {
        return Err(StoreError::OldSchemaReadOnly {
            path: path.to_path_buf(),
            found: id.version,
            supported: SCHEMA_VERSION,
        });
    }
    if !read_only {
        let mode: String = conn
            .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
            .map_err(err("switching to WAL"))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(StoreError::Open {
                path: path.to_path_buf(),
                reason: format!(
                    "the file system does not support SQLite's WAL mode (got '{mode}'); put the store on a local disk"
                ),
            });
        }
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(err("setting synchronous mode"))?;
        conn.pragma_update(None, "cache_size", WRITER_CACHE_SIZE)
            .map_err(err("setting the cache size"))?;
    }
    migrate(&mut conn, path)?;
    Ok(conn)
}

/// Checks the path before SQLite sees it. Returns whether a non-empty file
/// is there (and so must be validated before anything is written).
fn inspect_file(path: &Path, mode: Mode) -> Result<bool, StoreError> {
    let open_err = |reason: String| StoreError::Open {
        path: path.to_path_buf(),
        reason,
    };
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) => {
            let dir = path.parent().filter(|p| !p.as_os_str().is_empty());
            return match dir {
                Some(dir) if !dir.exists() => Err(open_err(format!(
                    "directory {} does not exist",
                    dir.display()
                ))),
                Some(dir) if !dir.is_dir() => {
                    Err(open_err(format!("{} is not a directory", dir.display())))
                }
                _ if e.kind() != std::io::ErrorKind::NotFound => Err(open_err(e.to_string())),
                _ if mode == Mode::ReadExisting => Err(StoreError::Missing {
                    path: path.to_path_buf(),
                }),
                _ => Ok(false),
            };
        }
    };
    if meta.is_dir() {
        return Err(StoreError::IsDirectory {
            path: path.to_path_buf(),
        });
    }
    if !meta.is_file() {
        return Err(StoreError::NotAStore {
            path: path.to_path_buf(),
            reason: "it is not a regular file".to_string(),
        });
    }
    if meta.len() == 0 {
        if mode == Mode::ReadExisting {
            return Err(StoreError::NotAStore {
                path: path.to_path_buf(),
                reason: "the file is empty".to_string(),
            });
        }
        return Ok(false);
    }
    let mut header = [0u8; 16];
    let mut file = File::open(path).map_err(|e| open_err(e.to_string()))?;
    let complete = file.read_exact(&mut header).is_ok();
    // A SQLite database is at least one 512-byte page.
    if !complete || &header != SQLITE_MAGIC || meta.len() < 512 {
        return Err(StoreError::NotAStore {
            path: path.to_path_buf(),
            reason: "it is not a SQLite database".to_string(),
        });
    }
    Ok(true)
}

/// Brings the schema to [`SCHEMA_VERSION`], one migration per transaction.
/// Each step re-reads the version inside its write transaction, so two
/// processes opening a new store at once do not apply a step twice.
/// The tables latscope's schema defines, each with its columns: the
/// migrations applied to an empty in-memory database, read back from its
/// catalog (once). What `push` and `pull` may name in SQL: a source store's
/// own catalog is not trusted (it may belong to someone else).
pub(crate) fn own_tables() -> &'static BTreeMap<String, Vec<String>> {
    static TABLES: OnceLock<BTreeMap<String, Vec<String>>> = OnceLock::new();
    TABLES.get_or_init(|| catalog_of_migrations().unwrap_or_default())
}

fn catalog_of_migrations() -> rusqlite::Result<BTreeMap<String, Vec<String>>> {
    let conn = Connection::open_in_memory()?;
    for &(_, _, sql) in MIGRATIONS {
        conn.execute_batch(sql)?;
    }
    let names: Vec<String> = conn
        .prepare(
            "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%'",
        )?
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    let mut out = BTreeMap::new();
    for name in names {
        let columns: Vec<String> = conn
            .prepare("SELECT name FROM pragma_table_info(?1)")?
            .query_map([&name], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        out.insert(name, columns);
    }
    Ok(out)
}

fn migrate(conn: &mut Connection, path: &Path) -> Result<(), StoreError> {
    let err = |action| move |e| classify(path, action, e);
    // A store already at this version needs no write transaction: `list`
    // and `show` must not wait behind a run (or anyone) holding the write
    // lock, which WAL lets readers do.
    if user_version(conn).map_err(err("reading the schema version"))? == SCHEMA_VERSION {
        return Ok(());
    }
    for &(version, name, sql) in MIGRATIONS {
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(err("starting a migration"))?;
        let current = user_version(&tx).map_err(err("reading the schema version"))?;
        if current >= version {
            continue;
        }
        tx.execute_batch(sql).map_err(|e| StoreError::Open {
            path: path.to_path_buf(),
            reason: format!("upgrading the schema to version {version} ({name}) failed: {e}"),
        })?;
        tx.pragma_update(None, "application_id", APPLICATION_ID)
            .map_err(err("marking the store"))?;
        tx.pragma_update(None, "user_version", version)
            .map_err(err("recording the schema version"))?;
        tx.commit().map_err(err("committing a migration"))?;
    }
    let final_version = user_version(conn).map_err(err("reading the schema version"))?;
    if final_version > SCHEMA_VERSION {
        return Err(StoreError::NewerSchema {
            path: path.to_path_buf(),
            found: final_version,
            supported: SCHEMA_VERSION,
        });
    }
    Ok(())
}

#[cfg(test)]
pub(crate) fn migration_versions() -> Vec<(u32, &'static str)> {
    MIGRATIONS.iter().map(|&(v, n, _)| (v, n)).collect()
}
