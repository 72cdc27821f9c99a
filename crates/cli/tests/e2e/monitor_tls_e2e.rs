//! `latscope monitor --web.config.file`: the endpoint behind TLS and basic
//! authentication, as Prometheus' exporters have it, scraped by a real
//! Prometheus server.
//!
//! The test makes a CA and a server certificate (for 127.0.0.1 and
//! localhost) and a bcrypt hash, writes a web configuration as one would
//! for node_exporter, starts the daemon with it, and starts Prometheus
//! (Debian's `prometheus`, which `.ci/run` installs) with two jobs: one
//! with `scheme: https`, the CA and the right password, which must scrape
//! (`up` = 1 and a latscope series), and one with a wrong password, which
//! must not (`up` = 0). A TLS client of its own then checks the answers:
//! right credentials 200, wrong or none 401 with `WWW-Authenticate:
//! Basic`; and a plain HTTP request must get no HTTP answer at all.
//! Without the binary it prints `skipped: needs prometheus`.

#![allow(clippy::unwrap_used)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::Command;
use std::sync::Arc;
use std::thread::sleep;
use std::time::{Duration, Instant};

use crate::common::daemon::Daemon;
use crate::common::prometheus::{self, free_port, query};
use crate::common::*;
use base64::Engine as _;

const USER: &str = "prometheus";
const PASSWORD: &str = "s3cret:with/odd@chars";

/// A CA and a server certificate it signed, for 127.0.0.1 and localhost:
/// (CA PEM, certificate PEM, key PEM).
fn pki() -> (String, String, String) {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "latscope test CA");
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let issuer = rcgen::Issuer::from_params(&ca_params, &ca_key);
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["localhost".into(), "127.0.0.1".into()])
        .unwrap()
        .signed_by(&key, &issuer)
        .unwrap();
    (ca.pem(), cert.pem(), key.serialize_pem())
}

/// A GET over TLS trusting `ca`: (status, head, body); an error as text.
fn https_get(
    addr: SocketAddr,
    ca: &str,
    auth: Option<(&str, &str)>,
) -> Result<(u16, String, String), String> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls::pki_types::pem::PemObject::pem_slice_iter(ca.as_bytes()) {
        roots.add(cert.map_err(|e| e.to_string())?).unwrap();
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
    let conn = rustls::ClientConnection::new(Arc::new(config), name).unwrap();
    let tcp = TcpStream::connect(addr).map_err(|e| e.to_string())?;
    tcp.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut tls = rustls::StreamOwned::new(conn, tcp);
    let authorization = auth.map_or(String::new(), |(u, p)| {
        let encoded = base64::engine::general_purpose::STANDARD.encode(format!("{u}:{p}"));
        format!("Authorization: Basic {encoded}\r\n")
    });
    write!(
        tls,
        "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n{authorization}Connection: close\r\n\r\n"
    )
    .map_err(|e| e.to_string())?;
    let mut raw = Vec::new();
    // The server may close without a TLS close_notify once it has answered.
    if let Err(e) = tls.read_to_end(&mut raw) {
        if raw.is_empty() {
            return Err(e.to_string());
        }
    }
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    Ok((status, head.to_ascii_lowercase(), body.to_string()))
}

/// What a plain-HTTP client gets from the TLS port: the bytes it read
/// before the connection closed (or failed).
fn plain_get(addr: SocketAddr) -> Vec<u8> {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let _ = s.write_all(b"GET /metrics HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n");
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    raw
}

#[test]
fn prometheus_scrapes_over_tls_with_basic_auth_and_others_are_refused() {
    let Ok(version) = Command::new("prometheus").arg("--version").output() else {
        eprintln!("skipped: needs prometheus (apt-get install prometheus)");
        return;
    };
    assert!(version.status.success());
    let _g = shared();
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());

    // The files an operator has for node_exporter; the names relative to
    // the web configuration's directory, as the exporters take them.
    let (ca, cert, key) = pki();
    std::fs::write(dir.path().join("ca.crt"), &ca).unwrap();
    std::fs::write(dir.path().join("server.crt"), &cert).unwrap();
    std::fs::write(dir.path().join("server.key"), &key).unwrap();
    let hash = bcrypt::hash(PASSWORD, 8).unwrap();
    let web = dir.path().join("web.yml");
    std::fs::write(
        &web,
        format!(
            "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\nbasic_auth_users:\n  {USER}: '{hash}'\n"
        ),
    )
    .unwrap();

    let daemon = Daemon::start(&[
        "--cpus",
        "0",
        "--persist",
        "1s",
        "--store",
        store.to_str().unwrap(),
        "--web.config.file",
        web.to_str().unwrap(),
    ]);
    let addr = daemon.addr;
    assert!(
        daemon.said(&format!(
            "metrics on https://{addr}/metrics (TLS, basic auth)"
        )),
        "{:?}",
        daemon.lines.lock().unwrap()
    );

    // Prometheus: the right credentials in one job, a wrong password in another.
    let prom_addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let config = dir.path().join("prometheus.yml");
    let job = |name: &str, password: &str| {
        format!(
            "  - job_name: {name}\n    scheme: https\n    tls_config:\n      ca_file: {}\n    basic_auth:\n      username: {USER}\n      password: '{password}'\n    static_configs:\n      - targets: ['{addr}']\n",
            dir.path().join("ca.crt").display()
        )
    };
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n{}{}",
            job("latscope", PASSWORD),
            job("wrong", "not-the-password")
        ),
    )
    .unwrap();
    // Classic histograms: the checks below read `_count`.
    let prom = prometheus::start(&config, &dir.path().join("tsdb"), prom_addr, false);
    let t0 = Instant::now();
    let series = "latscope_timer_latency_seconds_count{job=\"latscope\",cpu=\"0\"}";
    let (up, samples, wrong_up) = loop {
        let ready = TcpStream::connect(prom_addr).is_ok();
        if ready {
            let up = query(prom_addr, "up{job=\"latscope\"}");
            let samples = query(prom_addr, series);
            let wrong_up = query(prom_addr, "up{job=\"wrong\"}");
            if up == Some(1.0) && samples.is_some_and(|s| s > 0.0) && wrong_up.is_some() {
                break (up, samples, wrong_up);
            }
            if t0.elapsed() > Duration::from_secs(40) {
                break (up, samples, wrong_up);
            }
        } else {
            assert!(
                t0.elapsed() < Duration::from_secs(30),
                "prometheus did not start"
            );
        }
        sleep(Duration::from_millis(500));
    };
    let scrape_error = if up == Some(1.0) {
        String::new()
    } else {
        let (_, _, body) = http_get(prom_addr, "/api/v1/targets");
        body
    };
    drop(prom);
    eprintln!(
        "prometheus after {:.1} s: up {up:?}, {series} {samples:?}; with a wrong password up {wrong_up:?}",
        t0.elapsed().as_secs_f64()
    );
    assert_eq!(up, Some(1.0), "Prometheus's targets: {scrape_error}");
    assert!(samples.is_some_and(|s| s > 0.0), "{samples:?}");
    assert_eq!(wrong_up, Some(0.0), "a wrong password must not scrape");

    // Right credentials: the metrics.
    let (status, _, body) = https_get(addr, &ca, Some((USER, PASSWORD))).unwrap();
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("latscope_timer_latency_seconds"), "{body}");
    // Wrong or no credentials: 401 asking for Basic, and no metrics.
    for auth in [
        Some((USER, "wrong")),
        Some(("nobody", PASSWORD)),
        Some((USER, "")),
        None,
    ] {
        let (status, head, body) = https_get(addr, &ca, auth).unwrap();
        assert_eq!(status, 401, "{auth:?}: {head}");
        assert!(head.contains("www-authenticate: basic"), "{head}");
        assert!(!body.contains("latscope_"), "{body}");
    }
    // Plain HTTP on the TLS port: no HTTP answer of any kind.
    // At most a TLS alert record (content type 21).
    let raw = plain_get(addr);
    eprintln!("plain HTTP got {raw:02x?}");
    assert!(
        raw.is_empty() || raw[0] == 21,
        "plain HTTP was answered: {}",
        String::from_utf8_lossy(&raw)
    );

    // SIGHUP with a web configuration that cannot be used: refused, and
    // the running one stays.
    std::fs::write(&web, "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  cipher_suites: [TLS_AES_128_GCM_SHA256]\n").unwrap();
    daemon.signal("HUP");
    daemon.wait_for_line("cipher_suites", Duration::from_secs(10));
    let (status, _, _) = https_get(addr, &ca, Some((USER, PASSWORD))).unwrap();
    assert_eq!(status, 200);
    // SIGHUP with another password: the old one is refused, the new one served.
    let new_hash = bcrypt::hash("another", 8).unwrap();
    std::fs::write(
        &web,
        format!("tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\nbasic_auth_users:\n  {USER}: '{new_hash}'\n"),
    )
    .unwrap();
    daemon.signal("HUP");
    daemon.wait_for_line("SIGHUP: metrics on https://", Duration::from_secs(20));
    let (status, _, _) = https_get(addr, &ca, Some((USER, PASSWORD))).unwrap();
    assert_eq!(status, 401, "the old password after the reload");
    let (status, _, body) = https_get(addr, &ca, Some((USER, "another"))).unwrap();
    assert_eq!(status, 200, "{body}");

    // The password appears in none of the daemon's lines.
    assert!(!daemon.said(PASSWORD) && !daemon.said("another"));
}
