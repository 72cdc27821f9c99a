//! What only a PostgreSQL store has: a server to reach, credentials, other
//! applications' databases beside ours, and many clients at once.

use std::time::{Duration, Instant};

// A server restart during a run is tested end to end, alone on the server
// (crates/cli/tests/e2e/postgres_restart_e2e.rs): a restart here would cut
// the connections of the tests running beside it.

use super::*;
use crate::tests::backends::{postgres_only, test_server, with_database};

fn one_line_without(e: &StoreError, secret: &str) -> String {
    let text = e.to_string();
    assert!(!text.contains('\n'), "not one line: {text}");
    assert!(!text.contains(secret), "the password is shown: {text}");
    assert!(
        !format!("{e:?}").contains(secret),
        "the password is in Debug: {e:?}"
    );
    text
}

fn client(url: &std::path::Path) -> ::postgres::Client {
    ::postgres::Client::connect(url.to_str().unwrap(), ::postgres::NoTls).unwrap()
}

#[test]
fn another_applications_database_is_refused_and_left_untouched() {
    postgres_only(|places| {
        let url = places.at("other");
        let mut c = client(&url);
        c.batch_execute("CREATE TABLE people (name TEXT); INSERT INTO people VALUES ('ada')")
            .unwrap();
        for result in [Store::open(&url), Store::open_existing(&url)] {
            let e = result.unwrap_err();
            assert!(matches!(e, StoreError::ForeignDatabase { .. }), "{e:?}");
            let text = one_line_without(&e, "latscope-test");
            assert!(text.contains("another program's database"), "{text}");
        }
        let tables: i64 = c
            .query_one(
                "SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema()",
                &[],
            )
            .unwrap()
            .get(0);
        assert_eq!(tables, 1, "nothing may be created in another's database");
    });
}

#[test]
fn a_newer_schema_is_refused_and_an_empty_database_is_not_read_as_a_store() {
    postgres_only(|places| {
        let url = places.at("s");
        let e = Store::open_existing(&url).unwrap_err();
        assert!(matches!(e, StoreError::NotAStore { .. }), "{e:?}");
        drop(Store::open(&url).unwrap());
        let mut c = client(&url);
        c.batch_execute("UPDATE latscope_store SET version = version + 1")
            .unwrap();
        let e = Store::open(&url).unwrap_err();
        assert!(
            matches!(e, StoreError::NewerSchema { found, .. } if found == SCHEMA_VERSION + 1),
            "{e:?}"
        );
        one_line_without(&e, "latscope-test");
    });
}

#[test]
fn bad_urls_wrong_passwords_and_unreachable_servers_are_one_line() {
    let Some(server) = test_server() else { return };
    let with_password = |pw: &str| {
        let rest = server.split_once('@').map(|(_, r)| r).unwrap_or("");
        let user = server
            .trim_start_matches("postgres://")
            .trim_start_matches("postgresql://")
            .split(['@', ':'])
            .next()
            .unwrap_or("")
            .to_string();
        format!("postgres://{user}:{pw}@{rest}")
    };
    let secret = "not-the-password-4711";
    let cases: Vec<(String, &str)> = vec![
        (with_password(secret), "password authentication failed"),
        (
            "postgres://ada:not-the-password-4711@127.0.0.1:1/x".into(),
            "refused",
        ),
        (
            "postgres://ada:not-the-password-4711@db.lab:notaport/x".into(),
            "not a valid PostgreSQL URL",
        ),
        (
            with_database(&with_password(secret), "no_such_db").replace(secret, "latscope-test"),
            "does not exist",
        ),
    ];
    for (url, says) in cases {
        let started = Instant::now();
        let e = Store::open(std::path::Path::new(&url)).unwrap_err();
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{url}: too slow"
        );
        let text = one_line_without(&e, secret);
        assert!(
            !text.contains("latscope-test"),
            "the password is shown: {text}"
        );
        assert!(text.contains(says), "{url}: {text}");
    }
}

#[test]
fn stores_opened_at_once_on_a_new_database_migrate_once() {
    postgres_only(|places| {
        let url = places.at("s");
        let handles: Vec<_> = (0..8)
            .map(|_| {
                let url = url.clone();
                std::thread::spawn(move || {
                    let mut store = Store::open(&url).unwrap();
                    store.create_run(&run_meta(), &system(), &caps()).unwrap()
                })
            })
            .collect();
        let mut ids: Vec<_> = handles.into_iter().map(|h| h.join().unwrap().0).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), 8);
        let store = Store::open_existing(&url).unwrap();
        assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
        assert_eq!(store.list_runs().unwrap().len(), 8);
    });
}
