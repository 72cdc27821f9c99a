//! The heavier operations the microbenchmarks time — processes, virtual
//! memory, readiness of descriptors — as safe functions over the raw calls.
//! Everything `unsafe` about them stays here; the loops in `latscope-micro`
//! are safe code.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

fn check(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// Waits for `pid` and returns its exit status (or the signal as 128+N).
fn wait_for(pid: libc::pid_t) -> io::Result<i32> {
    let mut status = 0;
    loop {
        // SAFETY: waits for our own child; `status` is a valid local.
        let r = unsafe { libc::waitpid(pid, &mut status, 0) };
        if r == pid {
            break;
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    Ok(if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        128 + libc::WTERMSIG(status)
    })
}

/// `fork`, the child `_exit(0)` at once, the parent `waitpid`: the study's
/// process creation, without a program to load.
pub fn fork_exit_wait() -> io::Result<i32> {
    // SAFETY: the child calls only `_exit`, which is async-signal-safe, so
    // forking a multi-threaded process is sound.
    let pid = unsafe { libc::fork() };
    match pid {
        -1 => Err(io::Error::last_os_error()),
        0 => {
            // SAFETY: ends the child without running any of the parent's
            // destructors or atexit handlers.
            unsafe { libc::_exit(0) }
        }
        pid => wait_for(pid),
    }
}

/// A program prepared for [`fork_exec_wait`]: its path and an empty
/// environment, as C strings made before the fork (allocation is not
/// async-signal-safe).
pub struct Program {
    path: CString,
}

impl Program {
    pub fn new(path: &std::path::Path) -> io::Result<Program> {
        use std::os::unix::ffi::OsStrExt;
        let path = CString::new(path.as_os_str().as_bytes())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL in the path"))?;
        Ok(Program { path })
    }
}

/// `fork`, the child `execve`s `program` (no arguments, empty environment),
/// the parent waits: its exit status (127 when `execve` failed).
pub fn fork_exec_wait(program: &Program) -> io::Result<i32> {
    let argv = [program.path.as_ptr(), std::ptr::null()];
    let envp = [std::ptr::null()];
    // SAFETY: the child calls only `execve` and `_exit` (async-signal-safe)
    // on arrays built before the fork, which stay alive until it has
    // exec'd or exited.
    let pid = unsafe { libc::fork() };
    match pid {
        -1 => Err(io::Error::last_os_error()),
        0 => unsafe {
            // SAFETY: see above; argv and envp are NULL-terminated arrays
            // of valid C strings.
            libc::execve(program.path.as_ptr(), argv.as_ptr(), envp.as_ptr());
            libc::_exit(127)
        },
        pid => wait_for(pid),
    }
}

/// A child process that echoes every byte it reads from one pipe into
/// another, pinned to a CPU: the far end of the process context-switch
/// benchmark. Dropping it closes the pipe to the child, which then exits,
/// and reaps it.
pub struct EchoProcess {
    pid: libc::pid_t,
    to_child: Option<OwnedFd>,
    from_child: OwnedFd,
}

fn pipe_pair() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: pipe2 writes two descriptors into a valid array.
    check(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) })?;
    // SAFETY: both descriptors were just created and are owned by nothing
    // else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

impl EchoProcess {
    pub fn start(cpu: u32) -> io::Result<EchoProcess> {
        let (child_in, to_child) = pipe_pair()?;
        let (from_child, child_out) = pipe_pair()?;
        let (cin, cout) = (child_in.as_raw_fd(), child_out.as_raw_fd());
        let (pin, pout) = (from_child.as_raw_fd(), to_child.as_raw_fd());
        // SAFETY: an all-zero cpu_set_t is empty; the CPU is added below
        // (CPU_SET checks the bound).
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        let cpu = usize::try_from(cpu).unwrap_or(usize::MAX);
        if cpu >= libc::CPU_SETSIZE as usize {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "CPU out of range",
            ));
        }
        // SAFETY: `cpu` is below CPU_SETSIZE.
        unsafe { libc::CPU_SET(cpu, &mut set) };
        // SAFETY: the child uses only async-signal-safe calls (close,
        // sched_setaffinity, read, write, _exit) on descriptors and a set
        // prepared before the fork.
        let pid = unsafe { libc::fork() };
        match pid {
            -1 => Err(io::Error::last_os_error()),
            0 => unsafe {
                // SAFETY: see above.
                libc::close(pin);
                libc::close(pout);
                if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
                    libc::_exit(2);
                }
                let mut b = 0u8;
                loop {
                    let n = libc::read(cin, (&mut b as *mut u8).cast(), 1);
                    if n != 1 || libc::write(cout, (&b as *const u8).cast(), 1) != 1 {
                        libc::_exit(0);
                    }
                }
            },
            pid => {
                drop(child_in);
                drop(child_out);
                Ok(EchoProcess {
                    pid,
                    to_child: Some(to_child),
                    from_child,
                })
            }
        }
    }

    /// One byte to the child and back.
    pub fn round_trip(&self) -> io::Result<()> {
        let to = self
            .to_child
            .as_ref()
            .ok_or_else(|| io::Error::new(io::ErrorKind::BrokenPipe, "closed"))?;
        let mut b = 7u8;
        // SAFETY: one byte from/to a valid local through our open pipes.
        unsafe {
            if libc::write(to.as_raw_fd(), (&b as *const u8).cast(), 1) != 1 {
                return Err(io::Error::last_os_error());
            }
            match libc::read(self.from_child.as_raw_fd(), (&mut b as *mut u8).cast(), 1) {
                1 => Ok(()),
                0 => Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the child ended",
                )),
                _ => Err(io::Error::last_os_error()),
            }
        }
    }
}

impl Drop for EchoProcess {
    fn drop(&mut self) {
        drop(self.to_child.take());
        let _ = wait_for(self.pid);
    }
}

/// An anonymous private mapping, unmapped on drop.
pub struct Mapping {
    addr: *mut libc::c_void,
    len: usize,
}

/// The system's page size.
pub fn page_size() -> usize {
    // SAFETY: sysconf has no memory effects.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(n).ok().filter(|&n| n > 0).unwrap_or(4096)
}

impl Mapping {
    /// `mmap` of `len` bytes of anonymous memory (not touched).
    pub fn anonymous(len: usize) -> io::Result<Mapping> {
        // SAFETY: a fresh anonymous mapping at an address the kernel picks;
        // nothing else refers to it.
        let addr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if addr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Mapping { addr, len })
    }

    /// Where the mapping starts.
    pub fn addr(&self) -> *mut libc::c_void {
        self.addr
    }

    /// `mmap` of the first `len` bytes of `file`, read-only and private.
    pub fn file(file: BorrowedFd<'_>, len: usize) -> io::Result<Mapping> {
        // SAFETY: maps an open file read-only at an address the kernel
        // picks; the mapping is only read through `touch`.
        let addr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_PRIVATE,
                file.as_raw_fd(),
                0,
            )
        };
        if addr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Mapping { addr, len })
    }

    /// Touches one byte in every `page`-sized page (a write where the
    /// mapping is writable, else a read): a page fault each the first time.
    /// Returns a sum so the reads cannot be dropped.
    pub fn touch(&self, page: usize, write: bool) -> u64 {
        let mut sum = 0u64;
        let base = self.addr.cast::<u8>();
        let mut off = 0;
        while off < self.len {
            // SAFETY: `off < len`, inside the mapping, which lives as long
            // as `self`; volatile so that the access happens.
            unsafe {
                let p = base.add(off);
                if write {
                    std::ptr::write_volatile(p, 1);
                } else {
                    sum += u64::from(std::ptr::read_volatile(p));
                }
            }
            off += page.max(1);
        }
        sum
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the region mapped in the constructor; no
        // reference into it outlives `self`.
        unsafe {
            libc::munmap(self.addr, self.len);
        }
    }
}

/// Drops `file`'s clean pages from the page cache
/// (`POSIX_FADV_DONTNEED`): its next read comes from the disk. Dirty pages
/// stay (write them back first); on tmpfs nothing is dropped.
pub fn evict_from_page_cache(file: BorrowedFd<'_>) -> io::Result<()> {
    // SAFETY: an advisory call on an open descriptor borrowed for the
    // call; no memory is passed.
    let r = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::from_raw_os_error(r))
    }
}

/// Whether `path` lies on a tmpfs (`statfs` type `TMPFS_MAGIC`), whose
/// pages cannot be evicted from the page cache.
pub fn is_tmpfs(path: &std::path::Path) -> io::Result<bool> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL in the path"))?;
    // SAFETY: all-zero is a valid statfs, which the call fills in.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a NUL-terminated path and `st` a writable statfs,
    // both alive for the call.
    check(unsafe { libc::statfs(c.as_ptr(), &mut st) })?;
    const TMPFS_MAGIC: i64 = 0x0102_1994;
    Ok(st.f_type as i64 == TMPFS_MAGIC)
}

/// Writes every file system's dirty data back (`sync(2)`).
pub fn sync_all_file_systems() {
    // SAFETY: sync takes no arguments and cannot fail.
    unsafe { libc::sync() }
}

/// Raises the soft limit of open descriptors to the hard one; returns the
/// new soft limit.
pub fn raise_nofile_limit() -> io::Result<u64> {
    let mut l = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: reads into a valid local.
    check(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut l) })?;
    if l.rlim_cur < l.rlim_max {
        l.rlim_cur = l.rlim_max;
        // SAFETY: sets our own limit from a valid local.
        check(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &l) })?;
    }
    Ok(l.rlim_cur)
}

/// `select` for reading on `fds` (every one below `FD_SETSIZE`), with a
/// zero timeout: the number ready.
pub fn select_readable(fds: &[RawFd]) -> io::Result<i32> {
    let mut max = -1;
    // SAFETY: an all-zero fd_set is the empty set.
    let mut set: libc::fd_set = unsafe { std::mem::zeroed() };
    for &fd in fds {
        if fd < 0 || fd >= libc::FD_SETSIZE as RawFd {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("descriptor {fd} is beyond select's FD_SETSIZE"),
            ));
        }
        // SAFETY: `fd` is below FD_SETSIZE, inside the set.
        unsafe { libc::FD_SET(fd, &mut set) };
        max = max.max(fd);
    }
    let mut timeout = libc::timeval {
        tv_sec: 0,
        tv_usec: 0,
    };
    // SAFETY: `set` and `timeout` are valid locals; the other sets are
    // null, which select allows.
    check(unsafe {
        libc::select(
            max + 1,
            &mut set,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            &mut timeout,
        )
    })
}

/// A `struct pollfd`.
pub type PollFd = libc::pollfd;

/// A `pollfd` asking whether `fd` is readable.
pub fn pollin(fd: RawFd) -> PollFd {
    libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    }
}

/// `poll` of `fds` (prepared with [`pollin`]) with a zero timeout: the
/// number ready.
pub fn poll_ready(fds: &mut [libc::pollfd]) -> io::Result<i32> {
    // SAFETY: `fds` is a valid slice of pollfd for the call.
    check(unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 0) })
}

/// An epoll instance watching descriptors for reading (level-triggered).
pub struct Epoll {
    fd: OwnedFd,
    events: Vec<libc::epoll_event>,
}

impl Epoll {
    pub fn new(watch: &[RawFd]) -> io::Result<Epoll> {
        // SAFETY: creates a new descriptor, owned below.
        let raw = check(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) })?;
        // SAFETY: `raw` was just returned by epoll_create1 and is ours.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        for &w in watch {
            let mut ev = libc::epoll_event {
                events: libc::EPOLLIN as u32,
                u64: w as u64,
            };
            // SAFETY: adds an open descriptor with a valid event record.
            check(unsafe { libc::epoll_ctl(raw, libc::EPOLL_CTL_ADD, w, &mut ev) })?;
        }
        Ok(Epoll {
            fd,
            events: vec![libc::epoll_event { events: 0, u64: 0 }; watch.len().max(1)],
        })
    }

    /// `epoll_wait` with a zero timeout: the number ready.
    pub fn wait(&mut self) -> io::Result<i32> {
        // SAFETY: the buffer holds `events.len()` records.
        check(unsafe {
            libc::epoll_wait(
                self.fd.as_fd().as_raw_fd(),
                self.events.as_mut_ptr(),
                self.events.len() as libc::c_int,
                0,
            )
        })
    }
}

/// Sets a socket's send and receive buffers (`SO_SNDBUF`, `SO_RCVBUF`) to
/// `bytes` each (the kernel doubles the figure for its bookkeeping).
pub fn set_socket_buffers(socket: BorrowedFd<'_>, bytes: u32) -> io::Result<()> {
    let v = libc::c_int::try_from(bytes)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "buffer too large"))?;
    for opt in [libc::SO_SNDBUF, libc::SO_RCVBUF] {
        // SAFETY: passes a valid c_int of the stated size for an open
        // socket borrowed for the call.
        check(unsafe {
            libc::setsockopt(
                socket.as_raw_fd(),
                libc::SOL_SOCKET,
                opt,
                (&v as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tmpfs_is_told_from_a_disk() {
        // /dev/shm is a tmpfs on every Linux with glibc's shm_open.
        if std::path::Path::new("/dev/shm").exists() {
            assert!(is_tmpfs(std::path::Path::new("/dev/shm")).unwrap());
        }
        assert!(!is_tmpfs(std::path::Path::new("/proc")).unwrap());
        assert!(is_tmpfs(std::path::Path::new("/no/such/dir")).is_err());
    }
    use crate::wake::EventFd;

    #[test]
    fn fork_paths_report_exit_statuses() {
        assert_eq!(fork_exit_wait().unwrap(), 0);
        let t = Program::new(std::path::Path::new("/bin/true")).unwrap();
        assert_eq!(fork_exec_wait(&t).unwrap(), 0);
        let missing = Program::new(std::path::Path::new("/nonexistent/x")).unwrap();
        assert_eq!(fork_exec_wait(&missing).unwrap(), 127);
    }

    #[test]
    fn the_echo_process_echoes_and_ends() {
        let e = EchoProcess::start(0).unwrap();
        for _ in 0..10 {
            e.round_trip().unwrap();
        }
        drop(e);
    }

    #[test]
    fn mappings_fault_in_and_unmap() {
        let page = page_size();
        let m = Mapping::anonymous(16 * page).unwrap();
        assert_eq!(m.touch(page, true), 0);
        assert_eq!(m.touch(page, false), 16);
    }

    #[test]
    fn readiness_calls_count_ready_descriptors() {
        let fds: Vec<EventFd> = (0..5).map(|_| EventFd::new().unwrap()).collect();
        for f in &fds[..3] {
            f.signal().unwrap();
        }
        let raw: Vec<RawFd> = fds.iter().map(|f| f.as_raw_fd()).collect();
        assert_eq!(select_readable(&raw).unwrap(), 3);
        let mut p: Vec<libc::pollfd> = raw
            .iter()
            .map(|&fd| libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        assert_eq!(poll_ready(&mut p).unwrap(), 3);
        let mut e = Epoll::new(&raw).unwrap();
        assert_eq!(e.wait().unwrap(), 3);
        assert!(select_readable(&[5000]).is_err());
    }
}
