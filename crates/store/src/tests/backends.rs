//! One test suite over both backends: a test written against
//! [`each_backend`] runs once on a SQLite file and once on a fresh
//! PostgreSQL database of the server named by `LATSCOPE_TEST_POSTGRES`
//! (`.ci/postgres` starts one). Without that variable the PostgreSQL half
//! says `skipped: needs PostgreSQL` once and the SQLite half still runs.

use std::cell::RefCell;
use std::path::PathBuf;
use std::sync::Once;

/// The environment variable naming the test server (a URL whose user may
/// create databases).
pub const TEST_SERVER: &str = "LATSCOPE_TEST_POSTGRES";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// Where a test's stores live: files in a temporary directory, or
/// databases created on the test server and dropped at the end.
pub struct Places {
    pub backend: Backend,
    dir: tempfile::TempDir,
    server: Option<String>,
    databases: RefCell<Vec<(String, String)>>,
}

/// A temporary directory in memory (/dev/shm) where there is one: the
/// tests prove what the store keeps, not the disk's fsync, which made one
/// test of 300 checkpoints take 16 s on a virtual disk.
fn memory_dir() -> tempfile::TempDir {
    match tempfile::tempdir_in("/dev/shm") {
        Ok(d) => d,
        Err(_) => tempfile::tempdir().expect("a temporary directory"),
    }
}

impl Places {
    fn new(backend: Backend, server: Option<String>) -> Places {
        Places {
            backend,
            dir: memory_dir(),
            server,
            databases: RefCell::new(Vec::new()),
        }
    }

    /// The store called `name` in this test: the same name gives the same
    /// store.
    pub fn at(&self, name: &str) -> PathBuf {
        match self.backend {
            Backend::Sqlite => self.dir.path().join(name),
            Backend::Postgres => {
                let server = self.server.as_deref().expect("a test server");
                let mut dbs = self.databases.borrow_mut();
                let db = match dbs.iter().find(|(n, _)| n == name) {
                    Some((_, db)) => db.clone(),
                    None => {
                        let db = format!("lt_{}", uuid::Uuid::new_v4().simple());
                        admin(server)
                            .batch_execute(&format!("CREATE DATABASE {db}"))
                            .expect("creating a test database");
                        dbs.push((name.to_string(), db.clone()));
                        db
                    }
                };
                PathBuf::from(with_database(server, &db))
            }
        }
    }
}

impl Drop for Places {
    fn drop(&mut self) {
        let Some(server) = &self.server else { return };
        let dbs = self.databases.borrow();
        if dbs.is_empty() {
            return;
        }
        if let Ok(mut c) = postgres::Client::connect(server, postgres::NoTls) {
            for (_, db) in dbs.iter() {
                let _ = c.batch_execute(&format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)"));
            }
        }
    }
}

fn admin(server: &str) -> postgres::Client {
    postgres::Client::connect(server, postgres::NoTls).expect("connecting to the test server")
}

/// The server's URL with another database.
pub fn with_database(server: &str, db: &str) -> String {
    let (base, query) = match server.split_once('?') {
        Some((b, q)) => (b, format!("?{q}")),
        None => (server, String::new()),
    };
    let authority_end = base
        .find("://")
        .map(|i| i + 3)
        .and_then(|start| base[start..].find('/').map(|j| start + j))
        .unwrap_or(base.len());
    format!("{}/{db}{query}", &base[..authority_end])
}

/// The test server's URL, or `None` (said once) when there is none.
pub fn test_server() -> Option<String> {
    static SAID: Once = Once::new();
    let url = std::env::var(TEST_SERVER).ok().filter(|u| !u.is_empty());
    if url.is_none() {
        SAID.call_once(|| {
            println!(
                "skipped: needs PostgreSQL (set {TEST_SERVER}=postgres://USER:PASSWORD@HOST:PORT/DB; .ci/postgres starts a test server) — the store tests ran on SQLite only"
            )
        });
    }
    url
}

/// Runs `test` on SQLite, then on PostgreSQL when a test server is set.
pub fn each_backend(test: impl Fn(&Places)) {
    let mut backends = vec![(Backend::Sqlite, None)];
    if let Some(server) = test_server() {
        backends.push((Backend::Postgres, Some(server)));
    }
    for (backend, server) in backends {
        let places = Places::new(backend, server);
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| test(&places)));
        if let Err(panic) = outcome {
            eprintln!("the test failed on {backend:?}");
            std::panic::resume_unwind(panic);
        }
    }
}

/// Runs `test` on PostgreSQL only (for what only a server has), when a
/// test server is set.
pub fn postgres_only(test: impl Fn(&Places)) {
    if let Some(server) = test_server() {
        test(&Places::new(Backend::Postgres, Some(server)));
    }
}

#[test]
fn a_server_url_takes_another_database() {
    assert_eq!(
        with_database("postgres://u:p@h:5/latscope", "lt_1"),
        "postgres://u:p@h:5/lt_1"
    );
    assert_eq!(
        with_database("postgres://u@h/x?sslmode=disable", "y"),
        "postgres://u@h/y?sslmode=disable"
    );
    assert_eq!(with_database("postgres://h", "y"), "postgres://h/y");
}
