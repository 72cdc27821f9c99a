//! UDP sockets with the kernel's software time stamps, and private network
//! namespaces.
//!
//! [`TsSocket`] wraps a UDP socket with `SO_TIMESTAMPING`: the receiver
//! gets the kernel's receive stamp (`SOF_TIMESTAMPING_RX_SOFTWARE`, taken
//! when the packet enters the receive path) with each datagram; the sender
//! reads its transmit stamps (`TX_SCHED`, before the packet scheduler, and
//! `TX_SOFTWARE`, in the driver's transmit routine) from the socket's error
//! queue, each tagged with the send's number (`OPT_ID`). The kernel stamps in
//! CLOCK_REALTIME. Sending and receiving reuse buffers owned by the socket:
//! no allocation per datagram.
//!
//! [`NetNs`] is a network namespace held by a file descriptor only: no name
//! under /run/netns, no process living in it. The kernel frees it, with every
//! interface in it, when the last descriptor and socket referring to it close
//! — so nothing outlives latscope, whether it ends normally, by a signal or
//! by SIGKILL.

use std::io;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::process::Command;

use crate::timers::Errno;

// Flags of SO_TIMESTAMPING (linux/net_tstamp.h), stable kernel ABI.
const TS_TX_SOFTWARE: u32 = 1 << 1;
const TS_RX_SOFTWARE: u32 = 1 << 3;
const TS_SOFTWARE: u32 = 1 << 4;
const TS_OPT_ID: u32 = 1 << 7;
const TS_TX_SCHED: u32 = 1 << 8;
const TS_OPT_TSONLY: u32 = 1 << 11;
/// `ee_info` of a transmit stamp: which stage took it.
const SCM_TSTAMP_SND: u32 = 0;
const SCM_TSTAMP_SCHED: u32 = 1;
/// `ee_origin` of a time stamp on the error queue.
const SO_EE_ORIGIN_TIMESTAMPING: u8 = 4;

/// Which stage of the transmit path took a stamp.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TxStage {
    /// Before the packet scheduler (qdisc): `SOF_TIMESTAMPING_TX_SCHED`.
    Sched,
    /// In the driver's transmit routine: `SOF_TIMESTAMPING_TX_SOFTWARE`.
    Software,
}

/// One transmit time stamp from the error queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TxStamp {
    /// The send's number on this socket, from 0 (`SOF_TIMESTAMPING_OPT_ID`).
    pub id: u32,
    pub stage: TxStage,
    /// CLOCK_REALTIME ns.
    pub realtime_ns: u64,
}

/// A received datagram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Received {
    pub len: usize,
    /// The kernel's receive stamp, CLOCK_REALTIME ns; `None` when the
    /// datagram came without one.
    pub stamp_realtime_ns: Option<u64>,
}

/// Which stamps a socket asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stamps {
    /// Transmit stamps at the scheduler and the driver, numbered.
    Transmit,
    /// Receive stamps.
    Receive,
}

/// Room for the control messages of one datagram: a `scm_timestamping`
/// (three timespecs) and, on the error queue, a `sock_extended_err` with its
/// offender address; u64 words keep it aligned for `cmsghdr`.
const CONTROL_WORDS: usize = 64;

/// A UDP/IPv4 socket with software time stamping.
pub struct TsSocket {
    fd: OwnedFd,
    control: Box<[u64; CONTROL_WORDS]>,
}

fn errno() -> Errno {
    Errno(io::Error::last_os_error().raw_os_error().unwrap_or(0))
}

fn sockaddr(addr: SocketAddrV4) -> libc::sockaddr_in {
    libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: addr.port().to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from(*addr.ip()).to_be(),
        },
        sin_zero: [0; 8],
    }
}

impl TsSocket {
    /// A socket bound to `addr` (port 0: any free port), in the calling
    /// thread's network namespace.
    pub fn bind(addr: SocketAddrV4) -> io::Result<TsSocket> {
        // SAFETY: plain socket(2) call; the returned descriptor is checked
        // and owned right away.
        let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` is a new descriptor nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let sa = sockaddr(addr);
        // SAFETY: `sa` is a valid sockaddr_in and the length is its size.
        let rc = unsafe {
            libc::bind(
                fd.as_raw_fd(),
                (&sa as *const libc::sockaddr_in).cast(),
                std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(TsSocket {
            fd,
            control: Box::new([0; CONTROL_WORDS]),
        })
    }

    fn setsockopt<T>(&self, level: i32, name: i32, value: &T) -> io::Result<()> {
        // SAFETY: `value` points to a live T and the length is its size.
        let rc = unsafe {
            libc::setsockopt(
                self.fd.as_raw_fd(),
                level,
                name,
                (value as *const T).cast(),
                std::mem::size_of::<T>() as libc::socklen_t,
            )
        };
        if rc == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    /// Turns software time stamping on. For [`Stamps::Transmit`], sends are
    /// numbered from 0 from this call on.
    pub fn enable_stamps(&self, which: Stamps) -> io::Result<()> {
        let flags: u32 = match which {
            Stamps::Transmit => {
                TS_TX_SCHED | TS_TX_SOFTWARE | TS_SOFTWARE | TS_OPT_ID | TS_OPT_TSONLY
            }
            Stamps::Receive => TS_RX_SOFTWARE | TS_SOFTWARE,
        };
        self.setsockopt(libc::SOL_SOCKET, libc::SO_TIMESTAMPING, &flags)
    }

    /// Blocking receives give up after `ns` with EAGAIN (so a receiver can
    /// look at its stop flag).
    pub fn set_receive_timeout(&self, ns: u64) -> io::Result<()> {
        let tv = libc::timeval {
            tv_sec: (ns / 1_000_000_000) as libc::time_t,
            tv_usec: ((ns % 1_000_000_000) / 1_000) as libc::suseconds_t,
        };
        self.setsockopt(libc::SOL_SOCKET, libc::SO_RCVTIMEO, &tv)
    }

    /// Sets SO_RCVBUF (bytes; the kernel doubles it for bookkeeping).
    pub fn set_receive_buffer(&self, bytes: u32) -> io::Result<()> {
        let v = i32::try_from(bytes).unwrap_or(i32::MAX);
        self.setsockopt(libc::SOL_SOCKET, libc::SO_RCVBUF, &v)
    }

    /// Sends and receives only to and from `peer`.
    pub fn connect(&self, peer: SocketAddrV4) -> io::Result<()> {
        let sa = sockaddr(peer);
        // SAFETY: `sa` is a valid sockaddr_in and the length is its size.
        let rc = unsafe {
            libc::connect(
                self.fd.as_raw_fd(),
                (&sa as *const libc::sockaddr_in).cast(),
                std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
            )
        };
        if rc == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    /// The address the socket is bound to.
    pub fn local_addr(&self) -> io::Result<SocketAddrV4> {
        let mut sa = sockaddr(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0));
        let mut len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
        // SAFETY: `sa` is writable and `len` holds its size.
        let rc = unsafe {
            libc::getsockname(
                self.fd.as_raw_fd(),
                (&mut sa as *mut libc::sockaddr_in).cast(),
                &mut len,
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(SocketAddrV4::new(
            Ipv4Addr::from(u32::from_be(sa.sin_addr.s_addr)),
            u16::from_be(sa.sin_port),
        ))
    }

    /// One datagram to the connected peer: the system call under test.
    #[inline]
    pub fn send(&self, buf: &[u8]) -> Result<(), Errno> {
        // SAFETY: `buf` is a valid slice for its length.
        let n = unsafe { libc::send(self.fd.as_raw_fd(), buf.as_ptr().cast(), buf.len(), 0) };
        if n < 0 {
            Err(errno())
        } else {
            Ok(())
        }
    }

    /// (bytes received, control bytes received).
    fn recvmsg(&mut self, buf: &mut [u8], flags: i32) -> Result<(usize, usize), Errno> {
        let mut iov = libc::iovec {
            iov_base: buf.as_mut_ptr().cast(),
            iov_len: buf.len(),
        };
        // SAFETY: an all-zero msghdr is valid (null name, no iovecs).
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = self.control.as_mut_ptr().cast();
        msg.msg_controllen = std::mem::size_of::<[u64; CONTROL_WORDS]>() as _;
        loop {
            // SAFETY: `msg` points to the live iovec and control buffer,
            // both valid for the lengths given.
            let n = unsafe { libc::recvmsg(self.fd.as_raw_fd(), &mut msg, flags) };
            if n >= 0 {
                return Ok((n as usize, msg.msg_controllen as usize));
            }
            let e = errno();
            if e.0 != libc::EINTR {
                return Err(e);
            }
        }
    }

    /// Waits for the next datagram (up to the receive time-out: EAGAIN) and
    /// takes its receive stamp: the system call under test.
    #[inline]
    pub fn recv(&mut self, buf: &mut [u8]) -> Result<Received, Errno> {
        let (len, control_len) = self.recvmsg(buf, 0)?;
        let mut stamp = None;
        self.each_cmsg(control_len, |level, kind, data| {
            if level == libc::SOL_SOCKET && kind == libc::SO_TIMESTAMPING {
                stamp = first_timespec(data);
            }
        });
        Ok(Received {
            len,
            stamp_realtime_ns: stamp,
        })
    }

    /// The next transmit stamp waiting on the error queue, without blocking;
    /// `Ok(None)` when the queue holds no more. Queued errors that are not
    /// time stamps (an ICMP error, say) are taken off the queue and skipped.
    #[inline]
    pub fn next_tx_stamp(&mut self) -> Result<Option<TxStamp>, Errno> {
        loop {
            let mut empty = [0u8; 0];
            let flags = libc::MSG_ERRQUEUE | libc::MSG_DONTWAIT;
            let control_len = match self.recvmsg(&mut empty, flags) {
                Ok((_, c)) => c,
                Err(e) if e.is_again() => return Ok(None),
                Err(e) => return Err(e),
            };
            let mut time = None;
            let mut info = None;
            self.each_cmsg(control_len, |level, kind, data| {
                if level == libc::SOL_SOCKET && kind == libc::SO_TIMESTAMPING {
                    time = first_timespec(data);
                } else if (level == libc::SOL_IP && kind == libc::IP_RECVERR)
                    || (level == libc::SOL_IPV6 && kind == libc::IPV6_RECVERR)
                {
                    info = extended_err(data);
                }
            });
            if let (Some(t), Some((id, stage))) = (time, info) {
                return Ok(Some(TxStamp {
                    id,
                    stage,
                    realtime_ns: t,
                }));
            }
        }
    }

    /// Walks the control messages of the last `recvmsg`.
    fn each_cmsg(&self, control_len: usize, mut f: impl FnMut(i32, i32, &[u8])) {
        let base = self.control.as_ptr().cast::<u8>();
        let total = control_len.min(std::mem::size_of::<[u64; CONTROL_WORDS]>());
        let header = std::mem::size_of::<libc::cmsghdr>();
        let align = std::mem::size_of::<usize>();
        let mut off = 0usize;
        while off + header <= total {
            // SAFETY: `off + header <= total` keeps the read inside the
            // control buffer; read_unaligned copes with any alignment.
            let h: libc::cmsghdr = unsafe { std::ptr::read_unaligned(base.add(off).cast()) };
            let len = h.cmsg_len as usize;
            if len < header || off + len > total {
                break;
            }
            // SAFETY: the data lies inside the buffer (checked just above)
            // and the buffer outlives the slice.
            let data = unsafe { std::slice::from_raw_parts(base.add(off + header), len - header) };
            f(h.cmsg_level, h.cmsg_type, data);
            off += (len + align - 1) & !(align - 1);
        }
    }
}

/// The first timespec of a `scm_timestamping` (the software stamp).
fn first_timespec(data: &[u8]) -> Option<u64> {
    if data.len() < 16 {
        return None;
    }
    let sec = i64::from_ne_bytes(data[0..8].try_into().ok()?);
    let nsec = i64::from_ne_bytes(data[8..16].try_into().ok()?);
    if sec == 0 && nsec == 0 {
        return None;
    }
    let sec = u64::try_from(sec).ok()?;
    let nsec = u64::try_from(nsec).ok()?;
    Some(sec.saturating_mul(1_000_000_000).saturating_add(nsec))
}

/// (send number, stage) of a `sock_extended_err` that carries a time stamp.
fn extended_err(data: &[u8]) -> Option<(u32, TxStage)> {
    // struct sock_extended_err { u32 errno; u8 origin, type, code, pad;
    // u32 info; u32 data; }
    if data.len() < 16 || data[4] != SO_EE_ORIGIN_TIMESTAMPING {
        return None;
    }
    let info = u32::from_ne_bytes(data[8..12].try_into().ok()?);
    let id = u32::from_ne_bytes(data[12..16].try_into().ok()?);
    let stage = match info {
        SCM_TSTAMP_SCHED => TxStage::Sched,
        SCM_TSTAMP_SND => TxStage::Software,
        _ => return None,
    };
    Some((id, stage))
}

/// A network namespace held by a descriptor (see the module docs).
pub struct NetNs {
    fd: OwnedFd,
}

impl NetNs {
    /// A new, empty network namespace (only a `lo`, down). Needs
    /// CAP_SYS_ADMIN; the error says so.
    pub fn create() -> io::Result<NetNs> {
        // unshare moves the calling thread: do it on a thread of its own
        // that ends right after, holding the namespace by its descriptor.
        std::thread::scope(|s| {
            s.spawn(|| {
                // SAFETY: unshare(2) affects only this short-lived thread.
                if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
                    let e = io::Error::last_os_error();
                    let hint = if e.raw_os_error() == Some(libc::EPERM) {
                        " (needs root or CAP_SYS_ADMIN)"
                    } else {
                        ""
                    };
                    return Err(io::Error::new(
                        e.kind(),
                        format!("cannot create a network namespace: {e}{hint}"),
                    ));
                }
                NetNs::of_this_thread()
            })
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("namespace thread panicked")))
        })
    }

    /// The calling thread's network namespace.
    pub fn of_this_thread() -> io::Result<NetNs> {
        let f = std::fs::File::open("/proc/thread-self/ns/net")?;
        Ok(NetNs { fd: f.into() })
    }

    /// A path other processes can open to name this namespace (what
    /// `ip link ... netns PATH` takes), valid while `self` lives.
    pub fn path(&self) -> String {
        format!("/proc/{}/fd/{}", std::process::id(), self.fd.as_raw_fd())
    }

    /// The namespace's inode number (what `/proc/PID/ns/net` links name).
    pub fn inode(&self) -> io::Result<u64> {
        use std::os::unix::fs::MetadataExt;
        Ok(std::fs::metadata(self.path())?.ino())
    }

    /// Moves the calling thread into this namespace; sockets it creates
    /// afterwards belong to it for their whole life.
    pub fn enter(&self) -> io::Result<()> {
        // SAFETY: setns(2) on a namespace descriptor we own; it changes
        // only the calling thread.
        if unsafe { libc::setns(self.fd.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Runs `f` on a thread inside this namespace (for creating sockets in
    /// it) and returns what it returns.
    pub fn run<T: Send>(&self, f: impl FnOnce() -> io::Result<T> + Send) -> io::Result<T> {
        std::thread::scope(|s| {
            s.spawn(|| {
                self.enter()?;
                f()
            })
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("namespace thread panicked")))
        })
    }

    /// `program` to be run inside this namespace.
    pub fn command(&self, program: &str) -> Command {
        let mut cmd = Command::new(program);
        let fd: RawFd = self.fd.as_raw_fd();
        // SAFETY: the hook makes one async-signal-safe system call, as a
        // pre_exec hook in a forked child must; `fd` stays open in the child
        // (it is inherited until exec, where CLOEXEC closes it).
        unsafe {
            cmd.pre_exec(move || {
                if libc::setns(fd, libc::CLONE_NEWNET) != 0 {
                    return Err(io::Error::last_os_error());
                }
                Ok(())
            });
        }
        cmd
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root() -> bool {
        // SAFETY: geteuid cannot fail.
        unsafe { libc::geteuid() == 0 }
    }

    #[test]
    fn loopback_datagrams_carry_receive_and_transmit_stamps() {
        let mut rx = TsSocket::bind(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0)).unwrap();
        let mut tx = TsSocket::bind(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0)).unwrap();
        rx.enable_stamps(Stamps::Receive).unwrap();
        rx.set_receive_timeout(1_000_000_000).unwrap();
        tx.connect(rx.local_addr().unwrap()).unwrap();
        rx.connect(tx.local_addr().unwrap()).unwrap();
        // The kernel turns receive stamping on for the whole system through
        // a deferred work item when the first socket asks: the first
        // datagrams may come without one.
        let mut buf = [0u8; 128];
        let mut warm = 0;
        loop {
            tx.send(&[9; 16]).unwrap();
            let r = rx.recv(&mut buf).unwrap();
            if r.stamp_realtime_ns.is_some() {
                break;
            }
            warm += 1;
            assert!(warm < 1000, "no receive stamp after {warm} datagrams");
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        tx.enable_stamps(Stamps::Transmit).unwrap();
        let mut got = Vec::new();
        for i in 0..3u8 {
            let before = crate::realtime_ns();
            tx.send(&[i; 64]).unwrap();
            let mut buf = [0u8; 128];
            let r = rx.recv(&mut buf).unwrap();
            let after = crate::realtime_ns();
            assert_eq!(r.len, 64);
            assert_eq!(buf[0], i);
            let s = r.stamp_realtime_ns.expect("receive stamp");
            assert!(before <= s && s <= after, "{before} {s} {after}");
            while let Some(t) = tx.next_tx_stamp().unwrap() {
                assert!(before <= t.realtime_ns && t.realtime_ns <= after);
                got.push((t.id, t.stage));
            }
        }
        for id in 0..3 {
            assert!(got.contains(&(id, TxStage::Sched)), "{got:?}");
            assert!(got.contains(&(id, TxStage::Software)), "{got:?}");
        }
    }

    #[test]
    fn a_receive_times_out_with_eagain() {
        let mut rx = TsSocket::bind(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0)).unwrap();
        rx.set_receive_timeout(10_000_000).unwrap();
        let mut buf = [0u8; 16];
        assert_eq!(rx.recv(&mut buf).unwrap_err().0, libc::EAGAIN);
        let mut tx = TsSocket::bind(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0)).unwrap();
        assert!(tx.next_tx_stamp().unwrap().is_none());
    }

    #[test]
    fn a_private_namespace_is_separate_and_empty() {
        if !root() {
            eprintln!("skipped: needs root for network namespaces");
            return;
        }
        let ns = NetNs::create().unwrap();
        let own = NetNs::of_this_thread().unwrap();
        assert_ne!(ns.inode().unwrap(), own.inode().unwrap());
        let inside = ns.run(|| NetNs::of_this_thread()?.inode()).unwrap();
        assert_eq!(inside, ns.inode().unwrap());
        let out = ns.command("ip").args(["-o", "link"]).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(text.lines().count(), 1, "{text}");
        assert!(text.contains("lo:"), "{text}");
    }
}
