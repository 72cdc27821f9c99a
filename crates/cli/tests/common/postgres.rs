//! A fresh PostgreSQL database per test on the server named by
//! `LATSCOPE_TEST_POSTGRES` (`.ci/postgres` starts one), dropped at the end.

use std::sync::Once;

pub const TEST_SERVER: &str = "LATSCOPE_TEST_POSTGRES";

/// The password of the test server's URL, to check it is never shown.
pub fn password(url: &str) -> Option<String> {
    let rest = url.split_once("://")?.1;
    let (userinfo, _) = rest.rsplit_once('@')?;
    userinfo.split_once(':').map(|(_, p)| p.to_string())
}

pub struct FreshDb {
    /// With the password.
    pub url: String,
    /// Without it, as latscope names the store.
    pub shown: String,
    server: String,
    name: String,
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

/// A new empty database on the test server.
pub fn fresh_database() -> Option<FreshDb> {
    let server = server()?;
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
    Some(FreshDb {
        url,
        shown,
        server,
        name,
    })
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
