//! Networking with a partner thread on the second CPU, over loopback and
//! over a veth pair between two private network namespaces (the way two
//! containers talk; it adds the veth transmit and a second stack
//! traversal, and needs root):
//!
//! * TCP throughput with 256 KB socket buffers (the study's `ttcp` test):
//!   one operation is 256 KB written; the partner reads and discards. The
//!   throughput is 256 KB over the time per operation.
//! * A TCP round trip (`TCP_NODELAY`) and a UDP round trip: one byte there
//!   and back.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::os::fd::AsFd;
use std::thread::JoinHandle;

use latscope_model::CpuId;
use latscope_platform::net::NetNs;
use latscope_platform::os_ops::set_socket_buffers;
use latscope_platform::pages::PageBuffer;
use latscope_platform::set_affinity;
use latscope_platform::veth::{self, VethEnd};

use super::benchmark::{Benchmark, Placement};
use crate::bench::{BenchError, Operation};

/// Bytes per throughput operation, and the socket buffers.
pub const CHUNK: usize = 256 << 10;

/// A stream is timed in iterations of 20 ms after half a second of
/// streaming: on these VMs a loopback stream runs at half speed for its
/// first 0.2-0.3 s (iperf3's 0.1 s intervals show 140-190 µs per 256 KB,
/// then 65-77 µs), while both vCPUs go from idle to busy. Without this
/// wait latscope timed the slow start and read 1.4 times iperf3's figure.
pub const STREAM_ITERATION_NS: u64 = 20_000_000;
pub const STREAM_WARMUP_NS: u64 = 500_000_000;

fn os(what: &str) -> impl Fn(std::io::Error) -> BenchError + '_ {
    move |e| BenchError::Os {
        what: what.to_string(),
        source: e,
    }
}

/// The way between the two sockets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Way {
    Loopback,
    Veth,
}

const NEAR: VethEnd = VethEnd {
    name: "lsmic0",
    mac: "02:6c:73:00:01:01",
    ip: Ipv4Addr::new(10, 199, 1, 1),
};
const FAR: VethEnd = VethEnd {
    name: "lsmic1",
    mac: "02:6c:73:00:01:02",
    ip: Ipv4Addr::new(10, 199, 1, 2),
};

/// Where each side's socket is made: the namespaces (veth) and addresses.
struct Sides {
    /// Kept for as long as the sockets (they hold the namespaces anyway).
    namespaces: Vec<NetNs>,
    near_ip: Ipv4Addr,
    far_ip: Ipv4Addr,
}

impl Sides {
    fn new(way: Way) -> Result<Sides, BenchError> {
        match way {
            Way::Loopback => Ok(Sides {
                namespaces: Vec::new(),
                near_ip: Ipv4Addr::LOCALHOST,
                far_ip: Ipv4Addr::LOCALHOST,
            }),
            Way::Veth => {
                let [near, far] = veth::create(NEAR, FAR).map_err(|e| {
                    BenchError::Setup(format!("needs root and ip (iproute2) for veth: {e}"))
                })?;
                Ok(Sides {
                    namespaces: vec![near, far],
                    near_ip: NEAR.ip,
                    far_ip: FAR.ip,
                })
            }
        }
    }

    /// Makes a socket on the near side (`far` false) or the far one.
    fn make<T: Send>(
        &self,
        far: bool,
        f: impl FnOnce(Ipv4Addr) -> std::io::Result<T> + Send,
    ) -> std::io::Result<T> {
        let ip = if far { self.far_ip } else { self.near_ip };
        match self.namespaces.get(usize::from(far)) {
            Some(ns) => ns.run(|| f(ip)),
            None => f(ip),
        }
    }
}

fn partner_cpu(p: Placement) -> Result<u32, BenchError> {
    p.other_cpu
        .ok_or_else(|| BenchError::Setup("needs a second CPU (give --cpus with two)".into()))
}

/// A TCP connection whose far end a partner thread serves.
struct Tcp {
    stream: Option<TcpStream>,
    partner: Option<JoinHandle<()>>,
    buf: Vec<u8>,
    _sides: Sides,
}

impl Tcp {
    /// `echo`: the partner echoes each byte; else it reads and discards.
    fn new(cpu: u32, echo: bool, way: Way) -> Result<Tcp, BenchError> {
        let sides = Sides::new(way)?;
        let listener = sides
            .make(true, |ip| TcpListener::bind((ip, 0)))
            .map_err(os("binding a TCP listener"))?;
        let addr = listener.local_addr().map_err(os("reading the address"))?;
        // On the listener, so that the accepted socket has them from its
        // SYN on (as iperf3 -w does).
        set_socket_buffers(listener.as_fd(), CHUNK as u32).map_err(os("setting buffers"))?;
        let partner = std::thread::Builder::new()
            .name("micro-net".into())
            .spawn(move || {
                let _ = set_affinity(CpuId(cpu));
                let Ok((mut s, _)) = listener.accept() else {
                    return;
                };
                // Round trips send one byte each way: Nagle off. The
                // stream keeps it on, as ttcp and iperf3 do.
                if echo {
                    let _ = s.set_nodelay(true);
                }
                if echo {
                    let mut b = [0u8; 1];
                    while let Ok(n) = s.read(&mut b) {
                        if n == 0 || s.write_all(&b[..n]).is_err() {
                            return;
                        }
                    }
                } else {
                    drain_in_blocks(&mut s);
                }
            })
            .map_err(os("starting the partner thread"))?;
        let stream = sides
            .make(false, |_| TcpStream::connect(addr))
            .map_err(os("connecting"))?;
        if echo {
            stream.set_nodelay(true).map_err(os("TCP_NODELAY"))?;
        }
        set_socket_buffers(stream.as_fd(), CHUNK as u32).map_err(os("setting buffers"))?;
        Ok(Tcp {
            stream: Some(stream),
            partner: Some(partner),
            buf: vec![9u8; if echo { 1 } else { CHUNK }],
            _sides: sides,
        })
    }
}

impl Drop for Tcp {
    fn drop(&mut self) {
        drop(self.stream.take());
        if let Some(p) = self.partner.take() {
            let _ = p.join();
        }
    }
}

impl Tcp {
    /// The stream and the buffer, while the connection is open.
    fn parts(&mut self) -> Result<(&mut TcpStream, &mut [u8]), BenchError> {
        let s = self
            .stream
            .as_mut()
            .ok_or_else(|| BenchError::Setup("closed".into()))?;
        Ok((s, &mut self.buf))
    }
}

/// The stream's reader: each 256 KB block is filled before the next one
/// starts, a short read continuing where it stopped (as iperf3's `Nread`
/// does), so the buffer keeps the stream's alignment. A reader that
/// restarts every read at the buffer's start moves where the kernel's copy
/// writes relative to where it reads, page by page; on AMD Zen 3 a
/// `rep movsb` whose destination lies 1-31 bytes above its source (modulo
/// 4096) runs 16 times slower (bench/rep-movsb-alias.c), and such a reader
/// timed 1.7 times iperf3 (bench/README.md).
fn drain_in_blocks(s: &mut TcpStream) {
    // Page-aligned, as iperf3's buffers are: with a buffer from the heap
    // (16 bytes past a page start) the stream was fast or 2-3 times slower
    // from one connection to the next.
    let Ok(mut page) = PageBuffer::new(CHUNK / std::mem::size_of::<usize>(), false) else {
        return;
    };
    let b = page.as_bytes_mut();
    loop {
        let mut got = 0;
        while got < CHUNK {
            match s.read(&mut b[got..]) {
                Ok(0) => return,
                Ok(n) => got += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => return,
            }
        }
    }
}

struct Throughput(Tcp);
impl Operation for Throughput {
    fn run(&mut self, ops: u64) -> Result<(), BenchError> {
        let (s, buf) = self.0.parts()?;
        for _ in 0..ops {
            s.write_all(buf).map_err(os("writing 256 KB"))?;
        }
        Ok(())
    }
}

struct TcpRoundTrip(Tcp);
impl Operation for TcpRoundTrip {
    fn run(&mut self, ops: u64) -> Result<(), BenchError> {
        let (s, buf) = self.0.parts()?;
        for _ in 0..ops {
            s.write_all(&buf[..1]).map_err(os("sending a byte"))?;
            s.read_exact(&mut buf[..1])
                .map_err(os("receiving the byte back"))?;
        }
        Ok(())
    }
}

/// A UDP socket whose datagrams a partner echoes.
struct UdpRoundTrip {
    socket: UdpSocket,
    partner_addr: SocketAddr,
    partner: Option<JoinHandle<()>>,
    _sides: Sides,
}

impl UdpRoundTrip {
    fn new(cpu: u32, way: Way) -> Result<UdpRoundTrip, BenchError> {
        let sides = Sides::new(way)?;
        let far = sides
            .make(true, |ip| UdpSocket::bind((ip, 0)))
            .map_err(os("binding UDP"))?;
        let partner_addr = far.local_addr().map_err(os("reading the address"))?;
        let socket = sides
            .make(false, |ip| UdpSocket::bind((ip, 0)))
            .map_err(os("binding UDP"))?;
        socket.connect(partner_addr).map_err(os("connecting UDP"))?;
        // A datagram lost on loopback would otherwise hang the benchmark.
        socket
            .set_read_timeout(Some(std::time::Duration::from_secs(2)))
            .map_err(os("setting a receive timeout"))?;
        let partner = std::thread::Builder::new()
            .name("micro-udp".into())
            .spawn(move || {
                let _ = set_affinity(CpuId(cpu));
                let mut b = [0u8; 1];
                // A zero-length datagram ends the partner.
                while let Ok((n, from)) = far.recv_from(&mut b) {
                    if n == 0 || far.send_to(&b[..n], from).is_err() {
                        return;
                    }
                }
            })
            .map_err(os("starting the partner thread"))?;
        Ok(UdpRoundTrip {
            socket,
            partner_addr,
            partner: Some(partner),
            _sides: sides,
        })
    }
}

impl Operation for UdpRoundTrip {
    fn run(&mut self, ops: u64) -> Result<(), BenchError> {
        let mut b = [1u8; 1];
        for _ in 0..ops {
            self.socket.send(&b).map_err(os("sending a datagram"))?;
            self.socket
                .recv(&mut b)
                .map_err(os("receiving the datagram back"))?;
        }
        Ok(())
    }
}

impl Drop for UdpRoundTrip {
    fn drop(&mut self) {
        let _ = self.socket.send_to(&[], self.partner_addr);
        if let Some(p) = self.partner.take() {
            let _ = p.join();
        }
    }
}

pub(super) fn benchmarks() -> Vec<Benchmark> {
    let mut v = Vec::new();
    for (way, suffix, over) in [
        (Way::Loopback, "", "over loopback"),
        (
            Way::Veth,
            "_veth",
            "over a veth pair between two namespaces",
        ),
    ] {
        v.push(
            Benchmark::new(
                "net",
                format!("tcp_throughput_256K{suffix}"),
                format!("256 KB written to a TCP connection {over} (256 KB buffers)"),
                true,
                move |p: Placement| {
                    Ok(Box::new(Throughput(Tcp::new(partner_cpu(p)?, false, way)?)))
                },
            )
            .with_pace(STREAM_ITERATION_NS, STREAM_WARMUP_NS),
        );
        v.push(Benchmark::new(
            "net",
            format!("tcp_round_trip{suffix}"),
            format!("one byte there and back over TCP {over}"),
            true,
            move |p: Placement| {
                Ok(Box::new(TcpRoundTrip(Tcp::new(
                    partner_cpu(p)?,
                    true,
                    way,
                )?)))
            },
        ));
        v.push(Benchmark::new(
            "net",
            format!("udp_round_trip{suffix}"),
            format!("one byte there and back over UDP {over}"),
            true,
            move |p: Placement| Ok(Box::new(UdpRoundTrip::new(partner_cpu(p)?, way)?)),
        ));
    }
    v
}
