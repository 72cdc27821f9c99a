use std::path::{Path, PathBuf};

use latscope_model::RunId;
use rusqlite::ErrorCode;

use crate::db::DbError;

use crate::ids::CellId;

/// Why a store operation failed. Every message is one line a user can act
/// on, and names the store's path where the path is what matters.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot open store {}: {reason}", .path.display())]
    Open { path: PathBuf, reason: String },

    #[error("{} is a directory; give the path of a store file inside it instead", .path.display())]
    IsDirectory { path: PathBuf },

    #[error("no store at {}; record a run first or give the path of an existing store", .path.display())]
    Missing { path: PathBuf },

    #[error("{} is not a latscope store: {reason}; give another path", .path.display())]
    NotAStore { path: PathBuf, reason: String },

    #[error("{} is not a latscope store: it is another program's database; give another store", .path.display())]
    ForeignDatabase { path: PathBuf },

    #[error(
        "store {} has schema version {found}, newer than version {supported} that this latscope understands; upgrade latscope",
        .path.display()
    )]
    NewerSchema {
        path: PathBuf,
        found: u32,
        supported: u32,
    },

    #[error(
        "store {} has the older schema version {found} (current: {supported}) and is read-only here; open it once with write access to upgrade it",
        .path.display()
    )]
    OldSchemaReadOnly {
        path: PathBuf,
        found: u32,
        supported: u32,
    },

    #[error("store {} is read-only; make it writable or give another path", .path.display())]
    ReadOnly { path: PathBuf },

    #[error("store {} stayed locked by another process for 5 s; try again when it is done", .path.display())]
    Busy { path: PathBuf },

    #[error("store {}: the disk is full ({action}); free some space or give a store on another disk", .path.display())]
    Full { path: PathBuf, action: &'static str },

    #[error("store {} is damaged ({what}); restore it from a copy, or give another path", .path.display())]
    Corrupt { path: PathBuf, what: String },

    #[error("store {}: {action} failed: {source}", .path.display())]
    Database {
        path: PathBuf,
        action: &'static str,
        #[source]
        source: DbError,
    },

    #[error("store {}: the connection to the server was lost ({action}): {reason}", .path.display())]
    ConnectionLost {
        path: PathBuf,
        action: &'static str,
        reason: String,
    },

    #[error("cannot store {what} = {value}: it exceeds the store's 63-bit integers")]
    OutOfRange { what: &'static str, value: u64 },

    #[error("cannot store a '{probe}' cell with settings of the '{settings}' probe")]
    MismatchedSettings {
        probe: String,
        settings: &'static str,
    },

    #[error("no run {0} in this store; list the runs to see which exist")]
    NotFound(RunId),

    #[error("this store has no runs yet; record one first")]
    NoRuns,

    #[error("invalid run '{0}': expected a run number, 'latest', HOST:latest or HOST:N")]
    BadRunId(String),

    #[error("run {0} is still being measured: copy it once it has ended")]
    StillRunning(RunId),

    #[error("no run of host '{host}' in this store (its hosts: {known})")]
    UnknownHost { host: String, known: String },

    #[error("run {id} was measured on {of}, not {host}")]
    WrongHost { id: RunId, host: String, of: String },

    #[error("no cell {} in this store", .0 .0)]
    NoSuchCell(CellId),

    #[error("cell {} does not belong to run {run}", .cell.0)]
    CellNotInRun { cell: CellId, run: RunId },

    #[error("run {run} already has a cell with index {index}")]
    DuplicateCell { run: RunId, index: u32 },

    #[error("cannot store episode {seq}: {reason}")]
    InvalidEpisode { seq: u32, reason: String },

    #[error("cannot store the event window of episode {seq} in cell {}: the episode itself is not stored", .cell.0)]
    WindowWithoutEpisode { cell: CellId, seq: u32 },

    #[error("cannot store the noise figures of CPU {cpu}: {reason}")]
    InvalidNoiseStats { cpu: u32, reason: String },

    #[error("cannot store the early wake-ups of CPU {cpu}: {reason}")]
    InvalidTimerStats { cpu: u32, reason: String },

    #[error("cannot store the workload characterization of cell {}: {reason}", .cell.0)]
    InvalidWorkloadStats { cell: CellId, reason: String },
}

/// Turns a database error into the variant a user can act on.
pub(crate) fn classify(path: &Path, action: &'static str, err: impl Into<DbError>) -> StoreError {
    match err.into() {
        DbError::Sqlite(e) => classify_sqlite(path, action, e),
        DbError::Postgres(e) => classify_postgres(path, action, e),
        DbError::LostInTransaction => StoreError::ConnectionLost {
            path: path.to_path_buf(),
            action,
            reason: "it closed inside a transaction, which was rolled back".to_string(),
        },
        e @ (DbError::Timeout { .. } | DbError::Stalled { .. }) => StoreError::ConnectionLost {
            path: path.to_path_buf(),
            action,
            reason: e.to_string(),
        },
        other => StoreError::Database {
            path: path.to_path_buf(),
            action,
            source: other,
        },
    }
}

fn classify_postgres(path: &Path, action: &'static str, err: postgres::Error) -> StoreError {
    use postgres::error::SqlState;
    let path = path.to_path_buf();
    if crate::postgres::is_connection_error(&err) {
        return StoreError::ConnectionLost {
            path,
            action,
            reason: crate::postgres::describe(&err),
        };
    }
    match err.code() {
        Some(c)
            if *c == SqlState::T_R_SERIALIZATION_FAILURE
                || *c == SqlState::T_R_DEADLOCK_DETECTED
                || *c == SqlState::LOCK_NOT_AVAILABLE =>
        {
            StoreError::Busy { path }
        }
        Some(c) if *c == SqlState::DISK_FULL => StoreError::Full { path, action },
        Some(c)
            if *c == SqlState::READ_ONLY_SQL_TRANSACTION
                || *c == SqlState::INSUFFICIENT_PRIVILEGE =>
        {
            StoreError::ReadOnly { path }
        }
        _ => StoreError::Database {
            path,
            action,
            source: DbError::Postgres(err),
        },
    }
}

fn classify_sqlite(path: &Path, action: &'static str, err: rusqlite::Error) -> StoreError {
    let path = path.to_path_buf();
    match err.sqlite_error_code() {
        Some(ErrorCode::DatabaseBusy) | Some(ErrorCode::DatabaseLocked) => {
            StoreError::Busy { path }
        }
        Some(ErrorCode::NotADatabase) => StoreError::NotAStore {
            path,
            reason: "it is not a SQLite database".to_string(),
        },
        Some(ErrorCode::DatabaseCorrupt) => StoreError::Corrupt {
            path,
            what: err.to_string(),
        },
        Some(ErrorCode::ReadOnly) => StoreError::ReadOnly { path },
        Some(ErrorCode::DiskFull) => StoreError::Full { path, action },
        Some(ErrorCode::CannotOpen) => StoreError::Open {
            path,
            reason: "cannot open or create the file (check the directory exists and is writable)"
                .to_string(),
        },
        Some(ErrorCode::PermissionDenied) => StoreError::Open {
            path,
            reason: "permission denied".to_string(),
        },
        _ => StoreError::Database {
            path,
            action,
            source: DbError::Sqlite(err),
        },
    }
}

/// The store's result.
pub(crate) type Result<T, E = StoreError> = std::result::Result<T, E>;

/// A count or a time as SQL's signed integer, or why it does not fit.
pub(crate) fn to_sql(value: u64, what: &'static str) -> Result<i64> {
    i64::try_from(value).map_err(|_| StoreError::OutOfRange { what, value })
}
