//! Networking over loopback, with a partner thread on the second CPU:
//!
//! * TCP throughput with 256 KB socket buffers (the study's `ttcp` test):
//!   one operation is 256 KB written; the partner reads and discards. The
//!   throughput is 256 KB over the time per operation.
//! * A TCP round trip (`TCP_NODELAY`) and a UDP round trip: one byte there
//!   and back.
//!
//! Not yet: the same over a veth pair between two private namespaces.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::os::fd::AsFd;
use std::thread::JoinHandle;

use latscope_model::CpuId;
use latscope_platform::os_ops::set_socket_buffers;
use latscope_platform::set_affinity;

use super::{Benchmark, Placement};
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

fn partner_cpu(p: Placement) -> Result<u32, BenchError> {
    p.other_cpu
        .ok_or_else(|| BenchError::Setup("needs a second CPU (give --cpus with two)".into()))
}

/// A TCP connection over loopback whose far end a partner thread serves.
struct Tcp {
    stream: Option<TcpStream>,
    partner: Option<JoinHandle<()>>,
    buf: Vec<u8>,
}

impl Tcp {
    /// `echo`: the partner echoes each byte; else it reads and discards.
    fn new(cpu: u32, echo: bool) -> Result<Tcp, BenchError> {
        let listener =
            TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).map_err(os("binding a TCP listener"))?;
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
                let mut b = vec![0u8; if echo { 1 } else { CHUNK }];
                while let Ok(n) = s.read(&mut b) {
                    if n == 0 || (echo && s.write_all(&b[..n]).is_err()) {
                        return;
                    }
                }
            })
            .map_err(os("starting the partner thread"))?;
        let stream = TcpStream::connect(addr).map_err(os("connecting over loopback"))?;
        if echo {
            stream.set_nodelay(true).map_err(os("TCP_NODELAY"))?;
        }
        set_socket_buffers(stream.as_fd(), CHUNK as u32).map_err(os("setting buffers"))?;
        Ok(Tcp {
            stream: Some(stream),
            partner: Some(partner),
            buf: vec![9u8; if echo { 1 } else { CHUNK }],
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

struct Throughput(Tcp);
impl Operation for Throughput {
    fn run(&mut self, ops: u64) -> Result<(), BenchError> {
        let t = &mut self.0;
        let s = t
            .stream
            .as_mut()
            .ok_or_else(|| BenchError::Setup("closed".into()))?;
        for _ in 0..ops {
            s.write_all(&t.buf).map_err(os("writing 256 KB"))?;
        }
        Ok(())
    }
}

struct TcpRoundTrip(Tcp);
impl Operation for TcpRoundTrip {
    fn run(&mut self, ops: u64) -> Result<(), BenchError> {
        let t = &mut self.0;
        let s = t
            .stream
            .as_mut()
            .ok_or_else(|| BenchError::Setup("closed".into()))?;
        for _ in 0..ops {
            s.write_all(&t.buf[..1]).map_err(os("sending a byte"))?;
            s.read_exact(&mut t.buf[..1])
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
}

impl UdpRoundTrip {
    fn new(cpu: u32) -> Result<UdpRoundTrip, BenchError> {
        let far = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).map_err(os("binding UDP"))?;
        let partner_addr = far.local_addr().map_err(os("reading the address"))?;
        let socket = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).map_err(os("binding UDP"))?;
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
    vec![
        Benchmark::new(
            "net",
            "tcp_throughput_256K",
            "256 KB written to a TCP connection over loopback (256 KB buffers)",
            true,
            |p: Placement| Ok(Box::new(Throughput(Tcp::new(partner_cpu(p)?, false)?))),
        )
        .with_pace(STREAM_ITERATION_NS, STREAM_WARMUP_NS),
        Benchmark::new(
            "net",
            "tcp_round_trip",
            "one byte there and back over TCP on loopback",
            true,
            |p: Placement| Ok(Box::new(TcpRoundTrip(Tcp::new(partner_cpu(p)?, true)?))),
        ),
        Benchmark::new(
            "net",
            "udp_round_trip",
            "one byte there and back over UDP on loopback",
            true,
            |p: Placement| Ok(Box::new(UdpRoundTrip::new(partner_cpu(p)?)?)),
        ),
    ]
}
