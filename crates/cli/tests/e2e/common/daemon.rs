//! A `latscope monitor` daemon started for a test: its address (read from
//! the line it prints), its stderr lines, signals, and a kill when the test
//! ends.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::sleep;
use std::time::{Duration, Instant};

use super::bin;

/// A running daemon and the lines it wrote on stderr.
pub struct Daemon {
    pub child: Child,
    pub addr: SocketAddr,
    pub lines: Arc<Mutex<Vec<String>>>,
}

impl Daemon {
    pub fn start(args: &[&str]) -> Daemon {
        let mut all = vec!["--listen", "127.0.0.1:0"];
        all.extend_from_slice(args);
        Daemon::start_raw(&all)
    }

    /// [`Daemon::start`] without a `--listen` of its own (the
    /// configuration file's, or the default, applies).
    pub fn start_raw(args: &[&str]) -> Daemon {
        let mut child = bin()
            .arg("monitor")
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let lines = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&lines);
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { return };
                eprintln!("daemon: {line}");
                sink.lock().unwrap().push(line);
            }
        });
        let t0 = Instant::now();
        let addr = loop {
            let found = lines.lock().unwrap().iter().find_map(|l| {
                let rest = l
                    .split("metrics on http://")
                    .nth(1)
                    .or_else(|| l.split("metrics on https://").nth(1))?;
                rest.split('/').next()?.parse::<SocketAddr>().ok()
            });
            if let Some(a) = found {
                break a;
            }
            if let Ok(Some(status)) = child.try_wait() {
                panic!(
                    "the daemon exited with {status}: {:?}",
                    lines.lock().unwrap()
                );
            }
            assert!(
                t0.elapsed() < Duration::from_secs(20),
                "no address in {:?}",
                lines.lock().unwrap()
            );
            sleep(Duration::from_millis(50));
        };
        Daemon { child, addr, lines }
    }

    pub fn signal(&self, sig: &str) {
        let ok = std::process::Command::new("kill")
            .args([&format!("-{sig}"), &self.child.id().to_string()])
            .status()
            .unwrap()
            .success();
        assert!(ok, "kill -{sig}");
    }

    /// Waits for the daemon to exit; its exit code.
    pub fn wait(&mut self, within: Duration) -> Option<i32> {
        let t0 = Instant::now();
        loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                return s.code();
            }
            assert!(
                t0.elapsed() < within,
                "the daemon did not exit within {within:?}"
            );
            sleep(Duration::from_millis(50));
        }
    }

    pub fn said(&self, what: &str) -> bool {
        self.lines.lock().unwrap().iter().any(|l| l.contains(what))
    }

    pub fn wait_for_line(&self, what: &str, within: Duration) {
        let t0 = Instant::now();
        while !self.said(what) {
            assert!(
                t0.elapsed() < within,
                "no '{what}' in {:?}",
                self.lines.lock().unwrap()
            );
            sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
