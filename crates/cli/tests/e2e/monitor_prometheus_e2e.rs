//! `latscope monitor` scraped by a real Prometheus server for over a
//! minute, with native histograms on (so the protobuf exposition is what
//! it reads): what Prometheus computes from the scraped series must agree
//! with the daemon's own histograms.
//!
//! The test starts the server itself (Debian's `prometheus`, which
//! `.ci/run` installs) with a fresh database and a scrape configuration
//! pointing at the daemon's port; without the binary it prints
//! `skipped: needs prometheus`.
//!
//! Tolerances, and why:
//! * sample counts: Prometheus's last scrape is at most one scrape interval
//!   (1 s) plus one persistence interval (1 s) behind the daemon's figure
//!   read just after it, so the daemon may have up to 3 s of samples more
//!   (3,000 at 1 ms), never fewer;
//! * quantiles: `histogram_quantile` over a native histogram of schema 3
//!   answers within one bucket (bounds 2^(1/8) = 9 % apart) of the exact
//!   quantile of the same samples; the daemon's exact quantiles (from
//!   `latscope show`, read after it stopped) cover those few seconds more
//!   (under 5 % of the samples), which moves a median by little and a p99
//!   on a noisy host by more: p50 within 15 %, p99 within 35 %.

#![allow(clippy::unwrap_used)]

use std::net::SocketAddr;
use std::process::Command;
use std::thread::sleep;
use std::time::Duration;

use crate::common::daemon::Daemon;
use crate::common::prometheus::{self, free_port, query};
use crate::common::*;
use serde_json::Value;

fn sample(body: &str, prefix: &str, has: &str) -> Option<f64> {
    body.lines()
        .filter(|l| l.starts_with(prefix) && l.contains(has))
        .find_map(|l| l.rsplit(' ').next()?.parse().ok())
}

#[test]
fn prometheus_agrees_with_the_daemon_after_twenty_seconds_of_scraping() {
    let Ok(version) = Command::new("prometheus").arg("--version").output() else {
        eprintln!("skipped: needs prometheus (apt-get install prometheus)");
        return;
    };
    assert!(version.status.success());
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());

    // The daemon, on CPU 0, persisting every second.
    let mut daemon = Daemon::start(&[
        "--cpus",
        "0",
        "--persist",
        "1s",
        "--store",
        store.to_str().unwrap(),
    ]);
    let addr: SocketAddr = daemon.addr;

    // The server: a fresh database, native histograms, a 1 s scrape.
    let port = free_port();
    let prom_addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let config = dir.path().join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: latscope\n    static_configs:\n      - targets: ['{addr}']\n"
        ),
    )
    .unwrap();
    let prom = prometheus::start(&config, &dir.path().join("tsdb"), prom_addr, true);

    // Twenty seconds of scraping at 1 s: twenty native histograms, enough
    // for the server's quantiles to be compared with the daemon's own (a
    // minute told no more and cost 45 s of every CI run).
    sleep(Duration::from_secs(20));
    let series = "latscope_timer_latency_seconds{job=\"latscope\",cpu=\"0\"}";
    let scraped = query(prom_addr, &format!("histogram_count({series})"))
        .unwrap_or_else(|| panic!("no native histogram scraped: {:?}", query(prom_addr, "up")));
    let p50 = query(prom_addr, &format!("histogram_quantile(0.5, {series})")).unwrap();
    let p99 = query(prom_addr, &format!("histogram_quantile(0.99, {series})")).unwrap();
    let scrapes = query(prom_addr, "count_over_time(up{job=\"latscope\"}[2m])").unwrap();
    let (_, _, body) = http_get(addr, "/metrics");
    let served = sample(&body, "latscope_timer_latency_seconds_count", "cpu=\"0\"").unwrap();
    drop(prom);

    // The daemon's exact figures, after it stopped.
    daemon.signal("TERM");
    assert!(daemon.wait(Duration::from_secs(15)).is_some());
    let o = latscope(&[
        "show",
        "latest",
        "--json",
        "--store",
        store.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let doc: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let lat = doc["cells"][0]["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "timer.latency" && m["cpu"] == 0)
        .unwrap()
        .clone();
    let exact50 = lat["p50_ns"].as_f64().unwrap() / 1e9;
    let exact99 = lat["p99_ns"].as_f64().unwrap() / 1e9;
    let stored = lat["count"].as_f64().unwrap();
    eprintln!(
        "prometheus: {scrapes} scrapes, count {scraped}, p50 {p50:.3e} s, p99 {p99:.3e} s; \
         daemon: served count {served}, stored {stored}, p50 {exact50:.3e} s, p99 {exact99:.3e} s"
    );
    // The server takes a few seconds to start scraping (15 scrapes seen).
    assert!(scrapes >= 10.0, "{scrapes} scrapes in 20 s at 1 s");
    assert!(
        scraped > 10_000.0,
        "{scraped} samples scraped after 20 s at 1 ms"
    );
    assert!(
        served >= scraped && served - scraped <= 3_000.0,
        "served {served}, scraped {scraped}"
    );
    assert!(stored >= served, "stored {stored}, served {served}");
    let off = |a: f64, b: f64| (a / b - 1.0).abs();
    assert!(off(p50, exact50) <= 0.15, "p50 {p50} vs {exact50}");
    assert!(off(p99, exact99) <= 0.35, "p99 {p99} vs {exact99}");
}
