//! One SQL interface over the two backends: SQLite (rusqlite, the embedded
//! default) and PostgreSQL (the `postgres` crate, for a shared fleet store).
//!
//! The store's modules write their SQL once, in the dialect both engines
//! accept (`?N` placeholders, `INSERT … ON CONFLICT … DO UPDATE`, plain
//! aggregates), and run it through [`Db`]. What differs is kept here:
//!
//! - placeholders are rewritten to PostgreSQL's `$N` (see [`pg_placeholders`]);
//! - values cross as [`Param`] (borrowed, in) and [`Value`] (owned, out), so
//!   an `i64` binds to any integer, float or text column on PostgreSQL, whose
//!   protocol is strictly typed, as it does on SQLite;
//! - a statement is prepared once per connection and cached;
//! - a transaction is `BEGIN`/`COMMIT` on the connection, rolled back when
//!   its guard is dropped uncommitted;
//! - a PostgreSQL connection that the server closed (a restart, a network
//!   cut) is opened again before the next statement outside a transaction,
//!   so a run's later checkpoints reach the server once it is back.
//!
//! Rows are read whole before a caller's closure sees them: no statement is
//! open while the caller runs, so closures may query again, and a
//! PostgreSQL client (which needs `&mut`) can sit behind a `RefCell` while
//! the store's read methods keep `&self`.

use std::cell::RefCell;
use std::collections::HashMap;
use std::time::{Duration, Instant};

use postgres::types::{IsNull, ToSql, Type};
use rusqlite::types::{ToSqlOutput, ValueRef};

use crate::pg_client::PgClient;
use crate::postgres::PgTarget;

/// Which SQL engine a store runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    Sqlite,
    Postgres,
}

pub use crate::db_error::{DbError, DbResult};

/// A value bound to a statement.
#[derive(Clone, Copy, Debug)]
pub enum Param<'a> {
    Null,
    Int(i64),
    Real(f64),
    Text(&'a str),
    Blob(&'a [u8]),
}

/// A value read from a row.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Null,
    Int(i64),
    Real(f64),
    Text(String),
    Blob(Vec<u8>),
}

impl Value {
    pub fn as_param(&self) -> Param<'_> {
        match self {
            Value::Null => Param::Null,
            Value::Int(v) => Param::Int(*v),
            Value::Real(v) => Param::Real(*v),
            Value::Text(s) => Param::Text(s),
            Value::Blob(b) => Param::Blob(b),
        }
    }
}

impl From<i64> for Value {
    fn from(v: i64) -> Value {
        Value::Int(v)
    }
}
impl From<String> for Value {
    fn from(v: String) -> Value {
        Value::Text(v)
    }
}

/// What can be bound to a placeholder.
pub trait ToParam {
    fn to_param(&self) -> Param<'_>;
}

macro_rules! int_param {
    ($($t:ty),*) => {$(
        impl ToParam for $t {
            fn to_param(&self) -> Param<'_> {
                Param::Int(i64::from(*self))
            }
        }
    )*};
}
int_param!(i64, i32, u32, u16, u8, i16, i8, bool);

impl ToParam for f64 {
    fn to_param(&self) -> Param<'_> {
        Param::Real(*self)
    }
}
impl ToParam for str {
    fn to_param(&self) -> Param<'_> {
        Param::Text(self)
    }
}
impl ToParam for String {
    fn to_param(&self) -> Param<'_> {
        Param::Text(self)
    }
}
impl ToParam for [u8] {
    fn to_param(&self) -> Param<'_> {
        Param::Blob(self)
    }
}
impl ToParam for Vec<u8> {
    fn to_param(&self) -> Param<'_> {
        Param::Blob(self)
    }
}
impl ToParam for Value {
    fn to_param(&self) -> Param<'_> {
        self.as_param()
    }
}
impl ToParam for Param<'_> {
    fn to_param(&self) -> Param<'_> {
        *self
    }
}
impl<T: ToParam + ?Sized> ToParam for &T {
    fn to_param(&self) -> Param<'_> {
        (**self).to_param()
    }
}
impl<T: ToParam> ToParam for Option<T> {
    fn to_param(&self) -> Param<'_> {
        match self {
            Some(v) => v.to_param(),
            None => Param::Null,
        }
    }
}

/// A statement's parameters: `params![a, b]`, an array `[a, b]` of one
/// type, `[]`, or a slice of values.
pub trait Params {
    fn params(&self) -> Vec<Param<'_>>;
}

impl Params for &[&dyn ToParam] {
    fn params(&self) -> Vec<Param<'_>> {
        self.iter().map(|p| p.to_param()).collect()
    }
}
impl Params for [&dyn ToParam; 0] {
    fn params(&self) -> Vec<Param<'_>> {
        Vec::new()
    }
}
impl Params for &[Value] {
    fn params(&self) -> Vec<Param<'_>> {
        self.iter().map(Value::as_param).collect()
    }
}
impl Params for Vec<Value> {
    fn params(&self) -> Vec<Param<'_>> {
        self.iter().map(Value::as_param).collect()
    }
}
impl Params for Vec<Param<'_>> {
    fn params(&self) -> Vec<Param<'_>> {
        self.clone()
    }
}
macro_rules! array_params {
    ($($n:literal),*) => {$(
        impl<T: ToParam> Params for [T; $n] {
            fn params(&self) -> Vec<Param<'_>> {
                self.iter().map(|p| p.to_param()).collect()
            }
        }
    )*};
}
array_params!(1, 2, 3, 4, 5, 6, 7, 8);

/// `params![a, b, c]`: parameters of mixed types.
macro_rules! params {
    ($($x:expr),* $(,)?) => {
        &[$(&$x as &dyn $crate::db::ToParam),*] as &[&dyn $crate::db::ToParam]
    };
}
pub(crate) use params;

/// What can be read from a column.
pub trait FromValue: Sized {
    fn from_value(value: &Value, index: usize) -> DbResult<Self>;
}

fn int_of(value: &Value, index: usize) -> DbResult<i64> {
    match value {
        Value::Int(v) => Ok(*v),
        Value::Null => Err(DbError::conversion(
            index,
            "NULL where a number was expected",
        )),
        other => Err(DbError::conversion(
            index,
            format!("{} where an integer was expected", kind(other)),
        )),
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "NULL",
        Value::Int(_) => "an integer",
        Value::Real(_) => "a real number",
        Value::Text(_) => "text",
        Value::Blob(_) => "a blob",
    }
}

macro_rules! int_from {
    ($($t:ty),*) => {$(
        impl FromValue for $t {
            fn from_value(value: &Value, index: usize) -> DbResult<Self> {
                let v = int_of(value, index)?;
                <$t>::try_from(v).map_err(|_| {
                    DbError::conversion(index, format!("{v} is out of range for {}", stringify!($t)))
                })
            }
        }
    )*};
}
int_from!(i64, i32, u32, u64, u16, u8, usize, i16);

impl FromValue for bool {
    fn from_value(value: &Value, index: usize) -> DbResult<Self> {
        Ok(int_of(value, index)? != 0)
    }
}
impl FromValue for f64 {
    fn from_value(value: &Value, index: usize) -> DbResult<Self> {
        match value {
            Value::Real(v) => Ok(*v),
            Value::Int(v) => Ok(*v as f64),
            other => Err(DbError::conversion(
                index,
                format!("{} where a number was expected", kind(other)),
            )),
        }
    }
}
impl FromValue for String {
    fn from_value(value: &Value, index: usize) -> DbResult<Self> {
        match value {
            Value::Text(s) => Ok(s.clone()),
            other => Err(DbError::conversion(
                index,
                format!("{} where text was expected", kind(other)),
            )),
        }
    }
}
impl FromValue for Vec<u8> {
    fn from_value(value: &Value, index: usize) -> DbResult<Self> {
        match value {
            Value::Blob(b) => Ok(b.clone()),
            Value::Text(s) => Ok(s.as_bytes().to_vec()),
            other => Err(DbError::conversion(
                index,
                format!("{} where a blob was expected", kind(other)),
            )),
        }
    }
}
impl FromValue for Value {
    fn from_value(value: &Value, _index: usize) -> DbResult<Self> {
        Ok(value.clone())
    }
}
impl<T: FromValue> FromValue for Option<T> {
    fn from_value(value: &Value, index: usize) -> DbResult<Self> {
        match value {
            Value::Null => Ok(None),
            v => T::from_value(v, index).map(Some),
        }
    }
}

/// One row of a result, read whole.
#[derive(Debug)]
pub struct Row {
    values: Vec<Value>,
}

impl Row {
    pub fn get<T: FromValue>(&self, index: usize) -> DbResult<T> {
        let value = self
            .values
            .get(index)
            .ok_or_else(|| DbError::conversion(index, "no such column"))?;
        T::from_value(value, index)
    }
}

/// `.optional()` on a single-row query: no row is `None`, not an error.
pub trait OptionalExt<T> {
    fn optional(self) -> DbResult<Option<T>>;
}

impl<T> OptionalExt<T> for DbResult<T> {
    fn optional(self) -> DbResult<Option<T>> {
        match self {
            Ok(v) => Ok(Some(v)),
            Err(DbError::NoRows) => Ok(None),
            Err(DbError::Sqlite(rusqlite::Error::QueryReturnedNoRows)) => Ok(None),
            Err(e) => Err(e),
        }
    }
}

/// An open connection to either backend.
pub struct Db {
    inner: Inner,
}

enum Inner {
    Sqlite(rusqlite::Connection),
    Postgres(Box<RefCell<PgConn>>),
}

/// A PostgreSQL client with its prepared statements, and what it needs to
/// connect again.
struct PgConn {
    client: PgClient,
    target: PgTarget,
    statements: HashMap<String, postgres::Statement>,
    in_transaction: bool,
    reconnects: u64,
    /// When the connection was last used: one idle for longer is checked
    /// before its next statement.
    last_used: Instant,
    /// When a connect passed its timeout (the server did not answer).
    stalled_at: Option<Instant>,
}

/// A connection idle this long is checked (one round trip) before it is
/// used again outside a transaction: a server restarted meanwhile closed
/// it, and the statement would be lost with it.
const IDLE_CHECK: Duration = Duration::from_secs(1);

pub use crate::db_error::STALL_PAUSE;

impl PgConn {
    /// The client, connected again first if the server closed it outside a
    /// transaction.
    fn client(&mut self) -> DbResult<&mut PgClient> {
        if !self.in_transaction
            && !self.client.is_closed()
            && self.last_used.elapsed() > IDLE_CHECK
            && self.client.is_valid(IDLE_CHECK * 2).is_err()
        {
            self.reopen()?;
        }
        self.last_used = Instant::now();
        if self.client.is_closed() {
            if self.in_transaction {
                return Err(DbError::LostInTransaction);
            }
            self.reopen()?;
        }
        Ok(&mut self.client)
    }

    fn reopen(&mut self) -> DbResult<()> {
        let stalled = [self.stalled_at, self.client.timed_out_at()]
            .into_iter()
            .flatten()
            .max();
        if let Some(since) = stalled.map(|t| t.elapsed()) {
            if since < STALL_PAUSE {
                return Err(DbError::Stalled { since });
            }
        }
        let mut client = match self.target.connect() {
            Ok(c) => c,
            Err(e) => {
                if matches!(e, DbError::Timeout { .. }) {
                    self.stalled_at = Some(Instant::now());
                }
                return Err(e);
            }
        };
        client.set_deadline(self.client.deadline());
        self.client = client;
        self.stalled_at = None;
        self.statements.clear();
        self.reconnects += 1;
        Ok(())
    }

    /// The prepared statement, on the connection the next call will use
    /// (checked and, if need be, opened again first).
    fn statement(&mut self, sql: &str) -> DbResult<postgres::Statement> {
        self.client()?;
        if let Some(s) = self.statements.get(sql) {
            return Ok(s.clone());
        }
        let translated = pg_placeholders(sql);
        let statement = self.client()?.prepare(&translated)?;
        self.statements.insert(sql.to_string(), statement.clone());
        Ok(statement)
    }
}

impl Db {
    pub fn sqlite(conn: rusqlite::Connection) -> Db {
        Db {
            inner: Inner::Sqlite(conn),
        }
    }

    pub fn postgres(client: PgClient, target: PgTarget) -> Db {
        Db {
            inner: Inner::Postgres(Box::new(RefCell::new(PgConn {
                client,
                target,
                statements: HashMap::new(),
                in_transaction: false,
                reconnects: 0,
                last_used: Instant::now(),
                stalled_at: None,
            }))),
        }
    }

    /// Sets how long each later PostgreSQL call may take (see
    /// [`crate::postgres`]); returns the previous deadline. Nothing on
    /// SQLite.
    pub fn set_deadline(&self, deadline: Duration) -> Duration {
        match &self.inner {
            Inner::Sqlite(_) => deadline,
            Inner::Postgres(pg) => {
                let mut pg = pg.borrow_mut();
                let old = pg.client.deadline();
                pg.client.set_deadline(deadline);
                old
            }
        }
    }

    pub fn dialect(&self) -> Dialect {
        match self.inner {
            Inner::Sqlite(_) => Dialect::Sqlite,
            Inner::Postgres(_) => Dialect::Postgres,
        }
    }

    /// The SQLite connection, for what only SQLite has (pragmas, file
    /// checks); `None` on PostgreSQL.
    pub fn sqlite_conn(&self) -> Option<&rusqlite::Connection> {
        match &self.inner {
            Inner::Sqlite(c) => Some(c),
            Inner::Postgres(_) => None,
        }
    }

    /// How many times a PostgreSQL connection was opened again after the
    /// server closed it (0 on SQLite).
    pub fn reconnects(&self) -> u64 {
        match &self.inner {
            Inner::Sqlite(_) => 0,
            Inner::Postgres(pg) => pg.borrow().reconnects,
        }
    }

    /// Runs one statement; returns the number of rows it changed.
    pub fn execute<P: Params>(&self, sql: &str, params: P) -> DbResult<usize> {
        let values = params.params();
        match &self.inner {
            Inner::Sqlite(conn) => {
                let mut stmt = conn.prepare_cached(sql)?;
                Ok(stmt.execute(rusqlite::params_from_iter(values.iter()))?)
            }
            Inner::Postgres(pg) => {
                let mut pg = pg.borrow_mut();
                let statement = pg.statement(sql)?;
                let refs = pg_refs(&values);
                let n = pg.client()?.execute(&statement, &refs)?;
                Ok(usize::try_from(n).unwrap_or(usize::MAX))
            }
        }
    }

    /// Inserts rows of `columns` values each (`values` row after row) with
    /// multi-row statements `HEAD VALUES (…), (…) TAIL`: one round trip
    /// for up to [`MAX_PARAMS`] values instead of one per row. `HEAD` is
    /// `INSERT INTO t (a, b)`, `TAIL` empty or an `ON CONFLICT` clause.
    pub fn insert_rows(
        &self,
        head: &str,
        tail: &str,
        columns: usize,
        values: &[Value],
    ) -> DbResult<usize> {
        let columns = columns.max(1);
        let per = (MAX_PARAMS / columns).max(1) * columns;
        let mut changed = 0;
        for chunk in values.chunks(per) {
            changed += self.execute(&multi_row_sql(head, tail, columns, chunk.len()), chunk)?;
        }
        Ok(changed)
    }

    /// Runs several statements without parameters (a migration).
    pub fn execute_batch(&self, sql: &str) -> DbResult<()> {
        match &self.inner {
            Inner::Sqlite(conn) => Ok(conn.execute_batch(sql)?),
            Inner::Postgres(pg) => Ok(pg.borrow_mut().client()?.batch_execute(sql)?),
        }
    }

    /// Every row of a query.
    pub fn rows<P: Params>(&self, sql: &str, params: P) -> DbResult<Vec<Row>> {
        let values = params.params();
        match &self.inner {
            Inner::Sqlite(conn) => {
                let mut stmt = conn.prepare_cached(sql)?;
                let columns = stmt.column_count();
                let mut rows = stmt.query(rusqlite::params_from_iter(values.iter()))?;
                let mut out = Vec::new();
                while let Some(row) = rows.next()? {
                    let mut values = Vec::with_capacity(columns);
                    for i in 0..columns {
                        values.push(sqlite_value(row.get_ref(i)?, i)?);
                    }
                    out.push(Row { values });
                }
                Ok(out)
            }
            Inner::Postgres(pg) => {
                let mut pg = pg.borrow_mut();
                let refs = pg_refs(&values);
                let statement = pg.statement(sql)?;
                let rows = pg.client()?.query(&statement, &refs)?;
                rows.iter()
                    .map(|row| {
                        let values = (0..row.len())
                            .map(|i| {
                                row.try_get::<_, PgValue>(i)
                                    .map(|v| v.0)
                                    .map_err(DbError::from)
                            })
                            .collect::<DbResult<Vec<_>>>()?;
                        Ok(Row { values })
                    })
                    .collect()
            }
        }
    }

    /// Every row of a query, each turned into a `T` by `f`.
    pub fn query_map<T, P: Params>(
        &self,
        sql: &str,
        params: P,
        mut f: impl FnMut(&Row) -> DbResult<T>,
    ) -> DbResult<Vec<T>> {
        self.rows(sql, params)?.iter().map(&mut f).collect()
    }

    /// The first row of a query, turned into a `T` by `f`;
    /// [`DbError::NoRows`] when there is none.
    pub fn query_row<T, P: Params>(
        &self,
        sql: &str,
        params: P,
        f: impl FnOnce(&Row) -> DbResult<T>,
    ) -> DbResult<T> {
        let rows = self.rows(sql, params)?;
        match rows.first() {
            Some(row) => f(row),
            None => Err(DbError::NoRows),
        }
    }

    /// Runs an `INSERT` into a table whose key is an `id` column the store
    /// numbers, and returns the new row's id.
    pub fn insert_id<P: Params>(&self, sql: &str, params: P) -> DbResult<i64> {
        match &self.inner {
            Inner::Sqlite(conn) => {
                self.execute(sql, params)?;
                Ok(conn.last_insert_rowid())
            }
            Inner::Postgres(_) => {
                let sql = format!("{sql} RETURNING id");
                self.query_row(&sql, params, |r| r.get(0))
            }
        }
    }

    /// A statement to run several times (prepared once per connection
    /// either way: the connection caches every statement it has seen).
    pub fn prepare_cached<'a>(&'a self, sql: &'a str) -> DbResult<Stmt<'a>> {
        Ok(Stmt { db: self, sql })
    }

    /// The same as [`Db::prepare_cached`].
    pub fn prepare<'a>(&'a self, sql: &'a str) -> DbResult<Stmt<'a>> {
        self.prepare_cached(sql)
    }

    /// Starts a transaction. On SQLite it takes the write lock at once
    /// (`BEGIN IMMEDIATE`) so that it never fails half-way for a lock.
    pub fn begin(&self) -> DbResult<Tx<'_>> {
        match &self.inner {
            Inner::Sqlite(conn) => conn.execute_batch("BEGIN IMMEDIATE")?,
            Inner::Postgres(pg) => {
                let mut pg = pg.borrow_mut();
                // A connection the server closed since the last statement
                // (a restart) is only found out by using it: BEGIN is the
                // first statement of every write, and safe to send again
                // on a new connection.
                if let Err(e) = pg.client()?.batch_execute("BEGIN") {
                    if !pg.client.is_closed() {
                        return Err(e);
                    }
                    pg.client()?.batch_execute("BEGIN")?;
                }
                pg.in_transaction = true;
            }
        }
        Ok(Tx {
            db: self,
            open: true,
        })
    }

    fn end(&self, sql: &str) -> DbResult<()> {
        match &self.inner {
            Inner::Sqlite(conn) => Ok(conn.execute_batch(sql)?),
            Inner::Postgres(pg) => {
                let mut pg = pg.borrow_mut();
                pg.in_transaction = false;
                if pg.client.is_closed() {
                    return Err(DbError::LostInTransaction);
                }
                Ok(pg.client.batch_execute(sql)?)
            }
        }
    }
}

/// The most values one multi-row statement binds (SQLite allows 32,766,
/// PostgreSQL 65,535).
pub const MAX_PARAMS: usize = 30_000;

/// `HEAD VALUES (?1, ?2), (?3, ?4) TAIL` for `values / columns` rows.
fn multi_row_sql(head: &str, tail: &str, columns: usize, values: usize) -> String {
    use std::fmt::Write;
    let mut sql = String::with_capacity(head.len() + tail.len() + values * 6);
    sql.push_str(head);
    sql.push_str(" VALUES ");
    for row in 0..values / columns {
        if row > 0 {
            sql.push_str(", ");
        }
        sql.push('(');
        for c in 0..columns {
            if c > 0 {
                sql.push_str(", ");
            }
            let _ = write!(sql, "?{}", row * columns + c + 1);
        }
        sql.push(')');
    }
    if !tail.is_empty() {
        sql.push(' ');
        sql.push_str(tail);
    }
    sql
}

/// A statement bound to its connection, shaped like rusqlite's.
pub struct Stmt<'a> {
    db: &'a Db,
    sql: &'a str,
}

impl Stmt<'_> {
    pub fn execute<P: Params>(&mut self, params: P) -> DbResult<usize> {
        self.db.execute(self.sql, params)
    }

    pub fn query_row<T, P: Params>(
        &mut self,
        params: P,
        f: impl FnOnce(&Row) -> DbResult<T>,
    ) -> DbResult<T> {
        self.db.query_row(self.sql, params, f)
    }

    /// Every row, each turned into a `T` by `f`, as an iterator of results.
    pub fn query_map<T, P: Params>(
        &mut self,
        params: P,
        mut f: impl FnMut(&Row) -> DbResult<T>,
    ) -> DbResult<std::vec::IntoIter<DbResult<T>>> {
        let rows = self.db.rows(self.sql, params)?;
        Ok(rows.iter().map(&mut f).collect::<Vec<_>>().into_iter())
    }
}

/// An open transaction; rolled back when dropped without [`Tx::commit`].
pub struct Tx<'a> {
    db: &'a Db,
    open: bool,
}

impl Tx<'_> {
    pub fn commit(mut self) -> DbResult<()> {
        self.open = false;
        self.db.end("COMMIT")
    }
}

impl std::ops::Deref for Tx<'_> {
    type Target = Db;
    fn deref(&self) -> &Db {
        self.db
    }
}

impl Drop for Tx<'_> {
    fn drop(&mut self) {
        if self.open {
            // An error here leaves nothing to do: the transaction is
            // rolled back by the engine when the connection closes.
            let _ = self.db.end("ROLLBACK");
        }
    }
}

fn sqlite_value(v: ValueRef<'_>, index: usize) -> DbResult<Value> {
    Ok(match v {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(i) => Value::Int(i),
        ValueRef::Real(f) => Value::Real(f),
        ValueRef::Text(t) => Value::Text(
            std::str::from_utf8(t)
                .map_err(|e| DbError::conversion(index, format!("text is not UTF-8 ({e})")))?
                .to_string(),
        ),
        ValueRef::Blob(b) => Value::Blob(b.to_vec()),
    })
}

impl rusqlite::ToSql for Param<'_> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::Borrowed(match *self {
            Param::Null => ValueRef::Null,
            Param::Int(v) => ValueRef::Integer(v),
            Param::Real(v) => ValueRef::Real(v),
            Param::Text(s) => ValueRef::Text(s.as_bytes()),
            Param::Blob(b) => ValueRef::Blob(b),
        }))
    }
}

fn pg_refs<'a>(values: &'a [Param<'a>]) -> Vec<&'a (dyn ToSql + Sync)> {
    values.iter().map(|v| v as &(dyn ToSql + Sync)).collect()
}

type BoxError = Box<dyn std::error::Error + Sync + Send>;

impl ToSql for Param<'_> {
    fn to_sql(&self, ty: &Type, out: &mut bytes::BytesMut) -> Result<IsNull, BoxError> {
        let mismatch = |what: &str| -> BoxError {
            format!("cannot bind {what} to a parameter of type {ty}").into()
        };
        match *self {
            Param::Null => Ok(IsNull::Yes),
            Param::Int(v) => match *ty {
                Type::INT8 => v.to_sql(ty, out),
                Type::INT4 => i32::try_from(v)?.to_sql(ty, out),
                Type::INT2 => i16::try_from(v)?.to_sql(ty, out),
                Type::FLOAT8 => (v as f64).to_sql(ty, out),
                Type::FLOAT4 => (v as f32).to_sql(ty, out),
                Type::BOOL => (v != 0).to_sql(ty, out),
                Type::TEXT | Type::VARCHAR => v.to_string().to_sql(ty, out),
                _ => Err(mismatch("an integer")),
            },
            Param::Real(v) => match *ty {
                Type::FLOAT8 => v.to_sql(ty, out),
                Type::FLOAT4 => (v as f32).to_sql(ty, out),
                Type::TEXT | Type::VARCHAR => v.to_string().to_sql(ty, out),
                _ => Err(mismatch("a real number")),
            },
            Param::Text(s) => match *ty {
                Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME | Type::UNKNOWN => {
                    s.to_sql(ty, out)
                }
                Type::BYTEA => s.as_bytes().to_sql(ty, out),
                _ => Err(mismatch("text")),
            },
            Param::Blob(b) => match *ty {
                Type::BYTEA => b.to_sql(ty, out),
                _ => Err(mismatch("a blob")),
            },
        }
    }

    fn accepts(_ty: &Type) -> bool {
        true
    }

    postgres::types::to_sql_checked!();
}

/// A column read from PostgreSQL into the store's [`Value`].
struct PgValue(Value);

impl<'a> postgres::types::FromSql<'a> for PgValue {
    fn from_sql(ty: &Type, raw: &'a [u8]) -> Result<Self, BoxError> {
        use postgres::types::FromSql;
        Ok(PgValue(match *ty {
            Type::INT8 => Value::Int(i64::from_sql(ty, raw)?),
            Type::INT4 => Value::Int(i64::from(i32::from_sql(ty, raw)?)),
            Type::INT2 => Value::Int(i64::from(i16::from_sql(ty, raw)?)),
            Type::OID => Value::Int(i64::from(u32::from_sql(ty, raw)?)),
            Type::BOOL => Value::Int(i64::from(bool::from_sql(ty, raw)?)),
            Type::FLOAT8 => Value::Real(f64::from_sql(ty, raw)?),
            Type::FLOAT4 => Value::Real(f64::from(f32::from_sql(ty, raw)?)),
            Type::BYTEA => Value::Blob(<Vec<u8>>::from_sql(ty, raw)?),
            Type::VOID => Value::Null,
            _ if <String as FromSql>::accepts(ty) => Value::Text(String::from_sql(ty, raw)?),
            _ => return Err(format!("unsupported column type {ty}").into()),
        }))
    }

    fn from_sql_null(_ty: &Type) -> Result<Self, BoxError> {
        Ok(PgValue(Value::Null))
    }

    fn accepts(_ty: &Type) -> bool {
        true
    }
}

/// Rewrites SQLite's `?N` and `?` placeholders to PostgreSQL's `$N`,
/// leaving quoted strings and identifiers alone.
pub fn pg_placeholders(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len() + 8);
    let mut chars = sql.chars().peekable();
    let mut next = 1;
    let mut quote: Option<char> = None;
    while let Some(c) = chars.next() {
        if let Some(q) = quote {
            out.push(c);
            if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            '\'' | '"' => {
                quote = Some(c);
                out.push(c);
            }
            '?' => {
                let mut digits = String::new();
                while let Some(d) = chars.peek().filter(|d| d.is_ascii_digit()) {
                    digits.push(*d);
                    chars.next();
                }
                out.push('$');
                if digits.is_empty() {
                    out.push_str(&next.to_string());
                    next += 1;
                } else {
                    out.push_str(&digits);
                }
            }
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_become_dollars_outside_quotes() {
        assert_eq!(
            pg_placeholders("SELECT a FROM t WHERE b = ?1 AND c = ?12 AND d = '?3' AND \"?\" = ?"),
            "SELECT a FROM t WHERE b = $1 AND c = $12 AND d = '?3' AND \"?\" = $1"
        );
        assert_eq!(pg_placeholders("x IN (?, ?, ?)"), "x IN ($1, $2, $3)");
    }

    #[test]
    fn multi_row_inserts_number_every_value() {
        assert_eq!(
            multi_row_sql("INSERT INTO t (a, b)", "ON CONFLICT DO NOTHING", 2, 4),
            "INSERT INTO t (a, b) VALUES (?1, ?2), (?3, ?4) ON CONFLICT DO NOTHING"
        );
        let db = Db::sqlite(rusqlite::Connection::open_in_memory().unwrap());
        db.execute_batch("CREATE TABLE t (a INTEGER, b TEXT)")
            .unwrap();
        let values: Vec<Value> = (0..(MAX_PARAMS as i64 + 10))
            .flat_map(|i| [Value::Int(i), Value::Text(format!("r{i}"))])
            .collect();
        let n = db
            .insert_rows("INSERT INTO t (a, b)", "", 2, &values)
            .unwrap();
        assert_eq!(n, MAX_PARAMS + 10);
        let last: String = db
            .query_row(
                "SELECT b FROM t WHERE a = ?1",
                [MAX_PARAMS as i64 + 9],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(last, format!("r{}", MAX_PARAMS + 9));
    }

    #[test]
    fn values_convert_with_range_checks() {
        assert_eq!(u32::from_value(&Value::Int(7), 0).unwrap(), 7);
        assert!(u32::from_value(&Value::Int(-1), 0).is_err());
        assert!(i64::from_value(&Value::Null, 2).is_err());
        assert_eq!(Option::<i64>::from_value(&Value::Null, 0).unwrap(), None);
        assert_eq!(f64::from_value(&Value::Int(3), 0).unwrap(), 3.0);
        assert!(String::from_value(&Value::Int(3), 0).is_err());
    }
}
