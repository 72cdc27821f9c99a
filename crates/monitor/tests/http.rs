//! The monitor's HTTP endpoint against plain `std::net::TcpStream` clients:
//! routes, and that no client (garbage, huge headers, floods of idle
//! connections, slowloris) can stop it answering the next good request.
//!
//! Time bounds are generous, for a shared, noisy 2-core VM: each asserts
//! an order of magnitude, not a precise duration.
#![allow(clippy::unwrap_used)]

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use latscope_monitor::http::{HttpError, Limits, Server, Source};

const PROMETHEUS_ACCEPT: &str = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.7,text/plain;version=0.0.4;q=0.3,*/*;q=0.1";

/// A source that records how it was called.
struct Stub {
    body: Vec<u8>,
    healthy: AtomicBool,
    accepts: Mutex<Vec<Option<String>>>,
    threads: Mutex<Vec<Option<String>>>,
}

impl Stub {
    fn new() -> Arc<Stub> {
        Stub::with_body(b"latscope_up 1\n".to_vec())
    }

    fn with_body(body: Vec<u8>) -> Arc<Stub> {
        Arc::new(Stub {
            body,
            healthy: AtomicBool::new(true),
            accepts: Mutex::new(Vec::new()),
            threads: Mutex::new(Vec::new()),
        })
    }
}

impl Source for Stub {
    fn metrics(&self, accept: Option<&str>) -> (String, Vec<u8>) {
        self.accepts.lock().unwrap().push(accept.map(str::to_owned));
        self.threads
            .lock()
            .unwrap()
            .push(std::thread::current().name().map(str::to_owned));
        (
            "text/plain; version=0.0.4; charset=utf-8".into(),
            self.body.clone(),
        )
    }

    fn health(&self) -> (bool, String) {
        if self.healthy.load(Ordering::SeqCst) {
            (true, "2 measuring threads alive".into())
        } else {
            (false, "measuring thread on CPU 3 stopped".into())
        }
    }
}

fn local() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

fn start(source: Arc<Stub>, limits: Limits) -> Server {
    Server::start(local(), source, limits, Box::new(|| {})).unwrap()
}

struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

fn parse(raw: &[u8]) -> Reply {
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no end of head in {:?}", String::from_utf8_lossy(raw)));
    let head = std::str::from_utf8(&raw[..split]).unwrap();
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap();
    assert!(status_line.starts_with("HTTP/1.1 "), "{status_line}");
    let status = status_line[9..12].parse().unwrap();
    let headers = lines
        .map(|l| {
            let (n, v) = l.split_once(':').unwrap();
            (n.trim().to_owned(), v.trim().to_owned())
        })
        .collect();
    Reply {
        status,
        headers,
        body: raw[split + 4..].to_vec(),
    }
}

fn connect(addr: SocketAddr) -> TcpStream {
    let stream = TcpStream::connect_timeout(&addr, Duration::from_secs(10)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream
        .set_write_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream
}

/// Sends `raw` on a new connection and reads until the server closes it.
fn exchange(addr: SocketAddr, raw: &[u8]) -> Reply {
    let mut stream = connect(addr);
    stream.write_all(raw).unwrap();
    let mut reply = Vec::new();
    stream.read_to_end(&mut reply).unwrap();
    parse(&reply)
}

fn get(addr: SocketAddr, path: &str) -> Reply {
    exchange(
        addr,
        format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").as_bytes(),
    )
}

/// A GET whose connection may be refused: None when it was reset or closed without an answer.
fn try_get(addr: SocketAddr, path: &str) -> Option<Reply> {
    let mut stream = connect(addr);
    let request = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n");
    let _ = stream.write_all(request.as_bytes());
    let mut reply = Vec::new();
    match stream.read_to_end(&mut reply) {
        Ok(_) if !reply.is_empty() => Some(parse(&reply)),
        Ok(_) => None,
        Err(e) => {
            assert_eq!(e.kind(), ErrorKind::ConnectionReset, "{e}");
            None
        }
    }
}

fn assert_serves(addr: SocketAddr) {
    let reply = get(addr, "/metrics");
    assert_eq!(reply.status, 200);
    assert_eq!(reply.body, b"latscope_up 1\n");
}

/// How a connection the server should have closed ended.
#[derive(Debug, PartialEq)]
enum End {
    /// Closed, possibly after an answer whose status is given.
    Closed(Option<u16>),
    /// Still open when the read timed out.
    Open,
}

/// Reads until the server closes the connection or `timeout` passes.
fn read_end(stream: &mut TcpStream, timeout: Duration) -> End {
    stream.set_read_timeout(Some(timeout)).unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return End::Open
            }
            // A reset is a close too (the server closed with unread input).
            Err(_) => break,
        }
    }
    if got.is_empty() {
        End::Closed(None)
    } else {
        let reply = parse(&got);
        if let Some(length) = reply.header("content-length") {
            assert_eq!(reply.body.len(), length.parse::<usize>().unwrap());
        }
        End::Closed(Some(reply.status))
    }
}

#[test]
fn metrics_passes_accept_through_and_serves_the_source_body() {
    let stub = Stub::new();
    let server = start(stub.clone(), Limits::default());
    let addr = server.local_addr();

    // As Prometheus scrapes.
    let reply = exchange(
        addr,
        format!(
            "GET /metrics HTTP/1.1\r\nHost: {addr}\r\nUser-Agent: Prometheus/2.53.0\r\n\
             Accept: {PROMETHEUS_ACCEPT}\r\nAccept-Encoding: gzip\r\n\
             X-Prometheus-Scrape-Timeout-Seconds: 10\r\n\r\n"
        )
        .as_bytes(),
    );
    assert_eq!(reply.status, 200);
    assert_eq!(
        reply.header("content-type"),
        Some("text/plain; version=0.0.4; charset=utf-8")
    );
    assert_eq!(reply.header("content-length"), Some("14"));
    assert_eq!(reply.body, b"latscope_up 1\n");

    // Without Accept, and with Accept split over two fields.
    get(addr, "/metrics");
    exchange(
        addr,
        b"GET /metrics HTTP/1.1\r\nHost: x\r\nAccept: text/plain\r\nAccept: */*;q=0.1\r\n\r\n",
    );
    assert_eq!(
        *stub.accepts.lock().unwrap(),
        vec![
            Some(PROMETHEUS_ACCEPT.to_owned()),
            None,
            Some("text/plain, */*;q=0.1".to_owned())
        ]
    );
    server.shutdown();
}

#[test]
fn healthz_is_200_ok_or_503_with_the_reason() {
    let stub = Stub::new();
    let server = start(stub.clone(), Limits::default());
    let reply = get(server.local_addr(), "/healthz");
    assert_eq!(reply.status, 200);
    assert_eq!(reply.body, b"ok 2 measuring threads alive\n");

    stub.healthy.store(false, Ordering::SeqCst);
    let reply = get(server.local_addr(), "/healthz");
    assert_eq!(reply.status, 503);
    assert_eq!(reply.body, b"unhealthy measuring thread on CPU 3 stopped\n");
}

#[test]
fn head_answers_like_get_without_the_body() {
    let server = start(Stub::new(), Limits::default());
    let addr = server.local_addr();
    let reply = exchange(addr, b"HEAD /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(reply.status, 200);
    assert_eq!(reply.header("content-length"), Some("14"));
    assert_eq!(
        reply.header("content-type"),
        Some("text/plain; version=0.0.4; charset=utf-8")
    );
    assert!(reply.body.is_empty());

    let reply = exchange(addr, b"HEAD /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(reply.status, 200);
    assert_eq!(reply.header("content-length"), Some("29"));
    assert!(reply.body.is_empty());
}

#[test]
fn other_paths_methods_and_bodies_are_refused() {
    let stub = Stub::new();
    let server = start(stub.clone(), Limits::default());
    let addr = server.local_addr();

    assert_eq!(get(addr, "/").status, 404);
    assert_eq!(get(addr, "/metrics/extra").status, 404);

    for method in ["POST", "PUT", "DELETE", "PATCH", "OPTIONS"] {
        let reply = exchange(
            addr,
            format!("{method} /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
                .as_bytes(),
        );
        assert_eq!(reply.status, 405, "{method}");
        assert_eq!(reply.header("allow"), Some("GET, HEAD"), "{method}");
    }

    let reply = exchange(
        addr,
        b"GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello",
    );
    assert_eq!(reply.status, 400);
    let reply = exchange(
        addr,
        b"GET /healthz HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
    );
    assert_eq!(reply.status, 400);
    // A malformed request line.
    assert_eq!(
        exchange(addr, b"GET /metrics HTTP/9.9\r\nHost: x\r\n\r\n").status,
        400
    );

    // None of them reached the source.
    assert!(stub.accepts.lock().unwrap().is_empty());
    assert_serves(addr);
}

#[test]
fn a_large_body_is_served_whole() {
    let body: Vec<u8> = (0..4_000_000u32).map(|i| b'a' + (i % 26) as u8).collect();
    let server = start(Stub::with_body(body.clone()), Limits::default());
    let reply = get(server.local_addr(), "/metrics");
    assert_eq!(reply.status, 200);
    assert_eq!(reply.body.len(), body.len());
    assert!(reply.body == body);
}

#[test]
fn garbage_is_closed_or_400_and_the_server_goes_on() {
    let limits = Limits {
        header_timeout: Duration::from_secs(2),
        ..Limits::default()
    };
    let server = start(Stub::new(), limits);
    let addr = server.local_addr();

    // Random bytes (a fixed LCG, so failures reproduce).
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let random: Vec<u8> = (0..4096)
        .map(|_| {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (x >> 56) as u8
        })
        .collect();
    let payloads: Vec<Vec<u8>> = vec![
        random,
        // A TLS ClientHello's start, as from a scraper configured for https.
        vec![
            0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03,
        ],
        b"\r\n\r\n\r\n\r\n".to_vec(),
        b"GET /metrics HTTP/1.1\r\nno colon here\r\n\r\n".to_vec(),
        b"GET\x00/metrics HTTP/1.1\r\n\r\n".to_vec(),
        b"GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n".to_vec(),
    ];
    for payload in &payloads {
        let mut stream = connect(addr);
        // The server may close before taking it all; that is an answer too.
        let _ = stream.write_all(payload);
        match read_end(&mut stream, Duration::from_secs(10)) {
            End::Closed(None) | End::Closed(Some(400)) => {}
            other => panic!("{other:?} for {:?}", String::from_utf8_lossy(payload)),
        }
        assert_serves(addr);
    }

    // A client that sends a partial request and leaves.
    let mut stream = connect(addr);
    stream.write_all(b"GET /metr").unwrap();
    stream.shutdown(Shutdown::Write).unwrap();
    assert!(matches!(
        read_end(&mut stream, Duration::from_secs(10)),
        End::Closed(None) | End::Closed(Some(400))
    ));
    assert_serves(addr);
}

#[test]
fn a_1mb_header_is_431_or_closed_quickly_and_the_server_goes_on() {
    // Timeouts far longer than the test's bound, so that it is the size
    // limit, not a timeout, that ends the connection.
    let limits = Limits {
        header_timeout: Duration::from_secs(60),
        request_timeout: Duration::from_secs(60),
        ..Limits::default()
    };
    let server = start(Stub::new(), limits);
    let addr = server.local_addr();

    let mut request = b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: ".to_vec();
    request.extend_from_slice(&vec![b'a'; 1 << 20]);
    request.extend_from_slice(b"\r\n\r\n");
    let started = Instant::now();
    let mut stream = connect(addr);
    // Fails part way once the server closes with our bytes unread.
    let _ = stream.write_all(&request);
    let end = read_end(&mut stream, Duration::from_secs(20));
    let took = started.elapsed();
    assert!(
        matches!(end, End::Closed(None) | End::Closed(Some(431))),
        "{end:?}"
    );
    assert!(took < Duration::from_secs(5), "took {took:?}");

    // A head just under the 16 KiB limit is served.
    let mut request = b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: ".to_vec();
    request.extend_from_slice(&vec![b'a'; 15 * 1024]);
    request.extend_from_slice(b"\r\n\r\n");
    assert_eq!(exchange(addr, &request).status, 200);

    assert_serves(addr);
}

#[test]
fn many_idle_connections_neither_stop_the_server_nor_stay_open() {
    let max_connections = 4;
    let header_timeout = Duration::from_secs(1);
    let limits = Limits {
        max_connections,
        header_timeout,
        request_timeout: Duration::from_secs(30),
        ..Limits::default()
    };
    let server = start(Stub::new(), limits);
    let addr = server.local_addr();

    let started = Instant::now();
    let mut idle: Vec<TcpStream> = (0..500).map(|_| connect(addr)).collect();

    // Those holding slots close within the header timeout; then a good
    // request gets one. Until then it may be refused (503), which is allowed.
    let deadline = started + header_timeout + Duration::from_secs(10);
    let mut refused = 0;
    loop {
        match try_get(addr, "/metrics") {
            Some(reply) if reply.status == 200 => {
                assert_eq!(reply.body, b"latscope_up 1\n");
                break;
            }
            Some(reply) => {
                assert_eq!(reply.status, 503);
                assert_eq!(reply.header("retry-after"), Some("1"));
            }
            // Refused with a reset: the request arrived as the server closed.
            None => {}
        }
        refused += 1;
        assert!(
            Instant::now() < deadline,
            "still refused after {refused} tries"
        );
        std::thread::sleep(Duration::from_millis(100));
    }

    // Every idle connection was closed by the server: at once with a 503
    // when beyond max_connections, silently after the header timeout when
    // given a slot.
    let (mut answered_503, mut silent) = (0, 0);
    for stream in &mut idle {
        let left = deadline.saturating_duration_since(Instant::now());
        match read_end(stream, left.max(Duration::from_millis(100))) {
            End::Closed(Some(503)) => answered_503 += 1,
            End::Closed(None) => silent += 1,
            other => panic!("an idle connection ended as {other:?}"),
        }
    }
    // Slots free again each header timeout, so more than max_connections of
    // them may have had one if opening the 500 was slow; most got the 503.
    assert!(
        answered_503 >= 250,
        "{answered_503} refused, {silent} timed out"
    );
    assert!(silent >= 1, "{answered_503} refused, {silent} timed out");
    assert_serves(addr);
}

#[test]
fn slowloris_is_closed_after_the_header_timeout_and_others_are_served_meanwhile() {
    let header_timeout = Duration::from_secs(1);
    let limits = Limits {
        header_timeout,
        request_timeout: Duration::from_secs(60),
        ..Limits::default()
    };
    let server = start(Stub::new(), limits);
    let addr = server.local_addr();

    let mut stream = connect(addr);
    let started = Instant::now();
    stream
        .set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let head = b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: ";
    let mut served_meanwhile = false;
    let mut buf = [0u8; 1024];
    let mut sent = 0usize;
    let closed_after = loop {
        let byte = head.get(sent).copied().unwrap_or(b'a');
        if stream.write_all(&[byte]).is_err() {
            break started.elapsed();
        }
        sent += 1;
        // The read doubles as the 100 ms pause between bytes.
        match stream.read(&mut buf) {
            // Closed, or a 408 before closing: either way no request got in.
            Ok(n) => {
                assert!(n == 0 || buf[..n].starts_with(b"HTTP/1.1 408"));
                break started.elapsed();
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => break started.elapsed(),
        }
        if !served_meanwhile && started.elapsed() > Duration::from_millis(500) {
            assert_serves(addr);
            served_meanwhile = true;
        }
        assert!(
            started.elapsed() < header_timeout + Duration::from_secs(3),
            "still open after {sent} bytes"
        );
    };
    // Not before the timeout: the server cannot have started it before we connected.
    assert!(
        closed_after >= Duration::from_millis(900),
        "{closed_after:?}"
    );
    assert!(served_meanwhile);
    assert_serves(addr);
}

#[test]
fn shutdown_is_prompt_with_connections_open() {
    let server = start(Stub::new(), Limits::default());
    let addr = server.local_addr();
    assert_serves(addr);

    let mut open: Vec<TcpStream> = (0..20).map(|_| connect(addr)).collect();
    // Some mid-request.
    for stream in open.iter_mut().take(5) {
        stream.write_all(b"GET /metrics HTTP/1.1\r\nHo").unwrap();
    }
    // Let the server accept them all.
    std::thread::sleep(Duration::from_millis(200));

    let started = Instant::now();
    server.shutdown();
    let took = started.elapsed();
    assert!(took < Duration::from_secs(1), "shutdown took {took:?}");

    for stream in &mut open {
        assert_eq!(read_end(stream, Duration::from_secs(5)), End::Closed(None));
    }
    // Not listening any more.
    let refused = TcpStream::connect_timeout(&addr, Duration::from_secs(5));
    assert!(refused.is_err(), "still accepting after shutdown");
}

#[test]
fn dropping_the_server_stops_it() {
    let server = start(Stub::new(), Limits::default());
    let addr = server.local_addr();
    let mut stream = connect(addr);
    std::thread::sleep(Duration::from_millis(100));
    let started = Instant::now();
    drop(server);
    assert!(started.elapsed() < Duration::from_secs(1));
    assert_eq!(
        read_end(&mut stream, Duration::from_secs(5)),
        End::Closed(None)
    );
}

#[test]
fn runs_in_its_own_thread_after_the_start_hook() {
    let stub = Stub::new();
    let hook_thread: Arc<Mutex<Option<String>>> = Arc::default();
    let hook = Arc::clone(&hook_thread);
    let server = Server::start(
        local(),
        stub.clone(),
        Limits::default(),
        Box::new(move || {
            *hook.lock().unwrap() = std::thread::current().name().map(str::to_owned);
        }),
    )
    .unwrap();
    // `start` returned, so the hook has run.
    assert_eq!(
        hook_thread.lock().unwrap().as_deref(),
        Some("latscope-http")
    );
    assert_serves(server.local_addr());
    assert_eq!(
        *stub.threads.lock().unwrap(),
        vec![Some("latscope-http".to_owned())]
    );
}

#[test]
fn a_taken_address_is_a_one_line_error() {
    let taken = TcpListener::bind(local()).unwrap();
    let addr = taken.local_addr().unwrap();
    let hook_ran = Arc::new(AtomicBool::new(false));
    let ran = Arc::clone(&hook_ran);
    let error = Server::start(
        addr,
        Stub::new(),
        Limits::default(),
        Box::new(move || ran.store(true, Ordering::SeqCst)),
    )
    .unwrap_err();
    assert!(matches!(error, HttpError::Listen { .. }));
    assert_eq!(
        error.to_string(),
        format!("cannot listen on {addr}: Address already in use")
    );
    assert!(!hook_ran.load(Ordering::SeqCst));
}

#[test]
fn a_panicking_start_hook_is_an_error_not_a_hang() {
    let error = Server::start(
        local(),
        Stub::new(),
        Limits::default(),
        Box::new(|| panic!("cannot set affinity (test)")),
    )
    .unwrap_err();
    assert!(matches!(error, HttpError::Thread(_)), "{error}");
    assert!(!error.to_string().contains('\n'));
}
