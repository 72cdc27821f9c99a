//! The two sockets and the way between them: 127.0.0.1 in latscope's own
//! namespace, or a veth pair between two private network namespaces.
//!
//! The pair is made by `latscope_platform::veth` (namespaces held by
//! descriptors only, static neighbour entries, nothing to clean up): when
//! the probe's sockets and descriptors close, the kernel frees both
//! namespaces and the veth pair with them.

use std::net::{Ipv4Addr, SocketAddrV4};

use latscope_model::UdpPath;
use latscope_platform::net::{NetNs, TsSocket};
use latscope_platform::veth::{self, VethEnd};

use crate::ProbeError;

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

pub(crate) fn open(path: UdpPath) -> Result<Endpoints, ProbeError> {
    match path {
        UdpPath::Loopback => loopback().map_err(ProbeError::Network),
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

fn veth() -> Result<Endpoints, ProbeError> {
    let end = |name, mac, ip| VethEnd { name, mac, ip };
    let [a, b] = veth::create(
        end(SENDER_IF, SENDER_MAC, SENDER_IP),
        end(RECEIVER_IF, RECEIVER_MAC, RECEIVER_IP),
    )
    .map_err(|e| ProbeError::VethPath(e.to_string()))?;
    let bind = |ns: &NetNs, ip: Ipv4Addr| {
        ns.run(|| TsSocket::bind(SocketAddrV4::new(ip, 0)))
            .map_err(|e| format!("cannot open a UDP socket on {ip} in the private namespace: {e}"))
    };
    let tx = bind(&a, SENDER_IP).map_err(ProbeError::Network)?;
    let rx = bind(&b, RECEIVER_IP).map_err(ProbeError::Network)?;
    pair(tx, rx, vec![a, b]).map_err(ProbeError::Network)
}
