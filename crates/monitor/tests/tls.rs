//! The endpoint with a web configuration, against a TLS client of the
//! test's own: client certificates (`RequireAndVerifyClientCert`), basic
//! authentication on every path, plain HTTP never answered, and a
//! connection beyond the limit closed without a plain-text 503.
#![allow(clippy::unwrap_used)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use latscope_monitor::auth::BasicAuth;
use latscope_monitor::http::{Access, Limits, Server, Source};
use latscope_monitor::web_config::WebConfig;

struct Stub;

impl Source for Stub {
    fn metrics(&self, _accept: Option<&str>) -> (String, Vec<u8>) {
        (
            "text/plain; version=0.0.4".into(),
            b"latscope_up 1\n".to_vec(),
        )
    }
    fn health(&self) -> (bool, String) {
        (true, String::new())
    }
}

/// A CA: its certificate's PEM and what signs with it.
struct Ca {
    pem: String,
    params: rcgen::CertificateParams,
    key: rcgen::KeyPair,
}

impl Ca {
    fn new(name: &str) -> Ca {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, name);
        let pem = params.self_signed(&key).unwrap().pem();
        Ca { pem, params, key }
    }

    /// A certificate for `names` this CA signed: (certificate PEM, key PEM).
    fn sign(&self, names: &[&str], client: bool) -> (String, String) {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params =
            rcgen::CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
                .unwrap();
        if client {
            params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
        }
        let issuer = rcgen::Issuer::from_params(&self.params, &self.key);
        let cert = params.signed_by(&key, &issuer).unwrap();
        (cert.pem(), key.serialize_pem())
    }
}

fn pem_certs(pem: &str) -> Vec<rustls::pki_types::CertificateDer<'static>> {
    use rustls::pki_types::pem::PemObject as _;
    rustls::pki_types::CertificateDer::pem_slice_iter(pem.as_bytes())
        .collect::<Result<_, _>>()
        .unwrap()
}

/// A GET of `path` over TLS trusting `ca`, with a client certificate and
/// credentials when given: the status, or the error as text.
fn get(
    addr: SocketAddr,
    ca: &str,
    client: Option<&(String, String)>,
    user: Option<(&str, &str)>,
    path: &str,
) -> Result<u16, String> {
    use rustls::pki_types::pem::PemObject as _;
    let mut roots = rustls::RootCertStore::empty();
    for cert in pem_certs(ca) {
        roots.add(cert).unwrap();
    }
    let builder = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots);
    let config = match client {
        Some((cert, key)) => builder
            .with_client_auth_cert(
                pem_certs(cert),
                rustls::pki_types::PrivateKeyDer::from_pem_slice(key.as_bytes()).unwrap(),
            )
            .unwrap(),
        None => builder.with_no_client_auth(),
    };
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let conn = rustls::ClientConnection::new(Arc::new(config), name).unwrap();
    let tcp = TcpStream::connect(addr).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut tls = rustls::StreamOwned::new(conn, tcp);
    let authorization = user.map_or(String::new(), |(u, p)| {
        let encoded = base64::engine::general_purpose::STANDARD.encode(format!("{u}:{p}"));
        format!("Authorization: Basic {encoded}\r\n")
    });
    write!(
        tls,
        "GET {path} HTTP/1.1\r\nHost: localhost\r\n{authorization}Connection: close\r\n\r\n"
    )
    .map_err(|e| e.to_string())?;
    let mut raw = Vec::new();
    if let Err(e) = tls.read_to_end(&mut raw) {
        if raw.is_empty() {
            return Err(e.to_string());
        }
    }
    let text = String::from_utf8_lossy(&raw);
    text.split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| format!("no status in {text:?}"))
}

/// The bytes a plain-HTTP client reads before the connection ends.
fn plain(addr: SocketAddr) -> Vec<u8> {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let _ = s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    raw
}

/// The endpoint with the web configuration `yaml` (files in `dir`).
fn start(dir: &std::path::Path, yaml: &str, limits: Limits) -> (Server, WebConfig) {
    let path = dir.join("web.yml");
    std::fs::write(&path, yaml).unwrap();
    let web = WebConfig::load(&path).unwrap();
    let access = Access {
        tls: web.server_config().unwrap(),
        auth: (!web.users.is_empty()).then(|| Arc::new(BasicAuth::new(web.users.clone()))),
    };
    let server = Server::start_with(
        "127.0.0.1:0".parse().unwrap(),
        Arc::new(Stub),
        limits,
        access,
        Box::new(|| {}),
    )
    .unwrap();
    (server, web)
}

#[test]
fn client_certificates_are_required_and_verified_and_passwords_checked_on_every_path() {
    let dir = tempfile::tempdir().unwrap();
    let server_ca = Ca::new("server CA");
    let client_ca = Ca::new("client CA");
    let stranger_ca = Ca::new("another CA");
    let (cert, key) = server_ca.sign(&["localhost"], false);
    std::fs::write(dir.path().join("server.crt"), cert).unwrap();
    std::fs::write(dir.path().join("server.key"), key).unwrap();
    std::fs::write(dir.path().join("clients.crt"), &client_ca.pem).unwrap();
    let hash = bcrypt::hash("pw", 4).unwrap();
    let (server, web) = start(
        dir.path(),
        &format!("tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  client_ca_file: clients.crt\n  client_auth_type: RequireAndVerifyClientCert\nbasic_auth_users:\n  u: '{hash}'\n"),
        Limits::default(),
    );
    assert!(web.authenticates());
    let addr = server.local_addr();
    let ours = client_ca.sign(&["scraper"], true);
    let theirs = stranger_ca.sign(&["scraper"], true);
    let ca = server_ca.pem.as_str();

    assert_eq!(
        get(addr, ca, Some(&ours), Some(("u", "pw")), "/metrics"),
        Ok(200)
    );
    assert_eq!(
        get(addr, ca, Some(&ours), Some(("u", "pw")), "/healthz"),
        Ok(200)
    );
    // The certificate is not enough: every path wants the password.
    for path in ["/metrics", "/healthz", "/nowhere"] {
        assert_eq!(get(addr, ca, Some(&ours), None, path), Ok(401), "{path}");
        assert_eq!(get(addr, ca, Some(&ours), Some(("u", "no")), path), Ok(401));
    }
    // Without a certificate, or with one another CA signed: no answer.
    for client in [None, Some(&theirs)] {
        let r = get(addr, ca, client, Some(("u", "pw")), "/metrics");
        assert!(r.is_err(), "{r:?}");
    }
    // Plain HTTP: no HTTP answer; at most a TLS alert record (type 21).
    let raw = plain(addr);
    eprintln!("plain HTTP got {raw:02x?}");
    assert!(
        raw.is_empty() || raw[0] == 21,
        "{}",
        String::from_utf8_lossy(&raw)
    );
}

#[test]
fn with_tls_a_connection_beyond_the_limit_gets_no_plain_text() {
    let dir = tempfile::tempdir().unwrap();
    let server_ca = Ca::new("server CA");
    let (cert, key) = server_ca.sign(&["localhost"], false);
    std::fs::write(dir.path().join("server.crt"), cert).unwrap();
    std::fs::write(dir.path().join("server.key"), key).unwrap();
    let limits = Limits {
        max_connections: 1,
        ..Limits::default()
    };
    let (server, web) = start(
        dir.path(),
        "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n",
        limits,
    );
    assert!(!web.authenticates());
    let addr = server.local_addr();
    // One idle connection holds the only slot (until its handshake times out).
    let _idle = TcpStream::connect(addr).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let raw = plain(addr);
    assert!(raw.is_empty(), "{}", String::from_utf8_lossy(&raw));
    drop(_idle);
    // Once the slot is free, TLS clients are served.
    let t0 = std::time::Instant::now();
    loop {
        match get(addr, &server_ca.pem, None, None, "/metrics") {
            Ok(200) => break,
            r => assert!(t0.elapsed() < Duration::from_secs(10), "{r:?}"),
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}
