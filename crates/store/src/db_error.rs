//! The error of one statement on either engine, before the store says
//! what it means: its own file, so that the common layer (`db.rs`) and the
//! PostgreSQL client and target it dispatches to share it without using
//! each other.

use std::time::Duration;

use postgres::error::SqlState;

/// Why a statement failed, before the store says what it means.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    #[error(transparent)]
    Sqlite(#[from] rusqlite::Error),
    #[error("{}", describe(.0))]
    Postgres(#[from] postgres::Error),
    #[error("column {index}: {reason}")]
    Conversion { index: usize, reason: String },
    #[error("the query returned no rows")]
    NoRows,
    #[error("the connection to the server was lost inside a transaction")]
    LostInTransaction,
    #[error("the server did not answer within {} s", secs(.after))]
    Timeout { after: Duration },
    #[error(
        "the server did not answer {} s ago and is asked again {} s after that",
        secs(.since),
        secs(&STALL_PAUSE)
    )]
    Stalled { since: Duration },
    #[error("cannot start the PostgreSQL client's runtime: {0}")]
    Runtime(std::io::Error),
}

/// A duration in seconds for a message: `5`, `0.5`.
pub(crate) fn secs(d: &Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{s:.0}")
    } else {
        format!("{s:.1}")
    }
}

impl DbError {
    /// Whether a UNIQUE or PRIMARY KEY constraint refused a row.
    pub fn is_unique_violation(&self) -> bool {
        match self {
            DbError::Sqlite(e) => {
                e.sqlite_error_code() == Some(rusqlite::ErrorCode::ConstraintViolation)
            }
            DbError::Postgres(e) => e.code() == Some(&postgres::error::SqlState::UNIQUE_VIOLATION),
            _ => false,
        }
    }

    pub(crate) fn conversion(index: usize, reason: impl Into<String>) -> DbError {
        DbError::Conversion {
            index,
            reason: reason.into(),
        }
    }
}

pub type DbResult<T> = std::result::Result<T, DbError>;

/// After the server left a call or a connect unanswered, the next connect
/// waits this long: meanwhile calls fail at once instead of each waiting
/// for its own deadline, so that a run's checkpoints, its close and its
/// exit on SIGTERM are not held up by a server that stopped answering.
/// A server that refused the connection outright is asked again at once.
pub const STALL_PAUSE: Duration = Duration::from_secs(5);

/// One line for a PostgreSQL error: the server's own message where it sent
/// one, else what went wrong with the connection. Never the password.
pub fn describe(e: &postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        let hint = match db.code() {
            c if *c == SqlState::INVALID_PASSWORD => {
                "; check the password in the URL, PGPASSWORD or the password file"
            }
            c if *c == SqlState::INVALID_CATALOG_NAME => "; create it first (createdb)",
            c if *c == SqlState::INVALID_AUTHORIZATION_SPECIFICATION => {
                "; the server's pg_hba.conf does not let this user in from here"
            }
            _ => "",
        };
        return format!("{}{hint}", db.message());
    }
    if e.is_closed() {
        return "the server closed the connection".to_string();
    }
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        let more = s.to_string();
        if !text.contains(&more) {
            text = format!("{text}: {more}");
        }
        source = s.source();
    }
    text.replace('\n', " ")
}
