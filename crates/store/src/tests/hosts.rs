//! Runs of several hosts in one store: `HOST:latest` and `HOST:N` pick a
//! host's run, with one-line errors for an unknown host or a run of
//! another host.

use super::*;
use crate::tests::backends::each_backend;

fn on(store: &mut Store, host: &str) -> RunId {
    let meta = RunMeta {
        hostname: host.into(),
        ..run_meta()
    };
    store.create_run(&meta, &system(), &caps()).unwrap()
}

#[test]
fn host_selectors_pick_that_hosts_runs() {
    each_backend(|dir| {
        let mut store = Store::open(&dir.at("s.db")).unwrap();
        let a1 = on(&mut store, "board-a");
        let b1 = on(&mut store, "board-b");
        let a2 = on(&mut store, "board-a");
        assert_eq!(store.resolve("board-a:latest").unwrap(), a2);
        assert_eq!(store.resolve("board-b:latest").unwrap(), b1);
        assert_eq!(store.resolve("board-a:LATEST").unwrap(), a2);
        assert_eq!(store.resolve(&format!("board-a:{}", a1.0)).unwrap(), a1);
        assert_eq!(store.resolve("latest").unwrap(), a2);
        assert_eq!(
            store.hosts().unwrap(),
            vec!["board-a".to_string(), "board-b".to_string()]
        );

        let e = store.resolve("board-c:latest").unwrap_err();
        assert_eq!(
            one_line(&e),
            "no run of host 'board-c' in this store (its hosts: board-a, board-b)"
        );
        let e = store.resolve(&format!("board-b:{}", a1.0)).unwrap_err();
        assert_eq!(
            one_line(&e),
            format!("run {a1} was measured on board-a, not board-b")
        );
        for bad in [":latest", "board-a:soon", "board-a:0"] {
            let e = store.resolve(bad).unwrap_err();
            assert!(matches!(e, StoreError::BadRunId(_)), "{bad}: {e}");
        }
    });
}
