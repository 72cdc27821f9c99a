//! The two sockets and the way between them: 127.0.0.1 in latscope's own
//! namespace, or a veth pair between two private network namespaces.
//!
//! The namespaces are held by descriptors only (see
//! `latscope_platform::net::NetNs`), with fixed names and addresses inside
//! them (nothing outside can see or clash with them), static neighbour
//! entries so no ARP exchange ever lands in a measurement, and no cleanup
//! step to forget: when the probe's sockets and descriptors close, the
//! kernel frees both namespaces and the veth pair with them.

use std::io::Write;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::process::Stdio;

use latscope_model::UdpPath;
use latscope_platform::net::{NetNs, TsSocket};

const SENDER_IF: &str = "lsudp0";
const RECEIVER_IF: &str = "lsudp1";
const SENDER_MAC: &str = "02:6c:73:00:00:01";
const RECEIVER_MAC: &str = "02:6c:73:00:00:02";
const SENDER_IP: Ipv4Addr = Ipv4Addr::new(10, 199, 0, 1);
const RECEIVER_IP: Ipv4Addr = Ipv4Addr::new(10, 199, 0, 2);

/// The sender's and the receiver's sockets, bound and connected to each
/// other, and what keeps their way alive.
pub(crate) struct Endpoints {
    pub tx: TsSocket,
    pub rx: TsSocket,
    /// The private namespaces (veth only): dropped with the probe.
    pub namespaces: Vec<NetNs>,
}

pub(crate) fn open(path: UdpPath) -> Result<Endpoints, String> {
    match path {
        UdpPath::Loopback => loopback(),
        UdpPath::Veth => veth(),
    }
}

fn pair(tx: TsSocket, rx: TsSocket, namespaces: Vec<NetNs>) -> Result<Endpoints, String> {
    let err = |e: std::io::Error| format!("cannot connect the probe's sockets: {e}");
    tx.connect(rx.local_addr().map_err(err)?).map_err(err)?;
    rx.connect(tx.local_addr().map_err(err)?).map_err(err)?;
    Ok(Endpoints { tx, rx, namespaces })
}

fn loopback() -> Result<Endpoints, String> {
    let bind = || {
        TsSocket::bind(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0))
            .map_err(|e| format!("cannot open a UDP socket on 127.0.0.1: {e}"))
    };
    pair(bind()?, bind()?, Vec::new())
}

fn veth() -> Result<Endpoints, String> {
    let ns = |side: &str| NetNs::create().map_err(|e| format!("--path veth: {side}: {e}"));
    let a = ns("sender")?;
    let b = ns("receiver")?;
    create_pair(&[
        "link",
        "add",
        SENDER_IF,
        "address",
        SENDER_MAC,
        "netns",
        &a.path(),
        "type",
        "veth",
        "peer",
        "name",
        RECEIVER_IF,
        "address",
        RECEIVER_MAC,
        "netns",
        &b.path(),
    ])?;
    configure(&a, SENDER_IF, SENDER_IP, RECEIVER_IP, RECEIVER_MAC)?;
    configure(&b, RECEIVER_IF, RECEIVER_IP, SENDER_IP, SENDER_MAC)?;
    let bind = |ns: &NetNs, ip: Ipv4Addr| {
        ns.run(|| TsSocket::bind(SocketAddrV4::new(ip, 0)))
            .map_err(|e| format!("cannot open a UDP socket on {ip} in the private namespace: {e}"))
    };
    let tx = bind(&a, SENDER_IP)?;
    let rx = bind(&b, RECEIVER_IP)?;
    pair(tx, rx, vec![a, b])
}

/// Address, link up, and a permanent neighbour entry for the peer.
fn configure(
    ns: &NetNs,
    dev: &str,
    ip: Ipv4Addr,
    peer: Ipv4Addr,
    peer_mac: &str,
) -> Result<(), String> {
    let batch = format!(
        "addr add {ip}/30 dev {dev}\nlink set {dev} up\nneigh replace {peer} lladdr {peer_mac} dev {dev} nud permanent\n"
    );
    let mut child = ns
        .command("ip")
        .args(["-batch", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("--path veth: cannot run ip (iproute2): {e}"))?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(batch.as_bytes())
            .map_err(|e| format!("--path veth: cannot talk to ip: {e}"))?;
    }
    let out = child
        .wait_with_output()
        .map_err(|e| format!("--path veth: ip: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "--path veth: cannot configure {dev}: {}",
            first_line(&out.stderr)
        ));
    }
    Ok(())
}

/// `ip link add ...` in latscope's own namespace, which places each end in
/// its private namespace.
fn create_pair(args: &[&str]) -> Result<(), String> {
    let out = std::process::Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("--path veth: cannot run ip (iproute2): {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "--path veth: cannot create the veth pair: {}",
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
