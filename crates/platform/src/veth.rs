//! A veth pair between two private network namespaces: each end in its
//! own namespace with an address, the link up, and a permanent neighbour
//! entry for the other end (so no ARP exchange lands in a measurement).
//!
//! The namespaces are held by descriptors only ([`NetNs`]), with fixed
//! names and addresses inside them that nothing outside can see or clash
//! with, and no cleanup step to forget: when the last socket and
//! descriptor close, the kernel frees both namespaces and the pair. The
//! configuration is made with `ip` (iproute2).

use std::io::Write;
use std::net::Ipv4Addr;
use std::process::{Command, Stdio};

use crate::net::NetNs;

/// One end: interface name, MAC address, IPv4 address (in a /30).
#[derive(Clone, Copy, Debug)]
pub struct VethEnd {
    pub name: &'static str,
    pub mac: &'static str,
    pub ip: Ipv4Addr,
}

/// The two namespaces, `[a, b]`, each holding its end of the pair.
pub fn create(a: VethEnd, b: VethEnd) -> Result<[NetNs; 2], String> {
    let ns = |end: &VethEnd| {
        NetNs::create().map_err(|e| format!("a private namespace for {}: {e}", end.name))
    };
    let (na, nb) = (ns(&a)?, ns(&b)?);
    create_pair(&[
        "link",
        "add",
        a.name,
        "address",
        a.mac,
        "netns",
        &na.path(),
        "type",
        "veth",
        "peer",
        "name",
        b.name,
        "address",
        b.mac,
        "netns",
        &nb.path(),
    ])?;
    configure(&na, a, b)?;
    configure(&nb, b, a)?;
    wait_up(&na, a.name)?;
    wait_up(&nb, b.name)?;
    Ok([na, nb])
}

/// Polls of the link's state, 50 ms apart, before it counts as not up.
const UP_POLLS: u32 = 40;

/// Waits until `dev` reports `state UP`. The kernel attaches a device's
/// queueing discipline in its link-watch work, which may run up to a
/// second after the link was set up (later on a busy host); until then
/// every packet sent on it is dropped. CI lost the first datagram over a
/// new pair that way.
fn wait_up(ns: &NetNs, dev: &str) -> Result<(), String> {
    for _ in 0..UP_POLLS {
        let out = ns
            .command("ip")
            .args(["-o", "link", "show", "dev", dev])
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run ip (iproute2): {e}"))?;
        if String::from_utf8_lossy(&out.stdout).contains(" state UP ") {
            return Ok(());
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    Err(format!("{dev} did not come up within {} ms", UP_POLLS * 50))
}

/// Address, link up, and a permanent neighbour entry for the peer.
fn configure(ns: &NetNs, end: VethEnd, peer: VethEnd) -> Result<(), String> {
    let (dev, ip) = (end.name, end.ip);
    let batch = format!(
        "addr add {ip}/30 dev {dev}\nlink set {dev} up\nneigh replace {} lladdr {} dev {dev} nud permanent\n",
        peer.ip, peer.mac
    );
    let mut child = ns
        .command("ip")
        .args(["-batch", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run ip (iproute2): {e}"))?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(batch.as_bytes())
            .map_err(|e| format!("cannot talk to ip: {e}"))?;
    }
    let out = child.wait_with_output().map_err(|e| format!("ip: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "cannot configure {dev}: {}",
            first_line(&out.stderr)
        ));
    }
    Ok(())
}

/// `ip link add ...` in this process's namespace, which places each end
/// in its private namespace.
fn create_pair(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run ip (iproute2): {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "cannot create the veth pair: {}",
            first_line(&out.stderr)
        ))
    }
}

fn first_line(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes)
        .lines()
        .next()
        .unwrap_or("failed")
        .trim()
        .to_string()
}
