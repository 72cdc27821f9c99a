//! `net-loop`, `net-sink`, `net-source`: TCP streams and UDP datagrams,
//! over loopback and across the veth pair between two private network
//! namespaces (so packets go through a driver's transmit path and the
//! receive softirq, not just the loopback shortcut).

use std::fs;
use std::io::{ErrorKind, Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::process::{Command, Stdio};
use std::sync::mpsc::{self, Sender};
use std::thread;
use std::time::{Duration, Instant};

use super::args::arg;
use super::pace::Pacer;

/// The port both the TCP and the UDP sink listen on inside the sink's
/// private namespace (nothing else lives there, so a fixed port is safe).
const PORT: u16 = 5201;

/// How long an end waits for its interface to appear and the source for
/// the sink to accept.
const SETUP_TIMEOUT: Duration = Duration::from_secs(10);

/// What one source sends, per level.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct NetParams {
    /// Parallel TCP connections.
    pub tcp_streams: usize,
    /// Bytes a second per connection; 0: as fast as TCP goes.
    pub tcp_rate: u64,
    /// Datagrams a second; 0: as fast as the socket takes them.
    pub udp_rate: u64,
    /// Datagram payload bytes.
    pub udp_size: usize,
}

impl NetParams {
    pub(super) fn for_level(level: &str) -> Result<NetParams, String> {
        match level {
            "light" => Ok(NetParams {
                tcp_streams: 1,
                tcp_rate: 10_000_000,
                udp_rate: 2_000,
                udp_size: 1024,
            }),
            "normal" => Ok(NetParams {
                tcp_streams: 1,
                tcp_rate: 0,
                udp_rate: 20_000,
                udp_size: 1024,
            }),
            "heavy" => Ok(NetParams {
                tcp_streams: 2,
                tcp_rate: 0,
                udp_rate: 0,
                udp_size: 1400,
            }),
            other => Err(format!("bad level '{other}'")),
        }
    }
}

/// `net-loop LEVEL`: a sink and a source on 127.0.0.1, in this process.
pub(super) fn loop_main(args: &[String]) -> Result<i32, String> {
    let params = NetParams::for_level(&arg::<String>(args, 0, "level")?)?;
    let (tx, rx) = mpsc::channel();
    let (tcp, udp) = start_sink(IpAddr::V4(Ipv4Addr::LOCALHOST), 0, &tx)?;
    start_source(params, tcp, udp, &tx);
    drop(tx);
    wait_for_error(rx)
}

/// `net-sink IF CIDR`: configures IF with CIDR in this (private) namespace
/// and drains TCP and UDP on port 5201.
pub(super) fn sink_main(args: &[String]) -> Result<i32, String> {
    let ifname: String = arg(args, 0, "interface")?;
    let cidr: String = arg(args, 1, "address")?;
    let ip = cidr_ip(&cidr)?;
    configure(&ifname, &cidr)?;
    let (tx, rx) = mpsc::channel();
    start_sink(ip, PORT, &tx)?;
    drop(tx);
    wait_for_error(rx)
}

/// `net-source IF CIDR PEER LEVEL`: configures IF with CIDR in this
/// (private) namespace and sends to PEER port 5201.
pub(super) fn source_main(args: &[String]) -> Result<i32, String> {
    let ifname: String = arg(args, 0, "interface")?;
    let cidr: String = arg(args, 1, "address")?;
    let peer: IpAddr = arg(args, 2, "peer address")?;
    let params = NetParams::for_level(&arg::<String>(args, 3, "level")?)?;
    cidr_ip(&cidr)?;
    configure(&ifname, &cidr)?;
    let (tx, rx) = mpsc::channel();
    let to = SocketAddr::new(peer, PORT);
    start_source(params, to, to, &tx);
    drop(tx);
    wait_for_error(rx)
}

fn cidr_ip(cidr: &str) -> Result<IpAddr, String> {
    cidr.split('/')
        .next()
        .and_then(|a| a.parse().ok())
        .ok_or_else(|| format!("bad address '{cidr}'"))
}

/// Blocks until a sender or receiver thread reports a failure (the load is
/// then broken: exit 1 so the workload is marked). Runs forever otherwise.
fn wait_for_error(rx: mpsc::Receiver<String>) -> Result<i32, String> {
    match rx.recv() {
        Ok(e) => Err(e),
        Err(_) => Ok(0),
    }
}

/// Waits for `ifname` to appear in this process's namespace (latscope
/// moves it here after starting us), then brings it and `lo` up with
/// address `cidr`.
fn configure(ifname: &str, cidr: &str) -> Result<(), String> {
    let deadline = Instant::now() + SETUP_TIMEOUT;
    // /proc/self/net is this process's namespace; /sys/class/net would be
    // the namespace sysfs was mounted in.
    while !interface_exists(ifname) {
        if Instant::now() >= deadline {
            return Err(format!(
                "interface {ifname} did not appear in {SETUP_TIMEOUT:?}"
            ));
        }
        thread::sleep(Duration::from_millis(10));
    }
    ip(&["link", "set", "lo", "up"])?;
    ip(&["addr", "add", cidr, "dev", ifname])?;
    ip(&["link", "set", ifname, "up"])
}

fn interface_exists(ifname: &str) -> bool {
    fs::read_to_string("/proc/self/net/dev")
        .map(|t| {
            t.lines()
                .filter_map(|l| l.split_once(':'))
                .any(|(name, _)| name.trim() == ifname)
        })
        .unwrap_or(false)
}

fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run ip: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        let err = String::from_utf8_lossy(&out.stderr);
        Err(format!("ip {}: {}", args.join(" "), err.trim()))
    }
}

/// Binds a TCP listener and a UDP socket on `ip` (`port`, or ephemeral
/// ports for 0) and drains both in background threads. Returns the bound
/// addresses.
fn start_sink(
    ip: IpAddr,
    port: u16,
    errors: &Sender<String>,
) -> Result<(SocketAddr, SocketAddr), String> {
    let listener =
        TcpListener::bind((ip, port)).map_err(|e| format!("cannot listen on {ip}:{port}: {e}"))?;
    let udp =
        UdpSocket::bind((ip, port)).map_err(|e| format!("cannot bind UDP {ip}:{port}: {e}"))?;
    let tcp_addr = listener.local_addr().map_err(|e| e.to_string())?;
    let udp_addr = udp.local_addr().map_err(|e| e.to_string())?;
    let tx = errors.clone();
    thread::spawn(move || {
        for conn in listener.incoming() {
            match conn {
                Ok(stream) => {
                    thread::spawn(move || drain(stream));
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => {
                    let _ = tx.send(format!("accept: {e}"));
                    return;
                }
            }
        }
    });
    let tx = errors.clone();
    thread::spawn(move || {
        let mut buf = vec![0u8; 65536];
        loop {
            if let Err(e) = udp.recv(&mut buf) {
                if e.kind() != ErrorKind::Interrupted {
                    let _ = tx.send(format!("UDP receive: {e}"));
                    return;
                }
            }
        }
    });
    Ok((tcp_addr, udp_addr))
}

fn drain(mut stream: TcpStream) {
    let mut buf = vec![0u8; 128 * 1024];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return,
            Ok(_) => {}
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return,
        }
    }
}

/// Starts the TCP streams to `tcp` and the UDP sender to `udp`. A stream
/// that breaks reports on `errors`; UDP losses are part of the load.
fn start_source(params: NetParams, tcp: SocketAddr, udp: SocketAddr, errors: &Sender<String>) {
    for _ in 0..params.tcp_streams {
        let tx = errors.clone();
        thread::spawn(move || {
            if let Err(e) = tcp_stream(tcp, params.tcp_rate) {
                let _ = tx.send(e);
            }
        });
    }
    let tx = errors.clone();
    thread::spawn(move || {
        if let Err(e) = udp_stream(udp, params.udp_rate, params.udp_size) {
            let _ = tx.send(e);
        }
    });
}

fn tcp_stream(to: SocketAddr, rate: u64) -> Result<(), String> {
    let deadline = Instant::now() + SETUP_TIMEOUT;
    let mut stream = loop {
        match TcpStream::connect_timeout(&to, Duration::from_secs(1)) {
            Ok(s) => break s,
            Err(e) if Instant::now() >= deadline => {
                return Err(format!("cannot connect to {to}: {e}"));
            }
            Err(_) => thread::sleep(Duration::from_millis(20)),
        }
    };
    let _ = stream.set_nodelay(true);
    let chunk = vec![0x5au8; 64 * 1024];
    let mut pacer = Pacer::new(rate);
    loop {
        match stream.write_all(&chunk) {
            Ok(()) => pacer.sent(chunk.len() as u64),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(format!("TCP to {to}: {e}")),
        }
    }
}

fn udp_stream(to: SocketAddr, rate: u64, size: usize) -> Result<(), String> {
    let bind: SocketAddr = match to {
        SocketAddr::V4(_) => (Ipv4Addr::UNSPECIFIED, 0).into(),
        SocketAddr::V6(_) => (std::net::Ipv6Addr::UNSPECIFIED, 0).into(),
    };
    let sock = UdpSocket::bind(bind).map_err(|e| format!("cannot bind UDP: {e}"))?;
    let datagram = vec![0xa5u8; size];
    let mut pacer = Pacer::new(rate);
    loop {
        // Not connected: an absent receiver (ICMP port unreachable) is not
        // reported back, the datagram is simply lost, as on a real link.
        // A full queue (ENOBUFS, EAGAIN) is back-pressure: pause briefly.
        if sock.send_to(&datagram, to).is_err() {
            thread::sleep(Duration::from_micros(200));
        }
        pacer.sent(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels() {
        assert_eq!(NetParams::for_level("heavy").unwrap().tcp_streams, 2);
        assert!(NetParams::for_level("x").is_err());
    }

    #[test]
    fn loopback_sink_receives() {
        let (tx, _rx) = mpsc::channel();
        let (tcp, udp) = start_sink(IpAddr::V4(Ipv4Addr::LOCALHOST), 0, &tx).unwrap();
        let mut s = TcpStream::connect(tcp).unwrap();
        s.write_all(&[1u8; 100_000]).unwrap();
        let u = UdpSocket::bind("127.0.0.1:0").unwrap();
        u.send_to(&[2u8; 100], udp).unwrap();
    }

    #[test]
    fn lo_is_always_there() {
        assert!(interface_exists("lo"));
        assert!(!interface_exists("no-such-if0"));
        assert!(cidr_ip("10.1.2.3/30").is_ok());
        assert!(cidr_ip("nonsense").is_err());
    }
}
