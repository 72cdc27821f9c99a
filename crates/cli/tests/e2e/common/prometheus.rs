//! What the tests that run a real Prometheus server share: a child killed
//! when dropped, a free loopback port, and instant queries over its HTTP
//! API.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// A child process killed (and reaped) when dropped, so that a failed test
/// leaves no server behind.
pub struct Killed(pub Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A loopback port nothing listens on now.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `q` percent-encoded for a query string.
pub fn encode(q: &str) -> String {
    q.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The first series' value of an instant query, if any.
pub fn query(prom: SocketAddr, q: &str) -> Option<f64> {
    let (status, _, body) = super::http_get(prom, &format!("/api/v1/query?query={}", encode(q)));
    assert_eq!(status, 200, "{q}: {body}");
    let doc: Value = serde_json::from_str(&body).unwrap();
    let v = &doc["data"]["result"][0]["value"][1];
    v.as_str().and_then(|s| s.parse().ok())
}

/// `prometheus` on `addr` with `config`, its database in `tsdb`, native
/// histograms on when `native` (then it scrapes the protobuf format and
/// keeps no classic `_count`/`_bucket` series); returns once it answers
/// `/-/ready`, or panics after 30 s.
pub fn start(config: &Path, tsdb: &Path, addr: SocketAddr, native: bool) -> Killed {
    let mut command = Command::new("prometheus");
    command
        .arg(format!("--config.file={}", config.display()))
        .arg(format!("--storage.tsdb.path={}", tsdb.display()))
        .arg(format!("--web.listen-address={addr}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    if native {
        command.arg("--enable-feature=native-histograms");
    }
    let prom = Killed(command.spawn().unwrap());
    let t0 = Instant::now();
    while TcpStream::connect(addr).is_err() || super::http_get(addr, "/-/ready").0 != 200 {
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "prometheus did not start"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    prom
}
