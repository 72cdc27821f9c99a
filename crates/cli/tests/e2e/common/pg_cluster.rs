//! A throwaway PostgreSQL cluster of the test's own (initdb in a temporary
//! directory, its own port), for tests that stop or break the server: the
//! shared test server of `.ci/postgres` is never touched. Needs root (the
//! cluster runs as the `postgres` user) and the server's binaries (the
//! Debian package `postgresql`); [`Cluster::start`] says `skipped:` and
//! returns `None` without them.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

pub struct Cluster {
    dir: tempfile::TempDir,
    bin: PathBuf,
    pub url: String,
}

/// The directory of `initdb`, `pg_ctl` and `postgres`: the newest
/// `/usr/lib/postgresql/N/bin`.
fn bindir() -> Option<PathBuf> {
    let mut dirs: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .flatten()
        .filter_map(|e| {
            let n = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").exists().then_some((n, bin))
        })
        .collect();
    dirs.sort();
    dirs.pop().map(|(_, d)| d)
}

fn as_postgres(bin: &Path, tool: &str) -> Command {
    let mut c = Command::new("runuser");
    c.args(["-u", "postgres", "--"])
        .arg(bin.join(tool))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    c
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

impl Cluster {
    /// A new cluster, started, with database `latscope` (trust
    /// authentication on 127.0.0.1 only).
    pub fn start() -> Option<Cluster> {
        let root = latscope_platform::caps::detect().root;
        let bin = bindir();
        let user = Command::new("id")
            .args(["-u", "postgres"])
            .output()
            .is_ok_and(|o| o.status.success());
        let Some(bin) = bin.filter(|_| root && user) else {
            println!("skipped: needs root, the postgres user and PostgreSQL's server binaries (.ci/postgres installs them)");
            return None;
        };
        let dir = tempfile::Builder::new()
            .prefix("latscope-pgc-")
            .tempdir()
            .unwrap();
        let ok = Command::new("chown")
            .args(["postgres:postgres"])
            .arg(dir.path())
            .status()
            .unwrap();
        assert!(ok.success(), "chown of the cluster's directory");
        let data = dir.path().join("data");
        let ok = as_postgres(&bin, "initdb")
            .arg("-D")
            .arg(&data)
            .args(["-U", "postgres", "--auth=trust", "--locale=C", "-E", "UTF8"])
            .current_dir(dir.path())
            .status()
            .unwrap();
        assert!(ok.success(), "initdb");
        let port = free_port();
        let conf = format!(
            "\nlisten_addresses = '127.0.0.1'\nport = {port}\nunix_socket_directories = '{}'\nfsync = off\n",
            dir.path().display()
        );
        let mut text = std::fs::read_to_string(data.join("postgresql.conf")).unwrap();
        text.push_str(&conf);
        std::fs::write(data.join("postgresql.conf"), text).unwrap();
        let cluster = Cluster {
            url: format!("postgres://postgres@127.0.0.1:{port}/latscope"),
            dir,
            bin,
        };
        let ok = as_postgres(&cluster.bin, "pg_ctl")
            .arg("-D")
            .arg(&data)
            .arg("-l")
            .arg(cluster.dir.path().join("log"))
            .args(["-w", "-t", "30", "start"])
            .current_dir(cluster.dir.path())
            .status()
            .unwrap();
        assert!(ok.success(), "pg_ctl start: {}", cluster.log());
        let ok = as_postgres(&cluster.bin, "createdb")
            .args(["-h", "127.0.0.1", "-p", &port.to_string(), "-U", "postgres"])
            .arg("latscope")
            .status()
            .unwrap();
        assert!(ok.success(), "createdb: {}", cluster.log());
        Some(cluster)
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("log")).unwrap_or_default()
    }

    /// The postmaster and every process it started (its backends and
    /// helpers).
    pub fn pids(&self) -> Vec<u32> {
        let text = std::fs::read_to_string(self.dir.path().join("data/postmaster.pid"))
            .unwrap_or_default();
        let Some(main) = text
            .lines()
            .next()
            .and_then(|l| l.trim().parse::<u32>().ok())
        else {
            return Vec::new();
        };
        let children = Command::new("pgrep")
            .args(["-P", &main.to_string()])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default();
        let mut pids = vec![main];
        pids.extend(
            children
                .lines()
                .filter_map(|l| l.trim().parse::<u32>().ok()),
        );
        pids
    }

    /// Sends `signal` (`STOP`, `CONT`) to every process of the cluster.
    pub fn signal(&self, signal: &str) {
        let pids: Vec<String> = self.pids().iter().map(u32::to_string).collect();
        assert!(!pids.is_empty(), "no server process found");
        let _ = Command::new("kill")
            .arg(format!("-{signal}"))
            .args(&pids)
            .status();
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // A stopped server would not stop: let it run first.
        let pids: Vec<String> = self.pids().iter().map(u32::to_string).collect();
        if !pids.is_empty() {
            let _ = Command::new("kill").arg("-CONT").args(&pids).status();
        }
        let _ = as_postgres(&self.bin, "pg_ctl")
            .arg("-D")
            .arg(self.dir.path().join("data"))
            .args(["-w", "-t", "30", "-m", "immediate", "stop"])
            .status();
    }
}
