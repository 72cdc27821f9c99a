//! A fresh PostgreSQL database per test on the server named by
//! `LATSCOPE_TEST_POSTGRES` (`.ci/postgres` starts one), dropped at the end.

use std::sync::{Once, RwLock, RwLockReadGuard, RwLockWriteGuard};

pub const TEST_SERVER: &str = "LATSCOPE_TEST_POSTGRES";

/// The password of the test server's URL, to check it is never shown.
pub fn password(url: &str) -> Option<String> {
    let rest = url.split_once("://")?.1;
    let (userinfo, _) = rest.rsplit_once('@')?;
    userinfo.split_once(':').map(|(_, p)| p.to_string())
}

/// The test server is shared by the tests of this binary, and one of them
/// restarts it (postgres_restart_e2e), which cuts every connection to it:
/// a test's database holds this lock for reading, that test's for writing,
/// so the restart waits until no other test uses the server and no other
/// test starts on it before the restart's database is dropped.
static SERVER_IN_USE: RwLock<()> = RwLock::new(());

/// How a test holds the server: beside other tests, or alone.
enum Hold {
    Shared(RwLockReadGuard<'static, ()>),
    Alone(RwLockWriteGuard<'static, ()>),
}

pub struct FreshDb {
    /// With the password.
    pub url: String,
    /// Without it, as latscope names the store.
    pub shown: String,
    server: String,
    name: String,
    /// Released after `drop` has dropped the database (fields drop last).
    _hold: Hold,
}

impl Drop for FreshDb {
    fn drop(&mut self) {
        if let Ok(mut c) = postgres::Client::connect(&self.server, postgres::NoTls) {
            let _ = c.batch_execute(&format!(
                "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                self.name
            ));
        }
    }
}

/// The test server, or `None` after one `skipped:` line.
pub fn server() -> Option<String> {
    static SAID: Once = Once::new();
    let url = std::env::var(TEST_SERVER).ok().filter(|u| !u.is_empty());
    if url.is_none() {
        SAID.call_once(|| {
            println!(
                "skipped: needs PostgreSQL (set {TEST_SERVER}; .ci/postgres starts a test server)"
            )
        });
    }
    url
}

/// A new empty database on the test server, used beside other tests.
pub fn fresh_database() -> Option<FreshDb> {
    let server = server()?;
    let hold = Hold::Shared(SERVER_IN_USE.read().unwrap_or_else(|e| e.into_inner()));
    Some(create(server, hold))
}

/// A new empty database on the test server for a test that restarts the
/// server: no other test uses the server until it is dropped.
pub fn fresh_database_alone() -> Option<FreshDb> {
    let server = server()?;
    let hold = Hold::Alone(SERVER_IN_USE.write().unwrap_or_else(|e| e.into_inner()));
    Some(create(server, hold))
}

fn create(server: String, hold: Hold) -> FreshDb {
    let name = format!("le_{}", std::process::id()) + &format!("_{}", unique());
    let mut c = postgres::Client::connect(&server, postgres::NoTls).expect("the test server");
    c.batch_execute(&format!("CREATE DATABASE {name}"))
        .expect("creating a test database");
    let base = server.split('?').next().unwrap_or(&server);
    let cut = base.rfind('/').expect("a database in the URL");
    let url = format!("{}/{name}", &base[..cut]);
    let rest = base.split_once("://").map(|(_, r)| r).unwrap_or(base);
    let (userinfo, hostpath) = rest.rsplit_once('@').unwrap_or(("", rest));
    let user = userinfo.split(':').next().unwrap_or("");
    let hostport = hostpath.split('/').next().unwrap_or("");
    let shown = format!("postgres://{user}@{hostport}/{name}");
    FreshDb {
        url,
        shown,
        server,
        name,
        _hold: hold,
    }
}

fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos() as u64)
        .unwrap_or(0);
    t * 1000 + N.fetch_add(1, Ordering::Relaxed)
}

/// A query on the database, for checks.
pub fn query_i64(url: &str, sql: &str) -> i64 {
    let mut c = postgres::Client::connect(url, postgres::NoTls).expect("the test database");
    c.query_one(sql, &[]).expect("the query").get(0)
}
