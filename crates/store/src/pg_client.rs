//! A blocking PostgreSQL client whose every call has a deadline.
//!
//! The `postgres` crate's blocking client waits for the server for as long
//! as it takes: a server that stops answering (a stopped process, a host
//! that froze, a network path that drops packets without a reset) blocks
//! the caller forever, and with it the housekeeping thread of a run and
//! the run's exit. Neither the server's `statement_timeout` (the server
//! must run to enforce it) nor TCP keepalives (the peer's kernel answers
//! them while the server process is stopped) help there. This client runs
//! `tokio-postgres` on a runtime of its own and gives each call a deadline;
//! a call past it closes the connection (the socket is dropped: no state
//! of the session is left half-read) and returns [`DbError::Timeout`]. The
//! next call connects again.

use std::future::Future;
use std::time::{Duration, Instant};

use tokio::runtime::Runtime;
use tokio::task::JoinHandle;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Config, NoTls, Row, Statement};

use crate::db_error::{DbError, DbResult};

/// A connection to a server, driven on its own single-threaded runtime.
pub struct PgClient {
    runtime: Runtime,
    client: tokio_postgres::Client,
    /// The task reading and writing the socket; aborted (the socket
    /// closed) when a call passes its deadline.
    connection: JoinHandle<()>,
    deadline: Duration,
    /// When a call passed its deadline (the connection is closed since).
    timed_out: Option<Instant>,
}

impl PgClient {
    /// Connects within `connect` (TCP, TLS-less startup and
    /// authentication together); each later call must end within
    /// `deadline`.
    pub fn connect(config: &Config, connect: Duration, deadline: Duration) -> DbResult<PgClient> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()
            .map_err(DbError::Runtime)?;
        let (client, connection) = match runtime
            .block_on(async { tokio::time::timeout(connect, config.connect(NoTls)).await })
        {
            Ok(result) => result?,
            Err(_) => return Err(DbError::Timeout { after: connect }),
        };
        let connection = runtime.spawn(async move {
            // The error (the server went away) shows in the next call.
            let _ = connection.await;
        });
        Ok(PgClient {
            runtime,
            client,
            connection,
            deadline,
            timed_out: None,
        })
    }

    /// When a call passed its deadline, if one did.
    pub fn timed_out_at(&self) -> Option<Instant> {
        self.timed_out
    }

    /// The deadline of each call.
    pub fn deadline(&self) -> Duration {
        self.deadline
    }

    /// Sets the deadline of each later call (a migration may take longer
    /// than a checkpoint).
    pub fn set_deadline(&mut self, deadline: Duration) {
        self.deadline = deadline;
    }

    /// Whether the connection is gone: closed by the server or the network,
    /// or by a call that passed its deadline.
    pub fn is_closed(&self) -> bool {
        self.timed_out.is_some() || self.client.is_closed()
    }

    pub fn prepare(&mut self, sql: &str) -> DbResult<Statement> {
        let (client, deadline) = (&self.client, self.deadline);
        let r = block(&self.runtime, deadline, client.prepare(sql));
        self.settle(r)
    }

    pub fn execute(&mut self, s: &Statement, params: &[&(dyn ToSql + Sync)]) -> DbResult<u64> {
        let (client, deadline) = (&self.client, self.deadline);
        let r = block(&self.runtime, deadline, client.execute(s, params));
        self.settle(r)
    }

    pub fn query(&mut self, s: &Statement, params: &[&(dyn ToSql + Sync)]) -> DbResult<Vec<Row>> {
        let (client, deadline) = (&self.client, self.deadline);
        let r = block(&self.runtime, deadline, client.query(s, params));
        self.settle(r)
    }

    pub fn batch_execute(&mut self, sql: &str) -> DbResult<()> {
        let (client, deadline) = (&self.client, self.deadline);
        let r = block(&self.runtime, deadline, client.batch_execute(sql));
        self.settle(r)
    }

    /// One round trip within `timeout` (shorter than the deadline: a
    /// check of an idle connection).
    pub fn is_valid(&mut self, timeout: Duration) -> DbResult<()> {
        let client = &self.client;
        let r = block(&self.runtime, timeout, client.simple_query(""));
        self.settle_within(r, timeout).map(drop)
    }

    /// A call's result; past its deadline, the connection is closed.
    fn settle<T>(&mut self, r: Option<Result<T, tokio_postgres::Error>>) -> DbResult<T> {
        self.settle_within(r, self.deadline)
    }

    fn settle_within<T>(
        &mut self,
        r: Option<Result<T, tokio_postgres::Error>>,
        after: Duration,
    ) -> DbResult<T> {
        match r {
            Some(result) => Ok(result?),
            None => {
                self.timed_out = Some(Instant::now());
                self.connection.abort();
                Err(DbError::Timeout { after })
            }
        }
    }
}

/// Runs `f` to its end on `runtime` (which drives the connection's task
/// meanwhile), or `None` once `deadline` passed.
fn block<T>(runtime: &Runtime, deadline: Duration, f: impl Future<Output = T>) -> Option<T> {
    runtime
        .block_on(async { tokio::time::timeout(deadline, f).await })
        .ok()
}
